import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, extname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import { AppError } from '../../errors.ts'

/**
 * The ops console: one static page and its scripts, served by Arbiter itself at /console. The page holds no data
 * (every API call carries the key the operator types), so the route is public. Everything it loads comes from
 * this origin, and the page runs under a Content-Security-Policy that forbids inline script and style: an
 * injected `<script>` or `style=""` in rendered data cannot run or restyle the page.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  // Inline data: images are allowed (an image cannot run script); the page itself uses only its own icon.
  "img-src 'self' data:",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ')

const SECURITY_HEADERS = {
  'content-security-policy': CONSOLE_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  // For browsers that predate frame-ancestors.
  'x-frame-options': 'DENY',
}

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
}

// The same number of levels up from src/http/routes (tsx) and dist/http/routes (compiled).
const REPOSITORY_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..')
const PAGE_DIR = join(REPOSITORY_ROOT, 'console')
const SCRIPT_DIR = join(REPOSITORY_ROOT, 'dist', 'console')
const require = createRequire(import.meta.url)
const UPLOT_DIR = dirname(require.resolve('uplot'))
// The package's dist/ (its Node build's folder), where its build also writes the browser bundle.
const TRANSPARENCY_DIST = dirname(require.resolve('@arbiter/transparency'))

/** Fixed files by their URL under /console/; compiled scripts are matched by SCRIPT_PATH below. */
const FIXED_ASSETS: Record<string, string> = {
  '': join(PAGE_DIR, 'index.html'),
  'styles.css': join(PAGE_DIR, 'styles.css'),
  'icon.svg': join(PAGE_DIR, 'icon.svg'),
  // Beside the compiled modules, so they import it by a relative path (no import map: that would be inline script).
  'app/vendor/uplot.js': join(UPLOT_DIR, 'uPlot.esm.js'),
  // The service's own RFC 9162 / RFC 8785 code, bundled for the browser, so the console checks proofs with it.
  'app/vendor/transparency.js': join(TRANSPARENCY_DIST, 'browser.js'),
  'vendor/uplot.css': join(UPLOT_DIR, 'uPlot.min.css'),
}

// Only kebab-case module names, optionally one folder deep: no dots, so no `..`, no source maps, no other files.
const SCRIPT_PATH = /^app\/(?:[a-z0-9-]+\/)?[a-z0-9-]+\.js$/

function assetFile(relative: string): string | null {
  const fixed = FIXED_ASSETS[relative]
  if (fixed !== undefined) return fixed
  if (SCRIPT_PATH.test(relative)) return join(SCRIPT_DIR, relative.slice('app/'.length))
  return null
}

async function sendAsset(request: FastifyRequest, reply: FastifyReply, relative: string) {
  const file = assetFile(relative)
  const body = file ? await readFile(file).catch(() => null) : null
  if (!file || !body) throw new AppError('NOT_FOUND', `no console asset ${request.url}`)
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`
  // Revalidated on every load (a redeploy must never mix old and new modules); unchanged files cost a 304.
  reply.headers({ ...SECURITY_HEADERS, 'cache-control': 'no-cache', etag })
  if (request.headers['if-none-match'] === etag) return reply.code(304).send()
  return reply.type(CONTENT_TYPES[extname(file)] ?? 'application/octet-stream').send(body)
}

export const consoleRoutes: FastifyPluginAsync = async (app) => {
  const options = { config: { auth: 'public' as const }, schema: { hide: true } }
  app.get('/console', options, (request, reply) => sendAsset(request, reply, ''))
  app.get<{ Params: { '*': string } }>('/console/*', options, (request, reply) =>
    sendAsset(request, reply, request.params['*']),
  )
}

export default consoleRoutes

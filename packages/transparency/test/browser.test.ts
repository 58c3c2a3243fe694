import assert from 'node:assert/strict'
import { generateKeyPairSync } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import { CompactSign, exportJWK } from 'jose'
import type { Browser, Page } from 'playwright-core'
// The console's browser tests' launcher: the same Chromium, started the same way.
import { launchChromium } from '../../../test/console/browser.ts'
import { canonicalJson, noteVerifier, sha256Digest, signNote } from '../src/node.ts'
import { readVectorFiles } from './vectors.ts'

const TEST_DIR = path.dirname(fileURLToPath(import.meta.url))

/** The suite and the portable build, bundled as a page loads them: `platform: 'browser'` picks no Node code. */
async function bundle(): Promise<string> {
  const result = await build({
    stdin: {
      contents: "export { vectorCases } from './vector-suite.ts'\nexport * as api from '../src/index.ts'\n",
      resolveDir: TEST_DIR,
      loader: 'ts',
    },
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    write: false,
    logLevel: 'silent',
  })
  return result.outputFiles[0]!.text
}

/** One page on http://127.0.0.1 (a secure context, so WebCrypto is there) that loads the bundle as /suite.js. */
function serve(script: string): Promise<Server> {
  const server = createServer((request, response) => {
    if (request.url === '/suite.js') {
      response.writeHead(200, { 'content-type': 'text/javascript' }).end(script)
    } else {
      response.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>vectors</title>')
    }
  })
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)))
}

interface Outcome {
  name: string
  error: string | null
}

describe('the package in Chromium (portable build: SHA-256 in JavaScript, Ed25519 through WebCrypto)', () => {
  let server: Server
  let browser: Browser
  let page: Page

  before(async () => {
    server = await serve(await bundle())
    browser = await launchChromium()
    page = await browser.newPage()
    await page.goto(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`)
  })

  after(async () => {
    await browser?.close()
    server?.close()
  })

  it('passes every published vector', async (t) => {
    const outcomes = (await page.evaluate(async (files) => {
      const { vectorCases } = await import('/suite.js' as string)
      const results: Outcome[] = []
      for (const vectorCase of vectorCases(files) as { name: string; run(): unknown }[]) {
        try {
          await vectorCase.run()
          results.push({ name: vectorCase.name, error: null })
        } catch (err) {
          results.push({ name: vectorCase.name, error: String((err as Error).message) })
        }
      }
      return results
    }, readVectorFiles())) as Outcome[]
    assert.ok(outcomes.length >= 10, `only ${outcomes.length} cases ran`)
    for (const { name, error } of outcomes) {
      await t.test(name, () => assert.equal(error, null))
    }
  })

  it('verifies what the Node build signs: a checkpoint note and a manifest envelope', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519')
    const origin = 'arbiter.test/log'
    const note = signNote(`${origin}\n3\n${'A'.repeat(43)}=\n`, { name: origin, privateKey })
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1' }
    const manifest = { id: 'm1', outcome: 'accepted', evidence: ['sha256:ab'] }
    const payload = canonicalJson(manifest)
    const jws = await new CompactSign(new TextEncoder().encode(payload))
      .setProtectedHeader({ alg: 'Ed25519', kid: 'k1' })
      .sign(privateKey)
    const envelope = { manifest, manifest_digest: sha256Digest(payload), jws }
    const raw = Array.from(noteVerifier(origin, publicKey).publicKey)

    const result = (await page.evaluate(
      async ({ note, origin, raw, envelope, jwk }) => {
        const { api } = await import('/suite.js' as string)
        const opened = await api.openCheckpointAsync(note, api.noteVerifier(origin, Uint8Array.from(raw)))
        const verified = await api.verifyManifestEnvelope(envelope, { keys: [jwk] })
        const tampered = { ...envelope, manifest: { ...envelope.manifest, outcome: 'rejected' } }
        const refused = await api.verifyManifestEnvelope(tampered, { keys: [jwk] }).then(
          () => 'accepted',
          (err: { check: string }) => err.check,
        )
        let sync: string
        try {
          api.verifyNote(note, [api.noteVerifier(origin, Uint8Array.from(raw))])
          sync = 'verified'
        } catch (err) {
          sync = (err as Error).message
        }
        return { treeSize: opened.checkpoint.treeSize, kid: verified.kid, refused, sync }
      },
      { note, origin, raw, envelope, jwk },
    )) as { treeSize: number; kid: string; refused: string; sync: string }
    assert.deepEqual(result, {
      treeSize: 3,
      kid: 'k1',
      refused: 'digest',
      sync: 'synchronous Ed25519 verification needs node:crypto: use verifyNoteAsync',
    })
  })
})

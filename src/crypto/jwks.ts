import { readFile } from 'node:fs/promises'
import { decodeUtf8Strictly, describeIJsonViolation } from '../domain/shared/i-json.ts'
import type { Jwks } from './jws.ts'
import type { PublicSigningJwk } from './signing-key.ts'

/** A JWKS that could not be read, fetched or parsed. One line, names the source. */
export class JwksError extends Error {
  override name = 'JwksError'
}

/** A JWKS that is JSON but not I-JSON (a duplicate member name, say): it could hold a key other than it shows. */
export class JwksNotIJsonError extends JwksError {
  override name = 'JwksNotIJsonError'
}

const FETCH_TIMEOUT_MS = 10_000

/**
 * The document served at `/.well-known/jwks.json`: every key that ever signed, first
 * occurrence of each kid kept, in the order given, so retired keys keep verifying old manifests.
 */
export function buildJwks(publicJwks: readonly PublicSigningJwk[]): { keys: PublicSigningJwk[] } {
  const seen = new Set<string>()
  const keys: PublicSigningJwk[] = []
  for (const jwk of publicJwks) {
    if (seen.has(jwk.kid)) continue
    seen.add(jwk.kid)
    // Rebuilt member by member so nothing but the public members can reach the published set.
    keys.push({ kty: jwk.kty, crv: jwk.crv, x: jwk.x, kid: jwk.kid, alg: jwk.alg, use: jwk.use })
  }
  return { keys }
}

/** Loads a JWKS from a file path or an http(s) URL (for offline `arbiter verify`). */
export async function loadJwks(source: string): Promise<Jwks> {
  const bytes = /^https?:\/\//i.test(source) ? await fetchJwksBytes(source) : await readJwksFile(source)
  const text = decodeUtf8Strictly(bytes)
  if (text === null) throw new JwksNotIJsonError(`JWKS from ${source} is not valid UTF-8`)
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    throw new JwksError(`JWKS from ${source} is not valid JSON`)
  }
  const problem = describeIJsonViolation(text)
  if (problem) throw new JwksNotIJsonError(`JWKS from ${source} is not I-JSON: ${problem}`)
  if (typeof parsed !== 'object' || parsed === null || !Array.isArray((parsed as { keys?: unknown }).keys)) {
    throw new JwksError(`JWKS from ${source} has no "keys" array`)
  }
  const keys = (parsed as { keys: unknown[] }).keys
  if (!keys.every((key) => typeof key === 'object' && key !== null && !Array.isArray(key))) {
    throw new JwksError(`JWKS from ${source} has a "keys" entry that is not an object`)
  }
  return { keys: keys as Jwks['keys'] }
}

async function fetchJwksBytes(url: string): Promise<Uint8Array> {
  let response: Response
  try {
    response = await fetch(url, {
      headers: { accept: 'application/json' },
      signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
    })
  } catch (err) {
    throw new JwksError(`JWKS fetch from ${url} failed: ${describeFetchError(err)}`)
  }
  if (!response.ok) {
    await response.body?.cancel().catch(() => {})
    throw new JwksError(`JWKS fetch from ${url} failed: HTTP ${response.status}`)
  }
  try {
    return new Uint8Array(await response.arrayBuffer())
  } catch (err) {
    throw new JwksError(`JWKS fetch from ${url} failed while reading the body: ${describeFetchError(err)}`)
  }
}

async function readJwksFile(file: string): Promise<Uint8Array> {
  try {
    return await readFile(file)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    throw new JwksError(`cannot read JWKS file ${file}: ${code ?? String(err)}`)
  }
}

/** undici wraps the useful part ("ECONNREFUSED", "ENOTFOUND") in `cause`. */
function describeFetchError(err: unknown): string {
  if (!(err instanceof Error)) return String(err)
  // The timeout signal stays armed while the body is read, so this covers both phases.
  if (err.name === 'TimeoutError') return `timed out after ${FETCH_TIMEOUT_MS / 1000} s`
  const cause = err.cause as { code?: string; message?: string } | undefined
  return cause?.code ?? cause?.message ?? err.message
}

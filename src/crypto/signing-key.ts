import {
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  randomBytes,
  type webcrypto,
} from 'node:crypto'
import { link, mkdir, open, readFile, rename, unlink } from 'node:fs/promises'
import path from 'node:path'
import { calculateJwkThumbprint, importPKCS8 } from 'jose'

/** The public half of a signing key as published in the JWKS (RFC 8037 OKP key). */
export interface PublicSigningJwk {
  kty: 'OKP'
  crv: 'Ed25519'
  x: string
  kid: string
  alg: 'Ed25519'
  use: 'sig'
}

/** The WebCrypto key type; `lib` has no DOM, so Node's declaration is named explicitly. */
type CryptoKey = webcrypto.CryptoKey

export interface SigningKey {
  /** RFC 7638 thumbprint (SHA-256, base64url) of the public key: the JWS header's `kid`. */
  kid: string
  privateKey: CryptoKey | KeyObject
  publicJwk: PublicSigningJwk
}

/** Any problem with the configured or stored signing key; the message is one line and never holds key material. */
export class SigningKeyError extends Error {
  override name = 'SigningKeyError'
}

/** The data-dir key file: generated once when no key is configured, kept in the data dir (mode 0600). */
export const DATA_DIR_KEY_FILE = 'signing-key.pem'

const PEM_LABEL = /-----BEGIN ([A-Z0-9 ]+)-----/

/** Parses a PKCS#8 PEM Ed25519 private key. Anything else throws SigningKeyError. */
export async function signingKeyFromPem(pem: string): Promise<SigningKey> {
  const label = PEM_LABEL.exec(pem)?.[1]
  if (label === undefined) throw new SigningKeyError('signing key is not PEM text (no -----BEGIN line)')
  if (label === 'ENCRYPTED PRIVATE KEY') {
    throw new SigningKeyError('signing key is an encrypted PKCS#8 key; an unencrypted one is required')
  }
  if (label !== 'PRIVATE KEY') {
    throw new SigningKeyError(`signing key must be a PKCS#8 "PRIVATE KEY" PEM, got "${label}"`)
  }

  let keyObject: KeyObject
  try {
    keyObject = createPrivateKey({ key: pem, format: 'pem' })
  } catch {
    throw new SigningKeyError('signing key is not a valid PKCS#8 PEM private key')
  }
  if (keyObject.asymmetricKeyType !== 'ed25519') {
    throw new SigningKeyError(
      `signing key must be Ed25519, got ${keyObject.asymmetricKeyType ?? 'an unknown key type'}`,
    )
  }

  // Re-export so the key jose imports is in Node's normalized PKCS#8 form (line endings,
  // surrounding text). The CryptoKey is non-extractable: nothing downstream needs the bytes.
  const normalizedPem = keyObject.export({ type: 'pkcs8', format: 'pem' }).toString()
  let privateKey: CryptoKey
  try {
    privateKey = await importPKCS8(normalizedPem, 'Ed25519')
  } catch (err) {
    throw new SigningKeyError(`cannot import the Ed25519 key: ${errorMessage(err)}`)
  }
  const { x } = createPublicKey(keyObject).export({ format: 'jwk' })
  if (typeof x !== 'string') throw new SigningKeyError('could not derive the Ed25519 public key')
  const kid = await calculateJwkThumbprint({ kty: 'OKP', crv: 'Ed25519', x }, 'sha256')
  return { kid, privateKey, publicJwk: { kty: 'OKP', crv: 'Ed25519', x, kid, alg: 'Ed25519', use: 'sig' } }
}

/**
 * The signing key: `signingKey` (ARBITER_SIGNING_KEY) is PEM text or a path to a
 * PEM file; unset, the key lives in `<dataDir>/signing-key.pem` and is generated on first start.
 */
export async function loadSigningKey(opts: { signingKey?: string; dataDir: string }): Promise<SigningKey> {
  const configured = opts.signingKey?.trim()
  if (configured) {
    if (configured.startsWith('-----BEGIN')) {
      return withContext('ARBITER_SIGNING_KEY', unescapeNewlines(configured))
    }
    return withContext(`ARBITER_SIGNING_KEY file ${configured}`, await readConfiguredKeyFile(configured))
  }

  const file = path.join(opts.dataDir, DATA_DIR_KEY_FILE)
  const existing = await readKeyFileIfPresent(file)
  if (existing !== undefined) return withContext(file, existing)

  await makeDataDir(opts.dataDir)
  const pem = generatePem()
  const winner = await publishExclusively(file, pem)
  return withContext(file, winner)
}

/**
 * Replaces the data-dir key with a fresh one (`arbiter signing-key rotate`). The new file is
 * written beside the old one and renamed over it, so a crash leaves either key, never half of one.
 * Manifests signed by the old key keep verifying only because its public half is already
 * recorded in the database (signing_keys, served in the JWKS); this function does not touch it.
 */
export async function rotateDataDirSigningKey(dataDir: string): Promise<SigningKey> {
  await makeDataDir(dataDir)
  const pem = generatePem()
  const key = await signingKeyFromPem(pem)
  const file = path.join(dataDir, DATA_DIR_KEY_FILE)
  const tmp = await writePrivateTempFile(file, pem)
  try {
    await rename(tmp, file)
  } catch (err) {
    await unlink(tmp).catch(() => {})
    throw new SigningKeyError(`cannot replace ${file}: ${errorMessage(err)}`)
  }
  return key
}

function generatePem(): string {
  const { privateKey } = generateKeyPairSync('ed25519')
  return privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()
}

/**
 * Creates `file` holding `pem` unless another process got there first, and returns the PEM that
 * won. The key is written to a private temp file and then hard-linked into place: `link` fails
 * with EEXIST when the target exists, like an exclusive create (`wx`), but the target appears
 * already complete. With a plain `wx` write, a replica starting at the same moment could read
 * the winner's file while it is still empty, and a crash mid-write would leave an empty key file.
 */
async function publishExclusively(file: string, pem: string): Promise<string> {
  const tmp = await writePrivateTempFile(file, pem)
  try {
    await link(tmp, file)
    return pem
  } catch (err) {
    if (errorCode(err) === 'EEXIST') return readKeyFile(file)
    throw new SigningKeyError(`cannot create ${file}: ${errorMessage(err)}`)
  } finally {
    await unlink(tmp).catch(() => {})
  }
}

/** Writes `pem` to a fresh temp file next to `file`, mode 0600, flushed to disk; returns its path. */
async function writePrivateTempFile(file: string, pem: string): Promise<string> {
  const tmp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`
  try {
    const handle = await open(tmp, 'wx', 0o600)
    try {
      await handle.writeFile(pem)
      await handle.sync()
    } finally {
      await handle.close()
    }
  } catch (err) {
    await unlink(tmp).catch(() => {})
    throw new SigningKeyError(`cannot write ${tmp}: ${errorMessage(err)}`)
  }
  return tmp
}

async function makeDataDir(dataDir: string): Promise<void> {
  try {
    await mkdir(dataDir, { recursive: true })
  } catch (err) {
    throw new SigningKeyError(`cannot create data directory ${dataDir}: ${errorMessage(err)}`)
  }
}

/**
 * Env files and secret stores often flatten a PEM to one line with literal `\n` sequences;
 * a real PEM always has line breaks, so only a single-line value is unescaped.
 */
function unescapeNewlines(pem: string): string {
  return pem.includes('\n') ? pem : pem.replaceAll('\\n', '\n')
}

/**
 * Reads the file ARBITER_SIGNING_KEY names. The error shows only the errno code, not the
 * value: a value that is neither PEM nor a path may be a pasted secret in another format.
 */
async function readConfiguredKeyFile(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8')
  } catch (err) {
    throw new SigningKeyError(
      `ARBITER_SIGNING_KEY is neither PEM text nor a readable file path (${errorCode(err) ?? errorMessage(err)})`,
    )
  }
}

async function readKeyFile(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8')
  } catch (err) {
    throw new SigningKeyError(`cannot read signing key file ${file}: ${errorMessage(err)}`)
  }
}

async function readKeyFileIfPresent(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8')
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return undefined
    throw new SigningKeyError(`cannot read signing key file ${file}: ${errorMessage(err)}`)
  }
}

/** Parses the PEM, prefixing any error with where the key came from. */
async function withContext(source: string, pem: string): Promise<SigningKey> {
  try {
    return await signingKeyFromPem(pem)
  } catch (err) {
    throw new SigningKeyError(`${source}: ${errorMessage(err)}`)
  }
}

function errorCode(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | undefined)?.code
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message.split('\n')[0]! : String(err)
}

import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { createPublicKey, generateKeyPairSync } from 'node:crypto'
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import * as jose from 'jose'
import {
  DATA_DIR_KEY_FILE,
  loadSigningKey,
  rotateDataDirSigningKey,
  SigningKeyError,
  signingKeyFromPem,
} from '../../src/crypto/signing-key.ts'

const tempRoots: string[] = []

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'arbiter-signing-key-'))
  tempRoots.push(dir)
  return dir
}

after(async () => {
  await Promise.all(tempRoots.map((dir) => rm(dir, { recursive: true, force: true })))
})

function ed25519Pem(): string {
  return generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()
}

async function fileMode(file: string): Promise<number> {
  return (await stat(file)).mode & 0o777
}

describe('loadSigningKey without ARBITER_SIGNING_KEY (data-dir key)', () => {
  it('generates the key once, creating the data dir, with mode 0600', async () => {
    const dataDir = path.join(await tempDir(), 'nested', 'data')
    const key = await loadSigningKey({ dataDir })
    const file = path.join(dataDir, DATA_DIR_KEY_FILE)

    assert.equal(await fileMode(file), 0o600)
    assert.match(await readFile(file, 'utf8'), /^-----BEGIN PRIVATE KEY-----\n/)
    assert.deepEqual(await readdir(dataDir), [DATA_DIR_KEY_FILE], 'no temp files are left behind')
    assert.equal(key.publicJwk.kid, key.kid)
  })

  it('returns the same key on the next start', async () => {
    const dataDir = await tempDir()
    const first = await loadSigningKey({ dataDir })
    const second = await loadSigningKey({ dataDir })
    assert.equal(second.kid, first.kid)
    assert.deepEqual(second.publicJwk, first.publicJwk)
  })

  it('agrees on one key when many loads race in one process', async () => {
    const dataDir = await tempDir()
    const keys = await Promise.all(Array.from({ length: 16 }, () => loadSigningKey({ dataDir })))
    assert.equal(new Set(keys.map((key) => key.kid)).size, 1)
    const fromDisk = await signingKeyFromPem(await readFile(path.join(dataDir, DATA_DIR_KEY_FILE), 'utf8'))
    assert.equal(fromDisk.kid, keys[0]!.kid)
    assert.deepEqual(await readdir(dataDir), [DATA_DIR_KEY_FILE])
  })

  it('agrees on one key when several processes start together', async () => {
    const dataDir = await tempDir()
    const moduleUrl = new URL('../../src/crypto/signing-key.ts', import.meta.url).href
    // A shared start time lines the processes up after their (uneven) tsx start-up.
    const startAt = Date.now() + 1500
    const script = `const m = await import(${JSON.stringify(moduleUrl)})
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, ${startAt} - Date.now())))
      const key = await m.loadSigningKey({ dataDir: ${JSON.stringify(dataDir)} })
      process.stdout.write(key.kid)`
    const run = promisify(execFile)
    const outputs = await Promise.all(
      Array.from({ length: 4 }, () =>
        run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
          cwd: fileURLToPath(new URL('../..', import.meta.url)),
        }),
      ),
    )
    const kids = outputs.map((output) => output.stdout)
    assert.equal(new Set(kids).size, 1, `kids: ${kids.join(', ')}`)
    assert.equal((await loadSigningKey({ dataDir })).kid, kids[0])
    assert.equal(await fileMode(path.join(dataDir, DATA_DIR_KEY_FILE)), 0o600)
  })

  it('reports a corrupt key file with its path', async () => {
    const dataDir = await tempDir()
    await writeFile(path.join(dataDir, DATA_DIR_KEY_FILE), 'not a key', { mode: 0o600 })
    await assert.rejects(loadSigningKey({ dataDir }), (err: unknown) => {
      assert.ok(err instanceof SigningKeyError)
      assert.ok(err.message.includes(path.join(dataDir, DATA_DIR_KEY_FILE)), err.message)
      return true
    })
  })
})

describe('loadSigningKey with ARBITER_SIGNING_KEY', () => {
  it('loads PEM text and the same PEM from a file path to the same kid', async () => {
    const pem = ed25519Pem()
    const file = path.join(await tempDir(), 'key.pem')
    await writeFile(file, pem, { mode: 0o600 })
    const dataDir = await tempDir()

    const fromText = await loadSigningKey({ signingKey: pem, dataDir })
    const fromPath = await loadSigningKey({ signingKey: file, dataDir })
    assert.equal(fromPath.kid, fromText.kid)
    assert.deepEqual(await readdir(dataDir), [], 'a configured key never generates a data-dir key')
  })

  it('accepts a PEM flattened to one line with literal \\n sequences', async () => {
    const pem = ed25519Pem()
    const flattened = pem.trimEnd().replaceAll('\n', '\\n')
    const key = await loadSigningKey({ signingKey: flattened, dataDir: await tempDir() })
    assert.equal(key.kid, (await signingKeyFromPem(pem)).kid)
  })

  it('fails with a one-line message that does not echo a value that is neither PEM nor a file', async () => {
    const secretLooking = 'c2VjcmV0LWtleS1tYXRlcmlhbA'
    await assert.rejects(loadSigningKey({ signingKey: secretLooking, dataDir: await tempDir() }), (err) => {
      assert.ok(err instanceof SigningKeyError)
      assert.ok(!err.message.includes(secretLooking), err.message)
      assert.ok(!err.message.includes('\n'))
      return true
    })
  })
})

describe('signingKeyFromPem', () => {
  it('derives kid as the RFC 7638 thumbprint jose computes', async () => {
    const pem = ed25519Pem()
    const key = await signingKeyFromPem(pem)
    const spki = createPublicKey(pem).export({ type: 'spki', format: 'pem' }).toString()
    const publicJwk = await jose.exportJWK(await jose.importSPKI(spki, 'Ed25519', { extractable: true }))
    assert.equal(key.kid, await jose.calculateJwkThumbprint(publicJwk, 'sha256'))
    assert.deepEqual(key.publicJwk, {
      kty: 'OKP',
      crv: 'Ed25519',
      x: publicJwk.x,
      kid: key.kid,
      alg: 'Ed25519',
      use: 'sig',
    })
  })

  const rejected: [string, () => string, RegExp][] = [
    ['garbage text', () => 'hello', /not PEM/],
    [
      'a garbage PEM body',
      () => '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n',
      /not a valid PKCS#8/,
    ],
    [
      'an RSA PKCS#8 key',
      () =>
        generateKeyPairSync('rsa', { modulusLength: 2048 })
          .privateKey.export({ type: 'pkcs8', format: 'pem' })
          .toString(),
      /must be Ed25519, got rsa/,
    ],
    [
      'an EC key in SEC1 form',
      () =>
        generateKeyPairSync('ec', { namedCurve: 'P-256' })
          .privateKey.export({ type: 'sec1', format: 'pem' })
          .toString(),
      /"EC PRIVATE KEY"/,
    ],
    [
      'an Ed25519 public key',
      () => generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      /"PUBLIC KEY"/,
    ],
    [
      'an encrypted PKCS#8 key',
      () =>
        generateKeyPairSync('ed25519')
          .privateKey.export({ type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'pw' })
          .toString(),
      /encrypted/,
    ],
  ]
  for (const [name, makePem, message] of rejected) {
    it(`rejects ${name} with SigningKeyError`, async () => {
      await assert.rejects(signingKeyFromPem(makePem()), (err) => {
        assert.ok(err instanceof SigningKeyError, String(err))
        assert.match(err.message, message)
        assert.ok(!err.message.includes('\n'), 'one line')
        return true
      })
    })
  }
})

describe('rotateDataDirSigningKey', () => {
  it('replaces the data-dir key atomically with a new 0600 key used from then on', async () => {
    const dataDir = await tempDir()
    const old = await loadSigningKey({ dataDir })
    const rotated = await rotateDataDirSigningKey(dataDir)
    const file = path.join(dataDir, DATA_DIR_KEY_FILE)

    assert.notEqual(rotated.kid, old.kid)
    assert.equal((await loadSigningKey({ dataDir })).kid, rotated.kid)
    assert.equal(await fileMode(file), 0o600)
    assert.deepEqual(await readdir(dataDir), [DATA_DIR_KEY_FILE])
  })
})

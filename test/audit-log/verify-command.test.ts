import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { runVerifyCommand } from '../../src/audit-log/verify-command.ts'
import { buildJwks } from '../../src/crypto/jwks.ts'
import { signCanonical } from '../../src/crypto/jws.ts'
import { loadSigningKey, type SigningKey } from '../../src/crypto/signing-key.ts'
import { hashJson } from '../../src/domain/shared/canonical-json.ts'

const MANIFEST_ID = '6f1c2a52-8d0e-4c55-9a55-0d7f3e1b9c10'

let dir: string
let key: SigningKey
let envelopeFile: string
let tamperedFile: string
let jwksFile: string
let otherJwksFile: string
let server: Server
let baseUrl: string

before(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'arbiter-verify-'))
  key = await loadSigningKey({ dataDir: path.join(dir, 'data') })
  const other = await loadSigningKey({ dataDir: path.join(dir, 'other') })

  const manifest = { manifest_id: MANIFEST_ID, verdict: 'AGREED', directive: 'PROCEED', audit_seq: 3 }
  const envelope = { manifest, manifest_digest: hashJson(manifest), jws: await signCanonical(manifest, key) }
  envelopeFile = path.join(dir, 'manifest.json')
  await writeFile(envelopeFile, JSON.stringify(envelope, null, 2))
  tamperedFile = path.join(dir, 'tampered.json')
  const tamperedManifest = { ...manifest, directive: 'HALT' }
  await writeFile(
    tamperedFile,
    JSON.stringify({ ...envelope, manifest: tamperedManifest, manifest_digest: hashJson(tamperedManifest) }),
  )
  jwksFile = path.join(dir, 'jwks.json')
  await writeFile(jwksFile, JSON.stringify(buildJwks([other.publicJwk, key.publicJwk])))
  otherJwksFile = path.join(dir, 'other-jwks.json')
  await writeFile(otherJwksFile, JSON.stringify(buildJwks([other.publicJwk])))

  server = createServer((req, res) => {
    if (req.url === '/.well-known/jwks.json') {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify(buildJwks([key.publicJwk])))
    } else {
      res.writeHead(404).end()
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

after(async () => {
  await new Promise((resolve) => server.close(resolve))
  await rm(dir, { recursive: true, force: true })
})

async function verify(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = ''
  let stderr = ''
  const code = await runVerifyCommand(argv, {
    stdout: (s) => {
      stdout += s
    },
    stderr: (s) => {
      stderr += s
    },
  })
  return { code, stdout, stderr }
}

describe('arbiter verify <envelope.json> --jwks <jwks>', () => {
  it('exits 0 and names the manifest and kid for a valid envelope', async () => {
    const result = await verify(envelopeFile, '--jwks', jwksFile)
    assert.deepEqual(result, {
      code: 0,
      stdout: `ok: manifest ${MANIFEST_ID} signed by ${key.kid}\n`,
      stderr: '',
    })
  })

  it('accepts --jwks=<path> before the envelope', async () => {
    assert.equal((await verify(`--jwks=${jwksFile}`, envelopeFile)).code, 0)
  })

  it('fetches the JWKS from an http(s) URL', async () => {
    const result = await verify(envelopeFile, '--jwks', `${baseUrl}/.well-known/jwks.json`)
    assert.equal(result.code, 0, result.stderr)
  })

  it('exits 1 with "invalid: <reason>" for a tampered envelope', async () => {
    const result = await verify(tamperedFile, '--jwks', jwksFile)
    assert.equal(result.code, 1)
    assert.equal(result.stdout, '')
    assert.match(result.stderr, /^invalid: JWS payload does not match the manifest\n$/)
  })

  it('exits 1 when the JWKS lacks the signing kid', async () => {
    const result = await verify(envelopeFile, '--jwks', otherJwksFile)
    assert.equal(result.code, 1)
    assert.match(result.stderr, new RegExp(`^invalid: unknown kid "${key.kid}"`))
  })

  it('exits 1 when the envelope file is not JSON', async () => {
    const file = path.join(dir, 'broken.json')
    await writeFile(file, '{"manifest":')
    const result = await verify(file, '--jwks', jwksFile)
    assert.equal(result.code, 1)
    assert.match(result.stderr, /^invalid: .*not valid JSON/)
  })

  describe('reads only I-JSON: a file whose bytes could read otherwise than the value checked exits 1', () => {
    /** A signed HALT, saved as the API hands it out. */
    async function signedHalt(): Promise<string> {
      const manifest = { manifest_id: MANIFEST_ID, verdict: 'DIVERGENT', directive: 'HALT', audit_seq: 4 }
      const envelope = {
        manifest,
        manifest_digest: hashJson(manifest),
        jws: await signCanonical(manifest, key),
      }
      return JSON.stringify(envelope)
    }

    async function saved(name: string, content: string | Buffer): Promise<string> {
      const file = path.join(dir, name)
      await writeFile(file, content)
      return file
    }

    it('refuses a duplicate member name put in front of a signed HALT to make it read PROCEED', async () => {
      const halt = await signedHalt()
      assert.equal((await verify(await saved('halt.json', halt), '--jwks', jwksFile)).code, 0)
      const forged = `{"manifest":{"directive":"PROCEED"},${halt.slice(1)}`
      const file = await saved('forged.json', forged)
      const result = await verify(file, '--jwks', jwksFile)
      assert.deepEqual(result, {
        code: 1,
        stdout: '',
        stderr: `invalid: ${file} is not I-JSON: duplicate member name "manifest" at /manifest\n`,
      })
    })

    it('refuses a duplicate member inside the manifest, naming where', async () => {
      const halt = await signedHalt()
      const forged = halt.replace('"directive":"HALT"', '"directive":"PROCEED","directive":"HALT"')
      const result = await verify(await saved('forged-inner.json', forged), '--jwks', jwksFile)
      assert.equal(result.code, 1)
      assert.match(result.stderr, /is not I-JSON: duplicate member name "directive" at \/manifest/)
    })

    it('refuses invalid UTF-8 and numbers a double cannot hold', async () => {
      const halt = await signedHalt()
      const badBytes = Buffer.concat([Buffer.from(halt.slice(0, -1)), Buffer.from(',"x":"\xff"}', 'latin1')])
      const notUtf8 = await verify(await saved('latin1.json', badBytes), '--jwks', jwksFile)
      assert.equal(notUtf8.code, 1)
      assert.match(notUtf8.stderr, /^invalid: .*latin1\.json is not valid UTF-8\n$/)
      const big = await verify(await saved('big.json', `${halt.slice(0, -1)},"n":1e400}`), '--jwks', jwksFile)
      assert.equal(big.code, 1)
      assert.match(big.stderr, /^invalid: .*big\.json is not I-JSON: .* at \/n\n$/)
    })

    it('holds every file it reads to the same rule: the JWKS and a saved checkpoint too', async () => {
      const jwks = JSON.stringify(buildJwks([key.publicJwk]))
      const twoKeys = `{"keys":[],${jwks.slice(1)}`
      const jwksResult = await verify(envelopeFile, '--jwks', await saved('dup-jwks.json', twoKeys))
      assert.equal(jwksResult.code, 1)
      assert.match(
        jwksResult.stderr,
        /^invalid: JWKS from .*dup-jwks\.json is not I-JSON: duplicate member name "keys"/,
      )

      const proof = await saved('proof.json', '{"leaf_hash":"sha256:00"}')
      const checkpoint = await saved('dup-checkpoint.json', '{"note":"a","note":"b"}')
      const proofResult = await verify(proof, '--jwks', jwksFile, '--checkpoint', checkpoint)
      assert.equal(proofResult.code, 1)
      assert.match(
        proofResult.stderr,
        /^invalid: .*dup-checkpoint\.json is not I-JSON: duplicate member name "note"/,
      )
    })
  })

  const usageErrors: [string, string[]][] = [
    ['no arguments', []],
    ['no --jwks', [envelopeFile]],
    ['no envelope', ['--jwks', 'jwks.json']],
    ['two envelopes', ['a.json', 'b.json', '--jwks', 'jwks.json']],
    ['an unknown flag', [envelopeFile, '--jwks', 'jwks.json', '--verbose']],
  ]
  for (const [name, argv] of usageErrors) {
    it(`exits 2 with a usage line for ${name}`, async () => {
      const result = await verify(...argv)
      assert.equal(result.code, 2)
      assert.match(result.stderr, /^error: .+\nusage: arbiter verify <file> --jwks /)
    })
  }

  it('exits 2 when the envelope file cannot be read', async () => {
    const result = await verify(path.join(dir, 'missing.json'), '--jwks', jwksFile)
    assert.equal(result.code, 2)
    assert.match(result.stderr, /^error: cannot read .*missing\.json: ENOENT/)
  })

  it('exits 2 when the JWKS cannot be loaded', async () => {
    const missing = await verify(envelopeFile, '--jwks', path.join(dir, 'nope.json'))
    assert.equal(missing.code, 2)
    assert.match(missing.stderr, /^error: cannot read JWKS file .*nope\.json: ENOENT/)

    const notFound = await verify(envelopeFile, '--jwks', `${baseUrl}/missing`)
    assert.equal(notFound.code, 2)
    assert.match(notFound.stderr, /^error: JWKS fetch from .* failed: HTTP 404/)

    const notJwks = path.join(dir, 'not-jwks.json')
    await writeFile(notJwks, '{"kty":"OKP"}')
    const shape = await verify(envelopeFile, '--jwks', notJwks)
    assert.equal(shape.code, 2)
    assert.match(shape.stderr, /has no "keys" array/)
  })

  it('prints the usage on --help and exits 0', async () => {
    const result = await verify('--help')
    assert.equal(result.code, 0)
    assert.match(result.stdout, /^usage: arbiter verify/)
  })
})

import assert from 'node:assert/strict'
import { createHash, createHmac, createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { after, before, describe, it } from 'node:test'
import canonicalize from 'canonicalize'
import type { FastifyInstance, InjectOptions } from 'fastify'
import { CompactSign, importJWK } from 'jose'
import { buildApp } from '../../src/app.ts'
import { loggerOptions } from '../../src/logger.ts'
import { ensureAdminKey } from '../../src/services/keys.ts'
import { registerSigningKey } from '../../src/services/signing-keys.ts'
import { newSigningKey } from '../helpers/app.ts'
import { createTestDatabase, type TestDatabase, testPoolMax } from '../helpers/database.ts'
import { CRITERION, EVIDENCE, uniqueRun } from '../helpers/fixtures.ts'
import { mapBounded, runCli } from '../helpers/process.ts'
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.ts'

/**
 * Security regressions: signed manifests cannot be altered or forged past the offline verifier, a revoked key
 * stops working on the very next request (on every replica), and no secret ever reaches a log line or a
 * response: not the API keys, not the bootstrap key, not a probe's `{env}` header.
 */

const PROBE_SECRET = `probe-secret-${randomBytes(16).toString('hex')}`
const BOOTSTRAP_KEY = randomBytes(30).toString('base64url').slice(0, 40)

let db: TestDatabase
let proxy: TcpProxy
const logLines: string[] = []
const apps: FastifyInstance[] = []

/** The app as production builds it (server.ts: loggerOptions with redaction), logging at trace into memory. */
async function buildLoggedApp() {
  const stream = new Writable({
    write(chunk, _encoding, done) {
      logLines.push(String(chunk))
      done()
    },
  })
  const signingKey = await newSigningKey()
  const app = await buildApp({
    config: {
      connectionString: proxy.proxiedUrl(db.connectionString),
      dbPoolMax: testPoolMax(db.kind),
      bodyLimitBytes: 1024 * 1024,
      rateLimitPerMinute: 0,
      probeAllowedHosts: [],
      probeAllowPrivate: true,
      probeEnv: { PROBE_SECRET },
    },
    signingKey,
    logger: { ...loggerOptions({ logLevel: 'trace' }), stream },
  })
  apps.push(app)
  await registerSigningKey(app.services.db, signingKey)
  return app
}

before(async () => {
  db = await createTestDatabase()
  const target = new URL(db.connectionString)
  proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) })
})
after(async () => {
  for (const app of apps) await app.close()
  await proxy.close()
  await db.stop()
})

const call = (app: FastifyInstance, key: string | null, options: InjectOptions) =>
  app.inject({
    ...options,
    headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...options.headers },
  })

/** Runs the real CLI, `node --import tsx src/cli.ts verify …`, and returns its exit code and output. */
/**
 * The built `arbiter verify` on one envelope, timed. No time limit of its own: at most a few run at once
 * (mapBounded), and how long each took is reported, so a loaded machine makes the test slower, not red.
 */
async function runVerifyCli(envelopeFile: string, jwksFile: string) {
  const started = performance.now()
  const result = await runCli(['verify', envelopeFile, '--jwks', jwksFile], {})
  return { ...result, ms: Math.round(performance.now() - started) }
}

const b64 = (value: string | Buffer) => Buffer.from(value).toString('base64url')
const sha256 = (value: unknown) => `sha256:${createHash('sha256').update(canonicalize(value)!).digest('hex')}`

describe('security regressions', () => {
  it('rejects tampered manifests, digests and signatures, alg none and HS256 key confusion in the verify CLI', async (t) => {
    const app = await buildLoggedApp()
    await ensureAdminKey(app.services, BOOTSTRAP_KEY)
    const orchestrator = (
      await call(app, BOOTSTRAP_KEY, {
        method: 'POST',
        url: '/v1/admin/keys',
        payload: { role: 'orchestrator', orchestrator_ids: ['orch-a'], label: 'verify' },
      })
    ).json().key as string
    const decide = async () => {
      const created = await call(app, orchestrator, {
        method: 'POST',
        url: '/v1/outcomes',
        payload: { subagent_id: 'sec-agent', run_id: uniqueRun('sec'), evidence: EVIDENCE },
      })
      const id = created.json().outcome_id
      await call(app, orchestrator, {
        method: 'POST',
        url: `/v1/outcomes/${id}/interpretations`,
        payload: {
          orchestrator_id: 'orch-a',
          outcome_interpretation: 'success',
          success_criterion: CRITERION,
        },
      })
      const evaluated = await call(app, orchestrator, { method: 'POST', url: `/v1/outcomes/${id}/evaluate` })
      assert.equal(evaluated.statusCode, 200, evaluated.body)
      return evaluated.json() as { manifest: Record<string, unknown>; manifest_digest: string; jws: string }
    }
    const envelope = await decide()
    const other = await decide()
    const jwks = (await call(app, null, { method: 'GET', url: '/.well-known/jwks.json' })).json()
    const jwk = jwks.keys.find((k: { kid: string }) => k.kid === app.signingKey.kid)
    const [header, payload, signature] = envelope.jws.split('.') as [string, string, string]

    const flipped = { ...envelope.manifest, resolved_outcome: 'failure' }
    const signatureBytes = Buffer.from(signature, 'base64url')
    signatureBytes[10]! ^= 0x01
    const tamperedSignature = signatureBytes.toString('base64url')
    const forgedHeader = (alg: string) => b64(JSON.stringify({ alg, kid: jwk.kid }))
    const hmac = (alg: string, key: Buffer | string) => {
      const input = `${forgedHeader(alg)}.${payload}`
      return `${input}.${createHmac('sha256', key).update(input).digest('base64url')}`
    }
    const publicPem = createPublicKey({ key: jwk, format: 'jwk' }).export({ type: 'spki', format: 'pem' })
    const stranger = generateKeyPairSync('ed25519').privateKey
    const strangerJws = await new CompactSign(Buffer.from(canonicalize(envelope.manifest)!))
      .setProtectedHeader({ alg: 'Ed25519', kid: jwk.kid })
      .sign(stranger)
    const strangerJwk = { ...stranger.export({ format: 'jwk' }), kid: 'stranger' }
    const selfSigned = await new CompactSign(Buffer.from(canonicalize(envelope.manifest)!))
      .setProtectedHeader({ alg: 'Ed25519', kid: 'stranger' })
      .sign(await importJWK({ ...strangerJwk, alg: 'Ed25519' }, 'Ed25519'))

    const cases: { name: string; envelope: unknown; ok: boolean }[] = [
      { name: 'original', envelope, ok: true },
      { name: 'manifest field changed', envelope: { ...envelope, manifest: flipped }, ok: false },
      {
        name: 'manifest changed, digest recomputed',
        envelope: { ...envelope, manifest: flipped, manifest_digest: sha256(flipped) },
        ok: false,
      },
      { name: 'digest changed', envelope: { ...envelope, manifest_digest: sha256({ x: 1 }) }, ok: false },
      {
        name: 'signature changed',
        envelope: { ...envelope, jws: `${header}.${payload}.${tamperedSignature}` },
        ok: false,
      },
      { name: 'alg none', envelope: { ...envelope, jws: `${forgedHeader('none')}.${payload}.` }, ok: false },
      {
        name: 'HS256 keyed with the raw public key',
        envelope: { ...envelope, jws: hmac('HS256', Buffer.from(jwk.x, 'base64url')) },
        ok: false,
      },
      {
        name: 'HS256 keyed with the public PEM',
        envelope: { ...envelope, jws: hmac('HS256', publicPem) },
        ok: false,
      },
      {
        name: 'HS256 keyed with the JWK text',
        envelope: { ...envelope, jws: hmac('HS256', JSON.stringify(jwk)) },
        ok: false,
      },
      {
        name: 'signed by another key under the real kid',
        envelope: { ...envelope, jws: strangerJws },
        ok: false,
      },
      { name: 'signed by a key not in the JWKS', envelope: { ...envelope, jws: selfSigned }, ok: false },
      { name: 'signature of another manifest', envelope: { ...envelope, jws: other.jws }, ok: false },
      { name: 'an unsigned field added', envelope: { ...envelope, note: 'trust me' }, ok: false },
    ]
    const dir = await mkdtemp(join(tmpdir(), 'arbiter-verify-'))
    t.after(() => rm(dir, { recursive: true, force: true }))
    const jwksFile = join(dir, 'jwks.json')
    await writeFile(jwksFile, JSON.stringify(jwks))
    const results = await mapBounded(cases, async (c, i) => {
      const file = join(dir, `envelope-${i}.json`)
      await writeFile(file, JSON.stringify(c.envelope))
      return { ...c, ...(await runVerifyCli(file, jwksFile)) }
    })
    for (const r of results) {
      if (r.ok) {
        assert.equal(r.code, 0, `${r.name}: ${r.stderr}`)
        assert.match(r.stdout, /^ok: manifest /)
      } else {
        assert.equal(r.code, 1, `${r.name} must be rejected (exit ${r.code}): ${r.stdout}${r.stderr}`)
        assert.match(r.stderr, /^invalid: /, r.name)
      }
    }
    t.diagnostic(results.map((r) => `${r.name}: exit ${r.code} in ${r.ms} ms ${r.stderr.trim()}`).join(' | '))
  })

  it('stops a revoked key on the very next request, on every replica', async () => {
    const [replicaA, replicaB] = [await buildLoggedApp(), await buildLoggedApp()]
    await ensureAdminKey(replicaA.services, BOOTSTRAP_KEY)
    const create = async (body: object) => {
      const created = await call(replicaA, BOOTSTRAP_KEY, {
        method: 'POST',
        url: '/v1/admin/keys',
        payload: body,
      })
      assert.equal(created.statusCode, 201, created.body)
      return created.json() as { id: string; key: string }
    }
    const orchestrator = await create({
      role: 'orchestrator',
      orchestrator_ids: ['orch-a'],
      label: 'to revoke',
    })
    const admin = await create({ role: 'admin', label: 'admin to revoke' })
    const outcome = { subagent_id: 'sec-agent', run_id: uniqueRun('revoke'), evidence: EVIDENCE }
    const use = (app: FastifyInstance, key: string) =>
      call(app, key, { method: 'POST', url: '/v1/outcomes', payload: outcome })
    assert.equal((await use(replicaA, orchestrator.key)).statusCode, 201)
    assert.equal((await use(replicaB, orchestrator.key)).statusCode, 200)

    const revoked = await call(replicaB, admin.key, {
      method: 'DELETE',
      url: `/v1/admin/keys/${orchestrator.id}`,
    })
    assert.equal(revoked.statusCode, 204, revoked.body)
    for (const app of [replicaA, replicaB]) {
      const refused = await use(app, orchestrator.key)
      assert.equal(refused.statusCode, 401, refused.body)
      assert.match(String(refused.headers['content-type']), /^application\/problem\+json/)
      const read = await call(app, orchestrator.key, { method: 'GET', url: '/v1/outcomes' })
      assert.equal(read.statusCode, 401)
    }
    // An admin revoked by another admin loses its powers at once too, including over keys.
    assert.equal(
      (await call(replicaA, BOOTSTRAP_KEY, { method: 'DELETE', url: `/v1/admin/keys/${admin.id}` }))
        .statusCode,
      204,
    )
    const again = await call(replicaB, admin.key, {
      method: 'POST',
      url: '/v1/admin/keys',
      payload: { role: 'admin', label: 'sneaky' },
    })
    assert.equal(again.statusCode, 401, again.body)
    const audit = await call(replicaA, BOOTSTRAP_KEY, {
      method: 'GET',
      url: '/v1/audit/records?kind=key.revoked',
    })
    const revokedIds = audit.json().items.map((r: { data: { key_id: string } }) => r.data.key_id)
    assert.ok(
      revokedIds.includes(orchestrator.id) && revokedIds.includes(admin.id),
      'revocations are audited',
    )
  })

  it('never writes a key, the bootstrap key or a probe header secret to a log line or a response', async (t) => {
    const received: IncomingHttpHeaders[] = []
    // The probe target is hostile: it reflects the credential it was sent into its answer.
    const target = createServer((req, res) => {
      received.push(req.headers)
      const reflected = String(req.headers.authorization ?? '')
      const mode = req.url?.split('/')[2]
      if (mode === 'fail') {
        res.writeHead(500, { 'content-type': 'text/plain' })
        res.end(`upstream broke while checking ${reflected}`)
      } else if (mode === 'garbage') {
        res.writeHead(200, { 'content-type': 'text/plain' })
        res.end(`not json: ${reflected}`)
      } else {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ state: mode === 'settled' ? 'settled' : reflected, echo: reflected }))
      }
    })
    target.listen(0, '127.0.0.1')
    await once(target, 'listening')
    t.after(() => new Promise<void>((resolve) => target.close(() => resolve())))
    const targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}`

    const app = await buildLoggedApp()
    await ensureAdminKey(app.services, BOOTSTRAP_KEY)
    const bodies: string[] = []
    const secretsInKeyResponses: string[] = []
    const send = async (key: string | null, options: InjectOptions) => {
      const response = await call(app, key, options)
      if (options.url === '/v1/admin/keys' && options.method === 'POST')
        secretsInKeyResponses.push(response.body)
      else bodies.push(response.body)
      return response
    }
    const newKey = async (body: object) =>
      (await send(BOOTSTRAP_KEY, { method: 'POST', url: '/v1/admin/keys', payload: body })).json()
        .key as string
    const orchestrator = await newKey({ role: 'orchestrator', orchestrator_ids: ['orch-a'], label: 'logs' })
    const ops = await newKey({ role: 'ops', label: 'logs' })

    const registered = await send(BOOTSTRAP_KEY, {
      method: 'POST',
      url: '/v1/probes',
      payload: {
        name: 'ledger',
        request: {
          url: `${targetUrl}/refunds/{{params.mode}}`,
          headers: { authorization: { env: 'PROBE_SECRET' }, 'x-trace': 'sec' },
        },
        timeout_ms: 1_000,
        predicate: { status: 200, pointer: '/state', map: { settled: 'success', reversed: 'failure' } },
      },
    })
    assert.equal(registered.statusCode, 201, registered.body)
    const probeId = registered.json().probe_id
    assert.deepEqual(registered.json().definition.request.headers.authorization, { env: 'PROBE_SECRET' })

    // Dry runs: a clean result, and three answers that carry the secret back (unmapped value, 5xx, not JSON).
    const results: Record<string, { result: string | null; error: { code: string } | null }> = {}
    for (const mode of ['settled', 'reflect', 'fail', 'garbage']) {
      const run = await send(BOOTSTRAP_KEY, {
        method: 'POST',
        url: `/v1/probes/${probeId}/dry-run`,
        payload: { params: { mode } },
      })
      assert.equal(run.statusCode, 200, run.body)
      results[mode] = run.json()
    }
    assert.equal(results.settled!.result, 'success')
    assert.equal(results.reflect!.error?.code, 'unmapped_value')
    assert.equal(results.fail!.error?.code, 'status_mismatch')
    assert.equal(results.garbage!.error?.code, 'invalid_json')
    assert.equal(received.length, 4)
    for (const headers of received)
      assert.equal(headers.authorization, PROBE_SECRET, 'the probe sent its secret')

    // The probe also runs inside an evaluation, where its record is signed into a manifest.
    const outcome = await send(orchestrator, {
      method: 'POST',
      url: '/v1/outcomes',
      payload: {
        subagent_id: 'sec-agent',
        run_id: uniqueRun('logs'),
        evidence: EVIDENCE,
        probe: { probe_id: probeId, params: { mode: 'reflect' } },
      },
    })
    const id = outcome.json().outcome_id
    for (const [reading, criterion] of [
      ['success', CRITERION],
      ['failure', { require: ['exit_code == 0'] }],
    ] as const) {
      const orchestratorId = reading === 'success' ? 'orch-a' : 'orch-b'
      const key = reading === 'success' ? orchestrator : BOOTSTRAP_KEY
      await send(key, {
        method: 'POST',
        url: `/v1/outcomes/${id}/interpretations`,
        payload: {
          orchestrator_id: orchestratorId,
          outcome_interpretation: reading,
          success_criterion: criterion,
        },
      })
    }
    const evaluated = await send(orchestrator, { method: 'POST', url: `/v1/outcomes/${id}/evaluate` })
    assert.equal(evaluated.statusCode, 200, evaluated.body)
    assert.equal(evaluated.json().manifest.ground_truth_arbiter_predicate.error.code, 'unmapped_value')

    // Error paths that log: wrong role, unknown key, and the database going away mid-request.
    await send(ops, { method: 'POST', url: '/v1/probes', payload: {} })
    await send(`${orchestrator}x`, { method: 'GET', url: '/v1/outcomes' })
    await send(null, { method: 'GET', url: `/v1/outcomes?api_key=${'x'.repeat(8)}` })
    proxy.cut()
    for (const key of [orchestrator, ops, BOOTSTRAP_KEY]) {
      const down = await send(key, { method: 'GET', url: '/v1/outcomes' })
      assert.equal(down.statusCode, 503)
    }
    proxy.restore()
    for (let i = 0; i < 50; i++) {
      if ((await call(app, null, { method: 'GET', url: '/readyz' })).statusCode === 200) break
      await new Promise((resolve) => setTimeout(resolve, 100))
    }

    // Reads of everything stored about it.
    await send(ops, { method: 'GET', url: `/v1/audit/outcomes/${id}` })
    await send(ops, { method: 'GET', url: '/v1/audit/records?limit=500' })
    await send(ops, { method: 'GET', url: '/v1/audit/records', headers: { accept: 'application/x-ndjson' } })
    await send(BOOTSTRAP_KEY, { method: 'GET', url: `/v1/probes/${probeId}` })
    await send(BOOTSTRAP_KEY, { method: 'GET', url: '/v1/admin/keys' })
    await send(orchestrator, { method: 'GET', url: `/v1/manifests?outcome_id=${id}` })
    await send(null, { method: 'GET', url: '/metrics' })

    // Should a future log call carry a header set or a key object, the production logger still redacts it.
    app.log.info(
      { req: { headers: { authorization: `Bearer ${orchestrator}`, cookie: ops } } },
      'request seen',
    )
    app.log.info({ headers: { authorization: `Bearer ${BOOTSTRAP_KEY}` } }, 'headers seen')
    app.log.info(
      { key: ops, secret: PROBE_SECRET, created: { key: orchestrator, secret: PROBE_SECRET } },
      'key',
    )

    assert.ok(logLines.length > 50, `trace logging captured (${logLines.length} lines)`)
    assert.ok(
      logLines.some((line) => line.includes('"level":50') || line.includes('"level":40')),
      'error paths were logged',
    )
    const secrets = { 'bootstrap key': BOOTSTRAP_KEY, 'orchestrator key': orchestrator, 'ops key': ops }
    for (const [name, secret] of Object.entries({ ...secrets, 'probe secret': PROBE_SECRET })) {
      const leaked = logLines.filter((line) => line.includes(secret))
      assert.deepEqual(leaked, [], `the ${name} appears in ${leaked.length} log line(s)`)
      const inBodies = bodies.filter((body) => body.includes(secret))
      assert.deepEqual(inBodies, [], `the ${name} appears in a response body`)
    }
    // A key secret is shown once, in the answer that created it, and nowhere else; the probe secret never.
    assert.ok(secretsInKeyResponses.some((body) => body.includes(orchestrator)))
    assert.ok(!secretsInKeyResponses.some((body) => body.includes(PROBE_SECRET)))
    await app.services.auditLog.catchUp()
    const { rows } = await app.db.query(
      `SELECT count(*)::int AS n FROM audit_records WHERE data::text LIKE '%' || $1 || '%'`,
      [PROBE_SECRET],
    )
    assert.equal(rows[0].n, 0, 'the probe secret is in no audit record')
    t.diagnostic(`log lines scanned ${logLines.length}, response bodies scanned ${bodies.length}`)
  })
})

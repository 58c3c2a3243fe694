import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { CompactSign } from 'jose'
import {
  type ArbiterClient,
  ArbiterError,
  ArbiterVerificationError,
  type CreateOutcomeBody,
  isEvaluationPending,
  type ManifestEnvelope,
  paginate,
  type VerificationCheck,
  verifyEnvelope,
} from '../src/index.ts'
import { EVIDENCE, type LiveArbiter, startLiveArbiter } from './helpers/live.ts'

// One live Arbiter for the file (closed after its last test): building one per test would only add start-up time.
const live: LiveArbiter = await startLiveArbiter({ after })
const orchA = live.client(await live.key('orchestrator', ['orch-a']))
const orchB = live.client(await live.key('orchestrator', ['orch-b']))
const dashboard = live.client(await live.key('dashboard'))

async function decidedEnvelope(runId: string): Promise<ManifestEnvelope> {
  const outcome = await orchA.outcomes.create({
    subagent_id: 'refund-agent',
    run_id: runId,
    evidence: EVIDENCE,
  })
  await orchA.outcomes.interpret(outcome.outcome_id, {
    orchestrator_id: 'orch-a',
    outcome_interpretation: 'success',
    success_criterion: { require: ['exit_code == 0'] },
  })
  const result = await orchA.outcomes.evaluate(outcome.outcome_id)
  assert.ok(!isEvaluationPending(result))
  return result
}

describe('an orchestrator round trip against a live Arbiter', () => {
  it('creates an outcome, collects two interpretations, evaluates, and verifies the signed manifest', async () => {
    const body: CreateOutcomeBody = {
      subagent_id: 'refund-agent',
      run_id: 'run-2026-11-29-0001',
      evidence: EVIDENCE,
      expected_orchestrators: ['orch-a', 'orch-b'],
      arbiter_orchestrator_id: 'orch-a',
    }
    const outcome = await orchA.outcomes.create(body)
    assert.equal(outcome.status, 'open')
    assert.deepEqual(
      await orchB.outcomes.create(body),
      outcome,
      'the natural key gives the same outcome back',
    )

    const waiting = await orchA.outcomes.evaluate(outcome.outcome_id)
    assert.ok(isEvaluationPending(waiting))
    assert.deepEqual(waiting.missing_orchestrators, ['orch-a', 'orch-b'])

    const criterion = { require: ['exit_code == 0', 'receipt present'], min_confidence: 0.8 }
    const a = await orchA.outcomes.interpret(outcome.outcome_id, {
      orchestrator_id: 'orch-a',
      success_criterion: criterion,
      outcome_interpretation: 'success',
      intended_action: { kind: 'proceed', resources: ['refund:re_1'] },
    })
    assert.equal(a.revision, 1)
    const b = await orchB.outcomes.interpret(outcome.outcome_id, {
      orchestrator_id: 'orch-b',
      success_criterion: criterion,
      outcome_interpretation: 'failure',
      intended_action: { kind: 'compensate', resources: ['refund:re_1'] },
      rationale: 'receipt missing from ledger',
    })
    assert.equal(b.orchestrator_id, 'orch-b')

    const decided = await orchB.outcomes.evaluate(outcome.outcome_id)
    assert.ok(!isEvaluationPending(decided))
    const { manifest } = decided
    assert.equal(manifest.verdict, 'ARBITER_DECIDES')
    assert.equal(manifest.directive, 'PROCEED')
    assert.equal(manifest.resolved_outcome, 'success')
    assert.equal(manifest.action_owner, 'orch-a', 'one orchestrator acts: no duplicate compensation')
    const again = await orchA.outcomes.evaluate(outcome.outcome_id)
    assert.ok(!isEvaluationPending(again))
    assert.equal(
      again.manifest.manifest_id,
      manifest.manifest_id,
      'both orchestrators receive the same manifest',
    )

    const fetched = await dashboard.manifests.get(manifest.manifest_id)
    assert.equal(fetched.manifest_digest, decided.manifest_digest)
    const jwks = await dashboard.jwks()
    const verified = await verifyEnvelope(fetched, jwks)
    assert.ok(jwks.keys.some((key) => key.kid === verified.kid))
    assert.equal(verified.manifestDigest, fetched.manifest_digest)
    assert.equal(verified.manifest.manifest_id, manifest.manifest_id)
    assert.equal((await orchA.manifests.verify(fetched)).kid, verified.kid)

    // A different reading after the decision is stored as dissent and refused with the manifest that stands.
    const dissent = await orchB.outcomes
      .interpret(outcome.outcome_id, {
        orchestrator_id: 'orch-b',
        success_criterion: criterion,
        outcome_interpretation: 'partial',
      })
      .catch((err: unknown) => err)
    assert.ok(dissent instanceof ArbiterError)
    assert.equal(dissent.status, 409)
    assert.equal(dissent.manifestId, manifest.manifest_id)
    assert.equal((await orchA.outcomes.get(outcome.outcome_id)).manifest_id, manifest.manifest_id)
  })

  it('lists every page with paginate', async () => {
    for (const runId of ['page-1', 'page-2', 'page-3']) {
      await orchA.outcomes.create({ subagent_id: 'pager', run_id: runId, evidence: EVIDENCE })
    }
    const runIds: string[] = []
    for await (const outcome of paginate(dashboard.outcomes.list, { subagent_id: 'pager', limit: '1' })) {
      runIds.push(outcome.run_id)
    }
    assert.deepEqual(runIds.sort(), ['page-1', 'page-2', 'page-3'])
  })
})

describe('problem+json answers from a live Arbiter', () => {
  it('raises a 400 as ArbiterError naming each field in errors', async () => {
    const body = {
      subagent_id: 'x',
      run_id: 'y',
      evidence: [{ kind: 'telepathy', content: 1 }],
      colour: 'red',
    }
    const error = await orchA.outcomes
      .create(body as unknown as CreateOutcomeBody)
      .catch((err: unknown) => err)
    assert.ok(error instanceof ArbiterError)
    assert.equal(error.status, 400)
    assert.ok(error.errors.length > 0, 'field errors are carried')
    const paths = error.errors.map((e) => e.path)
    assert.ok(
      paths.some((path) => path.includes('evidence')) || paths.some((path) => path.includes('colour')),
      paths.join(),
    )
  })

  it('raises 401, 403 and 404 with their status and title', async () => {
    const outcome = await orchA.outcomes.create({ subagent_id: 'errors', run_id: 'r1', evidence: EVIDENCE })
    const unknownKey = await live
      .client('arb_nobody')
      .outcomes.get(outcome.outcome_id)
      .catch((e: unknown) => e)
    assert.ok(unknownKey instanceof ArbiterError)
    assert.equal(unknownKey.status, 401)
    const notMine = await orchA.outcomes
      .interpret(outcome.outcome_id, {
        orchestrator_id: 'orch-b',
        outcome_interpretation: 'success',
        success_criterion: { require: [] },
      })
      .catch((e: unknown) => e)
    assert.ok(notMine instanceof ArbiterError)
    assert.equal(notMine.status, 403)
    const missing = await orchA.outcomes.get('00000000-0000-4000-8000-000000000000').catch((e: unknown) => e)
    assert.ok(missing instanceof ArbiterError)
    assert.equal(missing.status, 404)
    assert.equal(typeof missing.title, 'string')
  })
})

describe('a tampered envelope', () => {
  let envelope: ManifestEnvelope
  let jwks: Awaited<ReturnType<ArbiterClient['jwks']>>
  before(async () => {
    envelope = await decidedEnvelope('tamper-1')
    jwks = await dashboard.jwks()
  })

  async function refusedWith(candidate: unknown, check: VerificationCheck, keys = jwks): Promise<void> {
    const error = await verifyEnvelope(candidate, keys).catch((err: unknown) => err)
    assert.ok(error instanceof ArbiterVerificationError, `expected a refusal, got ${String(error)}`)
    assert.equal(error.check, check, error.message)
  }

  const b64url = (text: string) => Buffer.from(text).toString('base64url')
  const parts = () => envelope.jws.split('.') as [string, string, string]

  it('verifies untouched', async () => {
    assert.equal((await verifyEnvelope(envelope, jwks)).manifestDigest, envelope.manifest_digest)
  })

  it('is refused when the manifest changed and the digest did not', async () => {
    await refusedWith({ ...envelope, manifest: { ...envelope.manifest, directive: 'HALT' } }, 'digest')
  })

  it('is refused when the digest was changed', async () => {
    await refusedWith({ ...envelope, manifest_digest: `sha256:${'0'.repeat(64)}` }, 'digest')
  })

  it('is refused when the manifest and its digest were changed together (the payload no longer matches)', async () => {
    const { canonicalJson, sha256Digest } = await import('@arbiter/transparency')
    const manifest = { ...envelope.manifest, action_owner: 'orch-b' }
    await refusedWith(
      { ...envelope, manifest, manifest_digest: sha256Digest(canonicalJson(manifest)) },
      'payload',
    )
  })

  it('is refused when the signed payload was swapped', async () => {
    const [header, , signature] = parts()
    await refusedWith(
      { ...envelope, jws: `${header}.${b64url('{"verdict":"HALT"}')}.${signature}` },
      'signature',
    )
  })

  it('is refused when the signature was changed', async () => {
    const [header, payload, signature] = parts()
    const flipped = signature.slice(0, 10) + (signature[10] === 'A' ? 'B' : 'A') + signature.slice(11)
    await refusedWith({ ...envelope, jws: `${header}.${payload}.${flipped}` }, 'signature')
  })

  it('is refused when the algorithm is none, or HS256 keyed with the public key', async () => {
    const [header, payload] = parts()
    const { kid } = JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as { kid: string }
    await refusedWith(
      { ...envelope, jws: `${b64url(JSON.stringify({ alg: 'none', kid }))}.${payload}.` },
      'alg',
    )
    const publicKey = jwks.keys.find((key) => key.kid === kid)!
    const hs256 = await new CompactSign(Buffer.from(payload, 'base64url'))
      .setProtectedHeader({ alg: 'HS256', kid })
      .sign(new Uint8Array(Buffer.from(publicKey.x, 'base64url')))
    await refusedWith({ ...envelope, jws: hs256 }, 'alg')
  })

  it('is refused when its key is not in the JWKS', async () => {
    await refusedWith(envelope, 'kid', { keys: [] })
  })

  it('is refused with an extra member, or an audit_seq that contradicts the signed one', async () => {
    await refusedWith({ ...envelope, verified: true }, 'malformed')
    const signedSeq = (envelope.manifest as { audit_seq?: number }).audit_seq
    if (signedSeq !== undefined) await refusedWith({ ...envelope, audit_seq: signedSeq + 1 }, 'audit_seq')
  })

  it('reads the JWKS again when a kid is unknown, in case a key was rotated in', async () => {
    let jwksFetches = 0
    const counting = live.client(undefined, {
      fetch: (request) => {
        if (new URL(request.url).pathname === '/.well-known/jwks.json') jwksFetches++
        return fetch(request)
      },
    })
    await counting.manifests.verify(envelope)
    await counting.manifests.verify(envelope)
    assert.equal(jwksFetches, 1, 'the JWKS is read once while every kid is known')
    const [, payload, signature] = parts()
    const unknownKid = `${b64url(JSON.stringify({ alg: 'Ed25519', kid: 'rotated-in' }))}.${payload}.${signature}`
    await assert.rejects(
      counting.manifests.verify({ ...envelope, jws: unknownKid }),
      ArbiterVerificationError,
    )
    assert.equal(jwksFetches, 2)
  })
})

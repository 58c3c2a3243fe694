import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import {
  outcomeRules,
  type RequestedRules,
  type SubagentPolicy,
} from '../../../src/domain/outcome/subagent-policy.ts'
import { FALLBACK_POLICIES } from '../../../src/domain/outcome/vocabulary.ts'

const CREATED = Date.parse('2026-11-30T12:00:00.000Z')
const PROBE = '11111111-1111-4111-8111-111111111111'
const OTHER_PROBE = '22222222-2222-4222-8222-222222222222'

const POLICY: SubagentPolicy = {
  expected_orchestrators: ['orch-a', 'orch-b'],
  arbiter_orchestrator_id: 'orch-b',
  deadline_seconds: 600,
  fallback_policy: 'strictest_wins',
  probe_id: PROBE,
}

/** A policy that set only the orchestrators: every other field holds its default, and is locked to it. */
const BARE_POLICY: SubagentPolicy = {
  expected_orchestrators: ['orch-a', 'orch-b'],
  arbiter_orchestrator_id: null,
  deadline_seconds: null,
  fallback_policy: 'escalate',
  probe_id: null,
}

function errorPaths(body: RequestedRules, policy: SubagentPolicy | null): string[] {
  const result = outcomeRules(body, policy, CREATED)
  return result.ok ? [] : result.errors.map((e) => e.path)
}

describe('outcomeRules without a policy', () => {
  it('takes the body, with defaults for what it leaves out', () => {
    assert.deepEqual(outcomeRules({}, null, CREATED), {
      ok: true,
      rules: {
        expected_orchestrators: [],
        deadline: null,
        arbiter_orchestrator_id: null,
        probe: null,
        fallback_policy: 'escalate',
      },
    })
  })

  it('keeps what the body sets: orchestrators sorted and unique, a past deadline, its own probe', () => {
    const result = outcomeRules(
      {
        expected_orchestrators: ['orch-b', 'orch-a', 'orch-b'],
        deadline: '2000-01-01T00:00:00Z',
        arbiter_orchestrator_id: 'orch-a',
        probe: { probe_id: PROBE },
        fallback_policy: 'strictest_wins',
      },
      null,
      CREATED,
    )
    assert.deepEqual(result, {
      ok: true,
      rules: {
        expected_orchestrators: ['orch-a', 'orch-b'],
        deadline: '2000-01-01T00:00:00Z',
        arbiter_orchestrator_id: 'orch-a',
        probe: { probe_id: PROBE, params: {} },
        fallback_policy: 'strictest_wins',
      },
    })
  })

  it('needs the probe id: no policy names the probe', () => {
    assert.deepEqual(errorPaths({ probe: { params: { id: 1 } } }, null), ['/probe/probe_id'])
  })
})

describe('outcomeRules under a policy', () => {
  it('copies every field from the policy; the deadline counts from creation; the body gives the params', () => {
    const result = outcomeRules({ probe: { params: { refund_id: 're_1' } } }, POLICY, CREATED)
    assert.deepEqual(result, {
      ok: true,
      rules: {
        expected_orchestrators: ['orch-a', 'orch-b'],
        deadline: '2026-11-30T12:10:00.000Z',
        arbiter_orchestrator_id: 'orch-b',
        probe: { probe_id: PROBE, params: { refund_id: 're_1' } },
        fallback_policy: 'strictest_wins',
      },
    })
  })

  it("attaches the policy's probe with empty params when the body names none", () => {
    const result = outcomeRules({}, POLICY, CREATED)
    assert.ok(result.ok)
    assert.deepEqual(result.rules.probe, { probe_id: PROBE, params: {} })
  })

  it('locks the fields a policy omitted to their defaults', () => {
    assert.deepEqual(outcomeRules({}, BARE_POLICY, CREATED), {
      ok: true,
      rules: {
        expected_orchestrators: ['orch-a', 'orch-b'],
        deadline: null,
        arbiter_orchestrator_id: null,
        probe: null,
        fallback_policy: 'escalate',
      },
    })
  })

  const rows: { name: string; body: RequestedRules; policy: SubagentPolicy; errors: string[] }[] = [
    {
      name: 'the same orchestrators in another order, repeated',
      body: { expected_orchestrators: ['orch-b', 'orch-a', 'orch-a'] },
      policy: POLICY,
      errors: [],
    },
    {
      name: 'an orchestrator left out',
      body: { expected_orchestrators: ['orch-a'] },
      policy: POLICY,
      errors: ['/expected_orchestrators'],
    },
    {
      name: 'an orchestrator added',
      body: { expected_orchestrators: ['orch-a', 'orch-b', 'orch-c'] },
      policy: POLICY,
      errors: ['/expected_orchestrators'],
    },
    {
      name: 'no orchestrators',
      body: { expected_orchestrators: [] },
      policy: POLICY,
      errors: ['/expected_orchestrators'],
    },
    {
      name: 'a deadline under a policy with deadline_seconds',
      body: { deadline: '2030-01-01T00:00:00Z' },
      policy: POLICY,
      errors: ['/deadline'],
    },
    {
      name: 'a deadline under a policy without one',
      body: { deadline: '2030-01-01T00:00:00Z' },
      policy: BARE_POLICY,
      errors: ['/deadline'],
    },
    { name: "the policy's arbiter", body: { arbiter_orchestrator_id: 'orch-b' }, policy: POLICY, errors: [] },
    {
      name: 'another arbiter',
      body: { arbiter_orchestrator_id: 'orch-a' },
      policy: POLICY,
      errors: ['/arbiter_orchestrator_id'],
    },
    {
      name: 'an arbiter where the policy names none',
      body: { arbiter_orchestrator_id: 'orch-a' },
      policy: BARE_POLICY,
      errors: ['/arbiter_orchestrator_id'],
    },
    {
      name: "the policy's probe, with params",
      body: { probe: { probe_id: PROBE, params: { x: 1 } } },
      policy: POLICY,
      errors: [],
    },
    {
      name: 'another probe',
      body: { probe: { probe_id: OTHER_PROBE } },
      policy: POLICY,
      errors: ['/probe/probe_id'],
    },
    {
      name: 'a probe where the policy attaches none',
      body: { probe: { probe_id: PROBE } },
      policy: BARE_POLICY,
      errors: ['/probe'],
    },
    {
      name: 'params where the policy attaches no probe',
      body: { probe: { params: { x: 1 } } },
      policy: BARE_POLICY,
      errors: ['/probe'],
    },
    {
      name: "the policy's fallback",
      body: { fallback_policy: 'strictest_wins' },
      policy: POLICY,
      errors: [],
    },
    {
      name: 'another fallback',
      body: { fallback_policy: 'escalate' },
      policy: POLICY,
      errors: ['/fallback_policy'],
    },
    {
      name: 'the default fallback, spelled out',
      body: { fallback_policy: 'escalate' },
      policy: BARE_POLICY,
      errors: [],
    },
    {
      name: 'a fallback where the policy left the default',
      body: { fallback_policy: 'strictest_wins' },
      policy: BARE_POLICY,
      errors: ['/fallback_policy'],
    },
    {
      // The attack that motivated policies: exclude orch-b, appoint itself arbiter, deadline long past.
      name: 'orch-a excluding orch-b and appointing itself arbiter with a past deadline',
      body: {
        expected_orchestrators: ['orch-b'],
        deadline: '2000-01-01T00:00:00Z',
        arbiter_orchestrator_id: 'orch-a',
        fallback_policy: 'strictest_wins',
      },
      policy: BARE_POLICY,
      errors: ['/expected_orchestrators', '/deadline', '/arbiter_orchestrator_id', '/fallback_policy'],
    },
  ]
  for (const { name, body, policy, errors } of rows) {
    it(`${errors.length === 0 ? 'accepts' : 'refuses'} ${name}`, () => {
      assert.deepEqual(errorPaths(body, policy), errors)
    })
  }

  it('names in every message what the policy sets', () => {
    const result = outcomeRules(
      { expected_orchestrators: ['orch-a'], arbiter_orchestrator_id: 'orch-a' },
      POLICY,
      CREATED,
    )
    assert.ok(!result.ok)
    assert.match(result.errors[0]!.message, /"orch-a","orch-b"/)
    assert.match(result.errors[1]!.message, /"orch-b"/)
  })
})

describe('outcomeRules, for any policy and any body', () => {
  const id = fc.constantFrom('orch-a', 'orch-b', 'orch-c')
  const policyArb: fc.Arbitrary<SubagentPolicy> = fc.record({
    expected_orchestrators: fc.uniqueArray(id).map((ids) => [...ids].sort()),
    arbiter_orchestrator_id: fc.option(id, { nil: null }),
    deadline_seconds: fc.option(fc.integer({ min: 1, max: 10_000_000 }), { nil: null }),
    fallback_policy: fc.constantFrom(...FALLBACK_POLICIES),
    probe_id: fc.option(fc.constantFrom(PROBE, OTHER_PROBE), { nil: null }),
  })
  const bodyArb: fc.Arbitrary<RequestedRules> = fc.record(
    {
      expected_orchestrators: fc.array(id, { maxLength: 4 }),
      deadline: fc.constant('2000-01-01T00:00:00Z'),
      arbiter_orchestrator_id: id,
      probe: fc.record(
        { probe_id: fc.constantFrom(PROBE, OTHER_PROBE), params: fc.dictionary(fc.string(), fc.integer()) },
        { requiredKeys: [] },
      ),
      fallback_policy: fc.constantFrom(...FALLBACK_POLICIES),
    },
    { requiredKeys: [] },
  )

  it("yields the policy's rules (and the body's params) or an error at each field that differs from it", () => {
    fc.assert(
      fc.property(policyArb, bodyArb, (policy, body) => {
        const result = outcomeRules(body, policy, CREATED)
        const differing = [
          body.expected_orchestrators !== undefined &&
            [...new Set(body.expected_orchestrators)].sort().join() !==
              policy.expected_orchestrators.join() &&
            '/expected_orchestrators',
          body.deadline !== undefined && '/deadline',
          body.arbiter_orchestrator_id !== undefined &&
            body.arbiter_orchestrator_id !== policy.arbiter_orchestrator_id &&
            '/arbiter_orchestrator_id',
          body.probe !== undefined && policy.probe_id === null && '/probe',
          body.probe?.probe_id !== undefined &&
            policy.probe_id !== null &&
            body.probe.probe_id !== policy.probe_id &&
            '/probe/probe_id',
          body.fallback_policy !== undefined &&
            body.fallback_policy !== policy.fallback_policy &&
            '/fallback_policy',
        ].filter((path): path is string => path !== false)
        if (!result.ok) {
          assert.deepEqual(
            result.errors.map((e) => e.path),
            differing,
          )
          return
        }
        assert.deepEqual(differing, [])
        assert.deepEqual(result.rules, {
          expected_orchestrators: policy.expected_orchestrators,
          deadline:
            policy.deadline_seconds === null
              ? null
              : new Date(CREATED + policy.deadline_seconds * 1000).toISOString(),
          arbiter_orchestrator_id: policy.arbiter_orchestrator_id,
          probe:
            policy.probe_id === null ? null : { probe_id: policy.probe_id, params: body.probe?.params ?? {} },
          fallback_policy: policy.fallback_policy,
        })
      }),
    )
  })
})

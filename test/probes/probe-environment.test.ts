import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { probeDefinitionSchema } from '../../src/probes/probe-definition.ts'
import { isReservedEnvName, probeEnvironment } from '../../src/probes/probe-environment.ts'

const reserved = [
  'ARBITER_SIGNING_KEY',
  'ARBITER_PROBE_ALLOW_PRIVATE',
  'ARBITER_PROBE_ALLOWED_HOSTS',
  'arbiter_signing_key',
  'DATABASE_URL',
  'TEST_DATABASE_URL',
  'database_url',
  'PGPASSWORD',
  'PGHOST',
  'PG',
  'pguser',
  'OTEL_EXPORTER_OTLP_HEADERS',
  'otel_exporter_otlp_traces_headers',
]
const free = [
  'LEDGER_TOKEN',
  'HOME',
  'MY_ARBITER_TOKEN',
  'DATABASE_URL_HINT',
  'API_PG_KEY',
  'ARBITER',
  'P_G',
  'OTEL',
  'MY_OTEL_TOKEN',
]

const envName = fc.oneof(
  fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,20}$/),
  fc
    .tuple(
      fc.constantFrom('ARBITER_', 'PG', 'pg', 'Arbiter_', 'OTEL_', 'X'),
      fc.stringMatching(/^[A-Za-z0-9_]{0,12}$/),
    )
    .map(([prefix, rest]) => `${prefix}${rest}`),
  fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,8}$/).map((prefix) => `${prefix}DATABASE_URL`),
)

function definitionReading(name: string) {
  return {
    name: 'p',
    request: { url: 'https://h.example/', headers: { authorization: { env: name } } },
    predicate: { status: 200, pointer: '', map: { ok: 'success' } },
  }
}

describe('isReservedEnvName', () => {
  for (const name of reserved) {
    it(`reserves ${name}`, () => assert.equal(isReservedEnvName(name), true))
  }
  for (const name of free) {
    it(`leaves ${name} to probes`, () => assert.equal(isReservedEnvName(name), false))
  }
})

describe('probeEnvironment', () => {
  it('hands probes every variable except the reserved ones', () => {
    const env = Object.fromEntries([...reserved, ...free].map((name) => [name, `value of ${name}`]))
    assert.deepEqual(Object.keys(probeEnvironment(env)).sort(), [...free].sort())
  })

  it('registration refuses exactly the names the probe environment leaves out (property)', () => {
    fc.assert(
      fc.property(envName, (name) => {
        const handedToProbes = Object.hasOwn(probeEnvironment({ [name]: 'x' }), name)
        const registers = probeDefinitionSchema.safeParse(definitionReading(name)).success
        assert.equal(handedToProbes, !isReservedEnvName(name))
        assert.equal(registers, handedToProbes, name)
      }),
      { numRuns: 500 },
    )
  })
})

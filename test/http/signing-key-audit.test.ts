import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { registerSigningKey } from '../../src/services/signing-keys.ts'
import { buildTestApp, newSigningKey, type TestApp } from '../helpers/app.ts'

async function added(app: TestApp) {
  const response = await app.request(app.adminKey, {
    method: 'GET',
    url: '/v1/audit/records?kind=signing_key.added',
  })
  assert.equal(response.statusCode, 200, response.body)
  return response.json().items.map((r: { actor: string; data: unknown }) => [r.actor, r.data])
}

describe('signing_key.added', () => {
  it('is written once per key: at its first start, never on a restart, once for replicas starting together', async (t) => {
    const signingKey = await newSigningKey()
    const app = await buildTestApp(t, { signingKey })
    const first = [['system', { kid: signingKey.kid, alg: 'Ed25519' }]]
    assert.deepEqual(await added(app), first, "a fresh database's first start records its key")

    await registerSigningKey(app.app.services.db, signingKey)
    assert.deepEqual(await added(app), first, 'a restart with the same key writes nothing')

    const next = await newSigningKey()
    await Promise.all(Array.from({ length: 3 }, () => registerSigningKey(app.app.services.db, next)))
    assert.deepEqual(
      await added(app),
      [...first, ['system', { kid: next.kid, alg: 'Ed25519' }]],
      'three replicas starting with a new key write one record',
    )
  })

  it('is written for the new kid of a rotation, the old kid staying in the JWKS', async (t) => {
    const signingKey = await newSigningKey()
    const app = await buildTestApp(t, { signingKey })
    // What `arbiter signing-key rotate` does once it has made the new key: record it.
    const rotated = await newSigningKey()
    await registerSigningKey(app.app.services.db, rotated)
    assert.deepEqual(
      (await added(app)).map(([, data]: [string, { kid: string }]) => data.kid),
      [signingKey.kid, rotated.kid],
    )
    const jwks = (await app.request(null, { method: 'GET', url: '/.well-known/jwks.json' })).json()
    assert.deepEqual(
      jwks.keys.map((k: { kid: string }) => k.kid).sort(),
      [signingKey.kid, rotated.kid].sort(),
    )
  })
})

import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ConfigError, loadConfig } from '../src/config.ts'

describe('loadConfig', () => {
  it('fills the documented defaults', () => {
    const config = loadConfig({})
    assert.equal(config.port, 8080)
    assert.equal(config.host, '127.0.0.1')
    assert.equal(config.databaseUrl, undefined)
    assert.equal(config.dataDir, './.arbiter')
    assert.deepEqual(config.probeAllowedHosts, [])
    assert.equal(config.probeAllowPrivate, false)
    assert.equal(config.bodyLimitBytes, 1048576)
    assert.equal(config.logLevel, 'info')
    assert.equal(config.sequencerLingerMs, 20)
    assert.equal(config.authFailuresPerMinute, 60)
    assert.ok(Object.isFrozen(config))
  })

  it('parses every variable', () => {
    const config = loadConfig({
      PORT: '9000',
      HOST: '0.0.0.0',
      DATABASE_URL: 'postgres://u@db:5432/arbiter',
      ARBITER_DATA_DIR: '/var/lib/arbiter',
      ARBITER_PROBE_ALLOWED_HOSTS: 'ledger.example.com, *.corp.example ,10.0.0.5',
      ARBITER_PROBE_ALLOW_PRIVATE: 'true',
      ARBITER_BODY_LIMIT_BYTES: '2048',
      ARBITER_SEQUENCER_LINGER_MS: '0',
      LOG_LEVEL: 'warn',
    })
    assert.equal(config.sequencerLingerMs, 0)
    assert.equal(config.port, 9000)
    assert.equal(config.databaseUrl, 'postgres://u@db:5432/arbiter')
    assert.deepEqual(config.probeAllowedHosts, ['ledger.example.com', '*.corp.example', '10.0.0.5'])
    assert.equal(config.probeAllowPrivate, true)
    assert.equal(config.bodyLimitBytes, 2048)
  })

  const bad: [string, string][] = [
    ['PORT', 'eighty'],
    ['PORT', '70000'],
    ['DATABASE_URL', 'mysql://x'],
    ['ARBITER_PROBE_ALLOW_PRIVATE', 'maybe'],
    ['ARBITER_BODY_LIMIT_BYTES', '-1'],
    ['LOG_LEVEL', 'loud'],
    ['ARBITER_BOOTSTRAP_ADMIN_KEY', 'short'],
    ['ARBITER_SEQUENCER_LINGER_MS', '1001'],
    ['ARBITER_SEQUENCER_LINGER_MS', '-1'],
    ['ARBITER_AUTH_FAILURES_PER_MINUTE', 'many'],
    ['ARBITER_AUTH_FAILURES_PER_MINUTE', '-1'],
    ['ARBITER_AUTH_FAILURES_PER_MINUTE', '2.5'],
  ]
  for (const [variable, value] of bad) {
    it(`rejects ${variable}=${value} with one line naming the variable`, () => {
      assert.throws(
        () => loadConfig({ [variable]: value }),
        (err: unknown) =>
          err instanceof ConfigError &&
          err.message.startsWith(`invalid ${variable}:`) &&
          !err.message.includes('\n'),
      )
    })
  }

  it('reads ARBITER_AUTH_FAILURES_PER_MINUTE, 0 turning the throttle off', () => {
    assert.equal(loadConfig({ ARBITER_AUTH_FAILURES_PER_MINUTE: '5' }).authFailuresPerMinute, 5)
    assert.equal(loadConfig({ ARBITER_AUTH_FAILURES_PER_MINUTE: '0' }).authFailuresPerMinute, 0)
  })

  it('treats empty strings as unset', () => {
    assert.equal(loadConfig({ PORT: '', DATABASE_URL: '' }).port, 8080)
  })
})

import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ConfigError, loadConfig } from '../../src/config.ts'

describe('webhook configuration', () => {
  it('defaults to the probes’ forms: any public host, no private address, 24 h to fail, 72 h to disable, 7 days kept', () => {
    const config = loadConfig({})
    assert.deepEqual(config.webhookAllowedHosts, [])
    assert.equal(config.webhookAllowPrivate, false)
    assert.equal(config.webhookMaxAgeMs, 24 * 3_600_000)
    assert.equal(config.webhookDisableAfterMs, 72 * 3_600_000)
    assert.equal(config.webhookRetentionMs, 168 * 3_600_000)
    assert.equal(config.webhookRetryScheduleMs, undefined)
    assert.equal(config.webhookAttemptTimeoutMs, 10_000)
  })

  it('parses every webhook variable, hours as decimals', () => {
    const config = loadConfig({
      ARBITER_WEBHOOK_ALLOWED_HOSTS: 'hooks.example.com, *.corp.example',
      ARBITER_WEBHOOK_ALLOW_PRIVATE: 'yes',
      ARBITER_WEBHOOK_MAX_AGE_HOURS: '0.5',
      ARBITER_WEBHOOK_DISABLE_AFTER_HOURS: '1.5',
      ARBITER_WEBHOOK_RETENTION_HOURS: '48',
      ARBITER_WEBHOOK_RETRY_SCHEDULE_MS: '100, 200,400',
      ARBITER_WEBHOOK_ATTEMPT_TIMEOUT_MS: '1000',
    })
    assert.deepEqual(config.webhookAllowedHosts, ['hooks.example.com', '*.corp.example'])
    assert.equal(config.webhookAllowPrivate, true)
    assert.equal(config.webhookMaxAgeMs, 1_800_000)
    assert.equal(config.webhookDisableAfterMs, 5_400_000)
    assert.equal(config.webhookRetentionMs, 48 * 3_600_000)
    assert.deepEqual(config.webhookRetryScheduleMs, [100, 200, 400])
    assert.equal(config.webhookAttemptTimeoutMs, 1000)
  })

  for (const [variable, value] of [
    ['ARBITER_WEBHOOK_ALLOWED_HOSTS', 'https://hooks.example.com'],
    ['ARBITER_WEBHOOK_ALLOW_PRIVATE', 'maybe'],
    ['ARBITER_WEBHOOK_MAX_AGE_HOURS', '0'],
    ['ARBITER_WEBHOOK_DISABLE_AFTER_HOURS', 'forever'],
    ['ARBITER_WEBHOOK_RETENTION_HOURS', '-1'],
    ['ARBITER_WEBHOOK_RETRY_SCHEDULE_MS', '100,soon'],
    ['ARBITER_WEBHOOK_ATTEMPT_TIMEOUT_MS', '60000'],
  ] as const) {
    it(`stops start-up on ${variable}=${value}, naming the variable`, () => {
      assert.throws(
        () => loadConfig({ [variable]: value }),
        (err: unknown) => err instanceof ConfigError && err.message.startsWith(`invalid ${variable}: `),
      )
    })
  }
})

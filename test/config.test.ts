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
    assert.equal(config.trustProxy, false)
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
    ['OTEL_EXPORTER_OTLP_ENDPOINT', 'collector:4318'],
    ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'grpc://collector:4317'],
    ['OTEL_EXPORTER_OTLP_PROTOCOL', 'grpc'],
    ['OTEL_TRACES_SAMPLER', 'sometimes'],
    ['OTEL_SDK_DISABLED', 'perhaps'],
    ['ARBITER_TRUST_PROXY', 'yes'],
    ['ARBITER_TRUST_PROXY', '2'],
    ['ARBITER_TRUST_PROXY', '10.0.0.0/33'],
    ['ARBITER_TRUST_PROXY', '10.0.0.1, proxy.internal'],
    ['ARBITER_TRUST_PROXY', '10.1.2'],
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

  it('reads ARBITER_TRUST_PROXY: true, false, or a comma list of addresses and CIDRs', () => {
    assert.equal(loadConfig({ ARBITER_TRUST_PROXY: 'true' }).trustProxy, true)
    assert.equal(loadConfig({ ARBITER_TRUST_PROXY: 'false' }).trustProxy, false)
    assert.deepEqual(loadConfig({ ARBITER_TRUST_PROXY: '10.0.0.0/8, 192.0.2.7,2001:db8::/32' }).trustProxy, [
      '10.0.0.0/8',
      '192.0.2.7',
      '2001:db8::/32',
    ])
    assert.deepEqual(loadConfig({ ARBITER_TRUST_PROXY: 'loopback' }).trustProxy, ['loopback'])
  })

  it('refuses a number of hops for ARBITER_TRUST_PROXY, saying why and what to write', () => {
    assert.throws(
      () => loadConfig({ ARBITER_TRUST_PROXY: '1' }),
      (err: unknown) =>
        err instanceof ConfigError &&
        /^invalid ARBITER_TRUST_PROXY: a number of hops is not supported .*addresses or CIDRs/.test(
          err.message,
        ),
    )
  })

  it('reads ARBITER_AUTH_FAILURES_PER_MINUTE, 0 turning the throttle off', () => {
    assert.equal(loadConfig({ ARBITER_AUTH_FAILURES_PER_MINUTE: '5' }).authFailuresPerMinute, 5)
    assert.equal(loadConfig({ ARBITER_AUTH_FAILURES_PER_MINUTE: '0' }).authFailuresPerMinute, 0)
  })

  describe('tracing (the standard OTEL_* variables)', () => {
    it('is off with no OTLP endpoint set', () => {
      assert.equal(loadConfig({}).tracing, undefined)
      assert.equal(
        loadConfig({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' }).tracing,
        undefined,
      )
    })

    it('exports to OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces, as service `arbiter` unless named', () => {
      assert.deepEqual(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).tracing, {
        tracesEndpoint: 'http://collector:4318/v1/traces',
        serviceName: 'arbiter',
      })
      assert.deepEqual(
        loadConfig({
          OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example/base',
          OTEL_SERVICE_NAME: 'arbiter-eu',
        }).tracing,
        { tracesEndpoint: 'https://otel.example/base/v1/traces', serviceName: 'arbiter-eu' },
      )
    })

    it('takes OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as is, before the base endpoint', () => {
      const config = loadConfig({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://traces:9999/custom',
      })
      assert.equal(config.tracing?.tracesEndpoint, 'http://traces:9999/custom')
    })

    it('stays off when OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER=none says so', () => {
      const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }
      assert.equal(loadConfig({ ...endpoint, OTEL_SDK_DISABLED: 'true' }).tracing, undefined)
      assert.equal(loadConfig({ ...endpoint, OTEL_TRACES_EXPORTER: 'none' }).tracing, undefined)
    })
  })

  it('treats empty strings as unset', () => {
    assert.equal(loadConfig({ PORT: '', DATABASE_URL: '' }).port, 8080)
  })

  describe('ARBITER_PROBE_ALLOWED_HOSTS', () => {
    const refuse = (value: string) => {
      try {
        loadConfig({ ARBITER_PROBE_ALLOWED_HOSTS: value })
      } catch (err) {
        assert.ok(err instanceof ConfigError)
        assert.doesNotMatch(err.message, /\n/)
        return err.message
      }
      assert.fail(`${value} was accepted`)
    }

    it('refuses a URL where a host is expected, naming the variable, the entry, its host and the form', () => {
      assert.equal(
        refuse('https://ledger.example.com'),
        'invalid ARBITER_PROBE_ALLOWED_HOSTS: "https://ledger.example.com" is a URL, not a host (write its host: ledger.example.com); expected a comma list of host names (ledger.example.com), *.example.com or IP literals',
      )
    })

    const bad: [string, RegExp][] = [
      [
        'ledger.example.com, http://10.0.0.5:8080/x',
        /"http:\/\/10\.0\.0\.5:8080\/x" is a URL, not a host \(write its host: 10\.0\.0\.5\)/,
      ],
      [
        'ledger.example.com:443',
        /"ledger\.example\.com:443" is not a bare host \(no port, path or credentials\)/,
      ],
      ['ledger.example.com/api', /is not a bare host/],
      ['probe@ledger.example.com', /is not a bare host/],
      ['*', /"\*" only as a leading "\*\."/],
      ['*.*.example.com', /"\*" only as a leading "\*\."/],
      ['*.10.0.0.0', /"\*\." takes a name, not an IP address/],
      ['ledger example.com', /is not a bare host/],
    ]
    for (const [value, message] of bad) {
      it(`refuses ${value}`, () => {
        const text = refuse(value)
        assert.ok(text.startsWith('invalid ARBITER_PROBE_ALLOWED_HOSTS: '), text)
        assert.match(text, message)
        assert.match(text, /expected a comma list of host names/)
      })
    }

    it('accepts names, subdomain patterns and IP literals of either family', () => {
      const value =
        'ledger.example.com, *.corp.example, LEDGER.Example.COM., 10.0.0.5, 127.1, ::1, [2001:db8::1]'
      assert.deepEqual(loadConfig({ ARBITER_PROBE_ALLOWED_HOSTS: value }).probeAllowedHosts, [
        'ledger.example.com',
        '*.corp.example',
        'LEDGER.Example.COM.',
        '10.0.0.5',
        '127.1',
        '::1',
        '[2001:db8::1]',
      ])
    })
  })
})

import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { encodeTemplateValue, renderProbeUrl, validateProbeTemplate } from '../../src/probes/url-template.ts'

const outcome = { subagent_id: 'sa-1', run_id: 'run-1' }
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/
const wellFormed = (text: string) => !LONE_SURROGATE.test(text)

describe('validateProbeTemplate', () => {
  const valid = [
    'https://ledger.example.com/refunds/{{params.refund_id}}',
    'http://h.example/{{outcome.subagent_id}}/{{outcome.run_id}}?x={{params.x}}&y={{params.y_2}}',
    'https://h.example/plain',
    'https://h.example:8443/a{{params.x}}b?{{params.k}}={{params.v}}',
    'http://h.example?{{params.x}}',
    // A backslash ends the authority of an http(s) URL: what follows is path.
    'http://h.example\\{{params.x}}',
    // An '@' after the authority is path text, not userinfo.
    'http://h.example/{{params.x}}@evil.example',
    'http://[2001:db8::1]:8080/{{params.x}}',
  ]
  for (const url of valid) {
    it(`accepts ${url}`, () => {
      assert.equal(validateProbeTemplate(url), null)
    })
  }

  const invalid = [
    'https://h.example/{{outcome.orchestrator_id}}',
    'https://h.example/{{env.LEDGER_TOKEN}}',
    'https://h.example/{{ params.x }}',
    'https://h.example/{{params.}}',
    'https://h.example/{{params.a.b}}',
    'https://h.example/{{params.x',
    'https://h.example/params.x}}',
    'https://h.example/{{}}',
    'ftp://h.example/',
    'file:///etc/passwd',
    'not a url',
    'https://user:pass@h.example/',
    'https://h.example/a\tb',
    'https://h.example/a\nb',
    ' https://h.example/',
  ]
  for (const url of invalid) {
    it(`refuses ${JSON.stringify(url)}`, () => {
      assert.equal(typeof validateProbeTemplate(url), 'string')
    })
  }

  // Whoever fills the template must not decide where the probe (and its admin's secrets) go.
  const outsidePathAndQuery: Array<[string, string]> = [
    ['{{params.scheme}}://h.example/', 'scheme'],
    ['http{{params.s}}://h.example/', 'scheme'],
    ['http://{{params.h}}/', 'host'],
    ['http://{{params.h}}:8080/x', 'host'],
    ['https://{{params.region}}.ledger.example.com/', 'host'],
    ['http://h.example{{params.x}}/', 'host'],
    ['http://h.example{{params.x}}', 'host'],
    ['http://[::{{params.x}}]/', 'host'],
    ['http:{{params.h}}/x', 'host'],
    ['http:///{{params.h}}/x', 'host'],
    ['http:\\\\{{params.h}}/x', 'host'],
    ['http://h.example:{{params.port}}/', 'port'],
    ['http://h.example:80{{params.port}}/', 'port'],
    ['http://[::1]:{{params.port}}/', 'port'],
    ['http://{{params.u}}@h.example/', 'userinfo'],
    ['http://u:{{params.p}}@h.example/', 'userinfo'],
    ['http://h.example/x#{{params.f}}', 'fragment'],
    ['http://h.example/?q=1#a{{params.f}}', 'fragment'],
  ]
  for (const [url, part] of outsidePathAndQuery) {
    it(`refuses a template in the ${part}: ${url}`, () => {
      assert.match(
        validateProbeTemplate(url) ?? '',
        new RegExp(`templates are allowed only in the url's path and query, not in its ${part}`),
      )
    })
  }
})

describe('validateProbeTemplate: the parser has the last word', () => {
  it("refuses a template whose segment the url's own '..' removes", () => {
    assert.match(
      validateProbeTemplate('http://h.example/{{params.x}}/../admin') ?? '',
      /a template does not stay in the url's path or query once the url is parsed/,
    )
  })
})

describe('encodeTemplateValue', () => {
  it('leaves only RFC 3986 unreserved characters unencoded', () => {
    assert.equal(encodeTemplateValue("AZaz09-._~!'()*"), 'AZaz09-._~%21%27%28%29%2A')
    assert.equal(
      encodeTemplateValue('a/b?c#d&e=f+g h%\\;:@$,'),
      'a%2Fb%3Fc%23d%26e%3Df%2Bg%20h%25%5C%3B%3A%40%24%2C',
    )
    assert.equal(encodeTemplateValue('é😀'), '%C3%A9%F0%9F%98%80')
  })
})

describe('renderProbeUrl', () => {
  it('does not treat inherited properties as params', () => {
    const rendered = renderProbeUrl('http://h.example/{{params.toString}}', {}, outcome)
    assert.deepEqual(rendered, { ok: false, code: 'param_missing', detail: 'param toString is missing' })
  })

  it('reports an outcome template a dry run leaves unfilled', () => {
    const rendered = renderProbeUrl('http://h.example/{{outcome.run_id}}', {}, null)
    assert.deepEqual(rendered, { ok: false, code: 'param_missing', detail: 'outcome.run_id is not given' })
  })

  it('refuses a value that is not well-formed Unicode', () => {
    const rendered = renderProbeUrl('http://h.example/{{params.x}}', { x: 'a\uD800b' }, outcome)
    assert.deepEqual(rendered, { ok: false, code: 'param_missing', detail: 'param x is not valid Unicode' })
  })

  // URL parsers drop '.' segments and climb on '..' ones, in every spelling: a value may not be one.
  for (const value of ['.', '..']) {
    it(`refuses ${JSON.stringify(value)} filling a whole path segment`, () => {
      for (const template of [
        'http://h.example/refunds/{{params.x}}/status',
        'http://h.example/refunds/{{params.x}}',
        'http://h.example/refunds/{{params.x}}?q=1',
        'http://h.example/refunds\\{{params.x}}',
      ]) {
        const rendered = renderProbeUrl(template, { x: value }, outcome)
        assert.equal(rendered.ok, false, template)
        assert.match((rendered as { detail: string }).detail, /param x would make a path segment/, template)
      }
      const split = renderProbeUrl('http://h.example/{{params.x}}{{params.y}}/', { x: '.', y: '.' }, outcome)
      assert.match((split as { detail: string }).detail, /param x, param y would make a path segment/)
    })
  }

  it('lets dots through where they cannot climb: inside a segment, in the query', () => {
    const rendered = renderProbeUrl(
      'http://h.example/files/{{params.x}}.json?up={{params.x}}',
      { x: '..' },
      outcome,
    )
    assert.deepEqual(rendered, { ok: true, url: 'http://h.example/files/...json?up=..' })
  })

  it('no value moves the request to another origin, path segment or query parameter (property)', () => {
    const template = 'https://ledger.example.com:8443/refunds/{{params.x}}/status?q={{params.y}}&fixed=1'
    const value = fc.oneof(
      fc.string({ unit: 'binary' }),
      fc.constantFrom('/', '..', '../..', '%2e%2e', '?', '#', '&fixed=2', '@evil.example', '\\..\\', '+ +'),
    )
    fc.assert(
      fc.property(value, value, (x, y) => {
        fc.pre(x !== '.' && x !== '..' && wellFormed(x) && wellFormed(y))
        const rendered = renderProbeUrl(template, { x, y }, outcome)
        assert.equal(rendered.ok, true)
        const url = new URL((rendered as { url: string }).url)
        assert.equal(url.origin, 'https://ledger.example.com:8443')
        assert.equal(url.hash, '')
        const segments = url.pathname.split('/')
        assert.equal(segments.length, 4)
        assert.deepEqual([segments[0], segments[1], segments[3]], ['', 'refunds', 'status'])
        assert.equal(decodeURIComponent(segments[2]!), x)
        assert.deepEqual([...url.searchParams.keys()], ['q', 'fixed'])
        assert.equal(url.searchParams.get('q'), y)
        assert.equal(url.searchParams.get('fixed'), '1')
      }),
      { numRuns: 500 },
    )
  })
})

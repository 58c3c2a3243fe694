import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { normalizeSourceUri, sourceIdentity } from '../../../src/domain/fanout/source-identity.ts'

const DIGEST = `sha256:${'ab'.repeat(32)}`

describe('normalizeSourceUri', () => {
  const cases: [string, string, string][] = [
    ['lower-cases scheme and host', 'HTTPS://Vantage.COM/Pricing', 'https://vantage.com/Pricing'],
    ['keeps the path case', 'https://vantage.com/PRICING', 'https://vantage.com/PRICING'],
    ['drops the default https port', 'https://vantage.com:443/pricing', 'https://vantage.com/pricing'],
    ['drops the default http port', 'http://vantage.com:80/pricing', 'http://vantage.com/pricing'],
    ['keeps a non-default port', 'https://vantage.com:8443/pricing', 'https://vantage.com:8443/pricing'],
    ['drops the fragment', 'https://vantage.com/pricing#enterprise', 'https://vantage.com/pricing'],
    ['drops an empty fragment', 'https://vantage.com/pricing#', 'https://vantage.com/pricing'],
    [
      'drops utm_ parameters',
      'https://vantage.com/p?utm_source=x&utm_medium=y&a=1',
      'https://vantage.com/p?a=1',
    ],
    [
      'keeps UTM_ parameters (case-sensitive prefix)',
      'https://a.com/p?UTM_source=x',
      'https://a.com/p?UTM_source=x',
    ],
    ['keeps a parameter merely containing utm_', 'https://a.com/p?x_utm_a=1', 'https://a.com/p?x_utm_a=1'],
    ['drops the ? when only utm_ parameters were there', 'https://a.com/p?utm_source=x', 'https://a.com/p'],
    ['sorts parameters by name', 'https://a.com/p?b=2&a=1&c=3', 'https://a.com/p?a=1&b=2&c=3'],
    [
      'sorts stably: repeated names keep their order',
      'https://a.com/p?b=1&a=2&b=0',
      'https://a.com/p?a=2&b=1&b=0',
    ],
    ['sorts by UTF-16 code units (upper before lower)', 'https://a.com/p?a=1&B=2', 'https://a.com/p?B=2&a=1'],
    ['re-serialises a bare name with =', 'https://a.com/p?flag', 'https://a.com/p?flag='],
    ['re-serialises %20 as +', 'https://a.com/p?q=a%20b', 'https://a.com/p?q=a+b'],
    ['drops an empty ?', 'https://a.com/p?', 'https://a.com/p'],
    ['drops a ? holding only separators', 'https://a.com/p?&&', 'https://a.com/p'],
    ['drops one trailing slash', 'https://a.com/pricing/', 'https://a.com/pricing'],
    ['drops only one trailing slash', 'https://a.com/pricing//', 'https://a.com/pricing/'],
    ['drops the trailing slash before a query', 'https://a.com/pricing/?a=1', 'https://a.com/pricing?a=1'],
    ['keeps the root path', 'https://vantage.com/', 'https://vantage.com/'],
    ['writes an absent path as the root', 'https://vantage.com', 'https://vantage.com/'],
    ['keeps the root when a query is dropped', 'https://vantage.com/?utm_source=x', 'https://vantage.com/'],
    ['lower-cases the host of a non-special scheme', 'crm://Opp/1', 'crm://opp/1'],
    ['lower-cases a custom scheme', 'CRM://opp/118204', 'crm://opp/118204'],
    ['keeps a port on a non-special scheme', 'crm://opp:443/1', 'crm://opp:443/1'],
    ['drops a trailing slash on a non-special scheme', 'crm://opp/1/', 'crm://opp/1'],
    ['keeps the root of a non-special scheme', 'crm://opp/', 'crm://opp/'],
    ['keeps an empty path of a non-special scheme', 'crm://opp', 'crm://opp'],
    ['drops a trailing slash of an opaque path', 'urn:isbn:123/', 'urn:isbn:123'],
    ['keeps an opaque path otherwise', 'mailto:Sales@Vantage.com', 'mailto:Sales@Vantage.com'],
    ['sorts the query of a non-special scheme', 'crm://opp/1?z=1&a=2#x', 'crm://opp/1?a=2&z=1'],
    ['applies IDNA to special hosts', 'https://Bücher.de/x', 'https://xn--bcher-kva.de/x'],
    ['keeps percent-encoding as written', 'https://a.com/%7Efoo', 'https://a.com/%7Efoo'],
    ['does not decode %7E to ~', 'https://a.com/~foo', 'https://a.com/~foo'],
    ['percent-encodes a space in the path', 'https://a.com/a b', 'https://a.com/a%20b'],
    ['lower-cases a percent-encoded opaque host', 'crm://%4F/1', 'crm://%4f/1'],
    ['lower-cases an IPv6 host', 'https://[::FFFF:1]/x', 'https://[::ffff:1]/x'],
    ['keeps userinfo', 'https://User:Pass@A.com/', 'https://User:Pass@a.com/'],
    ['trims around a URL', '  https://a.com/x  ', 'https://a.com/x'],
    ['trims a string that is not a URL', '  opp 118204 note \n', 'opp 118204 note'],
    ['keeps a scheme-less host as text', 'vantage.com/pricing/', 'vantage.com/pricing/'],
    ['keeps the case of a non-URL', 'Vantage.com', 'Vantage.com'],
    ['trims non-ASCII spaces around a non-URL', '\u00a0note\u00a0', 'note'],
  ]
  for (const [name, input, expected] of cases) {
    it(`${name}: ${JSON.stringify(input)}`, () => {
      assert.equal(normalizeSourceUri(input), expected)
    })
  }

  it('makes spellings of one page equal', () => {
    const spellings = [
      'https://vantage.com/pricing',
      'HTTPS://VANTAGE.COM:443/pricing/',
      'https://vantage.com/pricing?utm_source=newsletter#enterprise',
      'https://vantage.com/pricing?',
    ]
    assert.deepEqual(new Set(spellings.map(normalizeSourceUri)), new Set(['https://vantage.com/pricing']))
  })

  it('is idempotent, apart from dropping one more slash of a path ending in several', () => {
    // Only one trailing slash is dropped per pass, by design: `/a//` and `/a/` are different paths.
    const keepsATrailingSlash = (text: string) => {
      try {
        const path = new URL(text).pathname
        return path.length > 1 && path.endsWith('/')
      } catch {
        return false
      }
    }
    const urlish = fc.oneof(
      fc.webUrl({ withQueryParameters: true, withFragments: true }),
      fc.string(),
      fc.constantFrom('crm://Opp/1/', 'urn:a:b/', 'https://a.com/?utm_x=1&b&a=%20', 'HTTP://A.com:80//'),
    )
    fc.assert(
      fc.property(urlish, (uri) => {
        const once = normalizeSourceUri(uri)
        fc.pre(!keepsATrailingSlash(once))
        assert.equal(normalizeSourceUri(once), once)
      }),
    )
  })

  it('ignores the order of query parameters', () => {
    const param = fc.tuple(fc.stringMatching(/^[a-z]{1,3}$/), fc.stringMatching(/^[a-z0-9]{0,3}$/))
    fc.assert(
      fc.property(fc.uniqueArray(param, { selector: ([name]) => name, maxLength: 6 }), (params) => {
        const query = (list: [string, string][]) => list.map(([k, v]) => `${k}=${v}`).join('&')
        const reversed = [...params].reverse()
        assert.equal(
          normalizeSourceUri(`https://a.com/p?${query(params)}`),
          normalizeSourceUri(`https://a.com/p?${query(reversed)}`),
        )
      }),
    )
  })
})

describe('sourceIdentity', () => {
  it('is the normalised URI without a digest', () => {
    assert.equal(sourceIdentity({ uri: 'https://Vantage.com/pricing/' }), 'https://vantage.com/pricing')
  })

  it('is the content digest alone when one is given', () => {
    assert.equal(sourceIdentity({ uri: 'https://vantage.com/pricing', content_digest: DIGEST }), DIGEST)
  })

  it('makes two URIs with one digest the same source', () => {
    assert.equal(
      sourceIdentity({ uri: 'https://web.archive.org/x', content_digest: DIGEST }),
      sourceIdentity({ uri: 'https://vantage.com/pricing', content_digest: DIGEST }),
    )
  })

  it('makes one URI with two digests two sources', () => {
    const other = `sha256:${'cd'.repeat(32)}`
    assert.notEqual(
      sourceIdentity({ uri: 'https://vantage.com/pricing', content_digest: DIGEST }),
      sourceIdentity({ uri: 'https://vantage.com/pricing', content_digest: other }),
    )
  })

  it('falls back to the URI when the digest is null', () => {
    assert.equal(sourceIdentity({ uri: 'crm://Opp/1', content_digest: null }), 'crm://opp/1')
  })
})

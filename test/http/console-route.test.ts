import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { describe, it } from 'node:test'
import { CONSOLE_CSP } from '../../src/http/routes/console.ts'
import { buildTestApp } from '../helpers/app.ts'

const EXPECTED_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
  "font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

describe('GET /console', () => {
  it('uses the strict policy: nothing inline, nothing from another origin, never framed', () => {
    assert.equal(CONSOLE_CSP, EXPECTED_CSP)
  })

  it('serves the page and its assets without a key, each under the policy, nosniff and no referrer', async (t) => {
    const { request } = await buildTestApp(t)
    const assets: [string, RegExp][] = [
      ['/console', /^text\/html/],
      ['/console/', /^text\/html/],
      ['/console/styles.css', /^text\/css/],
      ['/console/icon.svg', /^image\/svg\+xml/],
      ['/console/app/main.js', /^text\/javascript/],
      ['/console/app/views/feed-view.js', /^text\/javascript/],
      ['/console/app/vendor/uplot.js', /^text\/javascript/],
      ['/console/app/vendor/transparency.js', /^text\/javascript/],
      ['/console/vendor/uplot.css', /^text\/css/],
    ]
    for (const [url, type] of assets) {
      const response = await request(null, { method: 'GET', url })
      assert.equal(
        response.statusCode,
        200,
        `${url}: ${response.body.slice(0, 200)} (run npm run build first)`,
      )
      assert.match(String(response.headers['content-type']), type, url)
      assert.equal(response.headers['content-security-policy'], EXPECTED_CSP, url)
      assert.equal(response.headers['x-content-type-options'], 'nosniff', url)
      assert.equal(response.headers['referrer-policy'], 'no-referrer', url)
      assert.equal(response.headers['cache-control'], 'no-cache', url)
    }
  })

  it('serves uPlot from the installed package, not a copy', async (t) => {
    const { request } = await buildTestApp(t)
    const served = await request(null, { method: 'GET', url: '/console/app/vendor/uplot.js' })
    assert.equal(served.body, await readFile('node_modules/uplot/dist/uPlot.esm.js', 'utf8'))
  })

  it("serves @arbiter/transparency's browser build, the one its package ships", async (t) => {
    const { request } = await buildTestApp(t)
    const served = await request(null, { method: 'GET', url: '/console/app/vendor/transparency.js' })
    assert.equal(served.body, await readFile('packages/transparency/dist/browser.js', 'utf8'))
    assert.doesNotMatch(served.body, /from ["']node:/, 'no Node module in the browser build')
  })

  it('answers 304 to a revalidation of an unchanged asset', async (t) => {
    const { request } = await buildTestApp(t)
    const first = await request(null, { method: 'GET', url: '/console/app/main.js' })
    const etag = String(first.headers.etag)
    assert.match(etag, /^"[\w-]+"$/)
    const again = await request(null, {
      method: 'GET',
      url: '/console/app/main.js',
      headers: { 'if-none-match': etag },
    })
    assert.equal(again.statusCode, 304)
    assert.equal(again.body, '')
  })

  it('serves nothing else: no sources, maps, configuration or paths out of its folders', async (t) => {
    const { request } = await buildTestApp(t)
    for (const url of [
      '/console/app/main.ts',
      '/console/app/main.js.map',
      '/console/src/main.ts',
      '/console/tsconfig.json',
      '/console/app/../../package.json',
      '/console/app/%2e%2e/%2e%2e/package.json',
      '/console/app/..%2f..%2fpackage.json',
      '/console/app/views/../../../package.json',
      '/console/app/a/b/c.js',
      '/console/app/Main.js',
      '/console/app/nothing-here.js',
    ]) {
      const response = await request(null, { method: 'GET', url })
      assert.equal(response.statusCode, 404, `${url} → ${response.statusCode}`)
      assert.match(String(response.headers['content-type']), /^application\/problem\+json/, url)
    }
  })

  it('keeps the page free of inline script and style and of other origins', async () => {
    const html = await readFile('console/index.html', 'utf8')
    assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/i, 'every script is a file')
    assert.doesNotMatch(html, /<style|\sstyle=|\son[a-z]+=/i, 'no inline style or handlers')
    assert.doesNotMatch(html, /(?:src|href)="(?:https?:)?\/\//i, 'nothing from another origin')
  })

  it('is described as one public page, its static assets left out of the API description', async (t) => {
    const { app } = await buildTestApp(t)
    const paths = Object.keys(app.swagger().paths ?? {}).filter((path) => path.startsWith('/console'))
    assert.deepEqual(paths, ['/console'])
    const page = app.swagger().paths?.['/console']?.get
    assert.deepEqual(page?.security, [], 'the page needs no key')
    assert.ok(page?.responses?.['200'] && 'content' in page.responses['200'])
    assert.ok(Object.keys(page.responses['200'].content ?? {}).includes('text/html'))
  })
})

import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it, type TestContext } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { launchChromium, screenshotBothWidths, WIDE } from './browser.ts'

/* The API's docs page (/docs, Swagger UI) as a reader sees it, in a real headless Chromium. */

const suite = { after: (fn: () => Promise<void>) => after(fn) } as unknown as Pick<TestContext, 'after'>
const arbiter: TestApp = await buildTestApp(suite)
await arbiter.app.listen({ host: '127.0.0.1', port: 0 })
const BASE = `http://127.0.0.1:${(arbiter.app.server.address() as AddressInfo).port}`

describe('the docs page in Chromium', () => {
  let browser: Browser
  let page: Page
  before(async () => {
    browser = await launchChromium()
    page = await (await browser.newContext({ viewport: WIDE })).newPage()
    page.setDefaultTimeout(15_000)
  })
  after(async () => {
    await browser?.close()
  })

  it('shows the whole title in the top bar', async () => {
    await page.goto(`${BASE}/docs`)
    const logo = page.locator('.topbar img')
    await logo.waitFor()
    const src = (await logo.getAttribute('src')) ?? ''
    assert.match(src, /^data:image\/svg\+xml/)
    // The mark is an image; its text is measured in the SVG document itself, against the width it is drawn in.
    const svgPage = await browser.newPage()
    try {
      await svgPage.goto(src)
      const fit = (await svgPage.evaluate(`(() => {
        const text = document.querySelector('text')
        const box = text.getBBox()
        return { right: box.x + box.width, width: document.documentElement.viewBox.baseVal.width, text: text.textContent }
      })()`)) as { right: number; width: number; text: string }
      assert.equal(fit.text, 'Arbiter API')
      assert.ok(fit.right <= fit.width - 4, `the title ends at ${fit.right} of ${fit.width}`)
    } finally {
      await svgPage.close()
    }
  })

  it('groups the API first and the service pages last', async () => {
    const groups = page.locator('.opblock-tag-section h3 .nostyle span, .opblock-tag-section h3 a span')
    await groups.first().waitFor()
    const names = (await groups.allInnerTexts()).map((name) => name.trim()).filter(Boolean)
    assert.equal(names[0], 'outcomes', names.join(', '))
    assert.equal(names.at(-1), 'operations', names.join(', '))
    await screenshotBothWidths(page, 'docs')
  })
})

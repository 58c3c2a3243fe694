import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it, type TestContext } from 'node:test'
import { verifyWebhook } from '@arbiter/client'
import type { Browser, Locator, Page } from 'playwright-core'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { createOutcome, evaluate, interpret } from '../helpers/fixtures.ts'
import {
  launchChromium,
  screenshotBothWidths,
  seriousAccessibilityViolations,
  WIDE,
  watchForProblems,
} from './browser.ts'

/*
 * The console's Webhooks screen in a real headless Chromium against a real Arbiter, delivering to real receivers
 * on local ports: a failed delivery shown with the receiver's answer, redelivered from the page once the
 * receiver is back (the same webhook-id, verified with the client's verifyWebhook), a test event, and a webhook
 * its receiver disabled with 410 Gone, enabled again from the page.
 */

assert.ok(
  existsSync('dist/console/main.js'),
  'the console is compiled by `npm run build`; dist/console/main.js is missing',
)

const suite = { after: (fn: () => Promise<void>) => after(fn) } as unknown as Pick<TestContext, 'after'>
const arbiter: TestApp = await buildTestApp(suite, {
  // A delivery is retried every 100 ms and failed after 1.5 s, so the page sees a failed delivery within seconds.
  config: { webhooks: { allowPrivate: true, retryScheduleMs: [100], maxAgeMs: 1_500 } },
})
await arbiter.app.listen({ host: '127.0.0.1', port: 0 })
const BASE = `http://127.0.0.1:${(arbiter.app.server.address() as AddressInfo).port}`
const adminKey = arbiter.adminKey
const opsKey = await arbiter.key('ops')
const orchestratorKey = await arbiter.key('orchestrator', ['orch-a'])

// Closed when the file ends: an `after` called inside a test would close a receiver when that test ends.
const receivers: Server[] = []
after(() => {
  for (const server of receivers) {
    server.closeAllConnections()
    server.close()
  }
})

interface Received {
  headers: IncomingHttpHeaders
  body: Buffer
}

/** A receiver whose answer the test sets; it keeps every request it got. */
async function startReceiver(): Promise<{ url: string; status: number; received: Received[] }> {
  const state = { url: '', status: 500, received: [] as Received[] }
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      state.received.push({ headers: req.headers, body: Buffer.concat(chunks) })
      res.writeHead(state.status).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  receivers.push(server)
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/arbiter`
  return state
}

async function api(method: 'GET' | 'POST' | 'PATCH', url: string, payload?: object) {
  const response = await arbiter.request(adminKey, { method, url, ...(payload ? { payload } : {}) })
  assert.ok(response.statusCode < 300, `${method} ${url}: ${response.statusCode} ${response.body}`)
  return response.json()
}

async function until<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  for (let i = 0; i < 300; i++) {
    const value = await probe()
    if (value !== undefined) return value
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  assert.fail(`timed out waiting for ${what}`)
}

interface DeliveryRow {
  delivery_id: string
  event_id: string
  type: string
  status: string
  attempts: number
  last_status_code: number | null
}

async function deliveries(webhookId: string): Promise<DeliveryRow[]> {
  return (await api('GET', `/v1/webhooks/${webhookId}/deliveries?limit=100`)).items
}

function shownText(locator: Locator): Promise<string> {
  // biome-ignore lint/performance/useDomNodeTextContent: Playwright's Locator.innerText, not the DOM property.
  return locator.innerText()
}

describe('the Webhooks screen in Chromium', () => {
  let browser: Browser
  let page: Page
  let problems: Awaited<ReturnType<typeof watchForProblems>>
  const failing = {
    receiver: null as Awaited<ReturnType<typeof startReceiver>> | null,
    webhookId: '',
    secret: '',
  }

  before(async () => {
    browser = await launchChromium()
    page = await (await browser.newContext({ viewport: WIDE })).newPage()
    page.setDefaultTimeout(15_000)
    problems = await watchForProblems(page)
  })
  after(async () => {
    await browser?.close()
  })

  it("shows a failed delivery with the receiver's answer", async () => {
    const receiver = await startReceiver()
    const created = await api('POST', '/v1/webhooks', {
      url: receiver.url,
      events: ['manifest.issued'],
      filter: { orchestrator_id: 'orch-a' },
      description: 'the refund orchestrator',
    })
    failing.receiver = receiver
    failing.webhookId = created.webhook_id
    failing.secret = created.secret
    const outcome = await createOutcome(arbiter, orchestratorKey, { run_id: `webhook-${Date.now()}` })
    await interpret(arbiter, orchestratorKey, outcome.outcome_id, {
      orchestrator_id: 'orch-a',
      outcome_interpretation: 'success',
    })
    await evaluate(arbiter, orchestratorKey, outcome.outcome_id)
    await until('the delivery to fail', async () =>
      (await deliveries(failing.webhookId)).find((d) => d.status === 'failed'),
    )

    await page.goto(`${BASE}/console`)
    await page.getByLabel('API key').fill(adminKey)
    await page.getByRole('button', { name: 'Open the console' }).click()
    await page.getByRole('heading', { level: 1, name: 'Live feed' }).waitFor()
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Webhooks' }).click()
    await page.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor()
    const card = page.locator(`li[data-webhook="${failing.webhookId}"]`)
    await card.getByRole('heading', { name: receiver.url }).waitFor()
    assert.match(await shownText(card), /Only orchestrator_id = orch-a/)
    assert.match(await shownText(card), /the refund orchestrator/)
    const row = card.locator('tbody tr').first()
    assert.match(await shownText(row), /manifest\.issued/)
    assert.match(await shownText(row), /failed/)
    assert.match(await shownText(row), /HTTP 500/)
    await screenshotBothWidths(page, 'webhooks-failed')
  })

  it('redelivers from the page: the receiver gets the same webhook-id, verifiable, and the row turns succeeded', async () => {
    const receiver = failing.receiver!
    const [failed] = await deliveries(failing.webhookId)
    assert.ok(failed)
    receiver.status = 204
    const before = receiver.received.length
    const card = page.locator(`li[data-webhook="${failing.webhookId}"]`)
    await card.getByRole('button', { name: `Redeliver manifest.issued ${failed.event_id}` }).click()
    await card.getByRole('status').filter({ hasText: 'Redelivered' }).waitFor()
    const delivered = await until('the redelivery', async () =>
      receiver.received.slice(before).find((r) => r.headers['webhook-id'] === failed.event_id),
    )
    const event = verifyWebhook(delivered.headers, delivered.body, failing.secret)
    assert.equal(event.type, 'manifest.issued')
    await until('the delivery to succeed', async () =>
      (await deliveries(failing.webhookId)).find((d) => d.status === 'succeeded'),
    )
    await page.getByRole('button', { name: 'Refresh' }).click()
    const row = page.locator(
      `li[data-webhook="${failing.webhookId}"] tr[data-delivery="${failed.delivery_id}"]`,
    )
    await row.filter({ hasText: 'succeeded' }).waitFor()
  })

  it('sends a test event from the page', async () => {
    const receiver = failing.receiver!
    const card = page.locator(`li[data-webhook="${failing.webhookId}"]`)
    await card.getByRole('button', { name: 'Send a test event' }).click()
    await card.getByRole('status').filter({ hasText: 'Test event sent' }).waitFor()
    await card.locator('tbody tr').filter({ hasText: 'webhook.test' }).waitFor()
    const delivered = await until('the test event', async () =>
      receiver.received.find((r) => {
        try {
          return verifyWebhook(r.headers, r.body, failing.secret).type === 'webhook.test'
        } catch {
          return false
        }
      })
        ? true
        : undefined,
    )
    assert.equal(delivered, true)
  })

  it('shows a webhook its receiver disabled with 410 Gone, and enables it again', async () => {
    const receiver = await startReceiver()
    receiver.status = 410
    const { webhook_id: webhookId } = await api('POST', '/v1/webhooks', {
      url: receiver.url,
      events: ['manifest.issued', 'escalation.opened'],
    })
    await api('POST', `/v1/webhooks/${webhookId}/test`)
    await until('the webhook to be disabled', async () =>
      (await api('GET', `/v1/webhooks/${webhookId}`)).disabled_at ? true : undefined,
    )
    await page.getByRole('button', { name: 'Refresh' }).click()
    const card = page.locator(`li[data-webhook="${webhookId}"]`)
    await card.getByText('the receiver answered 410 Gone').waitFor()
    assert.match(await shownText(card), /disabled/)
    await screenshotBothWidths(page, 'webhooks-disabled')
    await card.getByRole('button', { name: 'Enable again' }).click()
    await page.locator(`li[data-webhook="${webhookId}"] .status-enabled`).waitFor()
    assert.equal((await api('GET', `/v1/webhooks/${webhookId}`)).disabled_at, null)
  })

  it('tells an ops key that webhooks need an admin key', async () => {
    const tab = await page.context().newPage()
    try {
      await tab.goto(`${BASE}/console#/webhooks`)
      // sessionStorage belongs to the tab: the key is set in it, then the page reads it as it loads again.
      await tab.evaluate(`sessionStorage.setItem('arbiter.console.key', ${JSON.stringify(opsKey)})`)
      await tab.reload()
      await tab.getByRole('alert').filter({ hasText: 'Only an admin key may see webhooks' }).waitFor()
    } finally {
      await tab.close()
    }
  })

  it('shows the latest 20 deliveries newest first, read as one page', async () => {
    const receiver = await startReceiver()
    receiver.status = 204
    const { webhook_id: webhookId } = await api('POST', '/v1/webhooks', {
      url: receiver.url,
      events: ['escalation.resolved'],
    })
    const sent: string[] = []
    for (let i = 0; i < 25; i++) sent.push((await api('POST', `/v1/webhooks/${webhookId}/test`)).delivery_id)
    const reads: string[] = []
    const record = (request: { url(): string }) => {
      if (request.url().includes(`/v1/webhooks/${webhookId}/deliveries`))
        reads.push(new URL(request.url()).search)
    }
    page.on('request', record)
    try {
      await page.getByRole('button', { name: 'Refresh' }).click()
      const rows = page.locator(`li[data-webhook="${webhookId}"] tbody tr`)
      await rows.first().waitFor()
      const shown = await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-delivery')))
      assert.deepEqual(shown, sent.slice(-20).reverse())
      assert.deepEqual(reads, ['?limit=20'])
    } finally {
      page.off('request', record)
    }
  })

  it('reports no CSP violation or script error, and no serious accessibility violation', async () => {
    assert.deepEqual(await problems([/status of 403/]), [])
    const audit = await browser.newContext({ viewport: WIDE, bypassCSP: true })
    try {
      const tab = await audit.newPage()
      await tab.goto(`${BASE}/console#/webhooks`)
      await tab.evaluate(`sessionStorage.setItem('arbiter.console.key', ${JSON.stringify(adminKey)})`)
      await tab.reload()
      await tab.locator('li[data-webhook] tbody tr').first().waitFor()
      assert.deepEqual(await seriousAccessibilityViolations(tab), [])
    } finally {
      await audit.close()
    }
  })
})

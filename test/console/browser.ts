import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { type Browser, chromium, type Page } from 'playwright-core'

/** Debian's chromium; playwright's own browser downloads are not used (nor reachable on a closed network). */
export const CHROMIUM_PATH = '/usr/bin/chromium'

// Without the background-networking flags Chromium waits on services it cannot reach on a closed network.
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

export const WIDE = { width: 1280, height: 800 }
export const NARROW = { width: 390, height: 844 }
export const SCREENSHOT_DIR = join('.tmp', 'screenshots')

export async function launchChromium(): Promise<Browser> {
  assert.ok(
    existsSync(CHROMIUM_PATH),
    `${CHROMIUM_PATH} is missing: apt-get install -y chromium (.ci/run does)`,
  )
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: CHROMIUM_ARGS,
    timeout: 60_000,
  })
}

/**
 * Collects what must never happen on a page: CSP violations (reported by the page itself, via an init script
 * that CSP does not govern), uncaught errors and console errors. The returned function lists them, less console
 * errors a test caused on purpose (Chromium logs every 4xx answer and every dropped connection).
 */
export async function watchForProblems(page: Page): Promise<(expected?: RegExp[]) => Promise<string[]>> {
  const problems: string[] = []
  // A string, not a function: the test code is compiled without the DOM's types.
  await page.addInitScript({
    content: `
      window.__cspViolations = []
      document.addEventListener('securitypolicyviolation', (event) => {
        window.__cspViolations.push(event.violatedDirective + ' blocked ' + (event.blockedURI || 'inline'))
      })`,
  })
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`))
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console error: ${message.text()}`)
  })
  return async (expected: RegExp[] = []) => {
    const violations = (await page.evaluate('window.__cspViolations ?? []')) as string[]
    const errors = problems.filter((problem) => !expected.some((pattern) => pattern.test(problem)))
    return [...violations.map((v) => `CSP violation: ${v}`), ...errors]
  }
}

/**
 * Saves the page at both widths as .tmp/screenshots/<name>-<width>.png and asserts that nothing forces a
 * horizontal scroll at the narrow width. Leaves the page at the wide size.
 */
export async function screenshotBothWidths(page: Page, name: string): Promise<void> {
  await mkdir(SCREENSHOT_DIR, { recursive: true })
  for (const size of [WIDE, NARROW]) {
    await page.setViewportSize(size)
    // Let resize observers (the chart) and layout settle.
    await page.waitForTimeout(150)
    const overflow = (await page.evaluate(
      'document.documentElement.scrollWidth - document.documentElement.clientWidth',
    )) as number
    assert.ok(overflow <= 1, `${name} scrolls sideways by ${overflow}px at ${size.width}px wide`)
    await page.screenshot({ path: join(SCREENSHOT_DIR, `${name}-${size.width}.png`), fullPage: true })
  }
  await page.setViewportSize(WIDE)
}

const AXE_SOURCE = createRequire(import.meta.url).resolve('axe-core/axe.min.js')

interface AxeViolation {
  id: string
  impact: string | null
  help: string
  nodes: { target: string[] }[]
}

/** Runs axe-core on the page (which must belong to a context created with `bypassCSP: true`). */
export async function seriousAccessibilityViolations(page: Page): Promise<string[]> {
  if (!(await page.evaluate('typeof window.axe !== "undefined"')))
    await page.addScriptTag({ path: AXE_SOURCE })
  const violations = (await page.evaluate(
    'window.axe.run(document, { resultTypes: ["violations"] }).then((r) => r.violations)',
  )) as AxeViolation[]
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact} ${v.id}: ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)
}

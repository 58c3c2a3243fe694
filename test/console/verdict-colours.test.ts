import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { VERDICT_COLOURS, VERDICTS_BY_KIND } from '../../console/src/verdict-colours.ts'
import { registeredCaseSchemas } from '../../src/cases/registry.ts'

const MANIFEST_VERDICTS = registeredCaseSchemas().words.verdicts

/** sRGB hex → linear channels. */
function linear(hex: string): [number, number, number] {
  const n = Number.parseInt(hex.slice(1), 16)
  const channel = (v: number) => {
    const c = v / 255
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4
  }
  return [channel((n >> 16) & 255), channel((n >> 8) & 255), channel(n & 255)]
}

/** CIE L*a*b* (D65), where a distance of about 2 is just noticeable and 20 is plainly another colour. */
function lab(hex: string): [number, number, number] {
  const [r, g, b] = linear(hex)
  const x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
  const y = 0.2126 * r + 0.7152 * g + 0.0722 * b
  const z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883
  const f = (t: number) => (t > 216 / 24389 ? Math.cbrt(t) : ((24389 / 27) * t + 16) / 116)
  return [116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))]
}

function distance(a: string, b: string): number {
  const [l1, a1, b1] = lab(a)
  const [l2, a2, b2] = lab(b)
  return Math.hypot(l1 - l2, a1 - a2, b1 - b2)
}

function contrastOnWhite(hex: string): number {
  const [r, g, b] = linear(hex)
  return 1.05 / (0.2126 * r + 0.7152 * g + 0.0722 * b + 0.05)
}

const colour = (verdict: string) => {
  const found = VERDICT_COLOURS[verdict]
  assert.ok(found, `${verdict} has a colour`)
  return found
}

describe("the decisions chart's verdict colours", () => {
  it('give every verdict Arbiter issues a colour of its own, readable on white', () => {
    for (const verdict of MANIFEST_VERDICTS) {
      assert.ok(contrastOnWhite(colour(verdict)) >= 3, `${verdict} ${colour(verdict)} against white`)
    }
    assert.equal(new Set(Object.values(VERDICT_COLOURS)).size, Object.keys(VERDICT_COLOURS).length)
  })

  it('tell criteria differ, contested and human-resolved apart at a glance', () => {
    const halting = ['CRITERIA_DIFFER', 'CONTESTED', 'HUMAN_RESOLVED']
    for (const a of halting) {
      for (const b of halting) {
        if (a < b)
          assert.ok(distance(colour(a), colour(b)) >= 40, `${a} and ${b}: ${distance(colour(a), colour(b))}`)
      }
    }
  })

  it('keep the verdicts of one case kind plainly apart, and every pair distinguishable', () => {
    for (const [kind, verdicts] of Object.entries(VERDICTS_BY_KIND)) {
      for (const a of verdicts) {
        for (const b of verdicts) {
          if (a < b) assert.ok(distance(colour(a), colour(b)) >= 20, `${kind}: ${a} and ${b}`)
        }
      }
    }
    const all = Object.keys(VERDICT_COLOURS)
    for (const a of all)
      for (const b of all) if (a < b) assert.ok(distance(colour(a), colour(b)) >= 12, `${a} and ${b}`)
  })
})

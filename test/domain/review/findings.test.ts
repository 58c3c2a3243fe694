import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import {
  type CouncilJudge,
  type Finding,
  type FindingReport,
  findingFingerprint,
  mergeFindings,
  normalizeFindingText,
  normalizeLocation,
} from '../../../src/domain/review/findings.ts'
import { FINDING_SEVERITIES, severityRank } from '../../../src/domain/review/vocabulary.ts'
import { hashJson, sha256 } from '../../../src/domain/shared/canonical-json.ts'

describe('normalizeFindingText', () => {
  const table: [string, string][] = [
    ['SQL Injection', 'sql injection'],
    ['  sql   injection\t', 'sql injection'],
    ['sql\n\n injection', 'sql injection'],
    ['\u00a0Sql\u2003Injection\u00a0', 'sql injection'],
    ['already normal', 'already normal'],
    ['   ', ''],
  ]
  for (const [text, expected] of table) {
    it(`turns ${JSON.stringify(text)} into ${JSON.stringify(expected)}`, () => {
      assert.equal(normalizeFindingText(text), expected)
    })
  }
})

describe('normalizeLocation', () => {
  it('normalises a location like a title', () => {
    assert.equal(normalizeLocation(' SRC/Auth/Login.ts:42 '), 'src/auth/login.ts:42')
  })
  it('turns an absent, null, empty or blank location into null', () => {
    for (const location of [undefined, null, '', '  \t ']) assert.equal(normalizeLocation(location), null)
  })
})

describe('findingFingerprint', () => {
  it('is sha256 of the JCS of the normalised title and location', () => {
    assert.equal(
      findingFingerprint({ title: ' SQL  Injection in login ', location: 'src/auth/LOGIN.ts:42' }),
      sha256('{"location":"src/auth/login.ts:42","title":"sql injection in login"}'),
    )
  })
  it('uses a null location when none is given', () => {
    const expected = sha256('{"location":null,"title":"typo"}')
    assert.equal(findingFingerprint({ title: 'Typo' }), expected)
    assert.equal(findingFingerprint({ title: 'Typo', location: null }), expected)
    assert.equal(findingFingerprint({ title: 'Typo', location: ' ' }), expected)
  })
  it('tells apart findings whose title or location differ beyond spelling', () => {
    const base = findingFingerprint({ title: 'sql injection', location: 'a.ts' })
    assert.notEqual(findingFingerprint({ title: 'sql injections', location: 'a.ts' }), base)
    assert.notEqual(findingFingerprint({ title: 'sql injection', location: 'b.ts' }), base)
    assert.notEqual(findingFingerprint({ title: 'sql injection' }), base)
  })
})

describe('mergeFindings', () => {
  const f = (severity: Finding['severity'], title: string, location?: string | null): Finding =>
    location === undefined ? { severity, title } : { severity, title, location }

  // Four council judges on four models; three spellings of one injection finding, a duplicate inside one
  // report, a blank location that must merge with an absent one, and ties broken by confidence and fingerprint.
  const council: CouncilJudge[] = [
    { judge_id: 'c1', model: 'Model-A' },
    { judge_id: 'c2', model: 'model-b' },
    { judge_id: 'c3', model: ' MODEL-C' },
    { judge_id: 'c4', model: 'model-d' },
  ]
  const reports: FindingReport[] = [
    {
      judge_id: 'c1',
      findings: [
        f('high', 'SQL injection in login', 'src/auth/login.ts:42'),
        f('low', 'Typo in error message', null),
        f('medium', 'Missing retry jitter', 'src/retry.ts'),
      ],
    },
    {
      judge_id: 'c2',
      findings: [
        {
          severity: 'critical',
          title: '  sql   INJECTION in Login ',
          location: 'SRC/auth/login.ts:42 ',
          lens: 'security',
        },
        f('low', 'typo in error message', ''),
        f('medium', 'Missing retry jitter', 'src/retry.ts'),
        f('low', 'missing  retry jitter', ' src/retry.ts'),
      ],
    },
    {
      judge_id: 'c3',
      findings: [
        f('medium', 'SQL injection in login', 'src/auth/login.ts:42'),
        f('high', 'Unbounded loop'),
        f('low', 'first lonely nit', 'x.ts'),
      ],
    },
    {
      judge_id: 'c4',
      findings: [f('medium', 'Log level too verbose', 'src/log.ts'), f('low', 'second lonely nit', 'y.ts')],
    },
  ]
  it('merges spellings of one finding into exactly one entry', () => {
    const merged = mergeFindings(reports, council)
    const [nitX, nitY] = [
      findingFingerprint({ title: 'first lonely nit', location: 'x.ts' }),
      findingFingerprint({ title: 'second lonely nit', location: 'y.ts' }),
    ].sort()
    const lonely = (fingerprint: string) =>
      fingerprint === findingFingerprint({ title: 'first lonely nit', location: 'x.ts' })
        ? { title: 'first lonely nit', location: 'x.ts', reported_by: ['c3'], models: [' MODEL-C'] }
        : { title: 'second lonely nit', location: 'y.ts', reported_by: ['c4'], models: ['model-d'] }
    assert.deepEqual(merged, [
      {
        fingerprint: hashJson({ title: 'sql injection in login', location: 'src/auth/login.ts:42' }),
        severity: 'critical',
        title: 'sql injection in login',
        location: 'src/auth/login.ts:42',
        reported_by: ['c1', 'c2', 'c3'],
        models: [' MODEL-C', 'Model-A', 'model-b'],
        confidence: 0.75,
      },
      {
        fingerprint: hashJson({ title: 'unbounded loop', location: null }),
        severity: 'high',
        title: 'unbounded loop',
        location: null,
        reported_by: ['c3'],
        models: [' MODEL-C'],
        confidence: 0.25,
      },
      {
        fingerprint: hashJson({ title: 'missing retry jitter', location: 'src/retry.ts' }),
        severity: 'medium',
        title: 'missing retry jitter',
        location: 'src/retry.ts',
        reported_by: ['c1', 'c2'],
        models: ['Model-A', 'model-b'],
        confidence: 0.5,
      },
      {
        fingerprint: hashJson({ title: 'log level too verbose', location: 'src/log.ts' }),
        severity: 'medium',
        title: 'log level too verbose',
        location: 'src/log.ts',
        reported_by: ['c4'],
        models: ['model-d'],
        confidence: 0.25,
      },
      {
        fingerprint: hashJson({ title: 'typo in error message', location: null }),
        severity: 'low',
        title: 'typo in error message',
        location: null,
        reported_by: ['c1', 'c2'],
        models: ['Model-A', 'model-b'],
        confidence: 0.5,
      },
      { fingerprint: nitX!, severity: 'low', ...lonely(nitX!), confidence: 0.25 },
      { fingerprint: nitY!, severity: 'low', ...lonely(nitY!), confidence: 0.25 },
    ])
  })

  it('counts a judge that reports one fingerprint twice once, keeping its highest severity', () => {
    const merged = mergeFindings(
      [
        {
          judge_id: 'c1',
          findings: [
            f('low', 'Race in cache'),
            f('critical', 'race in  CACHE', ''),
            f('medium', 'RACE IN CACHE'),
          ],
        },
      ],
      judges(['model-a', 'model-b']),
    )
    assert.equal(merged.length, 1)
    assert.deepEqual(merged[0]!.reported_by, ['c1'])
    assert.equal(merged[0]!.severity, 'critical')
    assert.equal(merged[0]!.confidence, 0.5)
  })

  it('divides by the distinct council models as a plain number', () => {
    const [finding] = mergeFindings(
      [
        { judge_id: 'c1', findings: [f('low', 'x')] },
        { judge_id: 'c2', findings: [f('low', 'X ')] },
      ],
      judges(['model-a', 'model-b', 'model-c']),
    )
    assert.equal(finding!.confidence, 2 / 3)
    assert.equal(JSON.stringify(finding!.confidence), '0.6666666666666666')
  })

  it('returns no findings when nobody reported any', () => {
    assert.deepEqual(mergeFindings([{ judge_id: 'c1', findings: [] }], judges(['m', 'n'])), [])
  })

  it('lists each model identity once, as submitted by the first judge of the panel that reported it', () => {
    // Fullwidth ｍ folds to m: two spellings of one model (a council refuses them; the merge holds all the same).
    const council = [
      { judge_id: 'c2', model: 'ｍodel-a' },
      { judge_id: 'c1', model: 'model-a' },
      { judge_id: 'c3', model: 'Model-B' },
    ]
    const both = mergeFindings(
      [
        { judge_id: 'c1', findings: [f('high', 'SQL injection')] },
        { judge_id: 'c2', findings: [f('high', 'sql injection')] },
        { judge_id: 'c3', findings: [f('low', 'Typo')] },
      ],
      council,
    )
    assert.deepEqual(
      both.map((m) => [m.title, m.reported_by, m.models, m.confidence]),
      [
        ['sql injection', ['c1', 'c2'], ['ｍodel-a'], 0.5],
        ['typo', ['c3'], ['Model-B'], 0.5],
      ],
    )
    // Only the second judge of that identity in the panel's order reported it: its spelling.
    const [second] = mergeFindings([{ judge_id: 'c1', findings: [f('high', 'SQL injection')] }], council)
    assert.deepEqual(second!.models, ['model-a'])
    assert.equal(second!.confidence, 0.5)
  })

  it('refuses reports from a judge outside the council, and an empty council', () => {
    assert.throws(() => mergeFindings([{ judge_id: 'c9', findings: [] }], judges(['model-a'])), RangeError)
    assert.throws(() => mergeFindings([], []), RangeError)
  })

  describe('properties', () => {
    const MODELS = ['model-a', 'model-b', 'model-c', 'model-d']
    // A small vocabulary of titles and locations in several spellings, so that merges actually happen.
    const spelled = (words: string[]) =>
      fc
        .tuple(fc.constantFrom(...words), fc.constantFrom('', ' ', '  '), fc.boolean())
        .map(
          ([w, pad, upper]) =>
            pad + (upper ? w.toUpperCase() : w).replace(' ', pad === '' ? ' ' : `${pad} `) + pad,
        )
    const finding: fc.Arbitrary<Finding> = fc.record({
      severity: fc.constantFrom(...FINDING_SEVERITIES),
      title: spelled(['sql injection', 'race in cache', 'typo']),
      location: fc.option(spelled(['a.ts', 'b.ts', '']), { nil: null }),
    })
    const panel = fc
      .subarray(MODELS, { minLength: 2 })
      .chain((models) =>
        fc.tuple(fc.constant(models), fc.tuple(...models.map(() => fc.array(finding, { maxLength: 6 })))),
      )
      .map(([models, findings]) => ({
        models,
        council: judges(models),
        reports: models.map((_, i): FindingReport => ({ judge_id: `c${i + 1}`, findings: findings[i]! })),
      }))

    it('does not depend on the order of reports or of findings within a report', () => {
      fc.assert(
        fc.property(panel, fc.integer(), ({ council, reports }, seed) => {
          const shuffled = shuffle(
            reports.map((r) => ({ ...r, findings: shuffle([...r.findings], seed) })),
            seed + 1,
          )
          assert.deepEqual(mergeFindings(shuffled, council), mergeFindings(reports, council))
        }),
      )
    })

    it('never removes a merged finding nor lowers a severity when a judge’s findings are added', () => {
      fc.assert(
        fc.property(panel, fc.nat(), ({ council, reports }, pick) => {
          const added = pick % reports.length
          const without = mergeFindings(
            reports.filter((_, i) => i !== added),
            council,
          )
          const withAll = new Map(mergeFindings(reports, council).map((m) => [m.fingerprint, m]))
          for (const before of without) {
            const after = withAll.get(before.fingerprint)
            assert.ok(after, `finding ${before.title} disappeared`)
            assert.ok(severityRank(after.severity) >= severityRank(before.severity))
            assert.ok(after.confidence >= before.confidence)
          }
        }),
      )
    })

    it('keeps confidence = distinct reporting models ÷ council size, and the stated sort order', () => {
      fc.assert(
        fc.property(panel, ({ models, council, reports }) => {
          const merged = mergeFindings(reports, council)
          for (const m of merged) {
            assert.equal(m.confidence, m.models.length / models.length)
            assert.ok(m.confidence > 0 && m.confidence <= 1)
            assert.deepEqual(m.reported_by, [...new Set(m.reported_by)].sort())
          }
          for (let i = 1; i < merged.length; i++) {
            const [x, y] = [merged[i - 1]!, merged[i]!]
            const key = (m: typeof x) => [-severityRank(m.severity), -m.confidence] as const
            const [kx, ky] = [key(x), key(y)]
            assert.ok(
              kx[0] < ky[0] ||
                (kx[0] === ky[0] && (kx[1] < ky[1] || (kx[1] === ky[1] && x.fingerprint < y.fingerprint))),
            )
          }
        }),
      )
    })
  })
})

/** Council judges c1, c2, … on `models`, in that order. */
function judges(models: readonly string[]): CouncilJudge[] {
  return models.map((model, i) => ({ judge_id: `c${i + 1}`, model }))
}

/** Deterministic Fisher–Yates shuffle driven by a seed. */
function shuffle<T>(items: T[], seed: number): T[] {
  let state = seed >>> 0 || 1
  for (let i = items.length - 1; i > 0; i--) {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0
    const j = state % (i + 1)
    ;[items[i], items[j]] = [items[j]!, items[i]!]
  }
  return items
}

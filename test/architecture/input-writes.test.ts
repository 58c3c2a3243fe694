import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { relative } from 'node:path'
import { describe, it } from 'node:test'
import { CASE_KIND_MODULES } from '../../src/cases/registry.ts'
import { SRC, sourceFiles } from '../helpers/source-files.ts'

/*
 * test/engine/inputs-touch-case.test.ts checks, path by path, that writing a case's input gives the case row a new
 * version (what a decision without a lock stands on: src/engine/case-inputs.ts). This holds the list of paths
 * shut: every statement in src/ that writes an input table is one of those known here, and the statements meant
 * for writeInput are only ever handed to it (an InputWrite's `writes`). A new way of writing an input fails here
 * until it takes writeInput, or is added below with how it moves the case row (and a case in the engine test).
 */

/** The tables whose rows a case's decision reads as its inputs, as each registered kind names them. */
const INPUT_TABLES = CASE_KIND_MODULES.flatMap((kind) => kind.inputTables)

/** The statements meant for writeInput: an InputWrite's `writes`, the case row's touch beside them. */
const INPUT_WRITE_BUILDERS: Record<string, string> = {
  'cases/outcome/interpretation-repository.ts': 'interpretationInsert',
  'cases/fanout/repository.ts': 'resultInsert',
  'cases/review/repository.ts': 'verdictInsert',
}

/** Statements that write an input outside writeInput, and how each moves the case row all the same. */
const OTHER_INPUT_WRITERS: Record<string, Record<string, string>> = {
  'cases/outcome/repository.ts': {
    newOutcomeText: 'creates the outcome row in the same statement',
  },
  'cases/outcome/interpretation-repository.ts': {
    FIRST_INTERPRETATION: 'updates the outcome row in the same statement',
  },
  'cases/outcome/evidence-repository.ts': {
    evidenceItemsInsert: 'its transaction creates the outcome row, or updates it (outcomeEvidenceUpdate)',
    evidenceVersionInsert: 'its transaction creates the outcome row, or updates it (outcomeEvidenceUpdate)',
  },
  'cases/fanout/repository.ts': {
    firstResultInsert: 'updates the fan-out row (its totals) in the same statement',
  },
  'cases/review/repository.ts': {},
}

const sources = new Map(
  await Promise.all(
    (await sourceFiles(SRC)).map(
      async (file) => [relative(SRC, file), await readFile(file, 'utf8')] as const,
    ),
  ),
)

/** The top-level function or constant of `text` that holds `index`. */
function enclosingName(text: string, index: number): string {
  const declarations = [
    ...text.slice(0, index).matchAll(/^(?:export )?(?:async )?(?:function|const) (\w+)/gm),
  ]
  return declarations.at(-1)?.[1] ?? '(top level)'
}

const WRITE = new RegExp(
  `\\b(?:INSERT\\s+INTO|UPDATE|DELETE\\s+FROM)\\s+(${INPUT_TABLES.join('|')})\\b`,
  'gi',
)

describe('every write of a case input is a known path that moves the case row', () => {
  const writers = [...sources].flatMap(([file, text]) =>
    [...text.matchAll(WRITE)].map((match) => ({
      file,
      table: match[1]!,
      name: enclosingName(text, match.index),
    })),
  )

  it('finds the writers it knows (the scan itself works)', () => {
    assert.deepEqual(
      ['interpretations', 'evidence_items', 'evidence_versions', 'fanout_results', 'review_verdicts'].filter(
        (table) => !INPUT_TABLES.includes(table),
      ),
      [],
      'the registered kinds name their input tables',
    )
    for (const [file, builder] of Object.entries(INPUT_WRITE_BUILDERS)) {
      assert.ok(
        writers.some((w) => w.file === file && w.name === builder),
        `${file}: ${builder} writes no input table any more: update this test`,
      )
    }
  })

  it('writes inputs only through writeInput or a listed path', () => {
    const unknown = writers.filter(
      ({ file, name }) =>
        INPUT_WRITE_BUILDERS[file] !== name && OTHER_INPUT_WRITERS[file]?.[name] === undefined,
    )
    assert.deepEqual(
      unknown.map(({ file, name, table }) => `${file}: ${name} writes ${table}`),
      [],
      'a new input write must go through writeInput (src/engine/case-inputs.ts) or move the case row itself',
    )
  })

  it("hands writeInput's statements to nothing but an InputWrite's writes (or a guarded write of them)", () => {
    for (const [home, builder] of Object.entries(INPUT_WRITE_BUILDERS)) {
      for (const [file, text] of sources) {
        if (file === home) continue
        const calls = [...text.matchAll(new RegExp(`\\b${builder}\\(`, 'g'))]
        for (const call of calls) {
          const before = text.slice(Math.max(0, call.index - 40), call.index)
          assert.match(before, /writes: \[\s*$/, `${file}: ${builder}(…) outside an InputWrite's writes`)
        }
      }
    }
  })
})

import assert from 'node:assert/strict'
import { readdir, readFile } from 'node:fs/promises'
import { dirname, join, resolve, sep } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

/*
 * The audit intake's columns are written in one file, src/audit-log/store/intake.ts: a statement that records a
 * change takes its INSERT from there (auditAppend, or auditAppendFrom inside a statement of its own). So no SQL
 * outside src/audit-log names the table. SQL is every string and template literal's text, where a query is
 * written; comments outside them may name it.
 */
const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src')
const TABLE = /\baudit_intake\b/

/** The texts of `source`'s string and template literals (a template's parts between its substitutions). */
function literalTexts(file: string, source: string): string[] {
  const texts: string[] = []
  const visit = (node: ts.Node) => {
    if (
      ts.isStringLiteral(node) ||
      ts.isNoSubstitutionTemplateLiteral(node) ||
      ts.isTemplateHead(node) ||
      ts.isTemplateMiddle(node) ||
      ts.isTemplateTail(node)
    ) {
      texts.push(node.text)
    }
    ts.forEachChild(node, visit)
  }
  visit(ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true))
  return texts
}

/** The files of src/ (relative to it) whose SQL names the intake. */
async function filesNamingTheIntake(): Promise<string[]> {
  const files = (await readdir(SRC, { recursive: true })).filter((file) => file.endsWith('.ts'))
  const naming = await Promise.all(
    files.map(async (file) => {
      const texts = literalTexts(file, await readFile(join(SRC, file), 'utf8'))
      return texts.some((text) => TABLE.test(text)) ? [file.split(sep).join('/')] : []
    }),
  )
  return naming.flat().sort()
}

describe('the audit intake', () => {
  it('finds SQL in string and template literals, and not in comments', () => {
    const source = [
      '// audit_intake in a comment',
      "const a = 'SELECT 1 FROM audit_intake'",
      `const b = \`WITH x AS (\${a}) INSERT INTO audit_intake (at) SELECT now()\``,
      `const c = \`SELECT \${a} FROM audit_intakes\``,
    ].join('\n')
    assert.deepEqual(
      literalTexts('sample.ts', source).filter((text) => TABLE.test(text)),
      ['SELECT 1 FROM audit_intake', ') INSERT INTO audit_intake (at) SELECT now()'],
    )
  })

  it('is named in SQL only inside src/audit-log', async () => {
    const naming = await filesNamingTheIntake()
    assert.ok(naming.includes('audit-log/store/intake.ts'), 'the intake store itself is found')
    assert.deepEqual(
      naming.filter((file) => !file.startsWith('audit-log/')),
      [],
      'write the intake through src/audit-log/append.ts (auditAppend, auditAppendFrom)',
    )
  })
})

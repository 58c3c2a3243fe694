import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { relative } from 'node:path'
import { describe, it } from 'node:test'
import ts from 'typescript'
import { SRC, sourceFiles } from '../helpers/source-files.ts'

/*
 * Modules stay small enough to read whole, and functions small enough to hold in one's head: no file in src/ over
 * MAX_FILE_LINES lines, no function over MAX_FUNCTION_LINES. A function is every declaration, expression, arrow
 * function, method, accessor and constructor, counted from its first line to its last (its doc comment aside),
 * nested ones on their own and inside the lines of the function around them.
 *
 * The one exception is a route table: a fastify plugin that registers routes, i.e. the function a `const` whose
 * name ends in `Routes` is initialised with, typed as a fastify plugin (`FastifyPluginAsync…`). It is a list of
 * routes, each a few lines, and reads best as one list; the handlers inside it are functions like any other and
 * are held to the limit.
 */
const MAX_FILE_LINES = 600
const MAX_FUNCTION_LINES = 80

/** The lines of a file's text (a final newline ends the last line, it starts none). */
function lineCount(text: string): number {
  return text.length === 0 ? 0 : text.split('\n').length - (text.endsWith('\n') ? 1 : 0)
}

/** Whether `node` is a route table (see above). */
function isRouteTable(node: ts.FunctionLikeDeclaration): boolean {
  const parent = node.parent
  return (
    ts.isVariableDeclaration(parent) &&
    parent.initializer === node &&
    ts.isIdentifier(parent.name) &&
    parent.name.text.endsWith('Routes') &&
    parent.type !== undefined &&
    ts.isTypeReferenceNode(parent.type) &&
    /^FastifyPluginAsync/.test(parent.type.typeName.getText())
  )
}

/** The name a function is known by in a report: its own, its variable's or property's, else `(anonymous)`. */
function nameOf(node: ts.FunctionLikeDeclaration): string {
  if (node.name && !ts.isComputedPropertyName(node.name)) return node.name.getText()
  const parent = node.parent
  if (
    (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) &&
    !ts.isComputedPropertyName(parent.name)
  )
    return parent.name.getText()
  return '(anonymous)'
}

/** The functions of `text` over MAX_FUNCTION_LINES lines that are no route table, as `file:line name (n lines)`. */
export function longFunctions(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS)
  const found: string[] = []
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      const fn = node as ts.FunctionLikeDeclaration
      const first = source.getLineAndCharacterOfPosition(fn.getStart(source)).line
      const last = source.getLineAndCharacterOfPosition(fn.getEnd()).line
      const lines = last - first + 1
      if (lines > MAX_FUNCTION_LINES && !isRouteTable(fn)) {
        found.push(`${file}:${first + 1} ${nameOf(fn)} (${lines} lines)`)
      }
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

const sources = await Promise.all(
  (await sourceFiles(SRC)).map(async (path) => ({
    file: relative(SRC, path),
    text: await readFile(path, 'utf8'),
  })),
)

/** A made-up module: a function of `lines` lines (its first and last among them), under `declaration`. */
function moduleWith(declaration: (body: string) => string, lines: number): string {
  const body = Array.from({ length: lines - 2 }, (_, i) => `  const v${i} = ${i}`).join('\n')
  return `import type { FastifyPluginAsync } from 'fastify'\n${declaration(body)}\n`
}

describe('sizes in src/', () => {
  it(`has no file over ${MAX_FILE_LINES} lines`, () => {
    const long = sources
      .filter(({ text }) => lineCount(text) > MAX_FILE_LINES)
      .map(({ file, text }) => `${file} (${lineCount(text)} lines)`)
    assert.deepEqual(long, [], 'split these modules, one job each')
  })

  it(`has no function over ${MAX_FUNCTION_LINES} lines but route tables`, () => {
    const long = sources.flatMap(({ file, text }) => longFunctions(file, text))
    assert.deepEqual(long, [], 'split these functions')
  })

  it('counts every kind of function, from its first line to its last', () => {
    const kinds: [string, (body: string) => string][] = [
      ['declaration', (body) => `/** doc */\nexport async function f() {\n${body}\n}`],
      ['expression', (body) => `const g = function () {\n${body}\n}`],
      ['arrow', (body) => `const h = async () => {\n${body}\n}`],
      ['method', (body) => `class C {\n  m() {\n${body}\n  }\n}`],
      ['object method', (body) => `const o = {\n  m() {\n${body}\n  },\n}`],
      [
        'a plugin not named *Routes',
        (body) => `const plugin: FastifyPluginAsync = async (app) => {\n${body}\n}`,
      ],
      [
        'a *Routes function that is no plugin',
        (body) => `const someRoutes = async (app: unknown) => {\n${body}\n}`,
      ],
    ]
    for (const [kind, declaration] of kinds) {
      assert.deepEqual(longFunctions('made-up.ts', moduleWith(declaration, MAX_FUNCTION_LINES)), [], kind)
      assert.equal(
        longFunctions('made-up.ts', moduleWith(declaration, MAX_FUNCTION_LINES + 1)).length,
        1,
        kind,
      )
    }
  })

  it('lets a route table be long, but not a handler inside it', () => {
    const table = (body: string) =>
      `export const thingRoutes: FastifyPluginAsync = async (app) => {\n${body}\n}`
    assert.deepEqual(longFunctions('routes.ts', moduleWith(table, 200)), [])
    const handler = (body: string) =>
      `export const thingRoutes: FastifyPluginAsync = async (app) => {\n  app.get('/', async () => {\n${body}\n  })\n}`
    assert.deepEqual(longFunctions('routes.ts', moduleWith(handler, MAX_FUNCTION_LINES + 1)), [
      'routes.ts:3 (anonymous) (81 lines)',
    ])
  })

  it('counts a file by its lines', () => {
    assert.equal(lineCount(''), 0)
    assert.equal(lineCount('a\n'), 1)
    assert.equal(lineCount('a\nb'), 2)
  })
})

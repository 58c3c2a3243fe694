import assert from 'node:assert/strict'
import { readdir, readFile } from 'node:fs/promises'
import { dirname, join, relative, resolve } from 'node:path'
import { describe, it } from 'node:test'
import { SRC, sourceFiles } from '../helpers/source-files.ts'

/**
 * The layers as docs/architecture.md draws them, held by reading every import in src/: the domain is pure and
 * self-contained, the engine knows no case kind, and nothing below the HTTP layer imports from it.
 */

/** Every module a file imports: package names as written, relative paths resolved to paths under src/. */
async function importsOf(file: string): Promise<string[]> {
  const text = await readFile(file, 'utf8')
  const specifiers = [...text.matchAll(/(?:from|import)\s*\(?\s*'([^']+)'/g)].map((match) => match[1]!)
  return specifiers.map((specifier) =>
    specifier.startsWith('.') ? relative(SRC, resolve(dirname(file), specifier)) : specifier,
  )
}

const files = (await sourceFiles(SRC)).map((file) => relative(SRC, file))
/** The case kinds: each folder of src/cases/ (its code there and, for its decision, in src/domain/<kind>/). */
const KINDS = (await readdir(join(SRC, 'cases'), { withFileTypes: true }))
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name)
/** A file of a case kind's own: under `cases/<kind>/` or `domain/<kind>/`. */
const kindFolder = (path: string) => {
  const [layer, kind, ...rest] = path.split('/')
  return (layer === 'cases' || layer === 'domain') && KINDS.includes(kind!) && rest.length > 0
}
const imports = new Map(
  await Promise.all(files.map(async (file) => [file, await importsOf(join(SRC, file))] as const)),
)

const isHttpLayer = (path: string) =>
  path.startsWith('http/') ||
  /^cases\/[^/]+\/(routes|schemas|examples|openapi)\.ts$/.test(path) ||
  path === 'cases/registry.ts'
// src/mcp/ is an entry point beside the CLI (`arbiter mcp`): another interface to the service, over the client.
const isMcp = (path: string) => path.startsWith('mcp/')
const isEntryPoint = (path: string) =>
  [
    'app.ts',
    'server.ts',
    'runtime.ts',
    'cli.ts',
    'cli-commands.ts',
    'cli-database.ts',
    'openapi-write.ts',
  ].includes(path) || isMcp(path)
/** What the MCP server may take from src/: the routes' request schemas, so that tools accept what routes do. */
const isRequestSchema = (path: string) =>
  path.startsWith('http/schemas/') || /^cases\/[^/]+\/schemas\.ts$/.test(path)

function violations(from: (file: string) => boolean, forbidden: (target: string) => boolean) {
  return files.filter(from).flatMap((file) =>
    imports
      .get(file)!
      .filter(forbidden)
      .map((target) => `${file} → ${target}`),
  )
}

/**
 * The audit log's parts, in the direction they may import: the pure core (records, chain, tree, checkpoints,
 * verification), the store (its tables' SQL), the sequencer, then what serves the log (append, reads, proofs,
 * verification runs, the offline verify command).
 */
const LOG_PARTS = ['core', 'store', 'sequencer', 'service'] as const
function logPart(path: string): number | null {
  if (!path.startsWith('audit-log/')) return null
  const folder = path.split('/')[1]!
  const part = LOG_PARTS.indexOf(folder as (typeof LOG_PARTS)[number])
  return part === -1 ? LOG_PARTS.indexOf('service') : part
}

/** The import cycles among src/ files (strongly connected components of more than one file, or a self-import). */
function importCycles(): string[][] {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const cycles: string[][] = []
  const edges = (file: string) => imports.get(file)!.filter((target) => imports.has(target))
  const visit = (file: string) => {
    index.set(file, index.size)
    low.set(file, index.get(file)!)
    stack.push(file)
    onStack.add(file)
    for (const target of edges(file)) {
      if (!index.has(target)) {
        visit(target)
        low.set(file, Math.min(low.get(file)!, low.get(target)!))
      } else if (onStack.has(target)) {
        low.set(file, Math.min(low.get(file)!, index.get(target)!))
      }
    }
    if (low.get(file) === index.get(file)) {
      const component: string[] = []
      let member: string
      do {
        member = stack.pop()!
        onStack.delete(member)
        component.push(member)
      } while (member !== file)
      if (component.length > 1 || edges(file).includes(file)) cycles.push(component.sort())
    }
  }
  for (const file of files) if (!index.has(file)) visit(file)
  return cycles
}

describe('the layers of src/', () => {
  it('finds the source files', () => {
    assert.ok(files.includes('engine/evaluate-case.ts') && files.includes('domain/outcome/decision.ts'))
  })

  it('keeps the domain pure: it imports only the domain, hashing and the canonical JSON of @arbiter/transparency', () => {
    const allowed = (target: string) =>
      target.startsWith('domain/') || target === 'node:crypto' || target === '@arbiter/transparency'
    assert.deepEqual(
      violations(
        (file) => file.startsWith('domain/'),
        (target) => !allowed(target),
      ),
      [],
    )
  })

  it('lets nothing below the HTTP layer import from it', () => {
    // Known debt, listed so that nothing new joins it: two services still take their request-body TYPES (type-only
    // imports, no code) from the zod schemas; those types belong in src/domain/fanout and src/domain/review.
    const knownTypeOnly = [
      'cases/fanout/service.ts → cases/fanout/schemas.ts',
      'cases/review/service.ts → cases/review/schemas.ts',
    ]
    assert.deepEqual(
      violations(
        (file) => !isHttpLayer(file) && !isEntryPoint(file),
        (target) => isHttpLayer(target) || isEntryPoint(target) || target === 'fastify-type-provider-zod',
      ).filter((violation) => !knownTypeOnly.includes(violation)),
      [],
    )
  })

  it('keeps the engine free of any case kind', () => {
    assert.deepEqual(
      violations(
        (file) => file.startsWith('engine/'),
        (target) => target.startsWith('cases/'),
      ),
      [],
    )
  })

  it('keeps shared code free of any case kind: only the registry and the app name the kinds', () => {
    // A case kind is its folder and its registry line; what is shared (the engine, the shared routes and
    // schemas, storage, the domain's shared words) is built from the registered kinds and imports none of them.
    assert.deepEqual(
      ['fanout', 'outcome', 'review'].filter((kind) => !KINDS.includes(kind)),
      [],
      'the kinds',
    )
    const mayNameKinds = (file: string) => file.startsWith('cases/') || kindFolder(file) || file === 'app.ts'
    // Probes answer in an outcome's readings (success, partial, failure): ground truth is the outcome kind's so far.
    const knownDebt = [
      'http/schemas/ground-truth.ts → domain/outcome/vocabulary.ts',
      'http/routes/probes.ts → domain/outcome/vocabulary.ts',
      'probes/probe-definition.ts → domain/outcome/vocabulary.ts',
    ]
    assert.deepEqual(
      violations(
        (file) => !mayNameKinds(file) && !isMcp(file) && !isEntryPoint(file),
        (target) => kindFolder(target) || target === 'cases/registry.ts',
      ).filter((violation) => !knownDebt.includes(violation)),
      [],
    )
  })

  it('builds the MCP server on the client: from src/ it takes only the request schemas, never the service', () => {
    // An agent's call must go through the same HTTP API, auth and audit as any other client's: no engine, services
    // or database in the MCP process.
    assert.deepEqual(
      violations(
        isMcp,
        (target) =>
          !target.startsWith('node:') && target.endsWith('.ts') && !isMcp(target) && !isRequestSchema(target),
      ),
      [],
    )
    assert.ok(imports.get('mcp/server.ts')!.includes('@arbiter/client'))
  })

  it('lets only the CLI start the MCP server', () => {
    assert.deepEqual(
      violations(
        (file) => !isMcp(file) && file !== 'cli.ts',
        (target) => isMcp(target),
      ),
      [],
    )
  })

  it('keeps OpenTelemetry in src/tracing/sdk.ts, which only the server loads (when tracing is configured)', () => {
    assert.deepEqual(
      violations(
        (file) => file !== 'tracing/sdk.ts',
        (target) => target.startsWith('@opentelemetry/'),
      ),
      [],
    )
    assert.deepEqual(
      violations(
        (file) => file !== 'server.ts',
        (target) => target === 'tracing/sdk.ts',
      ),
      [],
    )
  })

  it("keeps zod schemas in the HTTP layer (and config, which parses the environment; the MCP tools, which check their arguments with the routes' schemas)", () => {
    assert.deepEqual(
      violations(
        (file) =>
          !isHttpLayer(file) &&
          !isMcp(file) &&
          !['config.ts', 'pagination.ts', 'probes/probe-definition.ts'].includes(file),
        (target) => target === 'zod',
      ),
      [],
    )
  })
  it("keeps the audit log's core pure: no database, files, threads or network, only the core, the domain and hashing and signatures", () => {
    const allowed = (target: string) =>
      target.startsWith('audit-log/core/') ||
      target.startsWith('domain/') ||
      ['node:crypto', '@arbiter/transparency', 'crypto/jws.ts'].includes(target)
    assert.deepEqual(
      violations(
        (file) => file.startsWith('audit-log/core/'),
        (target) => !allowed(target),
      ),
      [],
    )
  })

  it("orders the audit log's parts: core, store, sequencer, then what serves the log; none imports a later one", () => {
    assert.ok(
      files.includes('audit-log/store/records.ts') && files.includes('audit-log/sequencer/sequencer.ts'),
    )
    const against = files.flatMap((file) => {
      const from = logPart(file)
      if (from === null) return []
      return imports
        .get(file)!
        .filter((target) => (logPart(target) ?? -1) > from)
        .map((target) => `${file} → ${target}`)
    })
    assert.deepEqual(against, [])
  })

  it('lets nothing in src/db import from the layers above it', () => {
    // The HTTP layer, the engine, the case kinds, the services, webhooks, the audit log and the entry points use
    // the database; src/db knows none of them. Of src/ it takes only the domain's words, the configuration, and
    // the types of two rows it stores (a signing key, a probe's definition).
    const alsoTaken = ['config.ts', 'crypto/signing-key.ts', 'probes/probe-definition.ts']
    const allowed = (target: string) =>
      !target.endsWith('.ts') ||
      target.startsWith('db/') ||
      target.startsWith('domain/') ||
      alsoTaken.includes(target)
    assert.deepEqual(
      violations(
        (file) => file.startsWith('db/'),
        (target) => !allowed(target),
      ),
      [],
    )
  })

  it('has no import cycle through the audit log', () => {
    assert.deepEqual(
      importCycles().filter((cycle) => cycle.some((file) => file.startsWith('audit-log/'))),
      [],
    )
  })
})

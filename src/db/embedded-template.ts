import { chmod, cp, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { EMBEDDED_SETTINGS, settingsArguments } from './embedded-settings.ts'

/*
 * A new embedded database starts as a copy of a template the build made. Creating a PostgreSQL data directory in
 * PGlite runs initdb in WebAssembly: seconds of CPU and the process's peak of memory (two extra PostgreSQL
 * instances), which a newcomer's first `npm start` paid in full. The build runs it once and keeps the directory
 * it made next to the compiled code (`dist/embedded-pgdata/`); a first start copies it, file by file in the
 * kernel, into the data dir, and opens it as any existing database.
 *
 * The template holds what initdb makes and nothing of Arbiter's: no migration has run in it, so every database
 * made from it gets its own identity (the log's id, its keys) from the migrations of its first start. It is used
 * only by the PGlite version that made it, with the settings it was made with; otherwise (or when it is missing,
 * as under tsx) initdb runs as before.
 */

/** Beside the compiled `db/` directory. */
const TEMPLATE_DIR = fileURLToPath(new URL('../embedded-pgdata', import.meta.url))
/** What made it (`{ pglite, settings }`), written once the directory is complete. */
const TEMPLATE_ORIGIN = fileURLToPath(new URL('../embedded-pgdata.json', import.meta.url))

interface TemplateOrigin {
  pglite: string
  settings: Record<string, string>
}

/** The installed PGlite's version (its package.json is not among its exports: read beside its entry point). */
async function pgliteVersion(): Promise<string> {
  const entry = import.meta.resolve('@electric-sql/pglite')
  const manifest = JSON.parse(await readFile(new URL('../package.json', entry), 'utf8')) as {
    version: string
  }
  return manifest.version
}

async function currentOrigin(): Promise<string> {
  const origin: TemplateOrigin = { pglite: await pgliteVersion(), settings: { ...EMBEDDED_SETTINGS } }
  return `${JSON.stringify(origin)}\n`
}

/** Whether there is a complete template this PGlite may use. */
async function usableTemplate(): Promise<boolean> {
  try {
    const origin = await readFile(TEMPLATE_ORIGIN, 'utf8')
    return origin === (await currentOrigin()) && (await stat(join(TEMPLATE_DIR, 'PG_VERSION'))).isFile()
  } catch {
    return false
  }
}

/**
 * Creates `pgdata` (which must not exist) as a copy of the template, and returns true; false, creating nothing,
 * when there is no template this PGlite may use. The copy is made beside and renamed into place, so an
 * interrupted one never leaves a half-copied `pgdata`.
 */
export async function copyEmbeddedTemplate(pgdata: string): Promise<boolean> {
  if (!(await usableTemplate())) return false
  const beside = `${pgdata}.copying-${process.pid}`
  await rm(beside, { recursive: true, force: true })
  try {
    await cp(TEMPLATE_DIR, beside, { recursive: true, preserveTimestamps: true })
    // PostgreSQL refuses a data directory others may enter (and the template is readable by all).
    await chmod(beside, 0o700)
    await rename(beside, pgdata)
  } catch (err) {
    await rm(beside, { recursive: true, force: true })
    throw err
  }
  return true
}

/**
 * Makes the template beside the compiled code (the build runs this for each build); does nothing when the one
 * there was made by this PGlite with these settings. Returns whether it made one.
 */
export async function writeEmbeddedTemplate(): Promise<boolean> {
  const origin = await currentOrigin()
  if (await usableTemplate()) return false
  await rm(TEMPLATE_ORIGIN, { force: true })
  const making = `${TEMPLATE_DIR}.making-${process.pid}`
  await rm(making, { recursive: true, force: true })
  await mkdir(making, { mode: 0o700 })
  // Loaded here only: the service's main thread copies the template and never needs PGlite itself.
  const { PGlite } = await import('@electric-sql/pglite')
  const db = await PGlite.create(making, { initDbStartParams: settingsArguments() })
  // A clean shutdown (a checkpoint): a database made from the template has nothing to recover.
  await db.close()
  // Readable by all: the user the service runs as may not be the one who built it (a container image). It holds
  // nothing but what initdb makes; each copy is closed to others again (mode 0700).
  await openToReading(making)
  await rm(TEMPLATE_DIR, { recursive: true, force: true })
  await rename(making, TEMPLATE_DIR)
  await writeFile(TEMPLATE_ORIGIN, origin)
  return true
}

async function openToReading(directory: string): Promise<void> {
  await chmod(directory, 0o755)
  for (const entry of await readdir(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name)
    if (entry.isDirectory()) await openToReading(path)
    else await chmod(path, 0o644)
  }
}

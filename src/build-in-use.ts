import { mkdirSync, writeFileSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** What every build directory of the service is named (scripts/build.mjs): `.dist-build-<id>`. */
const BUILD_PREFIX = '.dist-build-'

/**
 * Marks the build this process runs from as in use: a later build (scripts/build.mjs) keeps a build marked by a
 * live process, however many builds came after it, so a long-running service never loses a file it loads late
 * (a worker thread's script, a lazy import). Run from the sources, or from a build that is not one of those
 * directories (the Docker image's plain dist/), there is nothing to mark.
 */
export function markBuildInUse(): void {
  const build = dirname(fileURLToPath(import.meta.url))
  if (!basename(build).startsWith(BUILD_PREFIX)) return
  try {
    mkdirSync(join(build, '.in-use'), { recursive: true })
    writeFileSync(join(build, '.in-use', String(process.pid)), '')
  } catch {
    // A build the process may not write to is not one a local build prunes either.
  }
}

import { readdir } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The project's src/ folder. */
export const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src')

/** Every TypeScript file under `dir`, at any depth. */
export async function sourceFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true })
  const nested = await Promise.all(
    entries.map((entry) => {
      const path = join(dir, entry.name)
      return entry.isDirectory() ? sourceFiles(path) : Promise.resolve(path.endsWith('.ts') ? [path] : [])
    }),
  )
  return nested.flat()
}

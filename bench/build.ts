import { spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { repoRoot } from './config.ts'

/** Where the baseline server is compiled to (git-ignored). */
export const BASELINE_BUILD_DIR = join(repoRoot, 'bench', '.build')

/**
 * The bench measures what production runs: the service's compiled `dist/` (as `npm start` runs it, no transpiler
 * at run time), and the baseline server compiled the same way, so neither side carries a loader's CPU and memory.
 * Builds both, for each checkout measured; BENCH_SKIP_BUILD=1 skips it when dist/ is already current.
 */
export function buildForBench(arbiterRoots: readonly string[]): void {
  if (process.env.BENCH_SKIP_BUILD === '1') return
  for (const root of new Set(arbiterRoots)) run('npm', ['run', '--silent', 'build'], root)
  run(
    'npx',
    [
      'tsc',
      '--outDir',
      BASELINE_BUILD_DIR,
      '--module',
      'nodenext',
      '--moduleResolution',
      'nodenext',
      '--target',
      'es2022',
      '--skipLibCheck',
      '--types',
      'node',
      join(repoRoot, 'bench', 'baseline-server.ts'),
    ],
    repoRoot,
  )
}

function run(command: string, args: string[], cwd: string): void {
  const result = spawnSync(command, args, { cwd, stdio: 'inherit' })
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed in ${cwd}`)
}

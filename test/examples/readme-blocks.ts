/**
 * The README's shell blocks, as a reader pastes them: every fenced block marked `sh`, `bash` or `shell`, in
 * order. A block the walkthrough cannot run (one that installs, serves in the foreground or runs the whole
 * suite) is marked right above its fence with `<!-- readme-test: skip (the reason) -->`; the reason is required.
 */
export interface ReadmeBlocks {
  /** The blocks to run, in order, each with the line its fence opens on (1-based). */
  run: { line: number; text: string }[]
  /** The blocks marked skip, with their reasons. */
  skipped: { line: number; reason: string; text: string }[]
}

const FENCE = /^```(\w*)\s*$/
const SKIP = /^<!--\s*readme-test:\s*skip\s*\((.+)\)\s*-->$/
const SHELL = new Set(['sh', 'bash', 'shell'])

export function readmeShellBlocks(markdown: string): ReadmeBlocks {
  const lines = markdown.split('\n')
  const blocks: ReadmeBlocks = { run: [], skipped: [] }
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i] ?? '')
    if (!open) continue
    const start = i
    const body: string[] = []
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i] ?? ''); i++) body.push(lines[i] ?? '')
    if (i >= lines.length) throw new Error(`README line ${start + 1}: a fenced block is never closed`)
    if (!SHELL.has(open[1] ?? '')) continue
    let above = start - 1
    while (above >= 0 && (lines[above] ?? '').trim() === '') above--
    const skip = SKIP.exec((lines[above] ?? '').trim())
    const text = body.join('\n')
    if (skip) blocks.skipped.push({ line: start + 1, reason: skip[1] ?? '', text })
    else blocks.run.push({ line: start + 1, text })
  }
  return blocks
}

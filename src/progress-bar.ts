/**
 * A one-line progress bar for long CLI commands, redrawn in place at most ten times a second. Only for terminals:
 * callers check `isTTY` first, so piped output stays clean.
 */
export function progressBar(stream: NodeJS.WritableStream, label: string) {
  const started = performance.now()
  let drawnAt = 0
  let drawn = false
  const draw = (done: number, total: number) => {
    const ratio = total === 0 ? 1 : Math.min(1, done / total)
    const width = 30
    const filled = Math.round(ratio * width)
    const seconds = (performance.now() - started) / 1000
    const rate = seconds > 0 ? Math.round(done / seconds) : 0
    stream.write(
      `\r${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(Math.floor(ratio * 100)).padStart(3)}%` +
        ` ${done.toLocaleString('en-US')}/${total.toLocaleString('en-US')} (${rate.toLocaleString('en-US')}/s)`,
    )
    drawn = true
  }
  return {
    update(done: number, total: number) {
      const now = performance.now()
      if (now - drawnAt < 100 && done < total) return
      drawnAt = now
      draw(done, total)
    },
    finish() {
      if (drawn) stream.write('\n')
    },
  }
}

/**
 * A status line for a step with no measure of its progress (opening the embedded database), shown only while it
 * lasts and erased after. Only for terminals, like the bar.
 */
export async function withStatusLine<T>(stream: NodeJS.WritableStream, text: string, step: () => Promise<T>) {
  stream.write(`\r${text}…`)
  try {
    return await step()
  } finally {
    stream.write(`\r${' '.repeat(text.length + 1)}\r`)
  }
}

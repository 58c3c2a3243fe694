import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { describe, it } from 'node:test'
import { withStatusLine } from '../../src/progress-bar.ts'

function capture() {
  const written: string[] = []
  const stream = new Writable({
    write(chunk, _encoding, done) {
      written.push(String(chunk))
      done()
    },
  })
  return { stream, written }
}

describe('the status line a terminal sees while the CLI opens the embedded database', () => {
  it('says what it waits for, then erases itself, and passes the result on', async () => {
    const { stream, written } = capture()
    const result = await withStatusLine(stream, 'opening the embedded database in /data', async () => 42)
    assert.equal(result, 42)
    assert.deepEqual(written, ['\ropening the embedded database in /data…', `\r${' '.repeat(39)}\r`])
  })

  it('erases itself when the step fails too', async () => {
    const { stream, written } = capture()
    await assert.rejects(
      withStatusLine(stream, 'opening', async () => {
        throw new Error('no')
      }),
      /no/,
    )
    assert.equal(written.at(-1), `\r${' '.repeat(8)}\r`)
  })
})

import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { type SseBlock, SseParser } from '../src/sse.ts'

function parseAll(chunks: string[], lastEventId?: string): SseBlock[] {
  const parser = new SseParser(lastEventId)
  return chunks.flatMap((chunk) => parser.push(chunk))
}

const block = (
  event: string,
  data: string | undefined,
  id: string | undefined,
  hasId: boolean,
): SseBlock => ({
  event,
  data,
  id,
  hasId,
})

describe('SseParser', () => {
  const cases: [string, string, SseBlock[]][] = [
    [
      'an event with id and data',
      'event: manifest\nid: 7\ndata: {"a":1}\n\n',
      [block('manifest', '{"a":1}', '7', true)],
    ],
    ['the default event type', 'data: x\n\n', [block('message', 'x', undefined, false)]],
    [
      'data lines joined with LF',
      'data: a\ndata: b\ndata\n\n',
      [block('message', 'a\nb\n', undefined, false)],
    ],
    ['only one leading space dropped', 'data:  two\n\n', [block('message', ' two', undefined, false)]],
    ['a value without space', 'data:x\n\n', [block('message', 'x', undefined, false)]],
    [
      'comment lines (heartbeats) ignored',
      ': heartbeat\n\n: connected\n\ndata: x\n\n',
      [block('message', 'x', undefined, false)],
    ],
    ['CRLF line ends', 'id: 1\r\ndata: x\r\n\r\n', [block('message', 'x', '1', true)]],
    ['CR line ends', 'id: 1\rdata: x\r\r', [block('message', 'x', '1', true)]],
    ['a leading BOM', '\uFEFFdata: x\n\n', [block('message', 'x', undefined, false)]],
    ['an id-only block (moves the position)', 'id: 9\n\n', [block('message', undefined, '9', true)]],
    [
      'ids persisting across blocks',
      'id: 3\ndata: a\n\ndata: b\n\n',
      [block('message', 'a', '3', true), block('message', 'b', '3', false)],
    ],
    ['an id with NUL ignored', 'id: 4\0\ndata: a\n\n', [block('message', 'a', undefined, false)]],
    ['unknown fields ignored', 'foo: bar\ndata: a\n\n', [block('message', 'a', undefined, false)]],
    ['an incomplete block not dispatched', 'data: a\n', []],
    ['a blank line alone dispatches nothing', '\n\n\n', []],
  ]
  for (const [name, text, expected] of cases) {
    it(`parses ${name}`, () => {
      assert.deepEqual(parseAll([text]), expected)
    })
  }

  it('reads retry only when it is all digits', () => {
    const parser = new SseParser()
    parser.push('retry: 2000\n\n')
    assert.equal(parser.retryMs, 2000)
    parser.push('retry: soon\n\n')
    assert.equal(parser.retryMs, 2000)
  })

  it('starts from the lastEventId it is given', () => {
    assert.deepEqual(parseAll(['data: a\n\n'], '12'), [block('message', 'a', '12', false)])
  })

  it('treats a CR LF split between two chunks as one line end', () => {
    assert.deepEqual(parseAll(['data: a\r', '\n\r', '\n']), [block('message', 'a', undefined, false)])
  })

  it('gives the same blocks however the stream is cut into chunks', () => {
    const stream =
      'retry: 2000\n: connected\n\nevent: manifest\nid: 1\ndata: {"m":1}\n\n: heartbeat\n\n' +
      'event: manifest\r\nid: 2\r\ndata: {"m":\r\ndata: 2}\r\n\r\nid: 5\n\nevent: manifest\rid: 6\rdata: {}\r\r'
    const whole = parseAll([stream])
    assert.equal(whole.length, 4)
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 1, max: stream.length - 1 }), { maxLength: 12 }),
        (cuts) => {
          const points = [0, ...cuts.sort((a, b) => a - b), stream.length]
          const chunks = points.slice(1).map((end, i) => stream.slice(points[i], end))
          assert.deepEqual(parseAll(chunks), whole)
        },
      ),
    )
  })
})

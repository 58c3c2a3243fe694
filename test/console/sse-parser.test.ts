import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { type SseEvent, SseParser } from '../../console/src/sse-parser.ts'

function parseWhole(text: string, lastEventId: string | null = null): SseEvent[] {
  const parser = new SseParser(lastEventId)
  return [...parser.push(text), ...parser.end()]
}

function parseInPieces(text: string, cuts: number[]): SseEvent[] {
  const parser = new SseParser()
  const events: SseEvent[] = []
  let from = 0
  for (const cut of [...cuts].sort((a, b) => a - b)) {
    events.push(...parser.push(text.slice(from, cut)))
    from = cut
  }
  events.push(...parser.push(text.slice(from)), ...parser.end())
  return events
}

describe('SseParser', () => {
  const cases: { name: string; stream: string; events: SseEvent[] }[] = [
    {
      name: 'reads an Arbiter manifest event: type, id and data',
      stream: 'retry: 2000\n: connected\n\nevent: manifest\nid: 42\ndata: {"a":1}\n\n',
      events: [{ event: 'manifest', data: '{"a":1}', lastEventId: '42' }],
    },
    {
      name: 'types an event without `event:` as message',
      stream: 'data: x\n\n',
      events: [{ event: 'message', data: 'x', lastEventId: null }],
    },
    {
      name: 'joins data lines with a line feed',
      stream: 'data: one\ndata: two\n\n',
      events: [{ event: 'message', data: 'one\ntwo', lastEventId: null }],
    },
    {
      name: 'removes one space after the colon, no more',
      stream: 'data:  two spaces\ndata:none\n\n',
      events: [{ event: 'message', data: ' two spaces\nnone', lastEventId: null }],
    },
    {
      name: 'accepts CRLF and lone CR line ends',
      stream: 'data: a\r\n\r\ndata: b\r\rdata: c\n\n',
      events: [
        { event: 'message', data: 'a', lastEventId: null },
        { event: 'message', data: 'b', lastEventId: null },
        { event: 'message', data: 'c', lastEventId: null },
      ],
    },
    {
      name: 'ignores comments (heartbeats) and unknown fields',
      stream: ': heartbeat\n\nfoo: bar\ndata: x\n\n',
      events: [{ event: 'message', data: 'x', lastEventId: null }],
    },
    {
      name: 'dispatches nothing for a block without data, but keeps its id',
      stream: 'id: 7\n\ndata: next\n\n',
      events: [{ event: 'message', data: 'next', lastEventId: '7' }],
    },
    {
      name: 'keeps the last id for later events until another id changes it',
      stream: 'id: 1\ndata: a\n\ndata: b\n\nid: 3\ndata: c\n\n',
      events: [
        { event: 'message', data: 'a', lastEventId: '1' },
        { event: 'message', data: 'b', lastEventId: '1' },
        { event: 'message', data: 'c', lastEventId: '3' },
      ],
    },
    {
      name: 'ignores an id containing U+0000',
      stream: 'id: 5\ndata: a\n\nid: 6\u00007\ndata: b\n\n',
      events: [
        { event: 'message', data: 'a', lastEventId: '5' },
        { event: 'message', data: 'b', lastEventId: '5' },
      ],
    },
    {
      name: 'discards an event the stream ended before its blank line',
      stream: 'data: whole\n\ndata: cut off',
      events: [{ event: 'message', data: 'whole', lastEventId: null }],
    },
    {
      name: 'strips a byte order mark at the start of the stream only',
      stream: '\ufeffdata: x\n\n',
      events: [{ event: 'message', data: 'x', lastEventId: null }],
    },
    {
      name: 'resets the event type after each dispatch',
      stream: 'event: manifest\ndata: a\n\ndata: b\n\n',
      events: [
        { event: 'manifest', data: 'a', lastEventId: null },
        { event: 'message', data: 'b', lastEventId: null },
      ],
    },
  ]
  for (const { name, stream, events } of cases) {
    it(name, () => assert.deepEqual(parseWhole(stream), events))
  }

  it('starts from the id it resumes after', () => {
    assert.deepEqual(parseWhole('data: x\n\n', '41'), [{ event: 'message', data: 'x', lastEventId: '41' }])
  })

  it('reads the reconnection delay the server asks for, digits only', () => {
    const parser = new SseParser()
    parser.push('retry: 2000\n\n')
    assert.equal(parser.retryMs, 2000)
    parser.push('retry: soon\n\n')
    assert.equal(parser.retryMs, 2000)
  })

  it('treats a CR at the end of a chunk as a line end only once it knows what follows', () => {
    const parser = new SseParser()
    assert.deepEqual(parser.push('data: a\r'), [])
    assert.deepEqual(parser.push('\n\r\n'), [{ event: 'message', data: 'a', lastEventId: null }])
  })

  it('yields the same events however the stream is cut into chunks', () => {
    const line = fc.oneof(
      fc.constantFrom(': heartbeat', 'event: manifest', 'retry: 2000', ''),
      fc.string({ unit: fc.constantFrom('a', 'b', ':', ' ', '{', '"', 'é', '😀') }).map((s) => `data: ${s}`),
      fc.nat({ max: 99999 }).map((n) => `id: ${n}`),
    )
    const stream = fc
      .tuple(fc.array(line, { maxLength: 30 }), fc.constantFrom('\n', '\r\n', '\r'))
      .map(([lines, eol]) => lines.map((l) => l + eol).join('') + eol)
    fc.assert(
      fc.property(
        stream.chain((text) =>
          fc.tuple(fc.constant(text), fc.array(fc.nat({ max: text.length }), { maxLength: 12 })),
        ),
        ([text, cuts]) => {
          assert.deepEqual(parseInPieces(text, cuts), parseWhole(text))
        },
      ),
    )
  })
})

import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { test } from 'node:test'
import { type AnswerCheck, AnswerSample, cannon } from '../../bench/load.ts'

/** Right when the answer is `{"id": <the id in the path>}`. */
const echoesId: AnswerCheck = {
  every: 1,
  verify(path, status, body) {
    const id = new URL(path, 'http://x').searchParams.get('id')
    const row = body() as { id?: string }
    return status === 200 && row.id === id ? null : `status ${status}, id ${row.id}`
  },
}

test('the sample checks one answer in `every`, and counts an unreadable one as wrong', () => {
  const sample = new AnswerSample({ ...echoesId, every: 100 })
  for (let n = 0; n < 250; n++) {
    sample.answer(`/?id=${n}`, 200, () => {
      if (n === 200) throw new SyntaxError('Unexpected end of JSON input')
      return { id: n === 100 ? 'other' : String(n) }
    })
  }
  const summary = sample.summary()
  assert.equal(summary.checked, 3, 'answers 0, 100 and 200')
  assert.equal(summary.wrong, 2)
  assert.deepEqual(summary.examples, [
    '/?id=100: status 200, id other',
    '/?id=200: unreadable answer: Unexpected end of JSON input',
  ])
})

test('the load generator checks each answer against the path its own request asked for', async () => {
  // Every answer echoes the id asked for, but for id 7, whose answer names id 8.
  const server = createServer((request, response) => {
    const id = new URL(request.url ?? '/', 'http://x').searchParams.get('id')
    response.setHeader('content-type', 'application/json')
    response.end(JSON.stringify({ id: id === '7' ? '8' : id }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  let n = 0
  try {
    const result = await cannon({
      origin: `http://127.0.0.1:${port}`,
      connections: 4,
      durationS: 1,
      nextPath: () => `/?id=${n++ % 10}`,
      check: echoesId,
    })
    const answers = result.answers!
    assert.ok(answers.checked > 100, `${answers.checked} answers checked`)
    // One request in ten asks for id 7; matched to another request's path, most answers would look wrong.
    const share = answers.wrong / answers.checked
    assert.ok(share > 0.05 && share < 0.15, `${answers.wrong} of ${answers.checked} wrong`)
    assert.equal(answers.examples[0], '/?id=7: status 200, id 8')
  } finally {
    server.close()
  }
})

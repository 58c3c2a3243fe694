import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { parseFanoutAnswer } from '../../console/src/fanout-answer.ts'

describe('parseFanoutAnswer (a contested fact’s answer typed by hand)', () => {
  it('reads a full answer', () => {
    assert.deepEqual(
      parseFanoutAnswer(
        '{"value": {"amount": 60000}, "effective_date": "2025-01-22", "qualifiers": {"applies_to": "new_logos"}}',
      ),
      {
        answer: {
          value: { amount: 60000 },
          effective_date: '2025-01-22',
          qualifiers: { applies_to: 'new_logos' },
        },
      },
    )
  })

  it('defaults the date to null and the qualifiers to none', () => {
    assert.deepEqual(parseFanoutAnswer('{"value": 1}'), {
      answer: { value: 1, effective_date: null, qualifiers: {} },
    })
  })

  const refused: [string, string, RegExp][] = [
    ['text that is not JSON', '{value: 1}', /Not valid JSON/],
    ['a value that is not an object', '[1]', /Write an object/],
    ['a missing value', '{"effective_date": null}', /"value" is required/],
    ['a null value', '{"value": null}', /"value" is required/],
    ['a member Arbiter does not know', '{"value": 1, "source": "x"}', /Unknown member source/],
    ['a date in another format', '{"value": 1, "effective_date": "22/01/2025"}', /calendar date/],
    ['a date that is not in the calendar', '{"value": 1, "effective_date": "2025-02-30"}', /calendar date/],
    ['qualifiers that are not an object', '{"value": 1, "qualifiers": ["a"]}', /"qualifiers" is an object/],
    [
      'a qualifier that is neither string, number nor boolean',
      '{"value": 1, "qualifiers": {"a": null}}',
      /Qualifier "a"/,
    ],
  ]
  for (const [name, text, message] of refused) {
    it(`refuses ${name}`, () => {
      const result = parseFanoutAnswer(text)
      assert.ok('error' in result, JSON.stringify(result))
      assert.match(result.error, message)
    })
  }
})

import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import {
  identityForm,
  identityKey,
  identityProblem,
  isValidIdentity,
  MAX_IDENTITY_LENGTH,
  sameModel,
  sameModelAndContext,
} from '../../../src/domain/shared/agent-identity.ts'

const PRINTABLE_ASCII = /^[\x21-\x7e]+$/

/** Every Unicode scalar value and lone surrogate, as a one-code-point string. */
function* everyCodePoint(): Generator<string> {
  for (let cp = 0; cp <= 0x10ffff; cp++) yield String.fromCodePoint(cp)
}

/** The attacks that once passed for a second model, each with what the identity rule makes of it. */
const ATTACKS: { name: string; text: string; same?: string }[] = [
  { name: 'a trailing zero-width space (U+200B)', text: 'model-m\u200b' },
  { name: 'a zero-width joiner (U+200D)', text: 'model\u200d-m' },
  { name: 'a zero-width non-joiner (U+200C)', text: 'model\u200c-m' },
  { name: 'a Cyrillic о (U+043E)', text: 'm\u043edel-m' },
  { name: 'a Greek ο (U+03BF)', text: 'm\u03bfdel-m' },
  { name: 'a U+2010 hyphen', text: 'model\u2010m' },
  { name: 'a non-breaking hyphen (U+2011, NFKC → U+2010)', text: 'model\u2011m' },
  { name: 'a soft hyphen (U+00AD)', text: 'model-\u00adm' },
  { name: 'a combining acute accent (U+0301)', text: 'model-m\u0301' },
  { name: 'a leading right-to-left override (U+202E)', text: '\u202emodel-m' },
  { name: 'a left-to-right mark (U+200E)', text: 'model-m\u200e' },
  { name: 'a word joiner (U+2060)', text: 'model\u2060-m' },
  { name: 'a byte order mark inside (U+FEFF)', text: 'model\ufeff-m' },
  { name: 'a variation selector (U+FE0F)', text: 'model-m\ufe0f' },
  { name: 'a tag character (U+E0041)', text: 'model-m\u{e0041}' },
  { name: 'a space inside', text: 'model m' },
  { name: 'a tab inside', text: 'model\tm' },
  { name: 'a NUL', text: 'model-m\u0000' },
  { name: 'DEL (U+007F)', text: 'model-m\u007f' },
  { name: 'a lone surrogate', text: 'model-m\ud800' },
  { name: 'an emoji', text: 'model-m\u{1f600}' },
  { name: 'the ligature ﬀ for ff', text: 'model-o\ufb00', same: 'model-off' },
  { name: 'a fullwidth ｍ', text: '\uff4dodel-a', same: 'model-a' },
  {
    name: 'fullwidth letters throughout',
    text: '\uff2d\uff4f\uff44\uff45\uff4c\uff0d\uff41',
    same: 'model-a',
  },
  { name: 'a no-break space around it (U+00A0)', text: '\u00a0model-m\u00a0', same: 'model-m' },
  { name: 'an ideographic space around it (U+3000)', text: '\u3000model-m', same: 'model-m' },
  { name: 'a leading byte order mark (U+FEFF, trimmed)', text: '\ufeffmodel-m', same: 'model-m' },
  { name: 'another case', text: 'MODEL-M', same: 'model-m' },
  { name: 'the Kelvin sign (U+212A, NFKC → K)', text: 'model-\u212a', same: 'model-k' },
]

/**
 * Text that is often a valid identity and often one character away: mostly printable ASCII, with white space,
 * compatibility forms that fold into ASCII, and any code point at all (lone surrogates included).
 */
const mixedText = fc
  .array(
    fc.oneof(
      { weight: 8, arbitrary: fc.stringMatching(/^[\x21-\x7e]$/) },
      {
        weight: 1,
        arbitrary: fc.constantFrom(' ', '\t', '\u00a0', '\u3000', '\ufeff', '\ufb00', '\uff21', '\u212a'),
      },
      { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
    ),
    { maxLength: 30 },
  )
  .map((chars) => chars.join(''))

describe('agent identities', () => {
  describe('the attacks that passed for a second model', () => {
    for (const attack of ATTACKS) {
      if (attack.same === undefined) {
        it(`refuses ${attack.name}`, () => {
          assert.equal(isValidIdentity(attack.text), false)
          assert.match(identityProblem(attack.text)!, /printable ASCII|at most/)
        })
      } else {
        it(`folds ${attack.name} into the same identity as ${JSON.stringify(attack.same)}`, () => {
          assert.equal(identityProblem(attack.text), null)
          assert.ok(sameModel({ model: attack.text }, { model: attack.same! }))
          assert.equal(identityKey(attack.text), identityKey(attack.same!))
        })
      }
    }
  })

  describe('identityProblem', () => {
    it('accepts printable ASCII of 1 to 200 characters', () => {
      assert.equal(identityProblem('m'), null)
      assert.equal(identityProblem('claude-opus-4.1@2025/ctx#7'), null)
      assert.equal(identityProblem('!~'), null)
      assert.equal(identityProblem('x'.repeat(MAX_IDENTITY_LENGTH)), null)
    })
    it('refuses empty and blank text', () => {
      for (const blank of ['', ' ', '\t\n', '\u00a0', '\u3000', '\ufeff']) {
        assert.equal(identityProblem(blank), 'must not be empty', JSON.stringify(blank))
      }
    })
    it('counts the length after normalisation and trimming', () => {
      assert.match(identityProblem('x'.repeat(MAX_IDENTITY_LENGTH + 1))!, /at most 200 characters/)
      assert.equal(identityProblem(`  ${'x'.repeat(MAX_IDENTITY_LENGTH)}  `), null)
      // U+FDFA (one character) expands to 18 under NFKC, and non-ASCII at that.
      assert.equal(identityForm('\ufdfa').length, 18)
      // 67 × 'ﬀ' is 134 characters once folded: valid; 101 × 'ﬀ' is 202: too long.
      assert.equal(identityProblem('\ufb00'.repeat(67)), null)
      assert.match(identityProblem('\ufb00'.repeat(101))!, /at most 200 characters/)
    })
    it('names the refused character by its code point and position', () => {
      assert.equal(
        identityProblem('model-m\u200b'),
        'must be printable ASCII (U+0021–U+007E) after NFKC normalisation and trimming; character 8 is U+200B',
      )
      assert.match(identityProblem('\u202emodel')!, /character 1 is U\+202E$/)
      assert.match(identityProblem('model-m\u{1f600}')!, /character 8 is U\+1F600$/)
    })
  })

  describe('every code point', () => {
    it('is refused inside a name, or folds into the identity of its ASCII spelling', () => {
      let folded = 0
      for (const char of everyCodePoint()) {
        const text = `model${char}m`
        if (!isValidIdentity(text)) continue
        folded++
        const ascii = char.normalize('NFKC')
        assert.match(ascii, PRINTABLE_ASCII, `U+${char.codePointAt(0)!.toString(16)} passed without folding`)
        assert.equal(identityKey(text), identityKey(`model${ascii}m`))
        assert.match(identityKey(text), PRINTABLE_ASCII)
      }
      // The 94 printable ASCII characters, plus the compatibility forms that fold into them (fullwidth letters,
      // ligatures, mathematical alphanumerics, …): far more than 94, so the sweep did see folding.
      assert.ok(folded > 94, `${folded}`)
    })

    it('refuses every format, control, combining, private-use, separator and surrogate code point inside a name', () => {
      const classes = /^[\p{Cf}\p{Cc}\p{Mn}\p{Me}\p{Co}\p{Cs}\p{Zs}\p{Zl}\p{Zp}]$/u
      let checked = 0
      for (const char of everyCodePoint()) {
        if (!classes.test(char) && !/^[\ud800-\udfff]$/.test(char)) continue
        checked++
        assert.equal(isValidIdentity(`model${char}m`), false, `U+${char.codePointAt(0)!.toString(16)}`)
      }
      assert.ok(checked > 100_000, `${checked}`)
    })

    it('refuses every letter of another script that NFKC does not fold into ASCII', () => {
      for (const char of everyCodePoint()) {
        if (!/^\p{L}$/u.test(char) || /^[A-Za-z]$/.test(char)) continue
        if (PRINTABLE_ASCII.test(char.normalize('NFKC'))) continue
        assert.equal(isValidIdentity(`model${char}m`), false, `U+${char.codePointAt(0)!.toString(16)}`)
      }
    })
  })

  describe('identityKey', () => {
    it('lower-cases ASCII letters only', () => {
      assert.equal(identityKey('Model-L'), 'model-l')
      assert.equal(identityKey(' MODEL-L\t'), 'model-l')
      // Outside ASCII nothing is folded by case: such a text is refused anyway, and compares as itself.
      assert.equal(identityKey('\u00c9'), '\u00c9')
      assert.equal(identityKey('\u0130'), '\u0130')
    })

    it('is total: any string has a key, and never throws', () => {
      fc.assert(
        fc.property(fc.oneof(mixedText, fc.string({ unit: 'binary', maxLength: 50 })), (text) => {
          assert.equal(typeof identityKey(text), 'string')
          assert.equal(typeof isValidIdentity(text), 'boolean')
        }),
      )
    })

    it('of a valid identity is itself valid, without upper-case letters, and a fixed point', () => {
      fc.assert(
        fc.property(mixedText, (text) => {
          fc.pre(isValidIdentity(text))
          const key = identityKey(text)
          assert.ok(isValidIdentity(key))
          assert.doesNotMatch(key, /[A-Z]/)
          assert.equal(identityKey(key), key)
        }),
      )
    })

    it('ignores surrounding white space and ASCII case, and nothing else', () => {
      const asciiName = fc.stringMatching(/^[\x21-\x7e]{1,40}$/)
      const padding = fc.array(fc.constantFrom(' ', '\t', '\n', '\u00a0', '\u2003', '\u3000', '\ufeff'), {
        maxLength: 3,
      })
      fc.assert(
        fc.property(asciiName, padding, padding, fc.boolean(), (name, before, after, upper) => {
          const spelled = `${before.join('')}${upper ? name.toUpperCase() : name}${after.join('')}`
          assert.ok(isValidIdentity(spelled))
          assert.ok(sameModel({ model: spelled }, { model: name }))
        }),
      )
      fc.assert(
        fc.property(asciiName, asciiName, (a, b) => {
          assert.equal(sameModel({ model: a }, { model: b }), a.toLowerCase() === b.toLowerCase())
        }),
      )
    })

    it('never lets a valid name with an inserted character pass for the name unless NFKC folds it', () => {
      fc.assert(
        fc.property(
          fc.stringMatching(/^[\x21-\x7e]{2,40}$/),
          fc.nat(),
          fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
          (name, at, char) => {
            const i = 1 + (at % (name.length - 1))
            const spelled = `${name.slice(0, i)}${char}${name.slice(i)}`
            if (!isValidIdentity(spelled)) return
            // Accepted: then the inserted character is (or folds into) printable ASCII, and so is visible.
            assert.match(identityForm(spelled), PRINTABLE_ASCII)
            assert.equal(identityKey(spelled).length, identityForm(spelled).length)
          },
        ),
      )
    })
  })

  describe('sameModelAndContext', () => {
    it('needs both the model and the context to be the same identities', () => {
      const implementer = { model: 'model-m', context_id: 'ctx-1' }
      assert.ok(sameModelAndContext({ model: 'MODEL-M', context_id: ' ctx-1 ' }, implementer))
      assert.ok(sameModelAndContext({ model: '\uff4dodel-m', context_id: 'ctx-1' }, implementer))
      assert.equal(sameModelAndContext({ model: 'model-m', context_id: 'ctx-2' }, implementer), false)
      assert.equal(sameModelAndContext({ model: 'model-n', context_id: 'ctx-1' }, implementer), false)
    })
  })
})

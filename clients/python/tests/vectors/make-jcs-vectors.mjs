// Writes jcs.json: RFC 8785's examples and number cases, serialised by the `canonicalize` package (the JCS
// implementation the service signs with), plus doubles drawn from a fixed-seed generator so the Python
// implementation is checked against ECMAScript's Number::toString far beyond the hand-picked cases.
// Run from the repository root: node clients/python/tests/vectors/make-jcs-vectors.mjs
import { writeFileSync } from 'node:fs'
import canonicalize from 'canonicalize'

// RFC 8785 Appendix B: IEEE 754 bit patterns and how JCS writes them (NaN and Infinity have no JSON form).
const appendixB = [
  '0000000000000000',
  '8000000000000000',
  '0000000000000001',
  '8000000000000001',
  '7fefffffffffffff',
  'ffefffffffffffff',
  '4340000000000000',
  'c340000000000000',
  '4430000000000000',
  '44b52d02c7e14af5',
  '44b52d02c7e14af6',
  '44b52d02c7e14af7',
  '444b1ae4d6e2ef4e',
  '444b1ae4d6e2ef4f',
  '444b1ae4d6e2ef50',
  '3eb0c6f7a0b5ed8c',
  '3eb0c6f7a0b5ed8d',
  '41b3de4355555553',
  '41b3de4355555554',
  '41b3de4355555555',
  '41b3de4355555556',
  '41b3de4355555557',
  'becbf647612f3696',
  '43143ff3c1cb0959',
]
const invalid = ['7fffffffffffffff', '7ff0000000000000', 'fff0000000000000']

const view = new DataView(new ArrayBuffer(8))
const fromHex = (hex) => {
  view.setBigUint64(0, BigInt(`0x${hex}`))
  return view.getFloat64(0)
}
const toHex = (number) => {
  view.setFloat64(0, number)
  return view.getBigUint64(0).toString(16).padStart(16, '0')
}

// xorshift64*, fixed seed: the same file on every run.
let state = 0x9e3779b97f4a7c15n
const next64 = () => {
  state ^= state >> 12n
  state ^= (state << 25n) & 0xffffffffffffffffn
  state ^= state >> 27n
  return (state * 0x2545f4914f6cdd1dn) & 0xffffffffffffffffn
}
const random = []
while (random.length < 2000) {
  const hex = next64().toString(16).padStart(16, '0')
  const number = fromHex(hex)
  if (Number.isFinite(number)) random.push(hex)
}
// Integers and short decimals around the notation switches (1e-7, 1e21) and 2^53.
const around = []
for (let e = -9; e <= 23; e++)
  for (const m of [1, 1.5, 9.999999999999998, 123456789]) around.push(toHex(m * 10 ** e))
for (const n of [2 ** 53 - 1, 2 ** 53, 2 ** 53 + 2, -(2 ** 53), 0.1, 0.2, 0.1 + 0.2, 0.66, 1 / 3, 100, 1e300])
  around.push(toHex(n))

// numbers: [IEEE 754 bits as hex, JCS text]
const numbers = [...appendixB, ...around, ...random].map((hex) => [hex, canonicalize(fromHex(hex))])

const examples = [
  {
    name: 'RFC 8785 section 3.2.2 example',
    json: '{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],"string":"\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/","literals":[null,true,false]}',
  },
  {
    name: 'RFC 8785 section 3.2.3 sorting example',
    json: '{"\\u20ac":"Euro Sign","\\r":"Carriage Return","\\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\\ud83d\\ude00":"Emoji: Grinning Face","\\u0080":"Control","\\u00f6":"Latin Small Letter O With Diaeresis"}',
  },
  {
    name: 'control characters and escapes',
    json: '["\\u0000\\u0001\\u001f\\u007f\\b\\f\\n\\r\\t","\\u2028\\u2029","\\""]',
  },
  {
    name: 'nesting and empty containers',
    json: '{"b":[{},[],{"z":1,"a":[null]}],"a":{"c":{"b":true,"a":false}}}',
  },
].map((example) => ({ ...example, jcs: canonicalize(JSON.parse(example.json)) }))

writeFileSync(
  new URL('./jcs.json', import.meta.url),
  `${JSON.stringify({ source: 'canonicalize (npm), see make-jcs-vectors.mjs', examples, invalid }, null, 1).slice(0, -2)},\n "numbers": [\n${numbers.map((n) => `  ${JSON.stringify(n)}`).join(',\n')}\n ]\n}\n`,
)

#!/usr/bin/env node
// Reads one JSON document on stdin and prints the field at each dotted path given (`manifest.verdict`,
// `items.0.id`): strings as they are, anything else as JSON, one line per path. Exits 1 when a path is absent.
// The examples use it instead of jq, which a fresh machine may not have; node is there wherever Arbiter is.
let text = ''
process.stdin.setEncoding('utf8')
for await (const chunk of process.stdin) text += chunk
const document = JSON.parse(text)
for (const path of process.argv.slice(2)) {
  let value = document
  for (const step of path.split('.').filter(Boolean)) {
    if (value === null || typeof value !== 'object' || !(step in value)) {
      process.stderr.write(`json-field: no ${path} in ${text.slice(0, 300)}\n`)
      process.exit(1)
    }
    value = value[step]
  }
  process.stdout.write(`${typeof value === 'string' ? value : JSON.stringify(value)}\n`)
}

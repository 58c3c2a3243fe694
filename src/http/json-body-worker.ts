import { parentPort } from 'node:worker_threads'
import { canonicalParts } from '../domain/shared/canonical-json.ts'
import { readJsonBody } from '../domain/shared/i-json.ts'

/**
 * A large body's reader, in a worker thread (src/http/json-body-pool.ts): strict UTF-8, JSON, the I-JSON check,
 * and the canonical JSON of its large parts, so that the main thread only parses the text again (natively) and
 * hashes. One body per message; answers `{answer}` (text and canonical parts, or why the body is refused) or
 * `{failed}` (the main thread then reads the body itself).
 */

/** Parts whose canonical text is shorter are left for the main thread (concatenating them there is cheap). */
const CANONICAL_PART_MIN_LENGTH = 8 * 1024

const port = parentPort!
port.on('message', (bytes: Uint8Array) => {
  try {
    const reading = readJsonBody(bytes)
    port.postMessage({
      answer: reading.ok
        ? { ok: true, text: reading.text, parts: canonicalParts(reading.value, CANONICAL_PART_MIN_LENGTH) }
        : reading,
    })
  } catch (err) {
    port.postMessage({ failed: err instanceof Error ? err.message : String(err) })
  }
})

/**
 * The published vectors as one list of checks that runs wherever the package does: under node:test with the Node
 * build (vectors.test.ts) and in Chromium with the portable build (browser.test.ts). Nothing here may use Node:
 * the vectors come in as parsed files, and failures are plain Errors.
 */
import {
  appendLeaves,
  canonicalJson,
  compactRangeRoot,
  consistencyProofNodes,
  decodeBase64,
  EMPTY_COMPACT_RANGE,
  ed25519KeyId,
  emptyRoot,
  formatVerifierKey,
  inclusionProofNodes,
  leafHash,
  NoteError,
  nodeHash,
  nodesToFetch,
  openCheckpointAsync,
  parseCheckpoint,
  parseVerifierKey,
  rootFromLeafHashes,
  verifyConsistency,
  verifyInclusion,
  verifyNoteAsync,
} from '../src/index.ts'

/** Vector files by their path under test/vectors: JSON files parsed, others (JCS outputs) as text. */
export type VectorFiles = Readonly<Record<string, unknown>>

export interface VectorCase {
  name: string
  run(): void | Promise<void>
}

export interface InclusionVector {
  leafIdx: number
  treeSize: number
  root: string
  leafHash: string
  proof: string[] | null
  desc: string
  wantErr: boolean
}
export interface ConsistencyVector {
  size1: number
  size2: number
  root1: string
  root2: string
  proof: string[] | null
  desc: string
  wantErr: boolean
}
interface NodeTables {
  inclusion: { size: number; index: number; error?: boolean; nodes?: [number, number][] }[]
  consistency: { size1: number; size2: number; error?: boolean; nodes?: [number, number][] }[]
}

function check(condition: boolean, message: string): asserts condition {
  if (!condition) throw new Error(message)
}

function equal(actual: unknown, expected: unknown, message: string): void {
  check(actual === expected, `${message}: got ${String(actual)}, expected ${String(expected)}`)
}

/** Lenient on purpose: the upstream vectors include empty and truncated hashes that must be refused. */
function b64(text: string): Uint8Array {
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0))
}

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')
}

function fromHex(text: string): Uint8Array {
  return Uint8Array.from(text.match(/../g) ?? [], (pair) => Number.parseInt(pair, 16))
}

function under<T>(files: VectorFiles, prefix: string): [string, T][] {
  return Object.keys(files)
    .filter((path) => path.startsWith(prefix) && path.endsWith('.json'))
    .sort()
    .map((path) => [path, files[path] as T])
}

function one<T>(files: VectorFiles, path: string): T {
  const file = files[path]
  check(file !== undefined, `missing vector file ${path}`)
  return file as T
}

async function refusal(promise: Promise<unknown>): Promise<string> {
  try {
    await promise
  } catch (err) {
    return err instanceof NoteError ? err.reason : `${(err as Error).name}: ${(err as Error).message}`
  }
  return 'accepted'
}

export function vectorCases(files: VectorFiles): VectorCase[] {
  const constants = one<{ leafInputs: string[]; nodeHashes: string[][]; rootHashes: string[] }>(
    files,
    'merkle/constants.json',
  )
  const referenceLeaves = constants.leafInputs.map((input) => leafHash(fromHex(input)))
  const go = one<Record<string, string> & { badVerifierKeys: string[] }>(
    files,
    'note/golang-mod-sumdb-note.json',
  )
  const c2sp = one<Record<string, string>>(files, 'note/c2sp-signed-note.json')

  return [
    {
      name: 'RFC 9162 hashes of the reference tree: empty root, leaves, every perfect node and every root',
      run() {
        equal(hex(emptyRoot()), constants.rootHashes[0], 'empty root')
        for (const [i, leaf] of referenceLeaves.entries()) {
          equal(hex(leaf), constants.nodeHashes[0]![i], `leaf ${i}`)
        }
        for (let level = 1; level < constants.nodeHashes.length; level++) {
          const below = constants.nodeHashes[level - 1]!.map(fromHex)
          constants.nodeHashes[level]!.forEach((node, index) => {
            equal(hex(nodeHash(below[2 * index]!, below[2 * index + 1]!)), node, `node ${level}:${index}`)
          })
        }
        constants.rootHashes.forEach((root, size) => {
          equal(hex(rootFromLeafHashes(referenceLeaves.slice(0, size))), root, `root of ${size}`)
        })
      },
    },
    {
      name: 'RFC 9162 roots of the golden trees up to 65535 leaves, as a sequencer appends them in batches',
      run() {
        const { roots } = one<{ roots: { size: number; root: string }[] }>(files, 'merkle/golden-roots.json')
        // Size 0 is listed without a root (Go leaves the empty tree's to its caller).
        const wanted = new Map(
          roots.filter(({ size }) => size > 0).map(({ size, root }) => [size, hex(b64(root))]),
        )
        let range = EMPTY_COMPACT_RANGE
        const last = Math.max(...wanted.keys())
        const leaves: Uint8Array[] = []
        for (let i = 0; i < last; i++) leaves.push(leafHash(Uint8Array.of(i & 0xff, (i >> 8) & 0xff)))
        for (const [size, root] of [...wanted].sort(([a], [b]) => a - b)) {
          range = appendLeaves(range, leaves.slice(range.size, size)).range
          equal(hex(compactRangeRoot(range)), root, `compact-range root of ${size}`)
        }
        equal(hex(rootFromLeafHashes(leaves)), wanted.get(last), `root of ${last} by the RFC's recursion`)
      },
    },
    {
      name: 'every transparency-dev/merkle inclusion proof, each failure case refused',
      run() {
        const vectors = under<InclusionVector>(files, 'merkle/inclusion/')
        check(vectors.length > 70, `only ${vectors.length} inclusion vectors`)
        for (const [file, v] of vectors) {
          const ok = verifyInclusion(
            v.leafIdx,
            v.treeSize,
            b64(v.leafHash),
            (v.proof ?? []).map(b64),
            b64(v.root),
          )
          equal(ok, !v.wantErr, `${file}: ${v.desc}`)
        }
      },
    },
    {
      name: 'every transparency-dev/merkle consistency proof, each failure case refused',
      run() {
        const vectors = under<ConsistencyVector>(files, 'merkle/consistency/')
        check(vectors.length > 70, `only ${vectors.length} consistency vectors`)
        for (const [file, v] of vectors) {
          const ok = verifyConsistency(v.size1, v.size2, (v.proof ?? []).map(b64), b64(v.root1), b64(v.root2))
          equal(ok, !v.wantErr, `${file}: ${v.desc}`)
        }
      },
    },
    {
      name: 'the stored nodes each transparency-dev/merkle proof reads',
      run() {
        const tables = one<NodeTables>(files, 'merkle/proof-nodes.json')
        const ids = (nodes: { level: number; index: number }[]) =>
          nodes
            .map((n) => `${n.level}:${n.index}`)
            .sort()
            .join(' ')
        for (const c of tables.inclusion) {
          const plan = () => inclusionProofNodes(c.index, c.size)
          if (c.error) {
            equal(throwsRangeError(plan), true, `inclusion ${c.index}/${c.size} refused`)
            continue
          }
          const wanted = ids(c.nodes!.map(([level, index]) => ({ level, index })))
          equal(ids(nodesToFetch(plan())), wanted, `inclusion ${c.index}/${c.size}`)
        }
        for (const c of tables.consistency) {
          const plan = () => consistencyProofNodes(c.size1, c.size2)
          if (c.error) {
            equal(throwsRangeError(plan), true, `consistency ${c.size1}→${c.size2} refused`)
            continue
          }
          const wanted = ids(c.nodes!.map(([level, index]) => ({ level, index })))
          equal(ids(nodesToFetch(plan())), wanted, `consistency ${c.size1}→${c.size2}`)
        }
      },
    },
    {
      name: 'golang.org/x/mod/sumdb/note: verifier keys, key IDs, and signed notes opened with them',
      async run() {
        const peter = parseVerifierKey(go.peterVerifierKey!)
        const enoch = parseVerifierKey(go.enochVerifierKey!)
        equal(peter.keyId, 0xc74f20a3, 'PeterNeumann key ID')
        equal(ed25519KeyId(enoch.name, enoch.publicKey), 0xaf0cfe78, 'EnochRoot key ID')
        equal(formatVerifierKey(enoch), go.enochVerifierKey, 'EnochRoot verifier key round trip')
        for (const vkey of go.badVerifierKeys) {
          equal(await refusal(Promise.resolve().then(() => parseVerifierKey(vkey))), 'malformed', vkey)
        }
        const byPeter = await verifyNoteAsync(go.signedByPeter!, [peter])
        equal(byPeter.text, go.text, 'the text Peter signed')
        const byBoth = await verifyNoteAsync(go.signedByPeterThenEnoch!, [peter, enoch])
        equal(
          byBoth.verified.map((s) => s.name).join(' '),
          'PeterNeumann EnochRoot',
          'both signatures verified',
        )
        const byOne = await verifyNoteAsync(go.signedByPeterThenEnoch!, [enoch])
        equal(byOne.unverified.map((s) => s.name).join(' '), 'PeterNeumann', 'the unknown key listed')
        equal(await refusal(verifyNoteAsync(go.signedByPeter!, [enoch])), 'unverified', 'no known key')
        const forged = go.signedByPeter!.replace('cryptography', 'cryptographY')
        equal(await refusal(verifyNoteAsync(forged, [peter])), 'invalid-signature', 'a changed text')
      },
    },
    {
      name: 'c2sp.org/signed-note: the example note opens with the example key, the other is unverified',
      async run() {
        const key = parseVerifierKey(c2sp.exampleVerifierKey!)
        equal((await verifyNoteAsync(c2sp.exampleNote!, [key])).text, 'This is an example message.\n', 'text')
        equal(
          await refusal(verifyNoteAsync(c2sp.introductionNote!, [key])),
          'unverified',
          'introduction note',
        )
      },
    },
    {
      name: 'transparency-dev/formats verifier keys parse with the key IDs they name',
      run() {
        const { keys } = one<{ keys: Record<string, string> }>(
          files,
          'note/transparency-dev-formats-keys.json',
        )
        for (const [name, vkey] of Object.entries(keys).filter(([name]) => name.endsWith('VK'))) {
          const verifier = parseVerifierKey(vkey)
          equal(formatVerifierKey(verifier), vkey, name)
        }
      },
    },
    {
      name: 'c2sp.org/tlog-checkpoint and the go.sum tree note parse as checkpoints',
      async run() {
        const example = one<{ exampleNote: string }>(
          files,
          'checkpoint/c2sp-tlog-checkpoint.json',
        ).exampleNote
        const body = parseCheckpoint(example.slice(0, example.lastIndexOf('\n\n') + 1))
        equal(body.origin, 'example.com/behind-the-sofa', 'origin')
        equal(body.treeSize, 20852163, 'tree size')
        const tree = one<{ leafInput: string; body: string; origin: string; treeSize: number }>(
          files,
          'checkpoint/golang-mod-sumdb-tree.json',
        )
        const parsed = parseCheckpoint(tree.body)
        equal(parsed.origin, tree.origin, 'go.sum origin')
        equal(parsed.treeSize, tree.treeSize, 'go.sum tree size')
        equal(hex(parsed.rootHash), hex(leafHash(new TextEncoder().encode(tree.leafInput))), 'go.sum root')
        const peter = parseVerifierKey(go.peterVerifierKey!)
        const notACheckpoint = await refusal(openCheckpointAsync(go.signedByPeter!, peter))
        check(
          notACheckpoint.startsWith('CheckpointError'),
          `a signed note that is no checkpoint: ${notACheckpoint}`,
        )
      },
    },
    {
      name: 'RFC 8785: every cyberphone/json-canonicalization input canonicalizes to its output, byte for byte',
      run() {
        const inputs = under<unknown>(files, 'jcs/input/')
        check(inputs.length >= 6, `only ${inputs.length} JCS vectors`)
        for (const [path, value] of inputs) {
          const output = one<string>(files, path.replace('jcs/input/', 'jcs/output/'))
          equal(canonicalJson(value), output, path)
        }
      },
    },
    {
      name: 'base64 is standard, padded and canonical',
      run() {
        for (const bytes of [new Uint8Array(), Uint8Array.of(0), Uint8Array.of(1, 2), referenceLeaves[3]!]) {
          const text = btoa(String.fromCharCode(...bytes))
          equal(hex(decodeBase64(text) ?? Uint8Array.of(0xee)), hex(bytes), text)
        }
        for (const text of ['AQ', 'AQ==\n', 'AR==', 'A-8=', ' AQ=='])
          equal(decodeBase64(text), undefined, text)
      },
    },
  ]
}

function throwsRangeError(fn: () => unknown): boolean {
  try {
    fn()
    return false
  } catch (err) {
    return err instanceof RangeError
  }
}

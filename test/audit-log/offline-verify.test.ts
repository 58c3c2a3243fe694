import assert from 'node:assert/strict'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { describe, it } from 'node:test'
import { runVerifyCommand } from '../../src/audit-log/verify-command.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { createOutcome, haltedOutcome } from '../helpers/fixtures.ts'

async function verify(...argv: string[]) {
  let stdout = ''
  let stderr = ''
  const code = await runVerifyCommand(argv, {
    stdout: (s) => {
      stdout += s
    },
    stderr: (s) => {
      stderr += s
    },
  })
  return { code, stdout, stderr }
}

/** Saves what the API answered, as a user would with curl -o. */
async function save(dir: string, app: TestApp, key: string, url: string, name: string, accept?: string) {
  const response = await app.request(key, { method: 'GET', url, headers: accept ? { accept } : {} })
  assert.equal(response.statusCode, 200, response.body)
  const file = path.join(dir, name)
  await writeFile(file, response.body)
  return { file, body: response.body }
}

describe('arbiter verify, offline, on what the log hands out', () => {
  it('checks saved checkpoints, inclusion and consistency proofs against the JWKS, and refuses tampered ones', async (t) => {
    const dir = await mkdtemp(path.join(tmpdir(), 'arbiter-offline-'))
    t.after(() => rm(dir, { recursive: true, force: true }))
    const app = await buildTestApp(t)
    const a = await app.key('orchestrator', ['orch-a'])
    const b = await app.key('orchestrator', ['orch-b'])
    const reader = await app.key('dashboard')
    const jwks = (await save(dir, app, reader, '/.well-known/jwks.json', 'jwks.json')).file

    await createOutcome(app, a)
    const early = await save(dir, app, reader, '/v1/audit/checkpoint', 'early.json')
    const earlyNote = await save(dir, app, reader, '/v1/audit/checkpoint', 'early.note', 'text/plain')
    const { manifest } = await haltedOutcome(app, a, b)
    const late = await save(dir, app, reader, '/v1/audit/checkpoint', 'late.json')
    const lateNote = await save(dir, app, reader, '/v1/audit/checkpoint', 'late.note', 'text/plain')
    const earlySize = JSON.parse(early.body).checkpoint.tree_size
    const lateSize = JSON.parse(late.body).checkpoint.tree_size
    const origin = JSON.parse(late.body).checkpoint.origin
    const envelope = await save(dir, app, reader, `/v1/manifests/${manifest.manifest_id}`, 'manifest.json')
    const included = await save(
      dir,
      app,
      reader,
      `/v1/manifests/${manifest.manifest_id}/inclusion`,
      'incl.json',
    )
    const recordProof = await save(dir, app, reader, '/v1/audit/proofs/inclusion?seq=2', 'record.json')
    const unsigned = await save(
      dir,
      app,
      reader,
      `/v1/audit/proofs/inclusion?seq=2&tree_size=${lateSize - 1}`,
      'unsigned.json',
    )
    const consistency = await save(
      dir,
      app,
      reader,
      `/v1/audit/proofs/consistency?from_size=${earlySize}&to_size=${lateSize}`,
      'consistency.json',
    )

    // Everything as saved verifies.
    const ok = async (argv: string[], message: RegExp) => {
      const result = await verify(...argv, '--jwks', jwks)
      assert.equal(result.code, 0, result.stderr)
      assert.match(result.stdout, message)
    }
    await ok([envelope.file], new RegExp(`^ok: manifest ${manifest.manifest_id} signed by `))
    await ok(
      [late.file],
      new RegExp(`^ok: checkpoint of ${origin} at tree size ${lateSize} \\(root .+\\) signed by`),
    )
    await ok([lateNote.file], new RegExp(`^ok: checkpoint of ${origin} at tree size ${lateSize} `))
    await ok(
      [recordProof.file],
      new RegExp(`^ok: record 2 is in the tree of size ${lateSize} of ${origin}\n$`),
    )
    await ok(
      [included.file],
      new RegExp(`^ok: manifest ${manifest.manifest_id} \\(record \\d+\\) is in the tree`),
    )
    await ok([included.file, '--manifest', envelope.file], /^ok: manifest /)
    await ok(
      [consistency.file, '--from', early.file, '--to', lateNote.file],
      new RegExp(`extends the tree of size ${earlySize}`),
    )
    await ok([consistency.file, '--from', earlyNote.file, '--to', late.file], /^ok: the tree of size/)

    // A proof at a size no checkpoint was signed for needs one given separately, of that size.
    const needs = await verify(unsigned.file, '--jwks', jwks)
    assert.equal(needs.code, 1)
    assert.match(needs.stderr, /no signed checkpoint; give one with --checkpoint/)
    const mismatch = await verify(unsigned.file, '--jwks', jwks, '--checkpoint', late.file)
    assert.equal(mismatch.code, 1)
    assert.match(mismatch.stderr, /tree size \d+, the checkpoint for \d+/)

    // Tampering anywhere is refused with the reason.
    const refused = async (name: string, text: string, argv: string[], reason: RegExp) => {
      const file = path.join(dir, name)
      await writeFile(file, text)
      const result = await verify(file, ...argv, '--jwks', jwks)
      assert.equal(result.code, 1, `${name}: ${result.stdout}`)
      assert.match(result.stderr, reason, name)
    }
    const lateJson = JSON.parse(late.body)
    await refused(
      'bigger.json',
      JSON.stringify({
        ...lateJson,
        checkpoint: { ...lateJson.checkpoint, tree_size: lateSize + 1, head_seq: lateSize + 1 },
      }),
      [],
      /checkpoint JWS payload does not match/,
    )
    await refused(
      'forged.note',
      lateNote.body.replace(`\n${lateSize}\n`, `\n${lateSize + 1}\n`),
      [],
      /invalid signature/,
    )
    await refused(
      'renamed.note',
      lateNote.body.replaceAll(origin, 'example.com/other-log'),
      [],
      /no key in the JWKS signed the note/,
    )
    const proofJson = JSON.parse(recordProof.body)
    await refused(
      'moved.json',
      JSON.stringify({ ...proofJson, seq: 3, leaf_index: 2 }),
      [],
      /does not lead from the leaf to the checkpoint's root/,
    )
    await refused(
      'extra.json',
      JSON.stringify({ ...proofJson, note: 'trust me' }),
      [],
      /unexpected field\(s\): note/,
    )
    const inclusionJson = JSON.parse(included.body)
    await refused(
      'record.json',
      JSON.stringify({ ...inclusionJson, record: { ...inclusionJson.record, verdict: 'AGREED' } }),
      [],
      /record's hash does not recompute/,
    )
    await refused(
      'other-manifest.json',
      included.body,
      ['--manifest', (await save(dir, app, reader, '/v1/manifests?limit=1', 'list.json')).file],
      /manifest envelope: /,
    )
    await refused(
      'backwards.json',
      consistency.body,
      ['--from', late.file, '--to', early.file],
      /the proof is from size/,
    )
    const consistencyJson = JSON.parse(consistency.body)
    await refused(
      'shortened.json',
      JSON.stringify({ ...consistencyJson, proof: consistencyJson.proof.slice(1) }),
      ['--from', early.file, '--to', late.file],
      /does not extend the tree/,
    )
    const noPair = await verify(consistency.file, '--jwks', jwks)
    assert.equal(noPair.code, 1)
    assert.match(noPair.stderr, /give --from and --to/)
    const half = await verify(consistency.file, '--jwks', jwks, '--from', early.file)
    assert.equal(half.code, 2)
  })
})

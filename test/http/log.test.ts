import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import canonicalize from 'canonicalize'
import { compactVerify, createLocalJWKSet } from 'jose'
import {
  decodeBase64,
  formatVerifierKey,
  noteVerifier,
  openCheckpoint,
  parseVerifierKey,
  rootFromLeafHashes,
  verifyConsistency,
  verifyInclusion,
} from '../../src/audit-log/core/transparency.ts'
import { buildTestApp, type TestApp } from '../helpers/app.ts'
import { clientHash, createOutcome, evaluate, haltedOutcome, interpret } from '../helpers/fixtures.ts'
import {
  allRecords,
  asSuperuser,
  type ClientRecord,
  clientKeyId,
  clientLeafHash,
  jwksKeys,
} from '../helpers/log-client.ts'

const b64 = (text: string) => {
  const bytes = decodeBase64(text)
  assert.ok(bytes, `${text} is canonical base64`)
  return bytes
}

async function setup(t: Parameters<typeof buildTestApp>[0], config: Parameters<typeof buildTestApp>[1] = {}) {
  const app = await buildTestApp(t, config)
  return {
    app,
    a: await app.key('orchestrator', ['orch-a']),
    b: await app.key('orchestrator', ['orch-b']),
    dashboard: await app.key('dashboard'),
    ops: await app.key('ops'),
  }
}

const get = async (app: TestApp, key: string | null, url: string, headers: Record<string, string> = {}) =>
  app.request(key, { method: 'GET', url, headers })

/** The root of the first `size` records, computed by the client from the records alone. */
const clientRoot = (records: ClientRecord[], size: number) =>
  Buffer.from(rootFromLeafHashes(records.slice(0, size).map(clientLeafHash)))

describe('GET /v1/audit/checkpoint', () => {
  it('signs the current tree as a C2SP note and a JWS, which a note verifier and a JOSE library accept', async (t) => {
    const { app, a, b, dashboard } = await setup(t)
    await haltedOutcome(app, a, b)
    const response = await get(app, dashboard, '/v1/audit/checkpoint')
    assert.equal(response.statusCode, 200, response.body)
    const signed = response.json()
    assert.deepEqual(Object.keys(signed).sort(), ['checkpoint', 'jws', 'note'])
    const { checkpoint, note, jws } = signed
    assert.deepEqual(Object.keys(checkpoint).sort(), [
      'at',
      'head_hash',
      'head_seq',
      'origin',
      'root_hash',
      'tree_size',
    ])
    assert.match(checkpoint.origin, /^arbiter\.local\/log\/[0-9a-f-]{36}$/)

    // The tree head covers every record, and the client recomputes its root from the records alone.
    const records = await allRecords(app, app.adminKey)
    assert.equal(checkpoint.tree_size, records.length)
    assert.equal(checkpoint.head_seq, records.length)
    assert.equal(checkpoint.head_hash, records.at(-1)!.hash)
    assert.deepEqual(Buffer.from(b64(checkpoint.root_hash)), clientRoot(records, records.length))

    // The note: the checkpoint body, a blank line, one signature line by the key named after the origin.
    const [publicKey] = await jwksKeys(app)
    const body = `${checkpoint.origin}\n${checkpoint.tree_size}\n${checkpoint.root_hash}\n`
    assert.ok(note.startsWith(`${body}\n— ${checkpoint.origin} `), note)
    const signature = Buffer.from(
      note
        .slice(body.length + 1)
        .split(' ')[2]!
        .trim(),
      'base64',
    )
    assert.deepEqual(signature.subarray(0, 4), clientKeyId(checkpoint.origin, publicKey!))
    assert.equal(signature.length, 4 + 64)
    // A witness configured with the log's verifier key (name+id+key, as note verifiers take it) accepts it.
    const vkey = formatVerifierKey(noteVerifier(checkpoint.origin, publicKey!))
    const opened = openCheckpoint(note, parseVerifierKey(vkey))
    assert.equal(opened.checkpoint.treeSize, checkpoint.tree_size)

    // The JWS: manifest key and header rules, over JCS(checkpoint).
    const jwks = createLocalJWKSet((await get(app, null, '/.well-known/jwks.json')).json())
    const { payload, protectedHeader } = await compactVerify(jws, jwks)
    assert.equal(protectedHeader.alg, 'Ed25519')
    assert.equal(new TextDecoder().decode(payload), canonicalize(checkpoint))
  })

  it('answers the note alone as text/plain', async (t) => {
    const { app, ops } = await setup(t)
    const json = (await get(app, ops, '/v1/audit/checkpoint')).json()
    const text = await get(app, ops, '/v1/audit/checkpoint', { accept: 'text/plain' })
    assert.equal(text.statusCode, 200)
    assert.match(String(text.headers['content-type']), /^text\/plain/)
    assert.equal(text.body, json.note)
    const preferJson = await get(app, ops, '/v1/audit/checkpoint', {
      accept: 'application/json, text/plain;q=0.5',
    })
    assert.deepEqual(preferJson.json(), json)
  })

  it('covers every change committed before the request, and signs nothing new while nothing changed', async (t) => {
    const { app, a, ops } = await setup(t)
    const first = (await get(app, ops, '/v1/audit/checkpoint')).json()
    assert.deepEqual((await get(app, ops, '/v1/audit/checkpoint')).json(), first, 'the same checkpoint again')
    // No sleep: the write commits, and the very next read already includes it.
    await createOutcome(app, a)
    const racing = await Promise.all(
      Array.from({ length: 5 }, () => get(app, ops, '/v1/audit/checkpoint').then((r) => r.json())),
    )
    assert.equal(racing[0].checkpoint.tree_size, first.checkpoint.tree_size + 1)
    for (const other of racing) assert.deepEqual(other, racing[0], 'one checkpoint per size')
  })

  it('uses ARBITER_LOG_ORIGIN as the origin and key name', async (t) => {
    const { app, ops } = await setup(t, { config: { logOrigin: 'example.com/arbiter/audit' } })
    const { checkpoint, note } = (await get(app, ops, '/v1/audit/checkpoint')).json()
    assert.equal(checkpoint.origin, 'example.com/arbiter/audit')
    const [publicKey] = await jwksKeys(app)
    assert.equal(
      openCheckpoint(note, noteVerifier('example.com/arbiter/audit', publicKey!)).checkpoint.origin,
      'example.com/arbiter/audit',
    )
  })
})

describe('GET /v1/audit/proofs/*', () => {
  it('proves every record included in the signed tree, and in any earlier tree', async (t) => {
    const { app, a, b, dashboard } = await setup(t)
    await haltedOutcome(app, a, b)
    await haltedOutcome(app, a, b)
    const records = await allRecords(app, app.adminKey)
    const n = records.length
    for (const record of records) {
      const answer = await get(app, dashboard, `/v1/audit/proofs/inclusion?seq=${record.seq}`)
      assert.equal(answer.statusCode, 200, answer.body)
      const proof = answer.json()
      assert.equal(proof.seq, record.seq)
      assert.equal(proof.leaf_index, record.seq - 1)
      assert.ok(proof.tree_size >= n)
      assert.deepEqual(Buffer.from(b64(proof.leaf_hash)), clientLeafHash(record))
      const root = b64(proof.checkpoint.checkpoint.root_hash)
      assert.equal(proof.checkpoint.checkpoint.tree_size, proof.tree_size)
      assert.ok(
        verifyInclusion(
          proof.leaf_index,
          proof.tree_size,
          clientLeafHash(record),
          proof.proof.map(b64),
          root,
        ),
      )
    }
    // At an explicit size: a proof against the root the client computes itself. A background checkpoint may
    // have been taken at that size on a slow machine; then it comes with the proof and signs that same root.
    for (const size of [record(records, 3), n - 1]) {
      const proof = (await get(app, dashboard, `/v1/audit/proofs/inclusion?seq=2&tree_size=${size}`)).json()
      assert.equal(proof.tree_size, size)
      if (proof.checkpoint !== null) {
        assert.equal(proof.checkpoint.checkpoint.tree_size, size)
        assert.deepEqual(Buffer.from(b64(proof.checkpoint.checkpoint.root_hash)), clientRoot(records, size))
      }
      assert.ok(
        verifyInclusion(1, size, clientLeafHash(records[1]), proof.proof.map(b64), clientRoot(records, size)),
      )
    }
    // At a stored checkpoint's size, that checkpoint comes with the proof.
    const { checkpoint } = (await get(app, dashboard, '/v1/audit/checkpoint')).json()
    const atCheckpoint = (
      await get(app, dashboard, `/v1/audit/proofs/inclusion?seq=1&tree_size=${checkpoint.tree_size}`)
    ).json()
    assert.deepEqual(atCheckpoint.checkpoint.checkpoint, checkpoint)
  })

  it('proves consistency between any two sizes', async (t) => {
    const { app, a, b, ops } = await setup(t)
    await haltedOutcome(app, a, b)
    const records = await allRecords(app, app.adminKey)
    const n = records.length
    for (let from = 1; from <= n; from++) {
      for (const to of [from, Math.min(n, from + 1), Math.min(n, from + 5), n]) {
        const answer = await get(app, ops, `/v1/audit/proofs/consistency?from_size=${from}&to_size=${to}`)
        assert.equal(answer.statusCode, 200, answer.body)
        const proof = answer.json()
        assert.deepEqual(Object.keys(proof).sort(), ['from_size', 'proof', 'to_size'])
        if (from === to) assert.deepEqual(proof.proof, [])
        assert.ok(
          verifyConsistency(
            from,
            to,
            proof.proof.map(b64),
            clientRoot(records, from),
            clientRoot(records, to),
          ),
          `consistency ${from} → ${to}`,
        )
      }
    }
  })

  it('answers 400 for integers that are not plain decimal or below 1, and 404 beyond the log', async (t) => {
    const { app, ops } = await setup(t)
    const n = (await allRecords(app, app.adminKey)).length
    const status = async (url: string) => (await get(app, ops, url)).statusCode
    for (const seq of ['0', '-1', '+1', '01', '0x1', '1.0', '1e1', 'abc', '', ' 1']) {
      assert.equal(
        await status(`/v1/audit/proofs/inclusion?seq=${encodeURIComponent(seq)}`),
        400,
        `seq=${seq}`,
      )
    }
    assert.equal(await status('/v1/audit/proofs/inclusion'), 400, 'seq is required')
    assert.equal(await status('/v1/audit/proofs/inclusion?seq=1&tree_size=0'), 400)
    assert.equal(await status('/v1/audit/proofs/inclusion?seq=1&tree_size=007'), 400)
    assert.equal(await status('/v1/audit/proofs/inclusion?seq=1&extra=1'), 400)
    assert.equal(await status('/v1/audit/proofs/consistency?from_size=0&to_size=1'), 400)
    assert.equal(await status('/v1/audit/proofs/consistency?from_size=2&to_size=1'), 400)
    assert.equal(await status('/v1/audit/proofs/consistency?from_size=1'), 400)
    assert.equal(await status('/v1/audit/verify?from_seq=3&to_seq=2'), 400)
    assert.equal(await status('/v1/audit/verify?from_seq=01'), 400)

    assert.equal(await status(`/v1/audit/proofs/inclusion?seq=${n + 1}`), 404)
    assert.equal(await status(`/v1/audit/proofs/inclusion?seq=2&tree_size=1`), 404)
    assert.equal(await status(`/v1/audit/proofs/inclusion?seq=1&tree_size=${n + 1}`), 404)
    assert.equal(await status('/v1/audit/proofs/inclusion?seq=99999999999999999999999'), 404)
    assert.equal(await status(`/v1/audit/proofs/consistency?from_size=1&to_size=${n + 1}`), 404)
    assert.equal(await status(`/v1/audit/proofs/inclusion?seq=${n}&tree_size=${n}`), 200)
  })

  it('names a seq or size past 2^53 - 1 as it was sent, and compares such values exactly', async (t) => {
    const { app, ops } = await setup(t)
    const huge = '99999999999999999999999'
    const cases: [string, string][] = [
      [`/v1/audit/proofs/inclusion?seq=${huge}`, `seq ${huge} is beyond the log`],
      [`/v1/audit/proofs/inclusion?seq=1&tree_size=${huge}`, `tree_size ${huge} is beyond the log`],
      [`/v1/audit/proofs/inclusion?seq=${huge}&tree_size=${huge}`, `tree_size ${huge} is beyond the log`],
      [`/v1/audit/proofs/consistency?from_size=1&to_size=${huge}`, `to_size ${huge} is beyond the log`],
      [`/v1/audit/proofs/consistency?from_size=${huge}&to_size=${huge}`, `to_size ${huge} is beyond the log`],
    ]
    for (const [url, detail] of cases) {
      const answer = await get(app, ops, url)
      assert.equal(answer.statusCode, 404, `${url}: ${answer.body}`)
      assert.equal(answer.json().detail, detail, url)
      assert.doesNotMatch(answer.body, /9007199254740991/, url)
    }
    // Two values that both round to 2^53 - 1 as numbers are still in the wrong order: 400, not a proof or a 404.
    for (const url of [
      `/v1/audit/proofs/consistency?from_size=${huge}1&to_size=${huge}0`,
      `/v1/audit/verify?from_seq=${huge}1&to_seq=${huge}0`,
    ]) {
      assert.equal((await get(app, ops, url)).statusCode, 400, url)
    }
  })
})

describe('GET /v1/manifests/{id}/inclusion', () => {
  it('proves a manifest was logged: its manifest.issued record, included under a signed checkpoint', async (t) => {
    const { app, a, b, dashboard } = await setup(t)
    const { manifest } = await haltedOutcome(app, a, b)
    const answer = await get(app, dashboard, `/v1/manifests/${manifest.manifest_id}/inclusion`)
    assert.equal(answer.statusCode, 200, answer.body)
    const proof = answer.json()
    assert.deepEqual(Object.keys(proof).sort(), [
      'checkpoint',
      'leaf_hash',
      'leaf_index',
      'manifest_id',
      'proof',
      'record',
      'tree_size',
    ])
    assert.equal(proof.manifest_id, manifest.manifest_id)
    assert.equal(proof.record.kind, 'manifest.issued')
    assert.equal(proof.record.manifest_id, manifest.manifest_id)
    assert.equal(proof.record.data.manifest_digest, clientHash(manifest))
    assert.equal(proof.leaf_index, proof.record.seq - 1)
    const leaf = clientLeafHash(proof.record)
    assert.deepEqual(Buffer.from(b64(proof.leaf_hash)), leaf)
    // Offline: the record, the note and the public key are enough.
    const [publicKey] = await jwksKeys(app)
    const { checkpoint } = openCheckpoint(
      proof.checkpoint.note,
      noteVerifier(proof.checkpoint.checkpoint.origin, publicKey!),
    )
    assert.equal(checkpoint.treeSize, proof.tree_size)
    assert.ok(
      verifyInclusion(proof.leaf_index, proof.tree_size, leaf, proof.proof.map(b64), checkpoint.rootHash),
    )

    assert.equal(
      (await get(app, dashboard, `/v1/manifests/${crypto.randomUUID()}/inclusion`)).statusCode,
      404,
    )
    assert.equal((await get(app, dashboard, '/v1/manifests/nope/inclusion')).statusCode, 400)
  })
})

describe('manifest envelopes in log order', () => {
  it('answer audit_seq null at issue, then carry the seq of their manifest.issued record', async (t) => {
    const { app, a, b, dashboard } = await setup(t)
    const outcome = await createOutcome(app, a)
    await interpret(app, a, outcome.outcome_id, {
      orchestrator_id: 'orch-a',
      outcome_interpretation: 'success',
    })
    const issued = await evaluate(app, a, outcome.outcome_id)
    assert.deepEqual(Object.keys(issued).sort(), ['audit_seq', 'jws', 'manifest', 'manifest_digest'])
    assert.equal(issued.audit_seq, null, 'not sequenced yet when the evaluate call answers')
    assert.equal('audit_seq' in issued.manifest, false, 'the seq is not part of the signed manifest')
    const listed = (await get(app, dashboard, `/v1/manifests?outcome_id=${outcome.outcome_id}`)).json().items
    assert.equal(listed.length, 1)
    const record = (await allRecords(app, app.adminKey)).find(
      (r) => r.kind === 'manifest.issued' && r.manifest_id === issued.manifest.manifest_id,
    )!
    assert.equal(listed[0].audit_seq, record.seq)
    assert.deepEqual(listed[0].manifest, issued.manifest, 'the same signed manifest')
    assert.equal(listed[0].jws, issued.jws)
    const one = (await get(app, dashboard, `/v1/manifests/${issued.manifest.manifest_id}`)).json()
    assert.equal(one.audit_seq, record.seq)
    const again = await evaluate(app, b, outcome.outcome_id)
    assert.equal(again.audit_seq, record.seq, 'evaluate returns the stored envelope with its seq')
  })

  it('lists manifests issued concurrently in the order of their records', async (t) => {
    const { app, a, b, dashboard } = await setup(t)
    const outcomes = await Promise.all(Array.from({ length: 6 }, () => createOutcome(app, a)))
    await Promise.all(
      outcomes.map((o) =>
        interpret(app, a, o.outcome_id, { orchestrator_id: 'orch-a', outcome_interpretation: 'success' }),
      ),
    )
    await Promise.all(outcomes.map((o) => evaluate(app, a, o.outcome_id)))
    const listed = (await get(app, dashboard, '/v1/manifests?limit=2')).json()
    const all = [...listed.items]
    let cursor = listed.next_cursor
    while (cursor) {
      const page = (await get(app, dashboard, `/v1/manifests?limit=2&cursor=${cursor}`)).json()
      all.push(...page.items)
      cursor = page.next_cursor
    }
    const issued = (await allRecords(app, app.adminKey)).filter((r) => r.kind === 'manifest.issued')
    assert.deepEqual(
      all.map((e: { manifest: { manifest_id: string } }) => e.manifest.manifest_id),
      issued.map((r) => r.manifest_id),
    )
    assert.deepEqual(
      all.map((e: { audit_seq: number }) => e.audit_seq),
      issued.map((r) => r.seq),
    )
    void b
  })
})

describe('GET /v1/audit/verify', () => {
  it('reports the seq that completed a tampered tree node', async (t) => {
    const { app, a, b, ops } = await setup(t)
    await haltedOutcome(app, a, b)
    const before = (await get(app, ops, '/v1/audit/verify')).json()
    assert.equal(before.ok, true)
    assert.ok(before.tree_size >= 8)
    // Level 2, index 1 covers seqs 5..8: it was completed when seq 8 was appended.
    await asSuperuser(app, async (client) => {
      await client.query('ALTER TABLE merkle_nodes DISABLE TRIGGER merkle_nodes_no_update_delete')
      await client.query(`UPDATE merkle_nodes SET hash = sha256(hash) WHERE level = 2 AND idx = 1`)
      await client.query('ALTER TABLE merkle_nodes ENABLE ALWAYS TRIGGER merkle_nodes_no_update_delete')
    })
    const report = (await get(app, ops, '/v1/audit/verify')).json()
    assert.equal(report.ok, false)
    assert.equal(report.first_bad_seq, 8)
    assert.equal(report.head_seq, 7, JSON.stringify(report))
    assert.equal((await get(app, ops, '/v1/audit/verify?to_seq=7')).json().ok, true)
  })

  it('reports a tampered or forged checkpoint at its tree size', async (t) => {
    const { app, a, b, ops } = await setup(t)
    await createOutcome(app, a)
    const early = (await get(app, ops, '/v1/audit/checkpoint')).json().checkpoint
    await haltedOutcome(app, a, b)
    const late = (await get(app, ops, '/v1/audit/checkpoint')).json().checkpoint
    const ok = (await get(app, ops, '/v1/audit/verify')).json()
    assert.equal(ok.ok, true)
    assert.ok(ok.checkpoints_checked >= 2)
    assert.equal(ok.root_hash, late.root_hash)

    const tamper = async (sql: string, values: unknown[]) =>
      asSuperuser(app, async (client) => {
        await client.query('ALTER TABLE audit_checkpoints DISABLE TRIGGER audit_checkpoints_no_update_delete')
        await client.query(sql, values)
        await client.query(
          'ALTER TABLE audit_checkpoints ENABLE ALWAYS TRIGGER audit_checkpoints_no_update_delete',
        )
      })
    // A note whose signature no longer matches its text.
    await tamper(`UPDATE audit_checkpoints SET note = replace(note, $2, $3) WHERE tree_size = $1`, [
      early.tree_size,
      `\n${early.tree_size}\n`,
      `\n${early.tree_size + 1}\n`,
    ])
    const report = (await get(app, ops, '/v1/audit/verify')).json()
    assert.equal(report.ok, false)
    assert.equal(report.first_bad_seq, early.tree_size)
  })

  it('reports a forged root even when it is signed, since it is not the root of the records', async (t) => {
    const { app, a, ops } = await setup(t)
    await createOutcome(app, a)
    const { checkpoint } = (await get(app, ops, '/v1/audit/checkpoint')).json()
    await asSuperuser(app, async (client) => {
      await client.query('ALTER TABLE audit_checkpoints DISABLE TRIGGER audit_checkpoints_no_update_delete')
      await client.query('DELETE FROM audit_checkpoints WHERE tree_size = $1', [checkpoint.tree_size])
      await client.query(
        'ALTER TABLE audit_checkpoints ENABLE ALWAYS TRIGGER audit_checkpoints_no_update_delete',
      )
    })
    // Sign a checkpoint over a made-up root with the service's own key, as an insider could.
    const forged = { ...checkpoint, root_hash: Buffer.alloc(32, 7).toString('base64') }
    const { signCanonical } = await import('../../src/crypto/jws.ts')
    const { signNote, formatCheckpoint } = await import('../../src/audit-log/core/transparency.ts')
    const { KeyObject } = await import('node:crypto')
    const key = app.app.signingKey
    const note = signNote(
      formatCheckpoint({
        origin: forged.origin,
        treeSize: forged.tree_size,
        rootHash: b64(forged.root_hash),
      }),
      {
        name: forged.origin,
        privateKey: KeyObject.from(key.privateKey as Parameters<typeof KeyObject.from>[0]),
      },
    )
    await asSuperuser(app, async (client) => {
      await client.query(
        'INSERT INTO audit_checkpoints (tree_size, checkpoint_jcs, note, jws) VALUES ($1, $2, $3, $4)',
        [forged.tree_size, canonicalize(forged), note, await signCanonical(forged, key)],
      )
    })
    const report = (await get(app, ops, '/v1/audit/verify')).json()
    assert.equal(report.ok, false)
    assert.equal(report.first_bad_seq, checkpoint.tree_size)
  })
})

describe('the log tables', () => {
  it('refuse rewriting tree nodes, checkpoints and intake entries, even under session_replication_role = replica', async (t) => {
    const { app, ops } = await setup(t)
    await get(app, ops, '/v1/audit/checkpoint')
    await asSuperuser(app, async (client) => {
      for (const replica of [false, true]) {
        for (const [sql, refusal] of [
          ['UPDATE merkle_nodes SET hash = hash', /append-only/],
          ['DELETE FROM merkle_nodes', /append-only/],
          ['TRUNCATE merkle_nodes', /append-only/],
          ['UPDATE audit_checkpoints SET note = note', /append-only/],
          ['DELETE FROM audit_checkpoints', /append-only/],
          ['TRUNCATE audit_checkpoints', /append-only/],
          ['UPDATE audit_intake SET actor = actor', /drained only by the sequencer/],
          ['DELETE FROM audit_intake', /drained only by the sequencer/],
          ['TRUNCATE audit_intake', /drained only by the sequencer/],
        ] as const) {
          await client.query('BEGIN')
          if (replica) await client.query('SET LOCAL session_replication_role = replica')
          // An intake entry as a change writes it; uncommitted, so the sequencer cannot drain it first.
          await client.query(
            `INSERT INTO audit_intake (at, kind, actor, data) VALUES (now(), 'key.created', 'system', '{}')`,
          )
          await assert.rejects(client.query(sql), refusal, `${sql} (replica=${replica})`)
          await client.query('ROLLBACK')
        }
      }
      // Committed, the entry is sequenced like any other.
      await client.query(
        `INSERT INTO audit_intake (at, kind, actor, data) VALUES (now(), 'key.created', 'tester', '{}')`,
      )
    })
    const records = await allRecords(app, ops)
    assert.equal(records.at(-1)!.kind, 'key.created')
    assert.equal(records.at(-1)!.actor, 'tester')
  })
})

function record(records: ClientRecord[], size: number): number {
  return Math.min(size, records.length)
}

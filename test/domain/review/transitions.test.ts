import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { decideReview, type RecordedVerdict } from '../../../src/domain/review/decide.ts'
import { type ReviewJudge, toReviewJudge } from '../../../src/domain/review/panel.ts'
import {
  acceptRevision,
  acceptVerdict,
  type ManifestRef,
  planDecide,
  type RecordedVerdictRef,
  type ReviewState,
  reviewStatusAfter,
} from '../../../src/domain/review/transitions.ts'
import {
  isFinalForReview,
  isFinalForRevision,
  REVIEW_DIRECTIVES,
  type ReviewDirective,
  type ReviewMode,
  type ReviewStatus,
} from '../../../src/domain/review/vocabulary.ts'
import { hashJson } from '../../../src/domain/shared/canonical-json.ts'
import type { ReportStatus } from '../../../src/domain/status-report.ts'

function j(judge_id: string, extra: Partial<ReviewJudge> = {}): ReviewJudge {
  return toReviewJudge({ judge_id, model: `model-${judge_id}`, context_id: `ctx-${judge_id}`, ...extra })
}

const PANELS: Record<ReviewMode, ReviewJudge[]> = {
  do_and_judge: [j('solo')],
  two_stage: [j('spec', { stage: 1 }), j('quality', { stage: 2 })],
  debate: [j('amy', { role: 'judge' }), j('zed', { role: 'judge' }), j('meta', { role: 'meta' })],
  council: [j('c1'), j('c2')],
}

function state(mode: ReviewMode, revision = 0, latest_manifest: ManifestRef | null = null): ReviewState {
  return { mode, revision, judges: PANELS[mode], latest_manifest }
}

function manifest(directive: ReviewDirective, revision = 0): ManifestRef {
  return { manifest_id: `m-${directive.toLowerCase()}-${revision}`, revision, directive }
}

function recorded(judge_id: string, status: ReportStatus): RecordedVerdictRef {
  return { judge_id, status, verdict_digest: `digest-${judge_id}-${status}` }
}

function submit(judge_id: string, status: ReportStatus, revision = 0) {
  return { judge_id, revision, verdict_digest: `digest-${judge_id}-${status}` }
}

/** The refusal's code, or the acceptance's kind. */
function outcome(result: ReturnType<typeof acceptVerdict> | ReturnType<typeof acceptRevision>): string {
  return result.kind === 'refuse' ? result.refusal.code : result.kind
}

describe('acceptVerdict', () => {
  it('records a first verdict of a panel judge for the current revision', () => {
    assert.deepEqual(acceptVerdict(state('do_and_judge'), [], submit('solo', 'DONE')), {
      kind: 'record',
      replaces: false,
    })
  })

  describe('references before state', () => {
    it('refuses an unknown judge as unprocessable, matching judge_id exactly', () => {
      const result = acceptVerdict(state('do_and_judge'), [], submit('SOLO', 'DONE'))
      assert.equal(result.kind, 'refuse')
      assert.deepEqual(result.kind === 'refuse' && [result.refusal.code, result.refusal.category], [
        'unknown_judge',
        'unprocessable',
      ])
    })
    it('reports the unknown judge before a stale revision or a final manifest', () => {
      const review = state('do_and_judge', 1, manifest('APPLY', 1))
      assert.equal(outcome(acceptVerdict(review, [], submit('stranger', 'DONE', 0))), 'unknown_judge')
    })
  })

  describe('revision', () => {
    for (const revision of [0, 2]) {
      it(`refuses a verdict for revision ${revision} while the review is at revision 1`, () => {
        assert.deepEqual(acceptVerdict(state('do_and_judge', 1), [], submit('solo', 'DONE', revision)), {
          kind: 'refuse',
          refusal: {
            code: 'stale_revision',
            category: 'conflict',
            detail: `the verdict is for revision ${revision}; the review is at revision 1`,
            current_revision: 1,
          },
        })
      })
    }
    it('takes verdicts for a new revision after the previous one was decided REVISE', () => {
      const review = state('do_and_judge', 1, manifest('REVISE', 0))
      assert.equal(outcome(acceptVerdict(review, [], submit('solo', 'DONE', 1))), 'record')
    })
  })

  describe('one verdict per judge per revision', () => {
    it('answers the same body again as a replay', () => {
      const review = state('do_and_judge')
      assert.deepEqual(acceptVerdict(review, [recorded('solo', 'DONE')], submit('solo', 'DONE')), {
        kind: 'replay',
      })
    })
    it('replays the same body even once the revision is decided', () => {
      for (const directive of ['APPLY', 'REVISE', 'HAND_BACK'] as const) {
        const review = state('do_and_judge', 0, manifest(directive))
        assert.equal(
          outcome(acceptVerdict(review, [recorded('solo', 'DONE')], submit('solo', 'DONE'))),
          'replay',
        )
      }
    })
    for (const status of ['DONE', 'DONE_WITH_CONCERNS', 'BLOCKED'] as const) {
      it(`refuses a different body after a ${status}`, () => {
        const result = acceptVerdict(
          state('do_and_judge'),
          [recorded('solo', status)],
          submit('solo', 'DONE_WITH_CONCERNS'),
        )
        assert.equal(outcome(result), status === 'DONE_WITH_CONCERNS' ? 'replay' : 'verdict_already_recorded')
      })
    }
    it('refuses a different body even with the same status', () => {
      const result = acceptVerdict(state('do_and_judge'), [recorded('solo', 'DONE')], {
        judge_id: 'solo',
        revision: 0,
        verdict_digest: 'another body',
      })
      assert.equal(outcome(result), 'verdict_already_recorded')
    })
    for (const status of ['DONE', 'DONE_WITH_CONCERNS', 'NEEDS_CONTEXT', 'BLOCKED'] as const) {
      it(`lets a NEEDS_CONTEXT be replaced by ${status} while the revision is not final`, () => {
        const before = acceptVerdict(state('do_and_judge'), [recorded('solo', 'NEEDS_CONTEXT')], {
          ...submit('solo', status),
          verdict_digest: `answered-${status}`,
        })
        assert.deepEqual(before, { kind: 'record', replaces: true })
        const afterPause = acceptVerdict(
          state('do_and_judge', 0, manifest('PAUSE')),
          [recorded('solo', 'NEEDS_CONTEXT')],
          {
            ...submit('solo', status),
            verdict_digest: `answered-${status}`,
          },
        )
        assert.deepEqual(afterPause, { kind: 'record', replaces: true })
      })
    }
  })

  describe('a final revision', () => {
    for (const directive of REVIEW_DIRECTIVES.filter((d) => d !== 'PAUSE')) {
      it(`refuses new verdicts after ${directive}, naming the manifest`, () => {
        const mode: ReviewMode = directive === 'ADVISORY' ? 'council' : 'do_and_judge'
        const judge = PANELS[mode][0]!.judge_id
        const result = acceptVerdict(state(mode, 0, manifest(directive)), [], submit(judge, 'DONE'))
        assert.equal(result.kind, 'refuse')
        assert.equal(result.kind === 'refuse' && result.refusal.code, 'revision_final')
        assert.equal(
          result.kind === 'refuse' && 'manifest_id' in result.refusal && result.refusal.manifest_id,
          `m-${directive.toLowerCase()}-0`,
        )
      })
    }
    it('refuses to replace a NEEDS_CONTEXT once the revision is final', () => {
      const review = state('debate', 0, manifest('REVISE'))
      const result = acceptVerdict(
        review,
        [recorded('amy', 'NEEDS_CONTEXT'), recorded('zed', 'BLOCKED')],
        submit('amy', 'DONE'),
      )
      assert.equal(outcome(result), 'revision_final')
    })
    it('keeps taking verdicts after a PAUSE', () => {
      const review = state('council', 0, manifest('PAUSE'))
      assert.equal(outcome(acceptVerdict(review, [recorded('c1', 'DONE')], submit('c2', 'DONE'))), 'record')
    })
  })

  describe('debate meta-judge', () => {
    it('is taken before any manifest of the revision', () => {
      const review = state('debate')
      assert.equal(outcome(acceptVerdict(review, [], submit('meta', 'BLOCKED'))), 'record')
      assert.equal(
        outcome(
          acceptVerdict(review, [recorded('amy', 'DONE'), recorded('zed', 'DONE')], submit('meta', 'DONE')),
        ),
        'record',
      )
    })
    it('is refused once the revision has a manifest, naming it', () => {
      const review = state('debate', 0, manifest('PAUSE'))
      const result = acceptVerdict(
        review,
        [recorded('amy', 'NEEDS_CONTEXT'), recorded('zed', 'DONE')],
        submit('meta', 'DONE'),
      )
      assert.deepEqual(result, {
        kind: 'refuse',
        refusal: {
          code: 'meta_after_decision',
          category: 'conflict',
          detail: 'judge "meta" is the meta-judge and revision 0 already has a manifest',
          manifest_id: 'm-pause-0',
        },
      })
    })
    it('is refused as a final revision when the manifest is final', () => {
      const review = state('debate', 0, manifest('APPLY'))
      assert.equal(outcome(acceptVerdict(review, [], submit('meta', 'BLOCKED'))), 'revision_final')
    })
    it('may still replace its own NEEDS_CONTEXT after a PAUSE, or the review could never leave it', () => {
      const review = state('debate', 0, manifest('PAUSE'))
      const verdicts = [recorded('amy', 'DONE'), recorded('zed', 'DONE'), recorded('meta', 'NEEDS_CONTEXT')]
      assert.deepEqual(acceptVerdict(review, verdicts, submit('meta', 'DONE')), {
        kind: 'record',
        replaces: true,
      })
    })
    it('is taken after a manifest of an earlier revision', () => {
      const review = state('debate', 1, manifest('REVISE', 0))
      assert.equal(outcome(acceptVerdict(review, [], submit('meta', 'DONE', 1))), 'record')
    })
    it('does not restrict the two deciding judges after a PAUSE', () => {
      const review = state('debate', 0, manifest('PAUSE'))
      assert.equal(
        outcome(acceptVerdict(review, [recorded('amy', 'NEEDS_CONTEXT')], submit('zed', 'DONE'))),
        'record',
      )
    })
  })

  describe('two_stage routing', () => {
    it('refuses stage 2 before stage 1 has returned', () => {
      assert.equal(
        outcome(acceptVerdict(state('two_stage'), [], submit('quality', 'DONE'))),
        'stage_one_pending',
      )
    })
    for (const spec of ['NEEDS_CONTEXT', 'BLOCKED'] as const) {
      it(`refuses stage 2 after stage 1 returned ${spec}: stage 2 does not run`, () => {
        const result = acceptVerdict(state('two_stage'), [recorded('spec', spec)], submit('quality', 'DONE'))
        assert.equal(outcome(result), 'stage_two_not_running')
      })
    }
    it('refuses stage 2 after a stage-1 BLOCKED was decided, as a final revision', () => {
      const review = state('two_stage', 0, manifest('REVISE'))
      assert.equal(
        outcome(acceptVerdict(review, [recorded('spec', 'BLOCKED')], submit('quality', 'DONE'))),
        'revision_final',
      )
    })
    for (const spec of ['DONE', 'DONE_WITH_CONCERNS'] as const) {
      it(`takes stage 2 after stage 1 returned ${spec}`, () => {
        const result = acceptVerdict(
          state('two_stage'),
          [recorded('spec', spec)],
          submit('quality', 'BLOCKED'),
        )
        assert.equal(outcome(result), 'record')
      })
    }
    it('takes stage 2 again once the stage-1 question was answered', () => {
      const review = state('two_stage', 0, manifest('PAUSE'))
      assert.equal(
        outcome(acceptVerdict(review, [recorded('spec', 'NEEDS_CONTEXT')], submit('spec', 'DONE'))),
        'record',
      )
      assert.equal(
        outcome(acceptVerdict(review, [recorded('spec', 'DONE')], submit('quality', 'DONE'))),
        'record',
      )
    })
    it('never gates the stage-1 judge', () => {
      assert.equal(outcome(acceptVerdict(state('two_stage'), [], submit('spec', 'BLOCKED'))), 'record')
    })
  })
})

describe('acceptRevision', () => {
  const revisionState = (revision: number, latest: ManifestRef | null) => ({
    revision,
    subject_digest: `sha256:subject-${revision}`,
    latest_manifest: latest,
  })

  it('starts revision 1 after a REVISE of revision 0, and revision 2 after a REVISE of revision 1', () => {
    assert.deepEqual(acceptRevision(revisionState(0, manifest('REVISE', 0)), 'sha256:new'), {
      kind: 'revise',
      revision: 1,
    })
    assert.deepEqual(acceptRevision(revisionState(1, manifest('REVISE', 1)), 'sha256:new'), {
      kind: 'revise',
      revision: 2,
    })
  })
  it('refuses a third revision, naming the current manifest when there is one', () => {
    for (const latest of [
      manifest('HAND_BACK', 2),
      manifest('APPLY', 2),
      manifest('PAUSE', 2),
      manifest('REVISE', 2),
    ]) {
      const result = acceptRevision(revisionState(2, latest), 'sha256:new')
      assert.equal(outcome(result), 'revision_ceiling')
      assert.equal(
        result.kind === 'refuse' && 'manifest_id' in result.refusal && result.refusal.manifest_id,
        latest.manifest_id,
      )
    }
    const withoutManifest = acceptRevision(revisionState(2, manifest('REVISE', 1)), 'sha256:new')
    assert.equal(outcome(withoutManifest), 'revision_ceiling')
    const none = acceptRevision(revisionState(2, null), 'sha256:new')
    assert.deepEqual(none.kind === 'refuse' && none.refusal.category, 'conflict')
    assert.equal(none.kind === 'refuse' && 'manifest_id' in none.refusal && none.refusal.manifest_id, null)
  })
  it('refuses an unchanged subject as unprocessable, before any state rule', () => {
    for (const [revision, latest] of [
      [0, manifest('REVISE', 0)],
      [2, manifest('HAND_BACK', 2)],
      [0, null],
    ] as const) {
      const result = acceptRevision(revisionState(revision, latest), `sha256:subject-${revision}`)
      assert.deepEqual(result.kind === 'refuse' && [result.refusal.code, result.refusal.category], [
        'subject_unchanged',
        'unprocessable',
      ])
    }
  })
  it('refuses a revision that does not answer a REVISE of the current revision', () => {
    const cases: [number, ManifestRef | null][] = [
      [0, null],
      [0, manifest('PAUSE', 0)],
      [0, manifest('APPLY', 0)],
      [1, manifest('HAND_BACK', 1)],
      // The REVISE of revision 0 was answered by revision 1 already.
      [1, manifest('REVISE', 0)],
    ]
    for (const [revision, latest] of cases) {
      const result = acceptRevision(revisionState(revision, latest), 'sha256:new')
      assert.equal(outcome(result), 'not_after_revise', JSON.stringify(latest))
      assert.equal(
        result.kind === 'refuse' && 'manifest_id' in result.refusal && result.refusal.manifest_id,
        latest?.manifest_id ?? null,
      )
    }
  })
})

describe('planDecide', () => {
  it('decides afresh when the revision has no manifest yet', () => {
    assert.deepEqual(planDecide({ revision: 0, latest_manifest: null }), { kind: 'decide', supersedes: null })
    assert.deepEqual(planDecide({ revision: 1, latest_manifest: manifest('REVISE', 0) }), {
      kind: 'decide',
      supersedes: null,
    })
  })
  it('decides again after a PAUSE, superseding it', () => {
    assert.deepEqual(planDecide({ revision: 1, latest_manifest: manifest('PAUSE', 1) }), {
      kind: 'decide',
      supersedes: 'm-pause-1',
    })
  })
  for (const directive of ['APPLY', 'REVISE', 'HAND_BACK', 'ADVISORY'] as const) {
    it(`returns the revision's ${directive} manifest unchanged`, () => {
      assert.deepEqual(planDecide({ revision: 0, latest_manifest: manifest(directive, 0) }), {
        kind: 'return_manifest',
        manifest_id: `m-${directive.toLowerCase()}-0`,
      })
    })
  }
})

describe('reviewStatusAfter and finality', () => {
  const table: [ReviewDirective, ReviewStatus, boolean, boolean][] = [
    ['APPLY', 'decided', true, true],
    ['ADVISORY', 'decided', true, true],
    ['HAND_BACK', 'handed_back', true, true],
    ['REVISE', 'open', true, false],
    ['PAUSE', 'open', false, false],
  ]
  for (const [directive, status, finalForRevision, finalForReview] of table) {
    it(`${directive} → review ${status}, final for its revision: ${finalForRevision}, for the review: ${finalForReview}`, () => {
      assert.equal(reviewStatusAfter(directive), status)
      assert.equal(isFinalForRevision(directive), finalForRevision)
      assert.equal(isFinalForReview(directive), finalForReview)
    })
  }
})

describe('the revise loop ends at the ceiling', () => {
  it('revises twice, then hands back, then refuses a third revision', () => {
    const judges = PANELS.do_and_judge
    let revision = 0
    let latest: ManifestRef | null = null
    const directives: ReviewDirective[] = []
    for (;;) {
      const body = {
        judge_id: 'solo',
        revision,
        status: 'BLOCKED',
        summary: 'no',
        blocking_reason: 'still broken',
      }
      const verdict: RecordedVerdict = { ...body, status: 'BLOCKED', verdict_digest: hashJson(body) }
      const review: ReviewState = { mode: 'do_and_judge', revision, judges, latest_manifest: latest }
      assert.equal(outcome(acceptVerdict(review, [], { ...verdict, revision })), 'record')
      assert.deepEqual(planDecide(review), { kind: 'decide', supersedes: null })
      const decision = decideReview(review, [verdict])
      assert.equal(decision.kind, 'decided')
      if (decision.kind !== 'decided') return
      directives.push(decision.directive)
      latest = { manifest_id: `m${revision}`, revision, directive: decision.directive }
      const next = acceptRevision(
        { revision, subject_digest: `s${revision}`, latest_manifest: latest },
        `s${revision + 1}`,
      )
      if (next.kind === 'refuse') {
        assert.equal(next.refusal.code, 'revision_ceiling')
        break
      }
      revision = next.revision
    }
    assert.deepEqual(directives, ['REVISE', 'REVISE', 'HAND_BACK'])
    assert.equal(revision, 2)
    assert.equal(reviewStatusAfter(latest!.directive), 'handed_back')
  })
})

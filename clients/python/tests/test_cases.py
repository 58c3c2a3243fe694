"""The other case kinds against the live service: a fan-out reconciled (and resolved by ops), a review decided,
and an outcome escalation resolved by ops."""

from __future__ import annotations

import secrets

from live_service import Clients

from arbiter_client import verify_envelope
from arbiter_client.models import (
    OutcomeManifestEnvelope,
    ReconcilePending,
    ReconciliationManifestEnvelope,
    ReviewManifestEnvelope,
    ReviewPending,
)

FLOOR = "vantage.enterprise.floor"
SIXTY_K = {"amount": 60000, "currency": "USD", "per": "year"}


def test_a_fan_out_with_an_echo_and_a_carve_out_halts_and_ops_resolve_it(clients: Clients) -> None:
    admin = clients.admin  # the owner writes under its own id; admin may act for any orchestrator
    fanout = admin.fanouts.create(
        orchestrator_id="scout",
        fanout_key="vantage-" + secrets.token_hex(4),
        question="How did Vantage change enterprise pricing?",
        facts=[FLOOR],
        subtasks=[
            {"subtask_id": "st_3", "scope": "archived pricing pages", "facts": [FLOOR]},
            {"subtask_id": "st_5", "scope": "CRM call notes", "facts": [FLOOR]},
        ],
        policy={"resolve": ["corroboration"], "on_qualifier_difference": "halt"},
    )
    assert fanout.status == "open" and fanout.decomposition.overlaps[0].fact == FLOOR
    admin.fanouts.submit_result(
        fanout.fanout_id,
        subtask_id="st_3",
        status="DONE",
        summary="The pricing page shows a $60k floor.",
        evidence=["capture 2025-03-04"],
        claims=[
            {
                "fact": FLOOR,
                "value": SIXTY_K,
                "effective_date": "2025-03-01",
                "confidence": 0.81,
                "sources": [{"uri": "https://vantage.com/pricing?utm_source=x"}],
            }
        ],
    )
    assert isinstance(admin.fanouts.reconcile(fanout.fanout_id), ReconcilePending)
    recorded = admin.fanouts.submit_result(
        fanout.fanout_id,
        subtask_id="st_5",
        status="DONE",
        summary="CRM notes: the floor applies to new logos only.",
        evidence=["opp 118204"],
        claims=[
            {
                "fact": FLOOR,
                "value": SIXTY_K,
                "effective_date": "2025-03-01",
                "qualifiers": {"applies_to": "new_logos"},
                "confidence": 0.66,
                # The same page as st_3's (normalised): an echo, not a second source.
                "sources": [{"uri": "https://VANTAGE.com/pricing/"}],
            }
        ],
        worker={"model": "model-x", "context_id": "ctx-5"},
    )
    assert recorded.revision == 1
    envelope = admin.fanouts.reconcile(fanout.fanout_id)
    assert isinstance(envelope, ReconciliationManifestEnvelope)
    manifest = envelope.manifest
    assert (manifest.verdict, manifest.directive) == ("CONTESTED", "HALT")
    fact = manifest.facts[0]
    assert fact.status == "contested" and fact.reason == "qualifier_difference"
    assert fact.conflicts[0].qualifier_differences[0].pointer == "/applies_to"  # the carve-out
    assert fact.echoes and fact.echoes[0].source == "https://vantage.com/pricing"
    verify_envelope(envelope, clients.dashboard.jwks())

    escalations = list(clients.ops.escalations.list(status="open", case="fanout"))
    assert any(e.fanout_id == fanout.fanout_id for e in escalations)
    resolved = clients.ops.fanouts.resolve(
        fanout.fanout_id,
        facts=[{"fact": FLOOR, "answer": {"value": SIXTY_K, "effective_date": "2025-03-01", "qualifiers": {}}}],
        rationale="Sales confirmed the floor applies to every customer.",
    )
    assert (resolved.manifest.verdict, resolved.manifest.supersedes) == ("HUMAN_RESOLVED", manifest.manifest_id)
    assert resolved.manifest.facts[0].rule == "human"
    assert clients.dashboard.fanouts.get(fanout.fanout_id).status == "resolved"
    kinds = [r.kind for r in clients.ops.audit.fanout(fanout.fanout_id).records]
    assert kinds[0] == "fanout.created" and "resolution.recorded" in kinds


def test_a_two_stage_review_is_decided_by_its_judges(clients: Clients) -> None:
    review = clients.orch_a.reviews.create(
        orchestrator_id="orch-a",
        review_key="PR-" + secrets.token_hex(4),
        mode="two_stage",
        subject={"digest": "sha256:" + "ab" * 32, "description": "refund retry fix"},
        implementer={"model": "model-m", "context_id": "ctx-1"},
        judges=[
            {"judge_id": "spec", "model": "model-l", "context_id": "ctx-2", "stage": 1},
            {"judge_id": "quality", "model": "model-m", "context_id": "ctx-3", "stage": 2},
        ],
    )
    assert (review.revision, review.status) == (0, "open")
    pending = clients.orch_a.reviews.decide(review.review_id)
    assert isinstance(pending, ReviewPending) and pending.missing_judges == ["spec"]
    clients.orch_a.reviews.submit_verdict(
        review.review_id, judge_id="spec", revision=0, status="DONE", summary="Meets the spec.", evidence=["tests"]
    )
    clients.orch_a.reviews.submit_verdict(
        review.review_id,
        judge_id="quality",
        revision=0,
        status="DONE_WITH_CONCERNS",
        summary="Fine, one nit.",
        evidence=["diff"],
        concerns=["name the retry constant"],
    )
    envelope = clients.orch_a.reviews.decide(review.review_id)
    assert isinstance(envelope, ReviewManifestEnvelope)
    assert (envelope.manifest.verdict, envelope.manifest.directive) == ("DONE_WITH_CONCERNS", "APPLY")
    assert [c.concern for c in envelope.manifest.concerns] == ["name the retry constant"]
    verify_envelope(envelope, clients.dashboard.jwks())
    assert clients.dashboard.reviews.get(review.review_id).status == "decided"
    reviews = list(clients.dashboard.manifests.list(kind="review", review_id=review.review_id))
    assert [m.manifest.manifest_id for m in reviews] == [envelope.manifest.manifest_id]


def test_an_escalation_is_resolved_by_ops(clients: Clients) -> None:
    outcome = clients.orch_a.outcomes.create(
        subagent_id="refund-agent",
        run_id="halt-" + secrets.token_hex(4),
        evidence=[{"kind": "exit_code", "content": 0}],
        expected_orchestrators=["orch-a", "orch-b"],
    )
    clients.orch_a.outcomes.interpret(
        outcome.outcome_id,
        orchestrator_id="orch-a",
        outcome_interpretation="success",
        success_criterion={"require": ["exit_code == 0"]},
        intended_action={"kind": "proceed", "resources": ["refund:re_1"]},
    )
    clients.orch_b.outcomes.interpret(
        outcome.outcome_id,
        orchestrator_id="orch-b",
        outcome_interpretation="failure",
        success_criterion={"require": ["exit_code == 0", "receipt present"]},
        intended_action={"kind": "compensate", "resources": ["refund:re_1"]},
    )
    halted = clients.orch_a.outcomes.evaluate(outcome.outcome_id)
    assert isinstance(halted, OutcomeManifestEnvelope)
    assert (halted.manifest.verdict, halted.manifest.directive) == ("CRITERIA_DIFFER", "HALT")
    receipt = halted.manifest.interpretation_divergence_receipt
    assert receipt is not None and receipt.pairs[0].criteria_divergence[0].pointer == "/require/1"

    opened = [
        e for e in clients.ops.escalations.list(status="open", case="outcome") if e.outcome_id == outcome.outcome_id
    ]
    assert len(opened) == 1 and opened[0].manifest_id == halted.manifest.manifest_id
    resolution = clients.ops.outcomes.resolve(
        outcome.outcome_id, outcome="failure", rationale="The PSP never settled it.", action_owner="orch-b"
    )
    assert resolution.manifest.verdict == "HUMAN_RESOLVED"
    assert resolution.manifest.supersedes == halted.manifest.manifest_id
    assert resolution.manifest.action_owner == "orch-b"
    assert resolution.manifest.resolution is not None
    verify_envelope(resolution, clients.dashboard.jwks())
    again = clients.orch_a.outcomes.evaluate(outcome.outcome_id)
    assert again.manifest.manifest_id == resolution.manifest.manifest_id  # type: ignore[union-attr]
    resolved = [
        e for e in clients.ops.escalations.list(status="resolved", case="outcome") if e.outcome_id == outcome.outcome_id
    ]
    assert resolved[0].status == "resolved" and resolved[0].verdict == "CRITERIA_DIFFER"

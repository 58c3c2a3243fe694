"""An orchestrator's round trip against the live service, and what the service produced checked offline."""

from __future__ import annotations

import asyncio
import copy
import secrets
import time

import pytest
from live_service import Clients
from pydantic import ValidationError

from arbiter_client import (
    AsyncArbiter,
    VerificationError,
    canonicalize,
    sha256_digest,
    verify_checkpoint,
    verify_consistency,
    verify_envelope,
    verify_manifest_inclusion,
)
from arbiter_client.merkle import b64decode_hash
from arbiter_client.models import EvaluationPending, EvidenceItemInput, Outcome, OutcomeManifestEnvelope

EVIDENCE = [
    {"kind": "result_payload", "name": "result", "content": {"refund_id": "re_1", "status": "ok", "amount": 12.5}},
    {"kind": "exit_code", "content": 0},
]


def run_id() -> str:
    return "run-" + secrets.token_hex(6)


def sequenced(clients: Clients, manifest_id: str) -> dict:
    """The envelope once the log's sequencer has placed it (audit_seq set), as received (a dict)."""
    for _ in range(100):
        envelope = clients.dashboard.manifests.get(manifest_id)
        if envelope.audit_seq is not None:
            return envelope.model_dump(mode="json", by_alias=True, exclude_unset=True)
        time.sleep(0.05)
    raise AssertionError("the manifest was never sequenced")


def test_outcome_round_trip(clients: Clients) -> None:
    run = run_id()
    created = clients.orch_a.outcomes.create(
        subagent_id="refund-agent", run_id=run, evidence=EVIDENCE, expected_orchestrators=["orch-a", "orch-b"]
    )
    assert isinstance(created, Outcome) and created.status == "open"
    # The same body from the other orchestrator: the same outcome (natural key).
    again = clients.orch_b.outcomes.create(
        subagent_id="refund-agent", run_id=run, evidence=EVIDENCE, expected_orchestrators=["orch-a", "orch-b"]
    )
    assert again.outcome_id == created.outcome_id
    # Clients can compute the evidence hash themselves.
    items = sorted({sha256_digest(item, canonical=True) for item in EVIDENCE})
    assert created.evidence_hash == sha256_digest(items, canonical=True)

    recorded = clients.orch_a.outcomes.interpret(
        created.outcome_id,
        orchestrator_id="orch-a",
        outcome_interpretation="success",
        success_criterion={"require": ["exit_code == 0"]},
        intended_action={"kind": "proceed", "resources": ["refund:re_1"]},
    )
    assert recorded.revision == 1
    assert recorded.success_criterion_signature == sha256_digest({"require": ["exit_code == 0"]}, canonical=True)
    pending = clients.orch_a.outcomes.evaluate(created.outcome_id)
    assert isinstance(pending, EvaluationPending) and pending.missing_orchestrators == ["orch-b"]

    clients.orch_b.outcomes.interpret(
        created.outcome_id,
        orchestrator_id="orch-b",
        outcome_interpretation="success",
        success_criterion={"require": ["exit_code == 0"]},
        intended_action={"kind": "proceed", "resources": ["refund:re_1"]},
    )
    a = clients.orch_a.outcomes.evaluate(created.outcome_id)
    b = clients.orch_b.outcomes.evaluate(created.outcome_id)
    assert isinstance(a, OutcomeManifestEnvelope) and isinstance(b, OutcomeManifestEnvelope)
    assert a.manifest.manifest_id == b.manifest.manifest_id
    assert (a.manifest.verdict, a.manifest.directive, a.manifest.resolved_outcome) == ("AGREED", "PROCEED", "success")
    assert a.manifest.action_owner == "orch-a"

    # Offline: the envelope as a model and as received, against the service's JWKS.
    jwks = clients.dashboard.jwks()
    verified = verify_envelope(a, jwks)
    assert verified.manifest_digest == a.manifest_digest
    envelope = sequenced(clients, a.manifest.manifest_id)
    assert verify_envelope(envelope, jwks.model_dump()).audit_seq == envelope["audit_seq"]
    assert envelope["manifest_digest"] == sha256_digest(canonicalize(envelope["manifest"]))

    tampered = copy.deepcopy(envelope)
    tampered["manifest"]["resolved_outcome"] = "failure"
    with pytest.raises(VerificationError) as caught:
        verify_envelope(tampered, jwks)
    assert caught.value.check == "digest"
    tampered["manifest_digest"] = sha256_digest(tampered["manifest"], canonical=True)
    with pytest.raises(VerificationError) as caught:
        verify_envelope(tampered, jwks)
    assert caught.value.check == "payload"
    forged = {**envelope, "jws": envelope["jws"][:-4] + ("AAAA" if not envelope["jws"].endswith("AAAA") else "BBBB")}
    with pytest.raises(VerificationError) as caught:
        verify_envelope(forged, jwks)
    assert caught.value.check == "signature"
    with pytest.raises(VerificationError) as caught:
        verify_envelope(envelope, {"keys": []})
    assert caught.value.check == "kid"

    # The manifest is in the log: its inclusion proof against the signed checkpoint, with the log's key.
    log_key = jwks.keys[0]  # the model; a dict (the saved JSON) works the same
    inclusion = clients.dashboard.manifests.inclusion(a.manifest.manifest_id)
    proved = verify_manifest_inclusion(inclusion, log_key, manifest_digest=a.manifest_digest)
    assert proved.seq == envelope["audit_seq"]
    raw = inclusion.model_dump(mode="json", by_alias=True, exclude_unset=True)
    raw["record"]["verdict"] = "HALT"
    with pytest.raises(VerificationError) as caught:
        verify_manifest_inclusion(raw, log_key)
    assert caught.value.check == "leaf_hash"

    # The checkpoint and a consistency proof between two checkpoints of the growing log.
    first = clients.ops.audit.checkpoint()
    origin = first.checkpoint.origin
    opened = verify_checkpoint(first.note, log_key, origin)
    assert opened.tree_size == first.checkpoint.tree_size
    with pytest.raises(VerificationError):
        verify_checkpoint(first.note.replace(first.checkpoint.root_hash, "A" * 43 + "="), log_key, origin)
    clients.orch_a.outcomes.create(subagent_id="refund-agent", run_id=run_id(), evidence=EVIDENCE)
    second = clients.ops.audit.checkpoint()
    assert second.checkpoint.tree_size > first.checkpoint.tree_size
    proof = clients.ops.audit.consistency_proof(
        from_size=first.checkpoint.tree_size, to_size=second.checkpoint.tree_size
    )
    hashes = [b64decode_hash(p) for p in proof.proof]
    root1, root2 = b64decode_hash(first.checkpoint.root_hash), b64decode_hash(second.checkpoint.root_hash)
    assert verify_consistency(first.checkpoint.tree_size, second.checkpoint.tree_size, hashes, root1, root2)
    assert not verify_consistency(first.checkpoint.tree_size, second.checkpoint.tree_size, hashes, root2, root1)
    assert clients.ops.audit.verify().ok is True

    story = clients.ops.audit.outcome(created.outcome_id)
    assert [r.kind for r in story.records][:1] == ["outcome.created"]


def test_lists_are_iterators_that_follow_next_cursor(clients: Clients) -> None:
    subagent = "pager-" + secrets.token_hex(4)
    made = [
        clients.orch_a.outcomes.create(subagent_id=subagent, run_id=f"r{i}", evidence=EVIDENCE).outcome_id
        for i in range(5)
    ]
    first = clients.dashboard.outcomes.list(subagent_id=subagent, limit=2)
    assert len(first.items) == 2 and first.next_cursor is not None
    assert [o.outcome_id for o in first] == made
    assert [len(p.items) for p in first.iter_pages()] == [2, 2, 1]


def test_request_arguments_may_be_the_generated_models(clients: Clients) -> None:
    as_dicts = clients.orch_a.outcomes.create(subagent_id="typed-agent", run_id="t1", evidence=EVIDENCE)
    as_models = clients.orch_a.outcomes.create(
        subagent_id="typed-agent",
        run_id="t1",
        evidence=[EvidenceItemInput.model_validate(item) for item in EVIDENCE],
    )
    assert as_models.outcome_id == as_dicts.outcome_id  # the same body: members left unset are not sent
    with pytest.raises(ValidationError):
        EvidenceItemInput.model_validate({"kind": "exit_code", "content": 0, "unknown": 1})


def test_the_async_client_is_the_same_api_awaited(clients: Clients) -> None:
    async def scenario() -> None:
        async with AsyncArbiter(base_url=clients.base_url, api_key=clients.keys["orch_a"]) as client:
            created = await client.outcomes.create(subagent_id="async-agent", run_id=run_id(), evidence=EVIDENCE)
            await client.outcomes.interpret(
                created.outcome_id,
                orchestrator_id="orch-a",
                outcome_interpretation="partial",
                success_criterion_hash=sha256_digest("criteria v1"),
            )
            envelope = await client.outcomes.evaluate(created.outcome_id)
            assert isinstance(envelope, OutcomeManifestEnvelope)
            assert envelope.manifest.verdict == "SINGLE_ORCHESTRATOR"
            verify_envelope(envelope, await client.jwks())
            page = await client.outcomes.list(subagent_id="async-agent", limit=1)
            assert len(page.items) == 1
            ids = [o.outcome_id async for o in client.outcomes.list(subagent_id="async-agent", limit=1)]
            assert created.outcome_id in ids

    asyncio.run(scenario())

"""A plain Python orchestrator on arbiter_client: the outcome round trip, then a fan-out.

    ADMIN_KEY=arb_... ARBITER_URL=http://127.0.0.1:8080 python3 examples/python/orchestrator.py

1. Two orchestrators share one refund sub-agent's result and read it differently: orch-a says it succeeded
   (proceed), orch-b says it failed (compensate: refund again). Both record their reading and evaluate; Arbiter
   returns the same signed manifest to both, and only its `action_owner` performs the side effect. The other
   proceeds without it: no duplicate compensation.
2. A planner fans a question out to two workers whose answers conflict; Arbiter reconciles their claims by the
   fan-out's declared policy, and the planner uses the reconciled answer.

Everything is verified offline against the service's published keys. The "agents" are plain functions: no model
is called. The admin key only makes the keys the orchestrators use (in production each holds its own).
"""

from __future__ import annotations

import os
import uuid

from arbiter_client import Arbiter, verify_envelope
from arbiter_client.models import OutcomeManifestEnvelope, ReconciliationManifestEnvelope

ARBITER_URL = os.environ.get("ARBITER_URL", "http://127.0.0.1:8080")


def refund_subagent() -> list[dict]:
    """The shared sub-agent's result, as evidence: it refunded, the PSP receipt is not in the ledger yet."""
    return [
        {"kind": "result_payload", "name": "result", "content": {"refund_id": "re_1", "status": "ok"}},
        {"kind": "exit_code", "content": 0},
    ]


def record_reading(client: Arbiter, me: str, outcome_id: str, reading: str, action: str) -> None:
    """One orchestrator's judgement of the shared result, under its own criteria, with what it intends to do."""
    client.outcomes.interpret(
        outcome_id,
        orchestrator_id=me,
        outcome_interpretation=reading,
        success_criterion={"require": ["exit_code == 0"]},
        intended_action={"kind": action, "resources": ["refund:re_1"]},
    )


def settle(client: Arbiter, me: str, outcome_id: str, jwks: object) -> OutcomeManifestEnvelope:
    """Ask for the decision, verify it offline, and act only if the manifest makes this orchestrator the owner."""
    envelope = client.outcomes.evaluate(outcome_id)
    if not isinstance(envelope, OutcomeManifestEnvelope):
        raise SystemExit(f"{me}: still waiting for {envelope.missing_orchestrators}")
    verified = verify_envelope(envelope, jwks)
    m = envelope.manifest
    print(
        f"{me}: manifest {m.manifest_id} verdict={m.verdict} directive={m.directive} "
        f"resolved_outcome={m.resolved_outcome} action_owner={m.action_owner} (signed by {verified.kid})"
    )
    if m.directive == "PROCEED" and m.action_owner == me:
        print(f"{me}: I am the action owner: running the follow-up for outcome {m.resolved_outcome}")
    else:
        print(f"{me}: proceeding without any side effect")
    return envelope


def round_trip(admin: Arbiter) -> None:
    orch_a = Arbiter(
        base_url=ARBITER_URL,
        api_key=admin.keys.create(role="orchestrator", orchestrator_ids=["orch-a"], label="example orchestrator A").key,
    )
    orch_b = Arbiter(
        base_url=ARBITER_URL,
        api_key=admin.keys.create(role="orchestrator", orchestrator_ids=["orch-b"], label="example orchestrator B").key,
    )
    jwks = orch_a.jwks()

    run_id = f"run-{uuid.uuid4()}"
    outcome = orch_a.outcomes.create(
        subagent_id="refund-agent",
        run_id=run_id,
        evidence=refund_subagent(),
        expected_orchestrators=["orch-a", "orch-b"],
        arbiter_orchestrator_id="orch-a",  # when the readings differ, orch-a's reading decides
    )
    same = orch_b.outcomes.create(
        subagent_id="refund-agent",
        run_id=run_id,
        evidence=refund_subagent(),
        expected_orchestrators=["orch-a", "orch-b"],
        arbiter_orchestrator_id="orch-a",
    )
    print(
        f"outcome {outcome.outcome_id} recorded "
        f"(both orchestrators got the same: {same.outcome_id == outcome.outcome_id})"
    )

    record_reading(orch_a, "orch-a", outcome.outcome_id, "success", "proceed")
    record_reading(orch_b, "orch-b", outcome.outcome_id, "failure", "compensate")
    a = settle(orch_a, "orch-a", outcome.outcome_id, jwks)
    b = settle(orch_b, "orch-b", outcome.outcome_id, jwks)
    print(f"same manifest for both: {a.manifest.manifest_id == b.manifest.manifest_id}")


def worker(subtask: str) -> dict:
    """Two workers, each in its own context: the pricing page and the CRM disagree on the floor."""
    if subtask == "pricing-page":
        value, uri = {"amount": 60000, "currency": "USD"}, "https://vantage.com/pricing"
    else:
        value, uri = {"amount": 55000, "currency": "USD"}, "crm://opp/118204"
    return {
        "subtask_id": subtask,
        "status": "DONE",
        "summary": f"{subtask}: enterprise floor found",
        "evidence": [uri],
        "claims": [{"fact": "vantage.enterprise.floor", "value": value, "sources": [{"uri": uri}]}],
    }


def fan_out(admin: Arbiter) -> None:
    planner = Arbiter(
        base_url=ARBITER_URL,
        api_key=admin.keys.create(role="orchestrator", orchestrator_ids=["planner"], label="example planner").key,
    )
    fanout = planner.fanouts.create(
        orchestrator_id="planner",
        fanout_key=f"vantage-{uuid.uuid4()}",
        question="What is Vantage's enterprise price floor?",
        facts=["vantage.enterprise.floor"],
        subtasks=[
            {"subtask_id": "pricing-page", "scope": "vantage.com", "facts": ["vantage.enterprise.floor"]},
            {"subtask_id": "crm", "scope": "CRM notes", "facts": ["vantage.enterprise.floor"]},
        ],
        policy={"resolve": ["source_priority"], "source_priority": ["https://vantage.com/", "crm://"]},
    )
    overlaps = [o.fact for o in fanout.decomposition.overlaps]
    print(f"fan-out {fanout.fanout_id}: facts owned by both workers (the conflict to expect): {overlaps}")
    for subtask in ("pricing-page", "crm"):
        result = planner.fanouts.submit_result(fanout.fanout_id, **worker(subtask))
        print(f"  result of {subtask}: revision {result.revision}")
    envelope = planner.fanouts.reconcile(fanout.fanout_id)
    if not isinstance(envelope, ReconciliationManifestEnvelope):
        raise SystemExit(f"still waiting for {envelope.missing_subtasks}")
    verify_envelope(envelope, planner.jwks())
    m = envelope.manifest
    fact = m.facts[0]
    print(f"reconciliation {m.manifest_id}: verdict={m.verdict} directive={m.directive}")
    print(f"  {fact.fact}: status={fact.status} rule={fact.rule} answer={fact.answer.value if fact.answer else None}")
    for position in fact.positions:
        if position.lost_by:
            print(f"  kept, lost by {position.lost_by}: {position.value}")


def main() -> None:
    admin = Arbiter(base_url=ARBITER_URL, api_key=os.environ["ADMIN_KEY"])
    round_trip(admin)
    fan_out(admin)
    print("example complete")


if __name__ == "__main__":
    main()

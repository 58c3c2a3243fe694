"""Problems (RFC 9457) answered by the live service, raised as ArbiterError with every member."""

from __future__ import annotations

import secrets

import pytest
from live_service import Clients

from arbiter_client import ArbiterError

EVIDENCE = [{"kind": "exit_code", "content": 0}]


def raised(fn) -> ArbiterError:  # type: ignore[no-untyped-def]
    with pytest.raises(ArbiterError) as caught:
        fn()
    return caught.value


def test_a_conflict_carries_its_extension_members(clients: Clients) -> None:
    run = "run-" + secrets.token_hex(6)
    outcome = clients.orch_a.outcomes.create(subagent_id="errors-agent", run_id=run, evidence=EVIDENCE)
    error = raised(
        lambda: clients.orch_a.outcomes.create(
            subagent_id="errors-agent", run_id=run, evidence=[{"kind": "exit_code", "content": 1}]
        )
    )
    assert error.status == 409
    assert error.type.startswith("urn:arbiter:problem:") or error.type.startswith("http")
    assert error.title and error.detail
    assert error.outcome_id == outcome.outcome_id  # the extension member, as an attribute
    assert error.extensions["outcome_id"] == outcome.outcome_id
    assert error.problem["status"] == 409
    assert error.errors == []
    assert error.instance == "/v1/outcomes"
    assert (error.method, error.path) == ("POST", "/v1/outcomes")
    assert "409" in str(error)


def test_a_bad_request_lists_each_field_error(clients: Clients) -> None:
    error = raised(
        lambda: clients.orch_a.outcomes.create(
            subagent_id="errors-agent", run_id="r", evidence=[{"kind": "telepathy", "content": 0}]
        )
    )
    assert error.status == 400
    assert error.errors and all({"path", "message"} <= set(e) for e in error.errors)
    assert any("evidence" in e["path"] for e in error.errors)
    assert error.instance == "/v1/outcomes"


def test_unauthenticated_forbidden_unknown_and_unprocessable(clients: Clients) -> None:
    nobody = clients.client("arb_" + "0" * 40, max_retries=0)
    assert raised(lambda: nobody.outcomes.list().items).status == 401
    assert raised(lambda: clients.dashboard.keys.create(role="ops", label="no")).status == 403
    missing = raised(lambda: clients.dashboard.outcomes.get("00000000-0000-4000-8000-000000000000"))
    assert missing.status == 404 and missing.title
    outcome = clients.orch_a.outcomes.create(subagent_id="errors-agent", run_id="r422", evidence=EVIDENCE)
    bad_hash = raised(
        lambda: clients.orch_a.outcomes.interpret(
            outcome.outcome_id,
            orchestrator_id="orch-a",
            outcome_interpretation="success",
            success_criterion={"a": 1},
            evidence_hash="sha256:" + "0" * 64,
        )
    )
    assert bad_hash.status == 422
    foreign = raised(
        lambda: clients.orch_a.outcomes.interpret(
            outcome.outcome_id, orchestrator_id="orch-b", outcome_interpretation="success", success_criterion={}
        )
    )
    assert foreign.status == 403


def test_dissent_after_the_decision_names_the_manifest(clients: Clients) -> None:
    outcome = clients.orch_a.outcomes.create(subagent_id="errors-agent", run_id="dissent", evidence=EVIDENCE)
    clients.orch_a.outcomes.interpret(
        outcome.outcome_id, orchestrator_id="orch-a", outcome_interpretation="success", success_criterion={}
    )
    envelope = clients.orch_a.outcomes.evaluate(outcome.outcome_id)
    error = raised(
        lambda: clients.orch_b.outcomes.interpret(
            outcome.outcome_id, orchestrator_id="orch-b", outcome_interpretation="failure", success_criterion={}
        )
    )
    assert error.status == 409
    assert error.manifest_id == envelope.manifest.manifest_id  # type: ignore[union-attr]
    with pytest.raises(AttributeError):
        _ = error.no_such_member

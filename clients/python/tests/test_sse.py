"""The stream's pure parts: Server-Sent Events parsing and the position rules of ManifestStreamState."""

from __future__ import annotations

import json

import pytest

from arbiter_client import ArbiterConnectionError, ArbiterProtocolError
from arbiter_client._stream import ManifestStreamState, SseParser, StreamOptions

MANIFEST = {
    "kind": "outcome",
    "manifest_id": "6a1f3c0e-1d2b-4c3a-9e8f-7a6b5c4d3e2f",
    "outcome_id": "3f1c2a9e-8b7d-4c6e-9f0a-1b2c3d4e5f60",
    "subagent_id": "refund-agent",
    "run_id": "run-1",
    "issued_at": "2026-12-01T00:00:00.000Z",
    "verdict": "SINGLE_ORCHESTRATOR",
    "directive": "PROCEED",
    "resolved_outcome": "success",
    "subagent_outcome_evidence_hash": "sha256:" + "1" * 64,
    "interpretations": [],
    "interpretation_divergence_receipt": None,
    "ground_truth_arbiter_predicate": None,
    "action_owner": "orch-a",
    "missing_orchestrators": [],
    "supersedes": None,
    "resolution": None,
}
ENVELOPE = {
    "manifest": MANIFEST,
    "manifest_digest": "sha256:" + "0" * 64,
    "jws": "a.b.c",
    "audit_seq": 3,
}


def test_parses_events_split_anywhere_with_any_line_ending() -> None:
    text = ': heartbeat\r\nevent: manifest\r\nid: 3\r\ndata: {"a":\r\ndata: 1}\r\n\r\nretry: 2500\nid: 4\n\n'
    for cut in range(len(text) + 1):
        parser = SseParser()
        events = parser.push(text[:cut]) + parser.push(text[cut:])
        assert [(e.event, e.id, e.data) for e in events] == [("manifest", "3", '{"a":\n1}'), ("message", "4", None)]
        assert parser.retry_ms == 2500


def test_yields_each_manifest_once_in_order_and_keeps_the_position() -> None:
    state = ManifestStreamState(2, StreamOptions())
    assert state.request_headers()["last-event-id"] == "2"

    def block(seq: int) -> str:
        return f"event: manifest\nid: {seq}\ndata: {json.dumps({**ENVELOPE, 'audit_seq': seq})}\n\n"

    events = state.feed(block(2) + block(3) + ": ping\n\n" + block(3) + block(5))
    assert [e.audit_seq for e in events] == [3, 5]
    assert events[0].raw["audit_seq"] == 3 and events[0].envelope.audit_seq == 3
    assert state.request_headers()["last-event-id"] == "5"


def test_refuses_events_it_cannot_place_or_read() -> None:
    with pytest.raises(ArbiterProtocolError):
        ManifestStreamState(None, StreamOptions()).feed("event: manifest\ndata: {}\n\n")
    with pytest.raises(ArbiterProtocolError):
        ManifestStreamState(None, StreamOptions()).feed("event: manifest\nid: 1\ndata: nope\n\n")
    with pytest.raises(ValueError):
        ManifestStreamState("-1", StreamOptions())


def test_backs_off_while_failing_and_gives_up_when_told() -> None:
    state = ManifestStreamState(
        None, StreamOptions(reconnect_delay=1, max_reconnect_delay=4, max_failures=3), lambda: 1.0
    )
    assert [state.failed() for _ in range(3)] == [1.0, 2.0, 4.0]
    with pytest.raises(ArbiterConnectionError):
        state.failed()
    assert ManifestStreamState(None, StreamOptions(), lambda: 0.0).failed(asked=7) == 7

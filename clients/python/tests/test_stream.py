"""The manifest stream iterator against the live service, across a restart of the service."""

from __future__ import annotations

import asyncio
import queue
import secrets
import threading
import time

import pytest
from live_service import Clients, Service

from arbiter_client import ArbiterError, AsyncArbiter, verify_envelope


def decide(clients: Clients) -> str:
    """A new single-orchestrator outcome, decided: its manifest id."""
    outcome = clients.orch_a.outcomes.create(
        subagent_id="stream-agent", run_id="s-" + secrets.token_hex(6), evidence=[{"kind": "exit_code", "content": 0}]
    )
    clients.orch_a.outcomes.interpret(
        outcome.outcome_id, orchestrator_id="orch-a", outcome_interpretation="success", success_criterion={}
    )
    envelope = clients.orch_a.outcomes.evaluate(outcome.outcome_id)
    return envelope.manifest.manifest_id  # type: ignore[union-attr]


def audit_seq(clients: Clients, manifest_id: str) -> int:
    for _ in range(200):
        seq = clients.dashboard.manifests.get(manifest_id).audit_seq
        if seq is not None:
            return seq
        time.sleep(0.05)
    raise AssertionError("never sequenced")


def test_the_stream_resumes_across_a_service_restart(clients: Clients, arbiter_service: tuple[Service, str]) -> None:
    service, _ = arbiter_service
    start = audit_seq(clients, decide(clients))
    stream = clients.dashboard.stream_manifests(last_event_id=start, reconnect_delay=0.2, max_failures=100)
    # The iterator is pulled one event at a time on a thread (so a hang fails the test instead of blocking it);
    # between pulls it is suspended, as a caller's loop body would suspend it.
    pull = threading.Semaphore(0)
    events: queue.Queue[object] = queue.Queue()

    def consume() -> None:
        try:
            while pull.acquire():
                events.put(next(stream))
        except Exception as err:
            events.put(err)

    threading.Thread(target=consume, daemon=True).start()

    def next_event() -> object:
        pull.release()
        event = events.get(timeout=30)
        assert not isinstance(event, Exception), event
        return event

    first = decide(clients)
    got = next_event()
    assert got.envelope.manifest.manifest_id == first  # type: ignore[attr-defined]
    assert got.audit_seq > start  # type: ignore[attr-defined]

    # The service restarts while the iterator holds its connection, and two manifests are issued before the
    # iterator reads again: it must notice the dead connection, reconnect with Last-Event-ID and replay them.
    service.restart()
    after = [decide(clients), decide(clients)]
    received = [next_event(), next_event()]
    assert [e.envelope.manifest.manifest_id for e in received] == after  # type: ignore[attr-defined]
    seqs = [got.audit_seq, *(e.audit_seq for e in received)]  # type: ignore[attr-defined]
    assert seqs == sorted(set(seqs)), "no manifest twice, in log order"
    # What came over the stream verifies offline, as received.
    jwks = clients.dashboard.jwks()
    for event in received:
        assert verify_envelope(event.raw, jwks).audit_seq == event.audit_seq  # type: ignore[attr-defined]


def test_the_stream_refuses_a_bad_key_at_once(clients: Clients) -> None:
    with pytest.raises(ArbiterError) as caught:
        next(iter(clients.client("arb_" + "1" * 40).stream_manifests(last_event_id=0)))
    assert caught.value.status == 401


def test_the_async_stream_replays_from_last_event_id(clients: Clients) -> None:
    manifest_id = decide(clients)
    seq = audit_seq(clients, manifest_id)

    async def first_event() -> object:
        async with AsyncArbiter(base_url=clients.base_url, api_key=clients.keys["dashboard"]) as client:
            async for event in client.stream_manifests(last_event_id=seq - 1):
                return event
        return None

    event = asyncio.run(asyncio.wait_for(first_event(), timeout=30))
    assert event.audit_seq == seq and event.envelope.manifest.manifest_id == manifest_id  # type: ignore[attr-defined]

"""Retries, Retry-After and timeouts, against a real HTTP server that answers from a script (the live service
cannot be made to answer 503 on demand)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from arbiter_client import Arbiter, ArbiterError, ArbiterProtocolError, ArbiterTimeoutError, RetryPolicy
from arbiter_client._retry import SEND, Sleep, parse_retry_after, retry_plan

OUTCOME = {
    "outcome_id": "3f1c2a9e-8b7d-4c6e-9f0a-1b2c3d4e5f60",
    "subagent_id": "refund-agent",
    "run_id": "run-1",
    "status": "open",
    "evidence_hash": "sha256:" + "0" * 64,
    "evidence_versions": [],
    "evidence": [],
    "interpretations": [],
    "expected_orchestrators": [],
    "deadline": None,
    "arbiter_orchestrator_id": None,
    "probe": None,
    "fallback_policy": "escalate",
    "manifest_id": None,
    "reevaluation_rounds": 0,
    "created_at": "2026-12-01T00:00:00.000Z",
}
BUSY = {"type": "urn:arbiter:problem:overloaded", "title": "Service Unavailable", "status": 503, "detail": "busy"}


class Scripted:
    """Answers each request with the next (status, headers, body, delay) of its script; records what came."""

    def __init__(self) -> None:
        self.script: list[tuple[int, dict[str, str], object, float]] = []
        self.requests: list[tuple[str, str, float]] = []
        scripted = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                self.rfile.read(length)
                scripted.requests.append((self.command, self.path, time.monotonic()))
                status, headers, body, delay = scripted.script.pop(0)
                time.sleep(delay)
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(status)
                kind = "application/problem+json" if status >= 400 else "application/json"
                if isinstance(body, str):
                    kind = "text/html"
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                try:
                    self.wfile.write(data)
                except BrokenPipeError:
                    pass

            do_GET = do_POST = do_DELETE = _answer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def scripted() -> Iterator[Scripted]:
    server = Scripted()
    yield server
    server.server.shutdown()
    server.server.server_close()


def client(server: Scripted, **options: object) -> Arbiter:
    return Arbiter(base_url=server.base_url, api_key="arb_test", **options)  # type: ignore[arg-type]


def test_an_idempotent_call_waits_what_retry_after_asks_and_tries_again(scripted: Scripted) -> None:
    scripted.script = [
        (503, {"retry-after": "1"}, BUSY, 0),
        (429, {"retry-after": "0"}, BUSY, 0),
        (200, {}, OUTCOME, 0),
    ]
    outcome = client(scripted).outcomes.get(OUTCOME["outcome_id"])
    assert outcome.run_id == "run-1"
    times = [t for _, _, t in scripted.requests]
    assert len(times) == 3
    assert times[1] - times[0] >= 0.95  # Retry-After: 1 honoured


def test_a_call_that_is_not_idempotent_is_sent_once(scripted: Scripted) -> None:
    scripted.script = [(503, {"retry-after": "0"}, BUSY, 0), (201, {}, {}, 0)]
    with pytest.raises(ArbiterError) as caught:
        client(scripted).outcomes.resolve(OUTCOME["outcome_id"], outcome="failure", rationale="no")
    assert caught.value.status == 503 and caught.value.attempts == 1 and caught.value.retry_after == "0"
    assert len(scripted.requests) == 1


def test_deleting_a_webhook_is_sent_once(scripted: Scripted) -> None:
    # A retry after a lost answer would find the webhook gone and report 404 for a delete that succeeded.
    scripted.script = [(503, {"retry-after": "0"}, BUSY, 0), (204, {}, "", 0)]
    with pytest.raises(ArbiterError) as caught:
        client(scripted).webhooks.delete("3f1c2a9e-8b7d-4c6e-9f0a-1b2c3d4e5f60")
    assert caught.value.status == 503 and caught.value.attempts == 1
    assert [(method, path) for method, path, _ in scripted.requests] == [
        ("DELETE", "/v1/webhooks/3f1c2a9e-8b7d-4c6e-9f0a-1b2c3d4e5f60")
    ]


def test_retries_give_up_after_max_retries_with_the_last_problem(scripted: Scripted) -> None:
    scripted.script = [(503, {"retry-after": "0"}, BUSY, 0)] * 3
    with pytest.raises(ArbiterError) as caught:
        client(scripted, max_retries=2).outcomes.get(OUTCOME["outcome_id"])
    assert caught.value.attempts == 3 and caught.value.detail == "busy"


def test_a_retry_after_longer_than_the_client_waits_is_not_waited_for(scripted: Scripted) -> None:
    scripted.script = [(503, {"retry-after": "3600"}, BUSY, 0)]
    started = time.monotonic()
    with pytest.raises(ArbiterError):
        client(scripted).outcomes.get(OUTCOME["outcome_id"])
    assert time.monotonic() - started < 2


def test_a_timeout_raises_and_is_not_retried(scripted: Scripted) -> None:
    scripted.script = [(200, {}, OUTCOME, 1.5), (200, {}, OUTCOME, 0)]
    with pytest.raises(ArbiterTimeoutError):
        client(scripted, timeout=0.3).outcomes.get(OUTCOME["outcome_id"])
    scripted.script = [(200, {}, OUTCOME, 1.0)]
    time.sleep(1.3)
    scripted.requests.clear()
    with pytest.raises(ArbiterTimeoutError):
        client(scripted).outcomes.get(OUTCOME["outcome_id"], timeout=0.2)  # per call
    assert len(scripted.requests) == 1


def test_a_refused_connection_is_retried_for_idempotent_calls_only() -> None:
    plan = retry_plan("GET /x", True, RetryPolicy(max_retries=1))
    assert next(plan) == SEND
    assert isinstance(plan.send(httpx.ConnectError("refused")), Sleep)
    assert next(plan) == SEND
    with pytest.raises(Exception, match="no answer"):
        plan.send(httpx.ConnectError("refused"))
    once = retry_plan("POST /x", False, RetryPolicy())
    next(once)
    with pytest.raises(Exception, match="no answer"):
        once.send(httpx.ConnectError("refused"))


def test_retry_after_reads_seconds_and_http_dates() -> None:
    assert parse_retry_after("7", 0) == 7
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", 1445412470) == 10
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", 1445412490) == 0
    assert parse_retry_after("soon", 0) is None and parse_retry_after(None, 0) is None


def test_an_answer_that_is_no_problem_still_raises_a_problem(scripted: Scripted) -> None:
    scripted.script = [(502, {}, "<html><body>Bad gateway</body></html>", 0)]
    with pytest.raises(ArbiterError) as caught:
        client(scripted).outcomes.get(OUTCOME["outcome_id"])
    error = caught.value
    assert (error.status, error.type, error.title) == (502, "about:blank", "Bad Gateway")
    assert "Bad gateway" in error.detail and error.errors == []


def test_a_success_that_does_not_fit_the_document_is_a_protocol_error(scripted: Scripted) -> None:
    scripted.script = [(200, {}, {"outcome_id": 42}, 0), (200, {}, "not json", 0)]
    with pytest.raises(ArbiterProtocolError, match="documented shape"):
        client(scripted).outcomes.get(OUTCOME["outcome_id"])
    with pytest.raises(ArbiterProtocolError, match="not JSON"):
        client(scripted).outcomes.get(OUTCOME["outcome_id"])

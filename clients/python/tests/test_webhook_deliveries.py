"""Webhook deliveries from the live service, received by a local HTTP server and checked with verify_webhook: a
test event, then the same after a secret rotation, when each delivery carries a signature per secret."""

from __future__ import annotations

import queue
import secrets
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from live_service import Clients

from arbiter_client import VerificationError, verify_webhook

Delivery = tuple[dict[str, str], bytes]


@pytest.fixture
def receiver() -> Iterator[tuple[str, queue.Queue[Delivery]]]:
    received: queue.Queue[Delivery] = queue.Queue()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            received.put((dict(self.headers.items()), body))
            self.send_response(204)
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/arbiter", received
    finally:
        server.shutdown()
        server.server_close()


def _next(received: queue.Queue[Delivery]) -> Delivery:
    return received.get(timeout=20)


def test_test_events_verify_with_the_secret_and_with_both_after_a_rotation(
    clients: Clients, receiver: tuple[str, queue.Queue[Delivery]]
) -> None:
    url, received = receiver
    admin = clients.admin
    hook = admin.webhooks.create(url=url, events=["manifest.issued"], description="python receiver")
    assert hook.secret.startswith("whsec_")
    try:
        admin.webhooks.send_test(hook.webhook_id)
        headers, body = _next(received)
        event = verify_webhook(headers, body, hook.secret)
        assert event["type"] == "webhook.test"
        assert event["data"]["webhook_id"] == hook.webhook_id

        rotated = admin.webhooks.rotate_secret(hook.webhook_id)
        assert rotated.secret != hook.secret
        admin.webhooks.send_test(hook.webhook_id)
        headers, body = _next(received)
        assert len(headers["webhook-signature"].split(" ")) == 2
        for secret in (hook.secret, rotated.secret):
            assert verify_webhook(headers, body, secret)["type"] == "webhook.test"
        with pytest.raises(VerificationError) as caught:
            verify_webhook(headers, body.replace(b"webhook.test", b"webhook.tost"), rotated.secret)
        assert caught.value.check == "signature"

        deadline = time.monotonic() + 20
        while True:
            statuses = [d.status for d in admin.webhooks.deliveries(hook.webhook_id)]
            if statuses == ["succeeded", "succeeded"] or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert statuses == ["succeeded", "succeeded"]
    finally:
        admin.webhooks.delete(hook.webhook_id)


def test_a_decision_arrives_as_a_verified_manifest_issued_event(
    clients: Clients, receiver: tuple[str, queue.Queue[Delivery]]
) -> None:
    url, received = receiver
    admin = clients.admin
    hook = admin.webhooks.create(url=url, events=["manifest.issued"], filter={"orchestrator_id": "orch-a"})
    try:
        outcome = clients.orch_a.outcomes.create(
            subagent_id="refund-agent",
            run_id="webhook-" + secrets.token_hex(4),
            evidence=[{"kind": "exit_code", "content": 0}],
            expected_orchestrators=["orch-a"],
        )
        clients.orch_a.outcomes.interpret(
            outcome.outcome_id,
            orchestrator_id="orch-a",
            outcome_interpretation="success",
            success_criterion={"require": ["exit_code == 0"]},
            intended_action={"kind": "proceed", "resources": ["refund:re_1"]},
        )
        decided = clients.orch_a.outcomes.evaluate(outcome.outcome_id)
        headers, body = _next(received)
        event = verify_webhook(headers, body, hook.secret)
        assert event["type"] == "manifest.issued"
        assert event["data"]["manifest"]["manifest_id"] == decided.manifest.manifest_id
        assert event["data"]["manifest"]["outcome_id"] == outcome.outcome_id
        with pytest.raises(VerificationError) as caught:
            verify_webhook(headers, body.replace(b"manifest.issued", b"manifest.issueD"), hook.secret)
        assert caught.value.check == "signature"
    finally:
        admin.webhooks.delete(hook.webhook_id)

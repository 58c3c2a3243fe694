"""Standard Webhooks signatures (vectors computed with the standardwebhooks reference package)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arbiter_client import VerificationError, verify_webhook
from arbiter_client.webhooks import sign_webhook

CASES = json.loads((Path(__file__).parent / "vectors" / "standard-webhooks.json").read_text(encoding="utf-8"))["cases"]


def headers(case: dict, signature: str | None = None) -> dict[str, str]:
    return {
        "Webhook-Id": case["id"],
        "Webhook-Timestamp": str(case["timestamp"]),
        "Webhook-Signature": signature or case["signature"],
    }


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["id"])
def test_signs_and_verifies_as_the_reference(case: dict) -> None:
    assert sign_webhook(case["secret"], case["id"], case["timestamp"], case["body"]) == case["signature"]
    body = case["body"].encode()
    if case["body"]:
        assert verify_webhook(headers(case), body, case["secret"], now=case["timestamp"]) == json.loads(body)


ROTATION = json.loads((Path(__file__).parent / "vectors" / "standard-webhooks.json").read_text(encoding="utf-8"))[
    "rotation"
]


@pytest.mark.parametrize("secret", ROTATION["secrets"], ids=["previous", "current"])
def test_verifies_with_either_secret_after_a_rotation(secret: str) -> None:
    assert len(ROTATION["signature"].split(" ")) == 2
    payload = verify_webhook(headers(ROTATION), ROTATION["body"], secret, now=ROTATION["timestamp"])
    assert payload["type"] == "escalation.opened"


def test_a_rotated_delivery_does_not_verify_with_another_secret() -> None:
    with pytest.raises(VerificationError) as caught:
        verify_webhook(headers(ROTATION), ROTATION["body"], CASES[1]["secret"], now=ROTATION["timestamp"])
    assert caught.value.check == "signature"


def test_accepts_any_of_several_signatures_after_a_rotation() -> None:
    case = CASES[1]
    both = f"v1,{'A' * 43}= {case['signature']}"
    assert verify_webhook(headers(case, both), case["body"], case["secret"], now=case["timestamp"])


@pytest.mark.parametrize(
    ("change", "check"),
    [
        (lambda c: {**c, "body": c["body"].replace("AGREED", "HALTED")}, "signature"),
        (lambda c: {**c, "id": c["id"] + "x"}, "signature"),
        (lambda c: {**c, "secret": CASES[0]["secret"]}, "signature"),
        (lambda c: {**c, "signature": "v2," + c["signature"][3:]}, "signature"),
        (lambda c: {**c, "timestamp": c["timestamp"] + 1}, "signature"),
    ],
    ids=["body", "id", "secret", "version", "timestamp"],
)
def test_refuses_tampered_deliveries(change, check) -> None:  # type: ignore[no-untyped-def]
    case = CASES[1]
    tampered = change(case)
    with pytest.raises(VerificationError) as caught:
        verify_webhook(
            headers({**case, "id": tampered["id"], "timestamp": tampered["timestamp"]}, tampered["signature"]),
            tampered["body"],
            tampered["secret"],
            now=case["timestamp"],
        )
    assert caught.value.check == check


def test_refuses_old_or_future_timestamps_and_missing_headers() -> None:
    case = CASES[1]
    with pytest.raises(VerificationError) as caught:
        verify_webhook(headers(case), case["body"], case["secret"], now=case["timestamp"] + 301)
    assert caught.value.check == "timestamp"
    with pytest.raises(VerificationError) as caught:
        verify_webhook({"webhook-id": "x"}, case["body"], case["secret"])
    assert caught.value.check == "malformed"


@pytest.mark.parametrize("timestamp", ["", "1e9", "-1", " 1796000000", "\u00b2", "\uff11\uff17\uff19\uff16"])
def test_refuses_a_timestamp_that_is_not_ascii_seconds(timestamp: str) -> None:
    case = CASES[1]
    with pytest.raises(VerificationError) as caught:
        verify_webhook({**headers(case), "Webhook-Timestamp": timestamp}, case["body"], case["secret"])
    assert caught.value.check == "malformed"


def test_a_body_that_is_not_utf8_is_a_verification_error() -> None:
    case = CASES[1]
    body = b'{"type": "\xff"}'
    # Signed as the bytes a receiver got, whatever their encoding.
    signature = sign_webhook(case["secret"], case["id"], case["timestamp"], body)
    with pytest.raises(VerificationError) as caught:
        verify_webhook(headers(case, signature), body, case["secret"], now=case["timestamp"])
    assert caught.value.check == "malformed"
    with pytest.raises(VerificationError) as caught:
        verify_webhook(headers(case), body, case["secret"], now=case["timestamp"])
    assert caught.value.check == "signature"

"""Verifying webhook deliveries (Standard Webhooks): `webhook-id`, `webhook-timestamp`, `webhook-signature`.

The signature is `v1,<base64 HMAC-SHA256(secret, "<id>.<timestamp>.<body>")>`; the secret is `whsec_<base64>`.
After a secret rotation a delivery carries several space-separated signatures; one matching is enough.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import time
from collections.abc import Mapping
from typing import Any

from ._errors import VerificationError

__all__ = ["DEFAULT_TOLERANCE", "sign_webhook", "verify_webhook"]

DEFAULT_TOLERANCE = 300  # seconds a delivery's timestamp may be off, against replays
_TIMESTAMP = re.compile(r"[0-9]{1,12}")  # ASCII digits only: str.isdigit() also takes "²", which int() refuses


def _secret_bytes(secret: str | bytes) -> bytes:
    if isinstance(secret, bytes):
        return secret
    text = secret[len("whsec_") :] if secret.startswith("whsec_") else secret
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise VerificationError("malformed", "the webhook secret is not whsec_<base64>") from None


def sign_webhook(secret: str | bytes, msg_id: str, timestamp: int, body: str | bytes) -> str:
    """The `v1,<base64>` signature of one delivery. A body given as bytes is signed exactly as given, whatever
    its encoding: the signature covers the bytes a receiver gets."""
    payload = body if isinstance(body, bytes) else body.encode()
    message = f"{msg_id}.{timestamp}.".encode() + payload
    return "v1," + base64.b64encode(hmac.new(_secret_bytes(secret), message, hashlib.sha256).digest()).decode()


def _header(headers: Mapping[str, str], name: str) -> str:
    for key, value in headers.items():
        if key.lower() == name:
            return value
    raise VerificationError("malformed", f"the {name} header is missing")


def verify_webhook(
    headers: Mapping[str, str],
    body: str | bytes,
    secret: str | bytes,
    *,
    tolerance: int = DEFAULT_TOLERANCE,
    now: float | None = None,
) -> Any:
    """Checks a delivery: one of its `v1` signatures is the HMAC of id, timestamp and the raw body under
    `secret`, and its timestamp is within `tolerance` seconds of now. Returns the parsed JSON payload; raises
    VerificationError (`malformed`, `timestamp` or `signature`) otherwise. Pass the body exactly as received."""
    msg_id = _header(headers, "webhook-id")
    timestamp_text = _header(headers, "webhook-timestamp")
    signatures = _header(headers, "webhook-signature")
    if not _TIMESTAMP.fullmatch(timestamp_text):
        raise VerificationError("malformed", "webhook-timestamp is not a number of seconds")
    timestamp = int(timestamp_text)
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance:
        raise VerificationError("timestamp", "the delivery's timestamp is too far from now")
    expected = sign_webhook(secret, msg_id, timestamp, body).split(",", 1)[1]
    for candidate in signatures.split(" "):
        version, _, signature = candidate.partition(",")
        if version == "v1" and hmac.compare_digest(signature.encode(), expected.encode()):
            return _payload(body)
    raise VerificationError("signature", "no signature of the delivery matches the secret")


def _payload(body: str | bytes) -> Any:
    try:
        return json.loads(body.decode("utf-8") if isinstance(body, bytes) else body)
    except (UnicodeDecodeError, ValueError):
        raise VerificationError("malformed", "the delivery is signed but its body is not UTF-8 JSON") from None

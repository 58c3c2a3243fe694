"""verify_envelope offline, on envelopes signed here as the service signs them (Ed25519 over JCS(manifest))."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from arbiter_client import VerificationError, canonicalize, jwk_thumbprint, sha256_digest, verify_envelope

KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
X = base64.urlsafe_b64encode(KEY.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)).rstrip(b"=").decode()
JWK = {"kty": "OKP", "crv": "Ed25519", "x": X}
KID = jwk_thumbprint(JWK)
JWKS = {"keys": [{**JWK, "kid": KID, "alg": "Ed25519", "use": "sig"}]}
MANIFEST = {
    "kind": "outcome",
    "manifest_id": "6a1f3c0e-1d2b-4c3a-9e8f-7a6b5c4d3e2f",
    "verdict": "AGREED",
    "directive": "PROCEED",
    "resolved_outcome": "success",
    "confidence": 0.66,
    "note": "€ and \u2028",
}


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def sign(manifest: Any, header: dict[str, Any] | None = None, payload: bytes | None = None) -> str:
    protected = b64url(json.dumps(header or {"alg": "Ed25519", "kid": KID}).encode())
    body = b64url(payload if payload is not None else canonicalize(manifest).encode())
    signature = KEY.sign(f"{protected}.{body}".encode())
    return f"{protected}.{body}.{b64url(signature)}"


def envelope(**changes: Any) -> dict[str, Any]:
    base = {"manifest": MANIFEST, "manifest_digest": sha256_digest(MANIFEST, canonical=True), "jws": sign(MANIFEST)}
    base["audit_seq"] = 7
    return {**base, **changes}


def check_of(value: Any, jwks: Any = JWKS) -> str:
    with pytest.raises(VerificationError) as caught:
        verify_envelope(value, jwks)
    return caught.value.check


def test_a_well_signed_envelope_verifies() -> None:
    verified = verify_envelope(envelope(), JWKS)
    assert (verified.kid, verified.alg, verified.audit_seq) == (KID, "Ed25519", 7)
    assert verify_envelope(envelope(jws=sign(MANIFEST, {"alg": "EdDSA", "kid": KID})), JWKS).alg == "EdDSA"


def test_the_kid_is_the_rfc7638_thumbprint() -> None:
    members = json.dumps({"crv": "Ed25519", "kty": "OKP", "x": X}, separators=(",", ":")).encode()
    assert KID == b64url(hashlib.sha256(members).digest())
    other = {"keys": [{**JWKS["keys"][0], "kid": "not-the-thumbprint"}]}
    jws = sign(MANIFEST, {"alg": "Ed25519", "kid": "not-the-thumbprint"})
    assert check_of(envelope(jws=jws), other) == "kid"


def test_tampered_or_foreign_envelopes_are_refused() -> None:
    changed = {**MANIFEST, "resolved_outcome": "failure"}
    assert check_of(envelope(manifest=changed)) == "digest"
    assert check_of(envelope(manifest=changed, manifest_digest=sha256_digest(changed, canonical=True))) == "payload"
    not_canonical = json.dumps(MANIFEST, indent=1).encode()
    assert check_of(envelope(jws=sign(MANIFEST, payload=not_canonical))) == "payload"
    parts = envelope()["jws"].split(".")
    flipped = parts[2][:-2] + ("A" if parts[2][-2] != "A" else "B") + parts[2][-1]
    assert check_of(envelope(jws=".".join([*parts[:2], flipped]))) == "signature"
    stranger = Ed25519PrivateKey.generate()
    forged = envelope()["jws"].rsplit(".", 1)[0]
    assert check_of(envelope(jws=f"{forged}.{b64url(stranger.sign(forged.encode()))}")) == "signature"
    assert check_of(envelope(), {"keys": []}) == "kid"
    assert check_of(envelope(extra="member")) == "malformed"
    assert check_of(envelope(jws="a.b")) == "malformed"


def test_algorithms_outside_the_allow_list_never_reach_a_key() -> None:
    for alg in ["none", "HS256", "RS256", "ES256"]:
        assert check_of(envelope(jws=sign(MANIFEST, {"alg": alg, "kid": KID}))) == "alg"
    # The classic confusion: an HMAC keyed with the public key's bytes.
    protected = b64url(json.dumps({"alg": "HS256", "kid": KID}).encode())
    body = b64url(canonicalize(MANIFEST).encode())
    mac = hmac.new(X.encode(), f"{protected}.{body}".encode(), hashlib.sha256).digest()
    assert check_of(envelope(jws=f"{protected}.{body}.{b64url(mac)}")) == "alg"
    assert check_of(envelope(jws=sign(MANIFEST, {"alg": "Ed25519", "kid": KID, "crit": ["b64"]}))) == "malformed"


def test_audit_seq_outside_the_signature_must_not_contradict_it() -> None:
    assert verify_envelope(envelope(audit_seq=None), JWKS).audit_seq is None
    assert check_of(envelope(audit_seq=0)) == "audit_seq"
    signed = {**MANIFEST, "audit_seq": 5}
    older = envelope(manifest=signed, manifest_digest=sha256_digest(signed, canonical=True), jws=sign(signed))
    assert verify_envelope({**older, "audit_seq": 5}, JWKS).audit_seq == 5
    assert check_of({**older, "audit_seq": 6}) == "audit_seq"

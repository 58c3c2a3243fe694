"""Offline verification of a manifest envelope `{manifest, manifest_digest, jws, audit_seq}` against a JWKS.

The JWS is compact (RFC 7515), signed with Ed25519 (`alg` Ed25519, or the older EdDSA), its `kid` the RFC 7638
thumbprint of the signing key, and its payload exactly JCS(manifest); `manifest_digest` is sha256(JCS(manifest)).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from pydantic import BaseModel

from ._errors import VerificationError
from .jcs import canonicalize, sha256_digest

ALGORITHMS = ("Ed25519", "EdDSA")
_ENVELOPE_FIELDS = {"manifest", "manifest_digest", "jws", "audit_seq"}
_B64URL = re.compile(r"[A-Za-z0-9_-]*")


@dataclass(frozen=True)
class VerifiedEnvelope:
    kid: str
    alg: str
    manifest: dict[str, Any]
    manifest_digest: str
    audit_seq: int | None


def b64url_decode(text: str) -> bytes:
    if not _B64URL.fullmatch(text):
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64url_encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def jwk_thumbprint(jwk: Mapping[str, Any]) -> str:
    """RFC 7638 thumbprint (SHA-256, base64url) of an OKP key: over `{"crv","kty","x"}` in that order."""
    members = {"crv": jwk.get("crv"), "kty": jwk.get("kty"), "x": jwk.get("x")}
    text = json.dumps(members, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return b64url_encode(hashlib.sha256(text.encode()).digest())


def jwk_public_key(jwk: Mapping[str, Any]) -> Ed25519PublicKey:
    """The Ed25519 public key of an OKP JWK; only its public member `x` is read (a `d` is ignored)."""
    if jwk.get("kty") != "OKP" or jwk.get("crv") != "Ed25519" or not isinstance(jwk.get("x"), str):
        raise VerificationError("key", "the JWK is not an Ed25519 OKP key")
    try:
        raw = b64url_decode(jwk["x"])
    except (ValueError, binascii.Error):
        raise VerificationError("key", "the JWK's x is not base64url") from None
    if len(raw) != 32:
        raise VerificationError("key", "the JWK's x is not 32 bytes")
    return Ed25519PublicKey.from_public_bytes(raw)


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return value


def verify_compact_jws(jws: Any, jwks: Any) -> tuple[str, str, bytes]:
    """Verifies a compact JWS against a JWKS: (kid, alg, payload bytes). The algorithm allow-list is applied to
    the header before any key is looked up, so `none` or an HMAC with the public key as secret never get
    anywhere; `crit` is refused; the key must be the JWKS entry whose RFC 7638 thumbprint is the `kid`."""
    if not isinstance(jws, str):
        raise VerificationError("malformed", "jws is not a string")
    parts = jws.split(".")
    if len(parts) != 3 or not all(_B64URL.fullmatch(p) for p in parts):
        raise VerificationError("malformed", "jws is not a compact JWS (three base64url parts)")
    try:
        header = json.loads(b64url_decode(parts[0]))
    except (ValueError, binascii.Error):
        header = None
    if not isinstance(header, dict):
        raise VerificationError("malformed", "JWS protected header is not a base64url JSON object")
    alg = header.get("alg")
    if alg not in ALGORITHMS:
        raise VerificationError("alg", f"JWS alg {alg!r} is not accepted (only Ed25519 or EdDSA)")
    if "crit" in header:
        raise VerificationError("malformed", 'JWS header has a "crit" parameter; no extensions are accepted')
    kid = header.get("kid")
    if not isinstance(kid, str) or kid == "":
        raise VerificationError("kid", "JWS header has no kid")
    jwks = _plain(jwks)
    keys = jwks.get("keys") if isinstance(jwks, Mapping) else None
    if not isinstance(keys, list):
        raise VerificationError("key", "the JWKS has no keys list")
    jwk = next((k for k in keys if isinstance(k, Mapping) and k.get("kid") == kid), None)
    if jwk is None:
        raise VerificationError("kid", f"unknown kid {kid!r}: not in the JWKS")
    public_key = jwk_public_key(jwk)
    if jwk_thumbprint(jwk) != kid:
        raise VerificationError("kid", f"kid {kid!r} is not the RFC 7638 thumbprint of its key")
    try:
        signature = b64url_decode(parts[2])
        payload = b64url_decode(parts[1])
    except (ValueError, binascii.Error):
        raise VerificationError("malformed", "JWS parts are not base64url") from None
    try:
        public_key.verify(signature, f"{parts[0]}.{parts[1]}".encode("ascii"))
    except InvalidSignature:
        raise VerificationError("signature", f"signature does not verify with key {kid!r}") from None
    return kid, alg, payload


def verify_envelope(envelope: Any, jwks: Any) -> VerifiedEnvelope:
    """Checks a manifest envelope offline against a JWKS (`/.well-known/jwks.json`, as a dict or the Jwks model):
    the digest is sha256(JCS(manifest)), the JWS verifies with the key its `kid` names, and its payload is
    byte for byte JCS(manifest). Accepts the envelope as received (a dict) or as a model. Raises
    VerificationError naming the failed check (`malformed`, `alg`, `kid`, `key`, `signature`, `payload`,
    `digest`, `audit_seq`)."""
    envelope = _plain(envelope)
    if not isinstance(envelope, Mapping):
        raise VerificationError("malformed", "envelope is not a JSON object")
    unexpected = sorted(set(envelope) - _ENVELOPE_FIELDS)
    if unexpected:
        raise VerificationError("malformed", f"envelope has unexpected field(s): {', '.join(unexpected)}")
    manifest, digest, jws = envelope.get("manifest"), envelope.get("manifest_digest"), envelope.get("jws")
    if not isinstance(manifest, Mapping):
        raise VerificationError("malformed", "envelope.manifest is not a JSON object")
    if not isinstance(digest, str):
        raise VerificationError("malformed", "envelope.manifest_digest is not a string")
    audit_seq = _audit_seq(envelope, manifest)
    try:
        canonical = canonicalize(manifest)
    except ValueError as err:
        raise VerificationError("malformed", f"manifest cannot be canonicalized: {err}") from None
    expected = sha256_digest(canonical)
    if digest != expected:
        raise VerificationError("digest", f"manifest_digest {digest} is not sha256(JCS(manifest)) = {expected}")
    kid, alg, payload = verify_compact_jws(jws, jwks)
    if payload != canonical.encode("utf-8"):
        raise VerificationError("payload", "JWS payload is not JCS(manifest)")
    return VerifiedEnvelope(kid, alg, dict(manifest), digest, audit_seq)


def _is_seq(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _audit_seq(envelope: Mapping[str, Any], manifest: Mapping[str, Any]) -> int | None:
    outside = envelope.get("audit_seq")
    if outside is not None and not _is_seq(outside):
        raise VerificationError("audit_seq", "envelope.audit_seq is neither null nor a positive integer")
    inside = manifest.get("audit_seq")
    if inside is None:
        return outside
    if not _is_seq(inside):
        raise VerificationError("audit_seq", "manifest.audit_seq is neither null nor a positive integer")
    if outside is not None and outside != inside:
        raise VerificationError("audit_seq", f"envelope.audit_seq {outside} contradicts the signed {inside}")
    return int(inside)

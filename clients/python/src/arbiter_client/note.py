"""C2SP signed notes (Ed25519) and tlog checkpoints: how Arbiter's audit log signs its tree heads.

Follows golang.org/x/mod/sumdb/note where the C2SP text leaves room, as the service's own code does: at most
100 signatures; a repeated signature by a known key is checked once; a known key whose signature fails
rejects the note; key IDs in verifier keys are 8 lowercase hex digits; base64 must be canonical.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from pydantic import BaseModel

from ._errors import VerificationError
from .merkle import HASH_SIZE

__all__ = [
    "Checkpoint",
    "LogPublicKey",
    "NoteSignature",
    "NoteVerifier",
    "VerifiedNote",
    "format_verifier_key",
    "key_id",
    "note_verifier",
    "parse_checkpoint",
    "parse_verifier_key",
    "verify_checkpoint",
    "verify_note",
]

_ED25519 = 0x01
_SIGNATURE_PREFIX = "\u2014 "
_MAX_SIGNATURES = 100
_DECIMAL = re.compile(r"0|[1-9][0-9]*")


@dataclass(frozen=True)
class NoteVerifier:
    name: str
    key_id: int
    public_key: Ed25519PublicKey


@dataclass(frozen=True)
class NoteSignature:
    name: str
    key_id: int
    signature: str  # the base64 as written


@dataclass(frozen=True)
class VerifiedNote:
    text: str
    verified: list[NoteSignature]
    unverified: list[NoteSignature]


@dataclass(frozen=True)
class Checkpoint:
    """A log's tree head: its origin (name), number of leaves, root hash, and any extension lines."""

    origin: str
    tree_size: int
    root_hash: bytes
    extensions: tuple[str, ...] = ()

    @property
    def root_hash_b64(self) -> str:
        return base64.b64encode(self.root_hash).decode()


# An Ed25519 public key, its 32 raw bytes, an OKP JWK (as /.well-known/jwks.json lists it, a dict or the client's
# model), or a C2SP verifier key.
LogPublicKey = Ed25519PublicKey | bytes | Mapping[str, Any] | BaseModel | str


def _malformed(message: str) -> VerificationError:
    return VerificationError("malformed", message)


def is_valid_key_name(name: str) -> bool:
    return name != "" and _well_formed(name) and not any(c == "+" or c.isspace() for c in name)


def _well_formed(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _b64(text: str) -> bytes | None:
    """Canonical standard padded base64, else None."""
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw if base64.b64encode(raw).decode() == text else None


def _raw(public_key: Ed25519PublicKey) -> bytes:
    return public_key.public_bytes(Encoding.Raw, PublicFormat.Raw)


def key_id(name: str, public_key: Ed25519PublicKey) -> int:
    """First 4 bytes (big-endian) of SHA-256(name ‖ 0x0A ‖ 0x01 ‖ 32-byte public key)."""
    digest = hashlib.sha256(name.encode() + bytes([0x0A, _ED25519]) + _raw(public_key)).digest()
    return int(struct.unpack(">I", digest[:4])[0])


def note_verifier(name: str, public_key: Ed25519PublicKey | Ed25519PrivateKey) -> NoteVerifier:
    if not is_valid_key_name(name):
        raise _malformed(f"invalid key name {name!r}")
    if isinstance(public_key, Ed25519PrivateKey):
        public_key = public_key.public_key()
    return NoteVerifier(name, key_id(name, public_key), public_key)


def format_verifier_key(verifier: NoteVerifier) -> str:
    encoded = base64.b64encode(bytes([_ED25519]) + _raw(verifier.public_key)).decode()
    return f"{verifier.name}+{verifier.key_id:08x}+{encoded}"


def parse_verifier_key(vkey: str) -> NoteVerifier:
    """`<name>+<hex key ID>+<base64(0x01 ‖ public key)>`, refused unless the key ID matches name and key."""
    name, _, rest = vkey.partition("+")
    hex_id, _, encoded = rest.partition("+")
    key = _b64(encoded)
    if not is_valid_key_name(name) or not re.fullmatch(r"[0-9a-f]{8}", hex_id) or key is None:
        raise _malformed("malformed verifier key")
    if len(key) != 33 or key[0] != _ED25519:
        raise _malformed("verifier key is not an Ed25519 key")
    public_key = Ed25519PublicKey.from_public_bytes(key[1:])
    if int(hex_id, 16) != key_id(name, public_key):
        raise _malformed("verifier key ID does not match the key")
    return NoteVerifier(name, int(hex_id, 16), public_key)


def _note_text_ok(text: str) -> bool:
    return _well_formed(text) and not any(ord(c) < 0x20 and c != "\n" for c in text)


def verify_note(note: str | bytes, verifiers: Sequence[NoteVerifier]) -> VerifiedNote:
    """Opens a signed note. Signatures of unknown keys are listed as unverified; a malformed note, a failing
    signature of a known key, or a note no known key signed raises VerificationError (check `note`/`malformed`)."""
    if isinstance(note, bytes):
        try:
            note = note.decode("utf-8")
        except UnicodeDecodeError:
            raise _malformed("a note must be UTF-8") from None
    if not _note_text_ok(note):
        raise _malformed("a note must be UTF-8 without control characters other than newline")
    split = note.rfind("\n\n")
    if split < 0:
        raise _malformed("the note has no signatures")
    text, block = note[: split + 1], note[split + 2 :]
    if block == "" or not block.endswith("\n"):
        raise _malformed("the note has no signatures")
    lines = block[:-1].split("\n")
    if len(lines) > _MAX_SIGNATURES:
        raise _malformed("the note has too many signatures")
    verified: list[NoteSignature] = []
    unverified: list[NoteSignature] = []
    seen_keys: set[tuple[str, int]] = set()
    seen_unknown: set[str] = set()
    for line in lines:
        name, kid, signature, raw = _signature_line(line)
        known = [v for v in verifiers if v.name == name and v.key_id == kid]
        if not known:
            if line not in seen_unknown:
                unverified.append(NoteSignature(name, kid, signature))
            seen_unknown.add(line)
            continue
        if len(known) > 1:
            raise VerificationError("note", f"more than one verifier for {name}+{kid:08x}")
        if (name, kid) in seen_keys:
            continue
        seen_keys.add((name, kid))
        try:
            known[0].public_key.verify(raw, text.encode("utf-8"))
        except InvalidSignature:
            raise VerificationError("note", f"invalid signature for {name}+{kid:08x}") from None
        verified.append(NoteSignature(name, kid, signature))
    if not verified:
        raise VerificationError("note", "no known key signed the note")
    return VerifiedNote(text, verified, unverified)


def _signature_line(line: str) -> tuple[str, int, str, bytes]:
    if not line.startswith(_SIGNATURE_PREFIX):
        raise _malformed("malformed signature line")
    rest = line[len(_SIGNATURE_PREFIX) :]
    name, space, signature = rest.partition(" ")
    decoded = _b64(signature) if space else None
    if not is_valid_key_name(name) or decoded is None or len(decoded) < 5:
        raise _malformed("malformed signature line")
    return name, int(struct.unpack(">I", decoded[:4])[0]), signature, decoded[4:]


def parse_checkpoint(text: str) -> Checkpoint:
    """A tlog-checkpoint body: origin, decimal size (no sign, no leading zero), base64 root of 32 bytes, then
    non-empty extension lines, every line ending in a newline."""
    if not text.endswith("\n"):
        raise VerificationError("checkpoint", "a checkpoint ends in a newline")
    lines = text[:-1].split("\n")
    if len(lines) < 3:
        raise VerificationError("checkpoint", "a checkpoint has at least three lines")
    origin, size, root, *extensions = lines
    if origin == "":
        raise VerificationError("checkpoint", "the origin is empty")
    if not _DECIMAL.fullmatch(size) or int(size) > 2**53 - 1:
        raise VerificationError("checkpoint", f"the tree size {size!r} is not a decimal integer")
    root_hash = _b64(root)
    if root_hash is None or len(root_hash) != HASH_SIZE:
        raise VerificationError("checkpoint", f"the root hash is not the base64 of {HASH_SIZE} bytes")
    if "" in extensions:
        raise VerificationError("checkpoint", "extension lines must not be empty")
    return Checkpoint(origin, int(size), root_hash, tuple(extensions))


def log_verifier(public_key: LogPublicKey, origin: str) -> NoteVerifier:
    """The verifier of a log named `origin` (Arbiter signs checkpoints with key name = origin)."""
    if isinstance(public_key, BaseModel):  # a JWK as the client's models hold it
        public_key = public_key.model_dump(mode="json", exclude_unset=True)
    if isinstance(public_key, str):
        parsed = parse_verifier_key(public_key)
        if parsed.name != origin:
            raise VerificationError("note", f"the verifier key is for {parsed.name!r}, not {origin!r}")
        return parsed
    if isinstance(public_key, (bytes, bytearray)):
        if len(public_key) != 32:
            raise VerificationError("key", "a raw Ed25519 public key is 32 bytes")
        return note_verifier(origin, Ed25519PublicKey.from_public_bytes(bytes(public_key)))
    if isinstance(public_key, Mapping):
        from ._envelope import jwk_public_key

        return note_verifier(origin, jwk_public_key(public_key))
    if isinstance(public_key, Ed25519PublicKey):
        return note_verifier(origin, public_key)
    raise VerificationError("key", f"not an Ed25519 public key: {type(public_key).__name__}")


def verify_checkpoint(note: str | bytes, public_key: LogPublicKey, origin: str) -> Checkpoint:
    """Checks a signed checkpoint offline: a C2SP signed note carrying a valid signature by the log's Ed25519
    key under the name `origin`, whose body is a well-formed checkpoint of that origin. Returns the checkpoint;
    raises VerificationError (with `check`) when it must not be trusted."""
    verifier = log_verifier(public_key, origin)
    opened = verify_note(note, [verifier])
    if not any(s.name == verifier.name and s.key_id == verifier.key_id for s in opened.verified):
        raise VerificationError("note", "the log key did not sign the checkpoint")
    checkpoint = parse_checkpoint(opened.text)
    if checkpoint.origin != origin:
        raise VerificationError("checkpoint", f"the checkpoint's origin is {checkpoint.origin!r}, not {origin!r}")
    return checkpoint

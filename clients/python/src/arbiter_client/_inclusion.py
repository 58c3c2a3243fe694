"""Proof that a manifest was logged, checked offline: `GET /v1/manifests/{id}/inclusion` against the log key."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._envelope import _plain
from ._errors import VerificationError
from .jcs import canonical_bytes
from .merkle import b64decode_hash, leaf_hash, verify_inclusion
from .note import Checkpoint, LogPublicKey, verify_checkpoint


@dataclass(frozen=True)
class VerifiedInclusion:
    manifest_id: str
    seq: int
    leaf_index: int
    tree_size: int
    checkpoint: Checkpoint
    record: dict[str, Any]


def verify_manifest_inclusion(
    inclusion: Any,
    public_key: LogPublicKey,
    origin: str | None = None,
    *,
    note: str | None = None,
    manifest_digest: str | None = None,
) -> VerifiedInclusion:
    """Checks that a manifest was logged: the signed checkpoint note (the answer's own, or `note`) is signed by
    the log key under `origin` (default: the note's first line); its tree size is the proof's; the leaf hash is
    the RFC 9162 leaf hash of JCS(record); the record is the manifest's `manifest.issued` record at that leaf
    (and logs `manifest_digest` when given); and the audit path leads to the checkpoint's root."""
    proof = _plain(inclusion)
    if not isinstance(proof, Mapping):
        raise VerificationError("malformed", "the inclusion proof is not a JSON object")
    record = proof.get("record")
    leaf_index, tree_size = proof.get("leaf_index"), proof.get("tree_size")
    if not isinstance(record, Mapping):
        raise VerificationError("malformed", "record is not a JSON object")
    if not isinstance(leaf_index, int) or not isinstance(tree_size, int) or not 0 <= leaf_index < tree_size:
        raise VerificationError("malformed", "leaf_index and tree_size do not describe a leaf of a tree")
    try:
        claimed_leaf = b64decode_hash(proof.get("leaf_hash"))  # type: ignore[arg-type]
        path = [b64decode_hash(p) for p in proof.get("proof") or []]
    except (TypeError, ValueError) as err:
        raise VerificationError("malformed", f"a hash of the proof is not base64 of 32 bytes: {err}") from None
    if note is None:
        signed = proof.get("checkpoint")
        note = signed.get("note") if isinstance(signed, Mapping) else None
    if not isinstance(note, str):
        raise VerificationError("note", "no signed checkpoint note to verify against")
    checkpoint = verify_checkpoint(note, public_key, origin if origin is not None else note.split("\n", 1)[0])
    if checkpoint.tree_size != tree_size:
        raise VerificationError(
            "tree_size", f"the proof is for tree size {tree_size}, the checkpoint is of size {checkpoint.tree_size}"
        )
    manifest_id = proof.get("manifest_id")
    if record.get("seq") != leaf_index + 1:
        raise VerificationError("record", f"the record's seq is not at leaf index {leaf_index} (seq − 1)")
    if record.get("kind") != "manifest.issued" or record.get("manifest_id") != manifest_id:
        raise VerificationError("record", f"the record is not the manifest.issued record of {manifest_id}")
    if manifest_digest is not None:
        data = record.get("data")
        if not isinstance(data, Mapping) or data.get("manifest_digest") != manifest_digest:
            raise VerificationError("record", f"the record does not log manifest digest {manifest_digest}")
    leaf = leaf_hash(canonical_bytes(record))
    if leaf != claimed_leaf:
        encoded = base64.b64encode(leaf).decode()
        raise VerificationError("leaf_hash", f"leaf_hash is not the leaf hash of JCS(record) ({encoded})")
    if not verify_inclusion(leaf_index, tree_size, leaf, path, checkpoint.root_hash):
        raise VerificationError("proof", "the inclusion proof does not lead to the checkpoint root")
    return VerifiedInclusion(str(manifest_id), leaf_index + 1, leaf_index, tree_size, checkpoint, dict(record))

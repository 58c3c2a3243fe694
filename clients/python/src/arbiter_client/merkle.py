"""RFC 9162 §2.1 Merkle tree hashing and proof verification, as Arbiter's audit log builds its tree.

Leaf hash `SHA-256(0x00 ‖ input)`, interior node `SHA-256(0x01 ‖ left ‖ right)`. Proof hashes and roots are
bytes here; the service writes them as standard padded base64 (`b64decode_hash` reads them strictly).
Follows transparency-dev/merkle where the RFC leaves room: a consistency proof from the empty tree is refused,
and every hash must be 32 bytes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Sequence

__all__ = [
    "HASH_SIZE",
    "ProofError",
    "b64decode_hash",
    "leaf_hash",
    "node_hash",
    "root_from_inclusion_proof",
    "verify_consistency",
    "verify_inclusion",
]

HASH_SIZE = 32


class ProofError(ValueError):
    """A proof that cannot lead anywhere: wrong length, index outside the tree, hashes of the wrong size."""


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def b64decode_hash(text: str) -> bytes:
    """A hash as the service writes it: canonical standard base64 of 32 bytes. Raises ValueError otherwise."""
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as err:
        raise ValueError(f"not base64: {text!r}") from err
    if base64.b64encode(raw).decode() != text:
        raise ValueError(f"not canonical base64: {text!r}")
    if len(raw) != HASH_SIZE:
        raise ValueError(f"a hash is {HASH_SIZE} bytes, got {len(raw)}")
    return raw


def _is_index(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63


def root_from_inclusion_proof(leaf_index: int, tree_size: int, leaf: bytes, proof: Sequence[bytes]) -> bytes:
    """RFC 9162 §2.1.3.2: the root that `proof` leads to from the leaf hash at `leaf_index`."""
    if not _is_index(leaf_index) or not _is_index(tree_size) or leaf_index >= tree_size:
        raise ProofError(f"leaf index {leaf_index} is outside a tree of size {tree_size}")
    if len(leaf) != HASH_SIZE or any(len(p) != HASH_SIZE for p in proof):
        raise ProofError(f"every hash must be {HASH_SIZE} bytes")
    fn, sn, r = leaf_index, tree_size - 1, leaf
    for p in proof:
        if sn == 0:
            raise ProofError("the proof is longer than the path to the root")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:  # levels where the right edge has no sibling
                fn >>= 1
                sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    if sn != 0:
        raise ProofError("the proof is shorter than the path to the root")
    return r


def verify_inclusion(leaf_index: int, tree_size: int, leaf: bytes, proof: Sequence[bytes], root: bytes) -> bool:
    """Whether `proof` shows the leaf hash `leaf` at `leaf_index` in the tree of `tree_size` whose root is `root`."""
    try:
        return hmac.compare_digest(root_from_inclusion_proof(leaf_index, tree_size, leaf, proof), root)
    except ProofError:
        return False


def verify_consistency(size1: int, size2: int, proof: Sequence[bytes], root1: bytes, root2: bytes) -> bool:
    """RFC 9162 §2.1.4.2: whether the tree of `size2` with `root2` extends the tree of `size1` with `root1`."""
    if not _is_index(size1) or not _is_index(size2) or size2 < size1 or size1 == 0:
        return False
    if size1 == size2:
        return len(proof) == 0 and hmac.compare_digest(root1, root2)
    if len(proof) == 0 or any(len(p) != HASH_SIZE for p in proof):
        return False
    # A power-of-two first tree is a whole subtree of the second: the verifier already holds its hash.
    path = [root1, *proof] if size1 & (size1 - 1) == 0 else list(proof)
    fn, sn = size1 - 1, size2 - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    return sn == 0 and hmac.compare_digest(fr, root1) and hmac.compare_digest(sr, root2)

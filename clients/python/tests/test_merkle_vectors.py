"""RFC 9162 proofs against the vector files of packages/transparency (transparency-dev/merkle's test data)."""

from __future__ import annotations

import base64
import hashlib
import json

import pytest
from conftest import TRANSPARENCY_VECTORS

from arbiter_client import verify_consistency, verify_inclusion
from arbiter_client.merkle import b64decode_hash, leaf_hash, node_hash, root_from_inclusion_proof


def vectors(kind: str) -> list[tuple[str, dict]]:
    root = TRANSPARENCY_VECTORS / "merkle" / kind
    return [(str(p.relative_to(root)), json.loads(p.read_text())) for p in sorted(root.rglob("*.json"))]


def b64(text: str) -> bytes:
    return base64.b64decode(text)  # lenient on purpose: the vectors hold empty and truncated hashes


INCLUSION = vectors("inclusion")
CONSISTENCY = vectors("consistency")


def test_the_vector_files_are_there() -> None:
    assert len(INCLUSION) > 70 and len(CONSISTENCY) > 80
    assert any(v["wantErr"] for _, v in INCLUSION) and any(not v["wantErr"] for _, v in INCLUSION)


@pytest.mark.parametrize(("name", "v"), INCLUSION, ids=[n for n, _ in INCLUSION])
def test_inclusion_vector(name: str, v: dict) -> None:
    proof = [b64(p) for p in v["proof"] or []]
    ok = verify_inclusion(v["leafIdx"], v["treeSize"], b64(v["leafHash"]), proof, b64(v["root"]))
    assert ok is (not v["wantErr"]), v["desc"]


@pytest.mark.parametrize(("name", "v"), CONSISTENCY, ids=[n for n, _ in CONSISTENCY])
def test_consistency_vector(name: str, v: dict) -> None:
    proof = [b64(p) for p in v["proof"] or []]
    ok = verify_consistency(v["size1"], v["size2"], proof, b64(v["root1"]), b64(v["root2"]))
    assert ok is (not v["wantErr"]), v["desc"]


def mth(hashes: list[bytes]) -> bytes:
    """RFC 9162 MTH over leaf hashes (the recursive definition)."""
    if not hashes:
        return hashlib.sha256(b"").digest()
    if len(hashes) == 1:
        return hashes[0]
    k = _split(len(hashes))
    return node_hash(mth(hashes[:k]), mth(hashes[k:]))


def _split(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def path(index: int, hashes: list[bytes]) -> list[bytes]:
    """RFC 9162 PATH: the audit path of leaf `index`."""
    if len(hashes) == 1:
        return []
    k = _split(len(hashes))
    if index < k:
        return [*path(index, hashes[:k]), mth(hashes[k:])]
    return [*path(index - k, hashes[k:]), mth(hashes[:k])]


def test_reference_tree_roots_and_paths() -> None:
    constants = json.loads((TRANSPARENCY_VECTORS / "merkle" / "constants.json").read_text())
    leaves = [leaf_hash(bytes.fromhex(x)) for x in constants["leafInputs"]]
    for size in range(9):
        assert mth(leaves[:size]).hex() == constants["rootHashes"][size], size
    for size in range(1, 9):
        for index in range(size):
            proof = path(index, leaves[:size])
            assert root_from_inclusion_proof(index, size, leaves[index], proof) == mth(leaves[:size])


def test_hash_decoding_is_strict() -> None:
    good = base64.b64encode(bytes(32)).decode()
    assert b64decode_hash(good) == bytes(32)
    for bad in [good[:-1], good.replace("=", ""), base64.b64encode(bytes(31)).decode(), "!" * 44]:
        with pytest.raises(ValueError):
            b64decode_hash(bad)

"""RFC 8785 canonical JSON: the RFC's examples and numbers as ECMAScript writes them (vectors made by the
`canonicalize` package the service signs with)."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import pytest

from arbiter_client import canonicalize, sha256_digest

VECTORS = json.loads((Path(__file__).parent / "vectors" / "jcs.json").read_text(encoding="utf-8"))


def double(bits: str) -> float:
    return struct.unpack(">d", bytes.fromhex(bits))[0]


@pytest.mark.parametrize("example", VECTORS["examples"], ids=lambda e: e["name"])
def test_canonicalizes_the_rfc_examples(example: dict) -> None:
    assert canonicalize(json.loads(example["json"])) == example["jcs"]


def test_writes_every_number_as_ecmascript_does() -> None:
    assert len(VECTORS["numbers"]) > 2000
    wrong = [(bits, want, canonicalize(double(bits))) for bits, want in VECTORS["numbers"]]
    wrong = [w for w in wrong if w[1] != w[2]]
    assert wrong == []


def test_writes_integers_as_the_double_they_are() -> None:
    assert canonicalize([0, -0, 1, 2**53, -(2**53), 10**21, 10**20]) == (
        "[0,0,1,9007199254740992,-9007199254740992,1e+21,100000000000000000000]"
    )


@pytest.mark.parametrize("bits", VECTORS["invalid"])
def test_refuses_nan_and_infinities(bits: str) -> None:
    with pytest.raises(ValueError):
        canonicalize(double(bits))


@pytest.mark.parametrize(
    "value",
    [math.nan, {1: "non-string key"}, "\ud800", 2**53 + 1, {"a": object()}],
    ids=["nan", "int key", "lone surrogate", "inexact integer", "not JSON"],
)
def test_refuses_what_jcs_cannot_represent(value: object) -> None:
    with pytest.raises(ValueError):
        canonicalize(value)


def test_hashes_as_the_service_does() -> None:
    # The evidence hash of the README: sha256 of JCS of the sorted unique item hashes.
    item = {"kind": "exit_code", "content": 0}
    assert sha256_digest(item, canonical=True) == sha256_digest('{"content":0,"kind":"exit_code"}')
    assert sha256_digest("").startswith("sha256:e3b0c442")

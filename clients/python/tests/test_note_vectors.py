"""C2SP signed notes and checkpoints against the vector files of packages/transparency."""

from __future__ import annotations

import base64
import json

import pytest
from conftest import TRANSPARENCY_VECTORS
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from arbiter_client import VerificationError, verify_checkpoint
from arbiter_client.merkle import leaf_hash
from arbiter_client.note import (
    format_verifier_key,
    key_id,
    note_verifier,
    parse_checkpoint,
    parse_verifier_key,
    verify_note,
)


def vector(path: str) -> dict:
    return json.loads((TRANSPARENCY_VECTORS / path).read_text(encoding="utf-8"))


GO = vector("note/golang-mod-sumdb-note.json")
C2SP = vector("note/c2sp-signed-note.json")
FORMATS = vector("note/transparency-dev-formats-keys.json")["keys"]
PETER = parse_verifier_key(GO["peterVerifierKey"])
ENOCH = parse_verifier_key(GO["enochVerifierKey"])


def signer_key(skey: str) -> tuple[str, int, Ed25519PrivateKey]:
    """A golang.org/x/mod/sumdb/note signer key: PRIVATE+KEY+<name>+<hex id>+<base64(0x01 ‖ seed)>."""
    _, _, name, hex_id, encoded = skey.split("+", 4)
    raw = base64.b64decode(encoded)
    return name, int(hex_id, 16), Ed25519PrivateKey.from_private_bytes(raw[1:])


def sign_note(text: str, name: str, key: Ed25519PrivateKey) -> str:
    kid = key_id(name, key.public_key()).to_bytes(4, "big")
    return f"{text}\n\u2014 {name} {base64.b64encode(kid + key.sign(text.encode())).decode()}\n"


def refusal(fn) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(VerificationError) as caught:
        fn()
    return caught.value.check


def test_parses_and_formats_the_published_verifier_keys() -> None:
    for vkey in [GO["peterVerifierKey"], GO["enochVerifierKey"], C2SP["exampleVerifierKey"]]:
        assert format_verifier_key(parse_verifier_key(vkey)) == vkey
    assert PETER.name == "PeterNeumann" and PETER.key_id == 0xC74F20A3


def test_refuses_bad_verifier_keys() -> None:
    for vkey in GO["badVerifierKeys"]:
        assert refusal(lambda vkey=vkey: parse_verifier_key(vkey)) == "malformed"
    assert refusal(lambda: parse_verifier_key(GO["peterVerifierKey"].replace("c74f20a3", "C74F20A3"))) == "malformed"
    vkey = GO["peterVerifierKey"]
    for i in range(len(vkey)):
        changed = vkey[:i] + chr(ord(vkey[i]) + 1) + vkey[i + 1 :]
        with pytest.raises(VerificationError):
            parse_verifier_key(changed)


def test_signs_byte_for_byte_as_the_go_reference() -> None:
    name, kid, key = signer_key(GO["peterSignerKey"])
    assert key_id(name, key.public_key()) == kid
    assert sign_note(GO["text"], name, key) == GO["signedByPeter"]
    enoch = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(GO["enochSeedHex"]))
    assert format_verifier_key(note_verifier("EnochRoot", enoch)) == GO["enochVerifierKey"]


def test_every_transparency_dev_formats_key_signs_under_its_key_id() -> None:
    for who in ["log", "known1", "known2", "unknown"]:
        name, kid, key = signer_key(FORMATS[f"{who}SK"])
        verifier = parse_verifier_key(FORMATS[f"{who}VK"])
        assert verifier.key_id == kid == key_id(name, key.public_key())
        assert len(verify_note(sign_note("TestParseCheckpoint\n42\nYWJjZGVm\n", name, key), [verifier]).verified) == 1


def test_verifies_the_signed_note_specs_example() -> None:
    opened = verify_note(C2SP["exampleNote"], [parse_verifier_key(C2SP["exampleVerifierKey"])])
    assert opened.text == "This is an example message.\n"
    assert [(s.name, s.key_id) for s in opened.verified] == [("example.com/foo", 0x530D903A)]


def test_lists_unknown_signatures_apart() -> None:
    two = f"{GO['text']}\n{GO['peterSignatureLine']}{GO['enochSignatureLine']}"
    opened = verify_note(two, [PETER])
    assert [s.name for s in opened.verified] == ["PeterNeumann"]
    assert [(s.name, s.key_id) for s in opened.unverified] == [("EnochRoot", 0xAF0CFE78)]
    assert [s.name for s in verify_note(two, [PETER, ENOCH]).verified] == ["PeterNeumann", "EnochRoot"]
    assert refusal(lambda: verify_note(two, [])) == "note"


def test_refuses_tampered_notes() -> None:
    assert refusal(lambda: verify_note(GO["signedByPeter"].replace("cryptography", "cryptographY"), [PETER])) == "note"
    line = GO["peterSignatureLine"]
    corrupted = GO["text"] + "\n" + (line.encode()[:60] + b"ABCD" + line.encode()[60:]).decode()
    assert refusal(lambda: verify_note(corrupted, [PETER])) == "note"
    sig = GO["peterSignatureLine"]
    for bad in [
        GO["text"],
        GO["text"] + "\n",
        GO["text"] + "\n" + sig[:-1],
        "\x01" + GO["text"] + "\n" + sig,
        GO["text"] + "\n" + sig + "Unexpected line.\n",
        GO["text"] + "\n" + sig.replace("\u2014", "-"),
        GO["text"] + "\n" + sig * 101,
    ]:
        assert refusal(lambda bad=bad: verify_note(bad, [PETER])) == "malformed", bad
    assert refusal(lambda: verify_note(b"\xff" + GO["signedByPeter"].encode(), [PETER])) == "malformed"


def test_reads_the_checkpoint_examples() -> None:
    example = vector("checkpoint/c2sp-tlog-checkpoint.json")["exampleNote"]
    body = example[: example.rindex("\n\n") + 1]
    checkpoint = parse_checkpoint(body)
    assert (checkpoint.origin, checkpoint.tree_size) == ("example.com/behind-the-sofa", 20852163)
    sumdb = vector("checkpoint/golang-mod-sumdb-tree.json")
    tree = parse_checkpoint(sumdb["body"])
    assert tree.origin == sumdb["origin"] and tree.tree_size == sumdb["treeSize"]
    assert tree.root_hash == leaf_hash(sumdb["leafInput"].encode())
    for bad in [body[:-1], "o\n01\n" + body.split("\n")[2] + "\n", "o\n-1\nAAAA\n", "o\n1\nAAAA\n", body + "\n"]:
        assert refusal(lambda bad=bad: parse_checkpoint(bad)) == "checkpoint"


def test_verify_checkpoint_needs_the_log_key_under_the_origin() -> None:
    key = Ed25519PrivateKey.generate()
    origin = "arbiter.local/log/0b9d7c1e-4a8f-4a51-9d0f-7d2d1c9c7a11"
    root = base64.b64encode(bytes(range(32))).decode()
    note = sign_note(f"{origin}\n8\n{root}\n", origin, key)
    checkpoint = verify_checkpoint(note, key.public_key(), origin)
    assert checkpoint.tree_size == 8 and checkpoint.root_hash == bytes(range(32))
    assert verify_checkpoint(note, format_verifier_key(note_verifier(origin, key)), origin) == checkpoint
    assert refusal(lambda: verify_checkpoint(note, Ed25519PrivateKey.generate().public_key(), origin)) == "note"
    assert refusal(lambda: verify_checkpoint(note, key.public_key(), origin + "x")) == "note"
    assert refusal(lambda: verify_checkpoint(note.replace("\n8\n", "\n9\n"), key.public_key(), origin)) == "note"
    other = sign_note(f"elsewhere\n8\n{root}\n", origin, key)
    assert refusal(lambda: verify_checkpoint(other, key.public_key(), origin)) == "checkpoint"

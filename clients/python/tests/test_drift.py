"""The client is held to openapi/openapi.json: the generated modules are what the generator makes of today's
document, and every operation of the document has a method on both clients."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from arbiter_client import Arbiter, AsyncArbiter, _resources

PYTHON_CLIENT = Path(__file__).resolve().parents[1]
DOCUMENT_PATH = PYTHON_CLIENT.parents[1] / "openapi" / "openapi.json"
sys.path.insert(0, str(PYTHON_CLIENT / "scripts"))
import generate  # noqa: E402

DOCUMENT = json.loads(DOCUMENT_PATH.read_text(encoding="utf-8"))


def test_the_generated_modules_match_the_document() -> None:
    result = subprocess.run(
        [sys.executable, str(PYTHON_CLIENT / "scripts" / "generate.py"), "--check"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_every_operation_has_a_method_on_both_clients() -> None:
    sync = Arbiter(base_url="http://127.0.0.1:9", api_key="k")
    asynchronous = AsyncArbiter(base_url="http://127.0.0.1:9", api_key="k")
    missing = []
    for op_id, method, path, _ in generate.operations(DOCUMENT):
        if op_id in generate.NOT_WRAPPED:
            continue
        where = _resources.METHODS.get(op_id)
        if where is None:
            missing.append(f"{method} {path}")
            continue
        resource, name = where
        for client in (sync, asynchronous):
            owner = client if resource is None else getattr(client, resource)
            if not callable(getattr(owner, name, None)):
                missing.append(f"{method} {path} ({type(client).__name__})")
    assert missing == []
    sync.close()


def test_a_new_route_without_a_method_stops_the_generator() -> None:
    document = copy.deepcopy(DOCUMENT)
    document["paths"]["/v1/widgets"] = {"get": {"operationId": "listWidgets", "responses": {}}}
    with pytest.raises(SystemExit, match="listWidgets"):
        generate.build(document)


def test_a_new_response_field_changes_the_models() -> None:
    document = copy.deepcopy(DOCUMENT)
    document["components"]["schemas"]["Outcome"]["properties"]["priority"] = {"type": "integer"}
    document["components"]["schemas"]["Outcome"]["required"].append("priority")
    models, _ = generate.build(document)
    assert models != (PYTHON_CLIENT / "src" / "arbiter_client" / "models.py").read_text(encoding="utf-8")
    assert "    priority: int\n" in models


def test_a_new_request_field_becomes_an_argument() -> None:
    document = copy.deepcopy(DOCUMENT)
    body = document["paths"]["/v1/outcomes"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    body["properties"]["priority"] = {"type": "integer"}
    _, resources = generate.build(document)
    assert "priority: int | NotGiven = NOT_GIVEN" in resources


def test_the_package_under_test_is_this_working_tree() -> None:
    """The tests import the installed package (CI installs it with pip): it must be this tree's code."""
    import arbiter_client

    installed = Path(arbiter_client.__file__).parent
    source = PYTHON_CLIENT / "src" / "arbiter_client"
    stale = [
        p.name
        for p in source.glob("*.py")
        if not (installed / p.name).exists() or (installed / p.name).read_bytes() != p.read_bytes()
    ]
    assert stale == [], "reinstall the client: python3 -m pip install -e clients/python"
    assert (installed / "py.typed").exists()

"""Generates the client's models and resource methods from the service's OpenAPI document.

    python3 clients/python/scripts/generate.py            # rewrite the generated modules
    python3 clients/python/scripts/generate.py --check    # exit 1 if they differ from the document

Writes ``src/arbiter_client/models.py`` (a pydantic model for every schema: the document's components, and
the request bodies and responses the operations declare inline) and ``src/arbiter_client/_resources.py``
(one method per operation, for the sync and the async client alike, from one template). The table
``OPERATIONS`` below names each operation's method; an operation of the document that is neither in it nor in
``NOT_WRAPPED`` stops the generator, so a route added to the service cannot go unnoticed by the client.
Standard library only: the generator runs before anything is installed.
"""

from __future__ import annotations

import argparse
import json
import keyword
import re
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE = HERE.parent / "src" / "arbiter_client"
DEFAULT_DOCUMENT = HERE.parent.parent.parent / "openapi" / "openapi.json"
HTTP_METHODS = ("get", "post", "put", "patch", "delete")


@dataclass(frozen=True)
class Op:
    """How one operation appears in the client."""

    resource: str | None  # attribute of the client (None: a method of the client itself)
    method: str
    retried: bool  # idempotent: safe to send again after 429/503 or a lost connection
    path_param: str | None = None  # the Python names of the path's parameters, in order, comma-separated
    custom: bool = False  # written by hand in the client (the manifest stream)
    response_name: str | None = None  # name of an inline response model


# Idempotency: reads; writes the service deduplicates by natural key (creations), by content (evidence items
# are a set, an equal interpretation/result/verdict answers 200 with the stored one) or by construction
# (evaluate, reconcile and decide return the same manifest for unchanged inputs; PUT and DELETE). Resolutions,
# review revisions, key creation, probe registration, replacement and dry runs are sent once: a second
# delivery would be a second act. Deleting a webhook is sent once too, as the TypeScript client does: a retry
# after a lost answer would meet a webhook already deleted and report a 404 for a delete that succeeded.
OPERATIONS: dict[str, Op] = {
    "getHealth": Op(None, "health", True, response_name="Health"),
    "getReadiness": Op(None, "readiness", True, response_name="Readiness"),
    "getMetrics": Op(None, "metrics", True),
    "getOpenApiDocument": Op(None, "openapi", True),
    "getJwks": Op(None, "jwks", True, response_name="Jwks"),
    "createApiKey": Op("keys", "create", False),
    "listApiKeys": Op("keys", "list", True),
    "revokeApiKey": Op("keys", "revoke", True, "key_id"),
    "createProbe": Op("probes", "create", False),
    "listProbes": Op("probes", "list", True),
    "getProbe": Op("probes", "get", True, "probe_id"),
    "replaceProbe": Op("probes", "replace", False, "probe_id"),
    "dryRunProbe": Op("probes", "dry_run", False, "probe_id"),
    "listAuditRecords": Op("audit", "records", True),
    "verifyAuditLog": Op("audit", "verify", True),
    "getAuditCheckpoint": Op("audit", "checkpoint", True),
    "getInclusionProof": Op("audit", "inclusion_proof", True),
    "getConsistencyProof": Op("audit", "consistency_proof", True),
    "getOutcomeStory": Op("audit", "outcome", True, "outcome_id", response_name="OutcomeStory"),
    "getFanoutStory": Op("audit", "fanout", True, "fanout_id", response_name="FanoutStory"),
    "getReviewStory": Op("audit", "review", True, "review_id", response_name="ReviewStory"),
    "listEscalations": Op("escalations", "list", True),
    "listManifests": Op("manifests", "list", True),
    "getManifest": Op("manifests", "get", True, "manifest_id"),
    "getManifestInclusion": Op("manifests", "inclusion", True, "manifest_id"),
    "streamManifests": Op("manifests", "stream", True, custom=True),
    "createOutcome": Op("outcomes", "create", True),
    "listOutcomes": Op("outcomes", "list", True),
    "getOutcome": Op("outcomes", "get", True, "outcome_id"),
    "addOutcomeEvidence": Op("outcomes", "add_evidence", True, "outcome_id"),
    "submitInterpretation": Op("outcomes", "interpret", True, "outcome_id", response_name="InterpretationRecorded"),
    "evaluateOutcome": Op("outcomes", "evaluate", True, "outcome_id"),
    "resolveOutcome": Op("outcomes", "resolve", False, "outcome_id"),
    "putSubagentPolicy": Op("subagent_policies", "set", True, "subagent_id"),
    "getSubagentPolicy": Op("subagent_policies", "get", True, "subagent_id"),
    "deleteSubagentPolicy": Op("subagent_policies", "delete", True, "subagent_id"),
    "createFanout": Op("fanouts", "create", True),
    "listFanouts": Op("fanouts", "list", True),
    "getFanout": Op("fanouts", "get", True, "fanout_id"),
    "submitFanoutResult": Op("fanouts", "submit_result", True, "fanout_id"),
    "reconcileFanout": Op("fanouts", "reconcile", True, "fanout_id"),
    "resolveFanout": Op("fanouts", "resolve", False, "fanout_id"),
    "createReview": Op("reviews", "create", True),
    "listReviews": Op("reviews", "list", True),
    "getReview": Op("reviews", "get", True, "review_id"),
    "submitReviewVerdict": Op("reviews", "submit_verdict", True, "review_id"),
    "createReviewRevision": Op("reviews", "revise", False, "review_id"),
    "decideReview": Op("reviews", "decide", True, "review_id"),
    "createWebhook": Op("webhooks", "create", False),
    "listWebhooks": Op("webhooks", "list", True),
    "getWebhook": Op("webhooks", "get", True, "webhook_id"),
    "updateWebhook": Op("webhooks", "update", True, "webhook_id"),
    "deleteWebhook": Op("webhooks", "delete", False, "webhook_id"),
    "rotateWebhookSecret": Op("webhooks", "rotate_secret", False, "webhook_id"),
    "listWebhookDeliveries": Op("webhooks", "deliveries", True, "webhook_id"),
    "redeliverWebhookDelivery": Op("webhooks", "redeliver", False, "webhook_id, delivery_id"),
    "sendWebhookTestEvent": Op("webhooks", "send_test", False, "webhook_id"),
}

# Pages for people, not API calls.
NOT_WRAPPED: dict[str, str] = {
    "getApiDocs": "the Swagger UI page",
    "getConsole": "the ops console page",
}

RESOURCE_CLASSES = {
    "keys": "Keys",
    "probes": "Probes",
    "audit": "Audit",
    "escalations": "Escalations",
    "manifests": "Manifests",
    "outcomes": "Outcomes",
    "subagent_policies": "SubagentPolicies",
    "fanouts": "Fanouts",
    "reviews": "Reviews",
    "webhooks": "Webhooks",
}

RESERVED_FIELD_NAMES = {"schema", "json", "copy", "dict", "validate", "construct", "fields"}


def pascal(name: str) -> str:
    parts = re.split(r"[^A-Za-z0-9]+", name)
    return "".join(p[:1].upper() + p[1:] for p in parts if p)


def py_name(name: str) -> str:
    ident = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if keyword.iskeyword(ident) or ident in RESERVED_FIELD_NAMES or not ident.isidentifier():
        ident += "_"
    return ident


def ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


class ModelWriter:
    """Turns JSON Schemas into pydantic class definitions (text), naming inline objects after their place."""

    def __init__(self, components: dict) -> None:
        self.components = components
        self.classes: dict[str, str] = {}
        self.order: list[str] = []

    def is_json_value(self, schema: dict) -> bool:
        return "$ref" in schema and ref_name(schema["$ref"]).startswith("JsonValue")

    def annotation(self, schema: dict, name_hint: str, *, request: bool) -> str:
        if schema == {} or self.is_json_value(schema):
            return "Any"
        if "$ref" in schema:
            return ref_name(schema["$ref"])
        if "const" in schema:
            return f"Literal[{json.dumps(schema['const'])}]"
        if "enum" in schema:
            return "Literal[" + ", ".join(json.dumps(v) for v in schema["enum"]) + "]"
        for key in ("anyOf", "oneOf"):
            if key in schema:
                # Inline variants are numbered only when several of them are objects (a nullable object keeps its name).
                several = sum(1 for s in schema[key] if s.get("type") != "null") > 1
                variants = [
                    self.annotation(s, variant_name(name_hint, s, i) if several else name_hint, request=request)
                    for i, s in enumerate(schema[key])
                ]
                return union(variants)
        kind = schema.get("type")
        if isinstance(kind, list):
            return union([self.annotation({**schema, "type": k}, name_hint, request=request) for k in kind])
        if kind == "string":
            return "str"
        if kind == "integer":
            return "int"
        if kind == "number":
            return "float"
        if kind == "boolean":
            return "bool"
        if kind == "null":
            return "None"
        if kind == "array":
            items = schema.get("items", {})
            return f"list[{self.annotation(items, name_hint + 'Item', request=request)}]"
        if kind == "object" or "properties" in schema:
            if schema.get("properties"):
                return self.define(name_hint, schema, request=request)
            extra = schema.get("additionalProperties", {})
            if extra is False:
                return self.define(name_hint, schema, request=request)
            value = "Any" if extra in ({}, True) else self.annotation(extra, name_hint + "Value", request=request)
            return f"dict[str, {value}]"
        return "Any"

    def define(self, name: str, schema: dict, *, request: bool) -> str:
        if name in self.classes:
            return name
        self.classes[name] = ""  # reserve (recursion)
        if "oneOf" in schema or "anyOf" in schema:
            self.classes[name] = f"{name} = {self.annotation(schema, name, request=request)}\n"
            self.order.append(name)
            return name
        props: dict = schema.get("properties", {})
        required = set(schema.get("required", []))
        base = "_RequestModel" if request else "_ResponseModel"
        lines = [f"class {name}({base}):"]
        description = schema.get("description")
        if description:
            lines.append(f"    {docstring(description)}")
            lines.append("")
        fields = []
        for prop, prop_schema in props.items():
            if prop_schema == {"not": {}}:
                continue
            ann = self.annotation(prop_schema, name + pascal(prop), request=request)
            ident = py_name(prop)
            alias = f"alias={json.dumps(prop)}" if ident != prop else ""
            if prop in required:
                default = f" = Field({alias})" if alias else ""
            else:
                if "None" not in ann.split(" | "):
                    ann = f"{ann} | None"
                default = f" = Field(None, {alias})" if alias else " = None"
            fields.append(f"    {ident}: {ann}{default}")
        if not fields and schema.get("additionalProperties") is not False and not request:
            fields.append("    pass")
        elif not fields:
            fields.append("    pass")
        lines.extend(fields)
        self.classes[name] = "\n".join(lines) + "\n"
        self.order.append(name)
        return name


def variant_name(name_hint: str, schema: dict, index: int) -> str:
    """An inline variant's class name: after the constant that tells it apart (`status: "DONE"` → …Done), else
    its position."""
    for prop in schema.get("properties", {}).values():
        if isinstance(prop.get("const"), str):
            return name_hint + pascal(prop["const"].lower())
    return f"{name_hint}{index + 1}"


def union(variants: list[str]) -> str:
    seen: list[str] = []
    for v in variants:
        for part in v.split(" | "):
            if part not in seen:
                seen.append(part)
    if "Any" in seen:
        return "Any"
    if len(seen) > 1 and any(p.startswith("Literal[") for p in seen):
        literals = [p for p in seen if p.startswith("Literal[")]
        if len(literals) > 1:
            merged = "Literal[" + ", ".join(p[len("Literal[") : -1] for p in literals) + "]"
            rest = [p for p in seen if not p.startswith("Literal[")]
            seen = [merged, *rest]
    return " | ".join(seen)


def docstring(text: str) -> str:
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"').strip()
    return f'"""{text}"""'


@dataclass
class Param:
    name: str  # Python name
    wire: str  # name on the wire
    annotation: str
    required: bool


@dataclass
class Method:
    op_id: str
    op: Op
    http_method: str
    path: str
    summary: str
    query: list[Param]
    body: list[Param] | None  # None: no body; []: an empty object
    body_is_json_object: bool
    responses: dict[int, str]  # status -> model annotation ('None' for no content, 'str' for text)
    page_item: str | None


def operations(document: dict) -> list[tuple[str, str, str, dict]]:
    found = []
    for path, item in document["paths"].items():
        for method in HTTP_METHODS:
            if method in item:
                found.append((item[method]["operationId"], method.upper(), path, item[method]))
    return found


def build(document: dict) -> tuple[str, str]:
    writer = ModelWriter(document["components"]["schemas"])
    for name, schema in document["components"]["schemas"].items():
        if name.startswith("JsonValue"):
            continue
        writer.define(name, schema, request=name.endswith("Input"))

    methods: list[Method] = []
    unknown = []
    for op_id, http_method, path, spec in operations(document):
        if op_id in NOT_WRAPPED:
            continue
        op = OPERATIONS.get(op_id)
        if op is None:
            unknown.append(f"{http_method} {path} ({op_id})")
            continue
        base = pascal(op_id)
        query = []
        for p in spec.get("parameters", []):
            if p["in"] == "query":
                param_schema = p.get("schema", {})
                ann = writer.annotation(param_schema, base + pascal(p["name"]), request=True)
                if param_schema.get("pattern") == "^(0|[1-9][0-9]*)$":
                    ann = "int"  # a plain decimal integer on the wire
                query.append(Param(py_name(p["name"]), p["name"], ann, bool(p.get("required"))))
        body: list[Param] | None = None
        body_is_object = False
        if "requestBody" in spec:
            schema = next(iter(spec["requestBody"]["content"].values()))["schema"]
            body, body_is_object = body_params(writer, schema, base + "Request")
        responses: dict[int, str] = {}
        page_item = None
        for status, response in spec["responses"].items():
            if not status.startswith("2"):
                continue
            content = response.get("content", {})
            if not content:
                responses[int(status)] = "None"
                continue
            media, body_spec = next(iter(content.items()))
            schema = body_spec.get("schema", {})
            if media != "application/json":
                responses[int(status)] = "str"
                continue
            props = schema.get("properties", {})
            if "$ref" not in schema and set(props) == {"items", "next_cursor"}:
                page_item = writer.annotation(props["items"].get("items", {}), base + "Item", request=False)
                responses[int(status)] = f"CursorPage[{page_item}]"
                continue
            if "$ref" not in schema and not props and schema.get("type") == "object":
                responses[int(status)] = "dict[str, Any]"
                continue
            name = op.response_name or (base + "Response")
            responses[int(status)] = writer.annotation(schema, name, request=False)
        methods.append(
            Method(
                op_id, op, http_method, path, spec.get("summary", ""), query, body, body_is_object, responses, page_item
            )
        )
    missing = [op_id for op_id in OPERATIONS if op_id not in {m.op_id for m in methods}]
    if unknown or missing:
        lines = [f"  new in the document, no client method: {u}" for u in unknown]
        lines += [f"  in the client's table, gone from the document: {m}" for m in missing]
        raise SystemExit("the client does not match the OpenAPI document:\n" + "\n".join(lines))
    return models_module(writer), resources_module(methods)


def body_params(writer: ModelWriter, schema: dict, name: str) -> tuple[list[Param], bool]:
    """The keyword arguments of a request body: its properties (of every variant, for a oneOf)."""
    if "$ref" in schema:
        target = writer.components[ref_name(schema["$ref"])]
        return body_params(writer, target, ref_name(schema["$ref"]))
    variants = schema.get("oneOf") or schema.get("anyOf")
    if variants:
        objects = [v for v in variants if v.get("type") != "null"]
        nullable = len(objects) != len(variants)
        if len(objects) == 1:
            params, _ = body_params(writer, objects[0], name)
            if nullable:
                for p in params:
                    p.required = False
            return params, True
        writer.define(name, schema, request=True)
        merged: dict[str, Param] = {}
        seen_schemas: dict[str, set[str]] = {}
        required_everywhere = set.intersection(*(set(v.get("required", [])) for v in objects))
        for i, variant in enumerate(objects):
            for prop, prop_schema in variant.get("properties", {}).items():
                if prop_schema == {"not": {}}:
                    continue
                if prop in merged and json.dumps(prop_schema, sort_keys=True) in seen_schemas[prop]:
                    continue
                seen_schemas.setdefault(prop, set()).add(json.dumps(prop_schema, sort_keys=True))
                ann = writer.annotation(prop_schema, f"{variant_name(name, variant, i)}{pascal(prop)}", request=True)
                if prop in merged:
                    merged[prop].annotation = union([merged[prop].annotation, ann])
                else:
                    merged[prop] = Param(py_name(prop), prop, ann, prop in required_everywhere)
        return list(merged.values()), True
    writer.define(name, schema, request=True)
    required = set(schema.get("required", []))
    params = []
    for prop, prop_schema in schema.get("properties", {}).items():
        if prop_schema == {"not": {}}:
            continue
        ann = writer.annotation(prop_schema, name + pascal(prop), request=True)
        params.append(Param(py_name(prop), prop, ann, prop in required))
    return params, True


MODELS_HEADER = '''"""Models of every request and response of the Arbiter API.

Generated by clients/python/scripts/generate.py from openapi/openapi.json: do not edit. A test regenerates this
file and fails when it differs, so the models follow the service field by field.
"""

from __future__ import annotations

from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CursorPage", "JsonValue"]

JsonValue = Any
T = TypeVar("T")


class _ResponseModel(BaseModel):
    """What the service answers. Members a newer service adds are kept (and dumped) rather than refused."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


class _RequestModel(BaseModel):
    """What a caller may send; unknown members are refused, as the service refuses them."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class CursorPage(BaseModel, Generic[T]):
    """One page of a list: its items and the cursor of the next page (None at the end)."""

    model_config = ConfigDict(extra="allow")
    items: list[T]
    next_cursor: str | None

'''


def models_module(writer: ModelWriter) -> str:
    parts = [MODELS_HEADER]
    for name in writer.order:
        parts.append("\n" + writer.classes[name])
        parts.append(f'__all__.append("{name}")\n')
    parts.append("\n")
    parts.append(
        "for _model in list(globals().values()):\n"
        "    if isinstance(_model, type) and issubclass(_model, BaseModel) and _model is not BaseModel:\n"
        "        _model.model_rebuild()\n"
    )
    return "".join(parts)


RESOURCES_HEADER = '''"""One method per operation of the Arbiter API, for the sync and the async client.

Generated by clients/python/scripts/generate.py from openapi/openapi.json and the table of method names in it:
do not edit. Both families of classes come from one template: they differ only in `def`/`async def` and `await`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from ._operation import NOT_GIVEN, NotGiven, Operation, Timeout
from .models import *
from .models import CursorPage

if TYPE_CHECKING:
    from ._client import Arbiter, AsyncArbiter
    from ._pagination import AsyncPaginator, SyncCursorPage
    from ._stream import ManifestEvent

'''


def request_annotation(ann: str) -> str:
    """Request arguments accept plain dicts (and sequences) where the models name a class."""
    if "Any" in ann.split(" | "):
        return "Any"
    parts = []
    for part in ann.split(" | "):
        m = re.fullmatch(r"list\[(.+)\]", part)
        if m:
            parts.append(f"Sequence[{request_annotation(m.group(1))}]")
        elif re.fullmatch(r"[A-Z][A-Za-z0-9]*", part) and part != "None":
            parts.append(f"{part} | Mapping[str, Any]")
        else:
            parts.append(part)
    return " | ".join(parts)


def resources_module(methods: list[Method]) -> str:
    out = [RESOURCES_HEADER]
    out.append("OPERATIONS: dict[str, Operation] = {\n")
    for m in methods:
        responses = ", ".join(f"{s}: {ann}" for s, ann in sorted(m.responses.items()))
        out.append(
            f"    {m.op_id!r}: Operation({m.http_method!r}, {m.path!r}, retried={m.op.retried}, "
            f"responses={{{responses}}}),\n"
        )
    out.append("}\n")
    out.append(
        "\n# Where each operation lives in the client: operationId -> (resource attribute or None, method name).\n"
    )
    out.append("METHODS: dict[str, tuple[str | None, str]] = {\n")
    for m in methods:
        out.append(f"    {m.op_id!r}: ({m.op.resource!r}, {m.op.method!r}),\n")
    out.append("}\n")
    for flavour in ("sync", "async"):
        by_resource: dict[str | None, list[Method]] = {}
        for m in methods:
            by_resource.setdefault(m.op.resource, []).append(m)
        for resource, members in by_resource.items():
            if resource is None:
                cls = "_SyncRootMethods" if flavour == "sync" else "_AsyncRootMethods"
                client = "self"
                out.append(f"\n\nclass {cls}:\n")
                out.append(
                    '    """Operations of the service itself: health, readiness, metrics, its keys, its document."""\n'
                )
                returned = "Any" if flavour == "sync" else "Awaitable[Any]"
                out.append(f"\n    _request: Callable[..., {returned}]  # the client's own\n")
            else:
                prefix = "" if flavour == "sync" else "Async"
                cls = f"{prefix}{RESOURCE_CLASSES[resource]}"
                client = "self._client"
                out.append(f"\n\nclass {cls}:\n")
                out.append(f'    """`client.{resource}`: {", ".join(sorted({m.path for m in members}))}"""\n')
                out.append(
                    f"\n    def __init__(self, client: {'Arbiter' if flavour == 'sync' else 'AsyncArbiter'}) -> None:\n"
                    "        self._client = client\n"
                )
            for m in members:
                out.append(method_text(m, flavour, client))
    out.append("\n\nSYNC_RESOURCES = {\n")
    for resource, name in RESOURCE_CLASSES.items():
        out.append(f"    {resource!r}: {name},\n")
    out.append("}\nASYNC_RESOURCES = {\n")
    for resource, name in RESOURCE_CLASSES.items():
        out.append(f"    {resource!r}: Async{name},\n")
    out.append("}\n")
    return "".join(out)


def method_text(m: Method, flavour: str, client: str) -> str:
    args = ["self"]
    path_params = [name.strip() for name in m.op.path_param.split(",")] if m.op.path_param else []
    args += [f"{name}: str" for name in path_params]
    kw: list[str] = []
    body_params = m.body or []
    for p in [*body_params, *m.query]:
        ann = request_annotation(p.annotation)
        kw.append(f"{p.name}: {ann}" if p.required else f"{p.name}: {ann} | NotGiven = NOT_GIVEN")
    # Required keyword arguments first (a readable signature), then the optional ones.
    kw.sort(key=lambda a: "NOT_GIVEN" in a)
    if m.op.custom:
        return custom_method_text(m, flavour)
    kw.append("timeout: Timeout | NotGiven = NOT_GIVEN")
    signature = "".join(f"\n        {a}," for a in [*args, "*", *kw]) + "\n    "
    statuses = [s for s in m.responses.values()]
    paginated = m.page_item is not None
    if paginated:
        returns = f"SyncCursorPage[{m.page_item}]" if flavour == "sync" else f"AsyncPaginator[{m.page_item}]"
    else:
        returns = union(statuses)
    is_async = flavour == "async" and not paginated
    doc = f"{m.http_method} {m.path}" + (f": {m.summary}." if m.summary else ".")
    doc += " Retried when refused for load (429/503) or when the connection drops." if m.op.retried else " Sent once."
    lines = [f"\n    {'async ' if is_async else ''}def {m.op.method}({signature}) -> {returns}:\n"]
    lines.append(f"        {docstring(doc)}\n")
    path_args = f"({', '.join(path_params)},)" if path_params else "()"
    query = "{" + ", ".join(f"{p.wire!r}: {p.name}" for p in m.query) + "}" if m.query else "None"
    if m.body is None:
        body = "NOT_GIVEN"
    else:
        body = "{" + ", ".join(f"{p.wire!r}: {p.name}" for p in body_params) + "}"
    call = f"OPERATIONS[{m.op_id!r}], path={path_args}, query={query}, body={body}, timeout=timeout"
    if paginated:
        lines.append(f"        return {client}._paginate({call})\n")
    elif flavour == "sync":
        lines.append(f"        return {client}._request({call})  # type: ignore[no-any-return]\n")
    else:
        lines.append(f"        return await {client}._request({call})  # type: ignore[no-any-return]\n")
    return "".join(lines)


def custom_method_text(m: Method, flavour: str) -> str:
    # The manifest stream is written by hand (reconnection and resumption); the resource forwards to it.
    if flavour == "sync":
        return (
            "\n    def stream(\n        self, *, last_event_id: int | str | None = None, **options: Any\n"
            "    ) -> Iterator[ManifestEvent]:\n"
            f'        """{m.http_method} {m.path}: see Arbiter.stream_manifests."""\n'
            "        return self._client.stream_manifests(last_event_id=last_event_id, **options)\n"
        )
    return (
        "\n    def stream(\n        self, *, last_event_id: int | str | None = None, **options: Any\n"
        "    ) -> AsyncIterator[ManifestEvent]:\n"
        f'        """{m.http_method} {m.path}: see AsyncArbiter.stream_manifests."""\n'
        "        return self._client.stream_manifests(last_event_id=last_event_id, **options)\n"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    parser.add_argument("--document", type=Path, default=DEFAULT_DOCUMENT)
    args = parser.parse_args()
    document = json.loads(args.document.read_text(encoding="utf-8"))
    models, resources = build(document)
    outputs = {PACKAGE / "models.py": models, PACKAGE / "_resources.py": resources}
    stale = [path for path, text in outputs.items() if not path.exists() or path.read_text(encoding="utf-8") != text]
    if args.check:
        for path in stale:
            print(f"{path} is out of date: run clients/python/scripts/generate.py", file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        path.write_text(outputs[path], encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

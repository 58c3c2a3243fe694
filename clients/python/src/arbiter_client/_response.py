"""Reading an answer: the success model of its status, or the problem it carries, raised as ArbiterError."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import httpx
from pydantic import TypeAdapter, ValidationError

from ._errors import ArbiterError, ArbiterProtocolError
from ._operation import Operation


@cache
def _adapter(model: Any) -> TypeAdapter[Any]:
    return TypeAdapter(model)


def problem_of(response: httpx.Response) -> dict[str, Any]:
    """The problem+json body, or a problem made up from whatever else came back."""
    try:
        body = response.json()
    except (ValueError, UnicodeDecodeError):
        body = None
    if isinstance(body, dict) and isinstance(body.get("status"), int) and isinstance(body.get("title"), str):
        return body
    text = response.text[:200] if response.content else ""
    return {
        "type": "about:blank",
        "title": response.reason_phrase or "Error",
        "status": response.status_code,
        "detail": text or f"HTTP {response.status_code} without a problem body",
    }


def raise_for_problem(response: httpx.Response, method: str, path: str) -> None:
    if response.status_code < 400:
        return
    raise ArbiterError(
        problem_of(response),
        method=method,
        path=path,
        retry_after=response.headers.get("retry-after"),
        attempts=int(response.extensions.get("arbiter_attempts", 1)),
    )


def parse_response(operation: Operation, response: httpx.Response, path: str) -> Any:
    raise_for_problem(response, operation.method, path)
    label = f"{operation.method} {path}"
    if response.status_code not in operation.responses:
        raise ArbiterProtocolError(f"{label}: unexpected status {response.status_code}")
    model = operation.responses[response.status_code]
    if model is None:
        return None
    if model is str:
        return response.text
    try:
        data = json.loads(response.content)
    except ValueError as err:
        raise ArbiterProtocolError(f"{label}: the answer is not JSON") from err
    try:
        return _adapter(model).validate_python(data)
    except ValidationError as err:
        raise ArbiterProtocolError(f"{label}: the answer does not have the documented shape: {err}") from err

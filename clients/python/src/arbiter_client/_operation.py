"""What a call is, independent of how it is sent: the operation, its arguments, and the JSON it puts on the wire."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import quote

import httpx
from pydantic import BaseModel


class NotGiven:
    """The default of every optional argument: the member is left out of the request (None sends a JSON null)."""

    _instance: NotGiven | None = None

    def __new__(cls) -> NotGiven:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "NOT_GIVEN"


NOT_GIVEN: Final = NotGiven()

# Seconds (for every phase of the request) or an httpx.Timeout; None waits forever.
Timeout = float | httpx.Timeout | None


@dataclass(frozen=True)
class Operation:
    """One operation of the OpenAPI document: method, path template, whether it may be sent again, and the model
    of each success status."""

    method: str
    path: str
    retried: bool
    responses: Mapping[int, Any] = field(default_factory=dict)

    def url_path(self, args: Sequence[str]) -> str:
        """The path with its `{…}` parameters filled in, each percent-encoded as one segment."""
        path = self.path
        for value in args:
            if not isinstance(value, str) or value == "":
                raise TypeError(f"{self.method} {self.path}: a path parameter must be a non-empty string")
            start = path.index("{")
            end = path.index("}", start)
            path = path[:start] + quote(value, safe="") + path[end + 1 :]
        return path


def to_json(value: Any) -> Any:
    """A request argument as JSON: models dumped as given (unset members left out), NOT_GIVEN members dropped."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_unset=True)
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items() if v is not NOT_GIVEN}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    return value


def query_params(query: Mapping[str, Any] | None) -> dict[str, str]:
    """Query parameters as the service reads them: integers in plain decimal, booleans as true/false."""
    params: dict[str, str] = {}
    for name, value in (query or {}).items():
        if value is NOT_GIVEN or value is None:
            continue
        if isinstance(value, bool):
            params[name] = "true" if value else "false"
        else:
            params[name] = str(value)
    return params

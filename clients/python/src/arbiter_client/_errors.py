"""The exceptions of the client. Every one derives from ArbiterClientError."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class ArbiterClientError(Exception):
    """The base of every exception this client raises."""


class ArbiterError(ArbiterClientError):
    """Arbiter answered with an error status: an RFC 9457 problem.

    `status`, `type`, `title`, `detail`, `instance` and `errors` are the problem's members; every extension
    member (`outcome_id` and `manifest_id` on a 409, `limit` on a limit-exceeded 422, …) is an attribute too and
    is in `problem`, the whole body. An answer that is not problem+json (a proxy's HTML page) becomes a problem
    of type `about:blank` whose `detail` quotes the start of the body.
    """

    _MEMBERS = ("type", "title", "status", "detail", "instance", "errors")

    def __init__(
        self,
        problem: Mapping[str, Any],
        *,
        method: str,
        path: str,
        retry_after: str | None = None,
        attempts: int = 1,
    ) -> None:
        self.problem: dict[str, Any] = dict(problem)
        self.status: int = int(problem.get("status", 0))
        self.type: str = str(problem.get("type", "about:blank"))
        self.title: str = str(problem.get("title", ""))
        self.detail: str = str(problem.get("detail", ""))
        self.instance: str | None = problem.get("instance")
        self.errors: list[dict[str, Any]] = list(problem.get("errors") or [])
        self.method = method
        self.path = path
        self.retry_after = retry_after
        self.attempts = attempts
        super().__init__(f"{method} {path}: {self.status} {self.title}: {self.detail}")

    @property
    def extensions(self) -> dict[str, Any]:
        """The problem's members beyond RFC 9457's own."""
        return {k: v for k, v in self.problem.items() if k not in self._MEMBERS}

    def __getattr__(self, name: str) -> Any:
        # Only reached for attributes not set in __init__: extension members such as `outcome_id`.
        problem = self.__dict__.get("problem", {})
        if name in problem and name not in self._MEMBERS:
            return problem[name]
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r} (the problem has no such member)")


class ArbiterConnectionError(ArbiterClientError):
    """No answer: connection refused or reset, DNS failure, the body cut off. A call that is sent once may or may
    not have taken effect."""

    def __init__(self, message: str, *, attempts: int) -> None:
        super().__init__(message)
        self.attempts = attempts


class ArbiterTimeoutError(ArbiterConnectionError):
    """An attempt took longer than its timeout and was abandoned."""


class ArbiterProtocolError(ArbiterClientError):
    """Arbiter answered 2xx with something this client cannot read (not JSON, not the documented shape)."""


class VerificationError(ArbiterClientError):
    """A signature, digest, note or proof that must not be trusted. `check` names the check that failed."""

    def __init__(self, check: str, message: str) -> None:
        super().__init__(message)
        self.check = check

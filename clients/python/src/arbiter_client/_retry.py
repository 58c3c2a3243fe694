"""When to send a call again, as a plan both clients follow: pure, no I/O, no clock of its own.

The plan is a generator: it yields `SEND` (send the request) or a `Sleep(seconds)`, and is sent what the attempt
produced (an httpx.Response or the transport exception). It returns the final response or raises. The sync
client drives it with `time.sleep`, the async one with `asyncio.sleep`; neither decides anything itself.
"""

from __future__ import annotations

import email.utils
import random
import re
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass

import httpx

from ._errors import ArbiterConnectionError, ArbiterTimeoutError

RETRYABLE_STATUSES = frozenset({429, 503})


@dataclass(frozen=True)
class RetryPolicy:
    """How idempotent calls are retried (others are sent once, whatever this says)."""

    max_retries: int = 3  # attempts after the first
    base_delay: float = 0.2  # seconds before the first retry when the server names no Retry-After; doubles
    max_delay: float = 5.0  # bound of one backoff delay
    max_retry_after: float = 60.0  # a server asking to wait longer is given up on at once (its error is raised)


@dataclass(frozen=True)
class Sleep:
    seconds: float


SEND = "send"
Action = str | Sleep
Outcome = httpx.Response | Exception
Plan = Generator[Action, Outcome, httpx.Response]


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Seconds a Retry-After value asks for: delay-seconds or an HTTP date (a past date is 0). None if unreadable."""
    if value is None:
        return None
    text = value.strip()
    if re.fullmatch(r"\d+", text):
        return float(int(text))
    try:
        at = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if at is None or at.tzinfo is None:
        return None
    return max(0.0, at.timestamp() - now)


def backoff(attempt: int, policy: RetryPolicy, rand: Callable[[], float] = random.random) -> float:
    """Exponential backoff with equal jitter: half the delay kept, half random, so failed clients spread out."""
    exponential = min(policy.max_delay, policy.base_delay * 2 ** (attempt - 1))
    return float(exponential / 2 + rand() * exponential / 2)


def retry_plan(
    label: str,
    retried: bool,
    policy: RetryPolicy,
    now: Callable[[], float] = time.time,
    rand: Callable[[], float] = random.random,
) -> Plan:
    attempt = 0
    while True:
        attempt += 1
        outcome = yield SEND
        may_retry = retried and attempt <= policy.max_retries
        if isinstance(outcome, httpx.Response):
            if may_retry and outcome.status_code in RETRYABLE_STATUSES:
                asked = parse_retry_after(outcome.headers.get("retry-after"), now())
                if asked is None:
                    yield Sleep(backoff(attempt, policy, rand))
                    continue
                if asked <= policy.max_retry_after:
                    yield Sleep(asked)
                    continue
            outcome.extensions["arbiter_attempts"] = attempt
            return outcome
        if isinstance(outcome, httpx.TimeoutException):
            # The time budget was the caller's: not spent again behind their back.
            raise ArbiterTimeoutError(f"{label}: no answer in time ({outcome})", attempts=attempt) from outcome
        if isinstance(outcome, httpx.TransportError):
            if may_retry:
                yield Sleep(backoff(attempt, policy, rand))
                continue
            raise ArbiterConnectionError(f"{label}: no answer ({outcome})", attempts=attempt) from outcome
        raise outcome

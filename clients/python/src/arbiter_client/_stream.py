"""The manifest stream (`GET /v1/manifests/stream`): Server-Sent Events parsing and the reconnect-and-resume
rules, pure; the clients only open connections and feed the text in."""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from ._errors import ArbiterConnectionError, ArbiterError, ArbiterProtocolError
from ._response import problem_of
from ._retry import parse_retry_after
from .models import ManifestEnvelope

_SEQ = re.compile(r"\d{1,15}")
PATH = "/v1/manifests/stream"


@dataclass
class SseEvent:
    event: str
    data: str | None
    id: str | None  # None: the block had no id field


class SseParser:
    """WHATWG Server-Sent Events parsing of a text stream fed in arbitrary chunks."""

    def __init__(self) -> None:
        self._buffer = ""
        self._event = ""
        self._data: list[str] | None = None
        self._id: str | None = None
        self.retry_ms: int | None = None

    def push(self, text: str) -> list[SseEvent]:
        self._buffer += text
        events: list[SseEvent] = []
        while True:
            match = re.search(r"\r\n|\r|\n", self._buffer)
            # A lone \r at the end of a chunk may be the first half of \r\n: wait for the next chunk.
            if match is None or (match.group() == "\r" and match.end() == len(self._buffer)):
                return events
            line, self._buffer = self._buffer[: match.start()], self._buffer[match.end() :]
            if line == "":
                if self._data is not None or self._id is not None:
                    data = "\n".join(self._data) if self._data is not None else None
                    events.append(SseEvent(self._event or "message", data, self._id))
                self._event, self._data, self._id = "", None, None
                continue
            if line.startswith(":"):
                continue  # a comment: the server's heartbeat
            name, _, value = line.partition(":")
            if value.startswith(" "):
                value = value[1:]
            if name == "event":
                self._event = value
            elif name == "data":
                self._data = [*(self._data or []), value]
            elif name == "id" and "\0" not in value:
                self._id = value
            elif name == "retry" and value.isdigit():
                self.retry_ms = int(value)


@dataclass(frozen=True)
class ManifestEvent:
    """One manifest from the stream: its SSE id (the manifest's `audit_seq`) and the envelope, both as parsed
    (`envelope`, a ManifestEnvelope model) and as received (`raw`, for offline verification)."""

    audit_seq: int
    envelope: ManifestEnvelope
    raw: dict[str, Any] = field(repr=False)


@dataclass
class StreamOptions:
    reconnect_delay: float | None = None  # first reconnection delay (s); default the server's `retry:`, else 1
    max_reconnect_delay: float = 30.0
    idle_timeout: float = 45.0  # a connection silent this long (heartbeats stopped) is replaced
    connect_timeout: float = 10.0
    max_failures: int | None = None  # consecutive failed connections before giving up; None: never give up


class ManifestStreamState:
    """Where the stream is (the last manifest yielded) and how long to wait before the next connection.

    Once it has a position, no manifest is skipped across reconnections (the next connection asks for every one
    after it with Last-Event-ID) and none is yielded twice (an event at or before the position is dropped).
    """

    def __init__(
        self, last_event_id: int | str | None, options: StreamOptions, rand: Callable[[], float] = random.random
    ) -> None:
        position = None if last_event_id is None else str(last_event_id)
        if position is not None and not _SEQ.fullmatch(position):
            raise ValueError(f"last_event_id must be a manifest audit_seq (a decimal integer), got {position!r}")
        self.position = position
        self.options = options
        self.failures = 0
        self.connections = 0
        self._rand = rand
        self._parser = SseParser()
        self._server_retry: float | None = None

    def request_headers(self) -> dict[str, str]:
        headers = {"accept": "text/event-stream"}
        if self.position is not None:
            headers["last-event-id"] = self.position
        return headers

    def opened(self, response: httpx.Response) -> float | None:
        """None when the connection is a stream to read; else the delay before trying again. Raises for answers
        that retrying cannot fix (a refused key, a missing role, a bad Last-Event-ID)."""
        if response.status_code == 200:
            self.failures = 0
            self.connections += 1
            self._parser = SseParser()
            return None
        if response.status_code != 429 and response.status_code < 500:
            raise ArbiterError(problem_of(response), method="GET", path=PATH)
        asked = parse_retry_after(response.headers.get("retry-after"), time.time())
        return self.failed(asked)

    def failed(self, asked: float | None = None) -> float:
        """A connection failed or ended: the delay before the next one (doubling while failures repeat)."""
        self.failures += 1
        if self.options.max_failures is not None and self.failures > self.options.max_failures:
            raise ArbiterConnectionError(
                f"GET {PATH}: gave up after {self.failures - 1} failed connections", attempts=self.failures - 1
            )
        if asked is not None:
            return asked
        base = self.options.reconnect_delay or self._server_retry or 1.0
        delay = min(self.options.max_reconnect_delay, base * 2 ** (self.failures - 1))
        return float(delay / 2 + self._rand() * delay / 2)

    def ended(self) -> float:
        """The server closed a healthy stream (a restart): reconnect soon, without counting a failure."""
        self.failures = 0
        return self.failed()

    def feed(self, text: str) -> list[ManifestEvent]:
        events: list[ManifestEvent] = []
        for block in self._parser.push(text):
            if block.data is None:
                if block.id is not None and _SEQ.fullmatch(block.id):
                    self.position = block.id  # the server states a position without an event
                continue
            if block.event != "manifest":
                continue
            if block.id is None or not _SEQ.fullmatch(block.id):
                raise ArbiterProtocolError(f"GET {PATH}: a manifest event without a numeric id ({block.id!r})")
            if self.position is not None and int(block.id) <= int(self.position):
                continue
            try:
                raw = json.loads(block.data)
                envelope = ManifestEnvelope.model_validate(raw)
            except ValueError as err:
                raise ArbiterProtocolError(f"GET {PATH}: manifest event {block.id} is not an envelope") from err
            self.position = block.id
            events.append(ManifestEvent(int(block.id), envelope, raw))
        if self._parser.retry_ms is not None:
            self._server_retry = self._parser.retry_ms / 1000
        return events

"""`Arbiter` and `AsyncArbiter`: one object per service and key, with the API's resources as attributes.

Everything that decides (the request, the retry plan, reading the answer, the stream's position) is shared; each
class only sends, sleeps and reads with its own flavour of httpx.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import httpx

from . import _resources
from ._operation import NOT_GIVEN, NotGiven, Operation, Timeout, query_params, to_json
from ._pagination import AsyncCursorPage, AsyncPaginator, SyncCursorPage
from ._response import parse_response
from ._retry import RetryPolicy, Sleep, retry_plan
from ._stream import PATH as STREAM_PATH
from ._stream import ManifestEvent, ManifestStreamState, StreamOptions
from ._version import __version__

DEFAULT_TIMEOUT = 30.0


class _BaseClient:
    """Configuration and request building, shared by both clients."""

    def __init__(
        self,
        *,
        base_url: str | None,
        api_key: str | None,
        timeout: Timeout,
        max_retries: int,
        retry_policy: RetryPolicy | None,
        headers: Mapping[str, str] | None,
    ) -> None:
        base_url = base_url or os.environ.get("ARBITER_URL")
        if not base_url:
            raise ValueError("base_url is required (or set ARBITER_URL)")
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key if api_key is not None else os.environ.get("ARBITER_API_KEY")
        self.timeout = timeout
        self.retry_policy = retry_policy or RetryPolicy(max_retries=max_retries)
        self._headers = {"accept": "application/json", "user-agent": f"arbiter-client-python/{__version__}"}
        if self.api_key:
            self._headers["authorization"] = f"Bearer {self.api_key}"
        self._headers.update(headers or {})

    def _build(
        self,
        client: httpx.Client | httpx.AsyncClient,
        operation: Operation,
        path: tuple[str, ...],
        query: Mapping[str, Any] | None,
        body: Any,
        timeout: Timeout | NotGiven,
    ) -> tuple[httpx.Request, str]:
        url_path = operation.url_path(path)
        extensions = {}
        if timeout is not NOT_GIVEN:
            extensions["timeout"] = httpx.Timeout(timeout).as_dict()  # type: ignore[arg-type]
        request = client.build_request(
            operation.method,
            self.base_url + url_path,
            params=query_params(query),
            json=None if body is NOT_GIVEN else to_json(body),
            headers=self._headers,
            extensions=extensions,
        )
        return request, url_path


class Arbiter(_BaseClient, _resources._SyncRootMethods):
    """The Arbiter API, synchronously.

    >>> client = Arbiter(base_url="http://127.0.0.1:8080", api_key="arb_…")
    >>> outcome = client.outcomes.create(subagent_id="refund-agent", run_id="run-1", evidence=[...])

    `base_url` and `api_key` default to the environment's ARBITER_URL and ARBITER_API_KEY. `timeout` bounds each
    attempt (seconds, or an httpx.Timeout); `max_retries` is how many times an idempotent call is sent again
    after a 429/503 (waiting what Retry-After asks) or a lost connection. Calls that are not idempotent
    (resolutions, revisions, key creation, probe registration) are sent once.
    """

    keys: _resources.Keys
    probes: _resources.Probes
    audit: _resources.Audit
    escalations: _resources.Escalations
    manifests: _resources.Manifests
    outcomes: _resources.Outcomes
    subagent_policies: _resources.SubagentPolicies
    fanouts: _resources.Fanouts
    reviews: _resources.Reviews
    webhooks: _resources.Webhooks

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: Timeout = DEFAULT_TIMEOUT,
        max_retries: int = 3,
        retry_policy: RetryPolicy | None = None,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.Client | None = None,
    ) -> None:
        super().__init__(
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            retry_policy=retry_policy,
            headers=headers,
        )
        self._http = http_client or httpx.Client(timeout=timeout)
        self._owns_http = http_client is None
        for name, cls in _resources.SYNC_RESOURCES.items():
            setattr(self, name, cls(self))

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> Arbiter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _request(
        self,
        operation: Operation,
        *,
        path: tuple[str, ...] = (),
        query: Mapping[str, Any] | None = None,
        body: Any = NOT_GIVEN,
        timeout: Timeout | NotGiven = NOT_GIVEN,
    ) -> Any:
        request, url_path = self._build(self._http, operation, path, query, body, timeout)
        plan = retry_plan(f"{operation.method} {url_path}", operation.retried, self.retry_policy)
        try:
            action = next(plan)
            while True:
                if isinstance(action, Sleep):
                    time.sleep(action.seconds)
                    action = next(plan)
                    continue
                outcome: httpx.Response | Exception
                try:
                    outcome = self._http.send(request)
                    outcome.read()
                except httpx.TransportError as err:
                    outcome = err
                action = plan.send(outcome)
        except StopIteration as done:
            return parse_response(operation, done.value, url_path)

    def _paginate(self, operation: Operation, **call: Any) -> SyncCursorPage[Any]:
        def fetch(cursor: str | None) -> SyncCursorPage[Any]:
            query = dict(call.get("query") or {})
            if cursor is not None:
                query["cursor"] = cursor
            page = self._request(operation, **{**call, "query": query})
            return SyncCursorPage(page.items, page.next_cursor, fetch)

        return fetch(None)

    def stream_manifests(
        self,
        *,
        last_event_id: int | str | None = None,
        reconnect_delay: float | None = None,
        max_reconnect_delay: float = 30.0,
        idle_timeout: float = 45.0,
        connect_timeout: float = 10.0,
        max_failures: int | None = None,
    ) -> Iterator[ManifestEvent]:
        """GET /v1/manifests/stream as an iterator of ManifestEvent that never ends by itself.

        It reconnects whenever the connection ends or fails (a service restart, a dropped proxy, a silent
        socket), after a backoff that honours Retry-After, resuming with Last-Event-ID = the last manifest it
        yielded: no manifest is skipped or yielded twice. Without `last_event_id` it starts with manifests
        sequenced after it connects (`0` replays the whole log). Answers that retrying cannot fix (401, 403,
        400) raise ArbiterError. Stop by leaving the loop (`break`); the connection is closed then.
        """
        options = StreamOptions(reconnect_delay, max_reconnect_delay, idle_timeout, connect_timeout, max_failures)
        state = ManifestStreamState(last_event_id, options)
        timeout = httpx.Timeout(connect_timeout, read=idle_timeout)
        while True:
            delay: float | None
            try:
                with self._http.stream(
                    "GET",
                    self.base_url + STREAM_PATH,
                    headers={**self._headers, **state.request_headers()},
                    timeout=timeout,
                ) as response:
                    if response.status_code != 200:
                        response.read()
                    delay = state.opened(response)
                    if delay is None:
                        for text in response.iter_text():
                            yield from state.feed(text)
                        delay = state.ended()
            except (httpx.TransportError, httpx.StreamError):
                delay = state.failed()
            time.sleep(delay)


class AsyncArbiter(_BaseClient, _resources._AsyncRootMethods):
    """The Arbiter API for asyncio: the same resources and methods as Arbiter, awaited.

    `await client.outcomes.get(id)`; lists are awaited for one page or walked with `async for`;
    `async for event in client.stream_manifests(...)`.
    """

    keys: _resources.AsyncKeys
    probes: _resources.AsyncProbes
    audit: _resources.AsyncAudit
    escalations: _resources.AsyncEscalations
    manifests: _resources.AsyncManifests
    outcomes: _resources.AsyncOutcomes
    subagent_policies: _resources.AsyncSubagentPolicies
    fanouts: _resources.AsyncFanouts
    reviews: _resources.AsyncReviews
    webhooks: _resources.AsyncWebhooks

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: Timeout = DEFAULT_TIMEOUT,
        max_retries: int = 3,
        retry_policy: RetryPolicy | None = None,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
            retry_policy=retry_policy,
            headers=headers,
        )
        self._http = http_client or httpx.AsyncClient(timeout=timeout)
        self._owns_http = http_client is None
        for name, cls in _resources.ASYNC_RESOURCES.items():
            setattr(self, name, cls(self))

    async def close(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncArbiter:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _request(
        self,
        operation: Operation,
        *,
        path: tuple[str, ...] = (),
        query: Mapping[str, Any] | None = None,
        body: Any = NOT_GIVEN,
        timeout: Timeout | NotGiven = NOT_GIVEN,
    ) -> Any:
        request, url_path = self._build(self._http, operation, path, query, body, timeout)
        plan = retry_plan(f"{operation.method} {url_path}", operation.retried, self.retry_policy)
        try:
            action = next(plan)
            while True:
                if isinstance(action, Sleep):
                    await asyncio.sleep(action.seconds)
                    action = next(plan)
                    continue
                outcome: httpx.Response | Exception
                try:
                    outcome = await self._http.send(request)
                    await outcome.aread()
                except httpx.TransportError as err:
                    outcome = err
                action = plan.send(outcome)
        except StopIteration as done:
            return parse_response(operation, done.value, url_path)

    def _paginate(self, operation: Operation, **call: Any) -> AsyncPaginator[Any]:
        async def fetch(cursor: str | None) -> AsyncCursorPage[Any]:
            query = dict(call.get("query") or {})
            if cursor is not None:
                query["cursor"] = cursor
            page = await self._request(operation, **{**call, "query": query})
            return AsyncCursorPage(page.items, page.next_cursor, fetch)

        return AsyncPaginator(lambda: fetch(None))

    async def stream_manifests(
        self,
        *,
        last_event_id: int | str | None = None,
        reconnect_delay: float | None = None,
        max_reconnect_delay: float = 30.0,
        idle_timeout: float = 45.0,
        connect_timeout: float = 10.0,
        max_failures: int | None = None,
    ) -> AsyncIterator[ManifestEvent]:
        """The async twin of Arbiter.stream_manifests."""
        options = StreamOptions(reconnect_delay, max_reconnect_delay, idle_timeout, connect_timeout, max_failures)
        state = ManifestStreamState(last_event_id, options)
        timeout = httpx.Timeout(connect_timeout, read=idle_timeout)
        while True:
            delay: float | None
            try:
                async with self._http.stream(
                    "GET",
                    self.base_url + STREAM_PATH,
                    headers={**self._headers, **state.request_headers()},
                    timeout=timeout,
                ) as response:
                    if response.status_code != 200:
                        await response.aread()
                    delay = state.opened(response)
                    if delay is None:
                        async for text in response.aiter_text():
                            for event in state.feed(text):
                                yield event
                        delay = state.ended()
            except (httpx.TransportError, httpx.StreamError):
                delay = state.failed()
            await asyncio.sleep(delay)

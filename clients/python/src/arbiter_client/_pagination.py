"""Lists as iterators: a page knows how to fetch the next one, and iterating a page walks every item after it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class SyncCursorPage(Generic[T]):
    """One page (`items`, `next_cursor`). `for item in page` follows `next_cursor` to the end of the list;
    `iter_pages()` yields the pages themselves."""

    def __init__(self, items: list[T], next_cursor: str | None, fetch: Callable[[str], SyncCursorPage[T]]) -> None:
        self.items = items
        self.next_cursor = next_cursor
        self._fetch = fetch

    def has_next_page(self) -> bool:
        return self.next_cursor is not None

    def next_page(self) -> SyncCursorPage[T]:
        if self.next_cursor is None:
            raise RuntimeError("this is the last page: check has_next_page() first")
        return self._fetch(self.next_cursor)

    def iter_pages(self) -> Iterator[SyncCursorPage[T]]:
        page: SyncCursorPage[T] | None = self
        while page is not None:
            yield page
            page = page.next_page() if page.has_next_page() else None

    def __iter__(self) -> Iterator[T]:
        for page in self.iter_pages():
            yield from page.items

    def __repr__(self) -> str:
        return f"SyncCursorPage(items={len(self.items)}, next_cursor={self.next_cursor!r})"


class AsyncCursorPage(Generic[T]):
    """The async twin of SyncCursorPage: `async for item in page` follows `next_cursor`."""

    def __init__(
        self, items: list[T], next_cursor: str | None, fetch: Callable[[str], Awaitable[AsyncCursorPage[T]]]
    ) -> None:
        self.items = items
        self.next_cursor = next_cursor
        self._fetch = fetch

    def has_next_page(self) -> bool:
        return self.next_cursor is not None

    async def next_page(self) -> AsyncCursorPage[T]:
        if self.next_cursor is None:
            raise RuntimeError("this is the last page: check has_next_page() first")
        return await self._fetch(self.next_cursor)

    async def iter_pages(self) -> AsyncIterator[AsyncCursorPage[T]]:
        page: AsyncCursorPage[T] | None = self
        while page is not None:
            yield page
            page = await page.next_page() if page.has_next_page() else None

    async def __aiter__(self) -> AsyncIterator[T]:
        async for page in self.iter_pages():
            for item in page.items:
                yield item

    def __repr__(self) -> str:
        return f"AsyncCursorPage(items={len(self.items)}, next_cursor={self.next_cursor!r})"


class AsyncPaginator(Generic[T]):
    """What an async `list()` returns: `await` it for the first page, or `async for` over every item."""

    def __init__(self, first: Callable[[], Awaitable[AsyncCursorPage[T]]]) -> None:
        self._first = first

    def __await__(self) -> Generator[Any, None, AsyncCursorPage[T]]:
        return self._first().__await__()

    async def __aiter__(self) -> AsyncIterator[T]:
        page = await self._first()
        async for item in page:
            yield item

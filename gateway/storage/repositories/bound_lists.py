"""Lists of values bound so that a statement is the same whatever their length.

An expanding ``IN (...)`` renders one placeholder per value, so on PostgreSQL each length is
a statement of its own, prepared on every pooled connection and kept in its cache: under load
the background process held thousands of them, and its memory grew by megabytes a minute.
On PostgreSQL a list goes as one array instead (``= ANY(:ids)``; rows of several values as one
array a column, zipped by ``unnest``), one statement for every length. SQLite has no arrays
and prepares nothing across calls: there the list stays an expanding ``IN``.

A multi-row insert has the same trouble (one shape per number of rows): its rows go in chunks
whose sizes are powers of two (`in_bounded_shapes`), at most seven shapes for a lot of 64.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

from sqlalchemy import ARRAY, ColumnElement, all_, any_, bindparam, func, select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import QueryableAttribute

POSTGRESQL: Final = "postgresql"

S = TypeVar("S")
R = TypeVar("R")


def as_arrays(session: AsyncSession) -> bool:
    """Whether lists bound in this session's statements go as arrays (PostgreSQL)."""
    return session.bind is not None and session.bind.dialect.name == POSTGRESQL


@dataclass(frozen=True, slots=True)
class ByDialect(Generic[S]):
    """A statement built twice at import: with lists as arrays, and with expanding lists."""

    arrays: S
    expanding: S

    @classmethod
    def build(cls, make: Callable[[bool], S]) -> ByDialect[S]:
        return cls(arrays=make(True), expanding=make(False))

    def of(self, session: AsyncSession) -> S:
        return self.arrays if as_arrays(session) else self.expanding


def one_of(column: ColumnElement[Any], name: str, *, arrays: bool) -> ColumnElement[bool]:
    """`column` is one of the list bound as `name`."""
    if arrays:
        return column == any_(bindparam(name, type_=ARRAY(column.type)))
    return column.in_(bindparam(name, expanding=True))


def not_one_of(column: ColumnElement[Any], name: str, *, arrays: bool) -> ColumnElement[bool]:
    """`column` is none of the list bound as `name` (an empty list excludes nothing)."""
    if arrays:
        # `<> ALL(empty)` is true, as `NOT IN ()` is.
        return column != all_(bindparam(name, type_=ARRAY(column.type)))
    return column.not_in(bindparam(name, expanding=True))


def rows_in(
    columns: Sequence[ColumnElement[Any]], name: str, *, arrays: bool
) -> ColumnElement[bool]:
    """The row of `columns` is one of the rows bound as `name` (see `rows_params`)."""
    if arrays:
        zipped = select(
            *(
                func.unnest(
                    bindparam(f"{name}_{index}", type_=ARRAY(column.type)), type_=column.type
                )
                for index, column in enumerate(columns)
            )
        )
        return tuple_(*columns).in_(zipped)
    return tuple_(*columns).in_(bindparam(name, expanding=True))


def rows_params(
    name: str, rows: Iterable[tuple[Any, ...]], *, width: int, arrays: bool
) -> dict[str, list[Any]]:
    """The parameters that bind `rows` (each of `width` values) for `rows_in(..., name)`."""
    listed = list(rows)
    if arrays:
        return {f"{name}_{index}": [row[index] for row in listed] for index in range(width)}
    return {name: listed}


def values_in(
    session: AsyncSession,
    column: ColumnElement[Any] | QueryableAttribute[Any],
    values: Collection[Any],
) -> ColumnElement[bool]:
    """`column` is one of `values`, for a statement built at the call."""
    listed = list(values)
    if as_arrays(session):
        return column == any_(bindparam(None, listed, type_=ARRAY(column.type)))
    return column.in_(listed)


def in_bounded_shapes(rows: Sequence[R]) -> Iterator[Sequence[R]]:
    """`rows` in consecutive chunks, in order, each a power of two long, largest first (13
    rows: 8, 4, 1): a multi-row insert of each chunk is one of few statements, whatever the
    number of rows."""
    start = 0
    while start < len(rows):
        size = 1 << ((len(rows) - start).bit_length() - 1)
        yield rows[start : start + size]
        start += size

"""SQL files: named queries and numbered migrations, read once from `sql/`.

A query file is plain SQL cut into named pieces by header lines::

    -- name: claim_jobs
    SELECT ...;

Every backend keeps its queries in `sql/<backend>_queries.sql` under the same names, and its
migrations in `sql/<backend>_<NNNN>_<what>.sql`, applied in version order.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from types import MappingProxyType

_HEADER = re.compile(r"^--\s*name:\s*(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*$")
_MIGRATION = re.compile(r"^(?P<backend>[a-z]+)_(?P<version>\d{4})_(?P<what>[a-z0-9_]+)\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def parse_queries(text: str) -> dict[str, str]:
    """Cut a query file into {name: sql}. Text before the first header is a preamble."""
    queries: dict[str, str] = {}
    name: str | None = None
    body: list[str] = []

    def flush() -> None:
        if name is None:
            return
        # Comment lines trailing a query belong to the next section, not to the query.
        while body and (not body[-1].strip() or body[-1].lstrip().startswith("--")):
            body.pop()
        sql = "\n".join(body).strip()
        if not sql:
            raise ValueError(f"query {name!r} has no SQL")
        queries[name] = sql

    for line in text.splitlines():
        match = _HEADER.match(line.strip())
        if match is None:
            body.append(line)
            continue
        flush()
        name = match["name"]
        if name in queries:
            raise ValueError(f"query {name!r} is defined twice")
        body = []
    flush()
    return queries


def _sql_dir() -> Traversable:
    return resources.files("distill.adapters.store") / "sql"


def load_queries(backend: str) -> Mapping[str, str]:
    """The named queries of one backend, read-only."""
    text = (_sql_dir() / f"{backend}_queries.sql").read_text(encoding="utf-8")
    return MappingProxyType(parse_queries(text))


def load_migrations(backend: str) -> tuple[Migration, ...]:
    """The migrations of one backend in version order; versions must be 1, 2, 3, ..."""
    found: list[Migration] = []
    for entry in _sql_dir().iterdir():
        match = _MIGRATION.match(entry.name)
        if match is None or match["backend"] != backend:
            continue
        found.append(
            Migration(int(match["version"]), entry.name, entry.read_text(encoding="utf-8"))
        )
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if versions != list(range(1, len(found) + 1)):
        raise ValueError(f"{backend} migrations must be numbered 1..n without gaps: {versions}")
    return tuple(found)

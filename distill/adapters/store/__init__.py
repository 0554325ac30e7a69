"""Stores: implementations of `distill.ports.Store`, and `open_store`, which builds the one a
URL names.

The SQL of each backend lives in `sql/`: `<backend>_queries.sql` (named queries, the same
names for every backend) and `<backend>_<NNNN>_<what>.sql` (migrations, applied in order).
"""

from __future__ import annotations

from pathlib import Path

from distill.adapters.store.sqlite import SqliteStore
from distill.adapters.store.sqlite_file import split_options
from distill.adapters.store.urls import hide_passwords, refuse_connection_strings
from distill.errors import ConfigurationError, MissingDependency
from distill.ports import Store

__all__ = ["SqliteStore", "default_database", "open_store"]


def default_database() -> Path:
    from platformdirs import user_data_dir

    return Path(user_data_dir("distill", appauthor=False)) / "memory.db"


def open_store(url: str | Path | None, must_exist: bool = False) -> tuple[Store, str]:
    """Build the store a URL names: a path, `sqlite:///path`, `:memory:`, or a
    `postgresql://` (or `postgres://`) URL. Returns it and where it is, fit to be shown (a
    PostgreSQL URL's password left out). `must_exist`, for a caller that only reads (a copy's
    source, an export): a SQLite file that is not there is an error, not a new empty store
    whose empty answer would look like success."""
    if url is None:
        path = default_database()
        path.parent.mkdir(parents=True, exist_ok=True)
        url = str(path)
    url = str(url)
    if url.startswith(("postgresql://", "postgres://")):
        return _open_postgres(url)
    if url.startswith("postgresql+"):
        raise ConfigurationError(
            f"unsupported database URL scheme {url.split('://')[0]!r}: distill talks to "
            "PostgreSQL through psycopg itself; use postgresql://user@host/dbname"
        )
    if url.startswith("sqlite://"):
        # sqlite:///relative.db, sqlite:////absolute.db, sqlite:// or sqlite:///:memory:
        url = url.removeprefix("sqlite://").removeprefix("/") or ":memory:"
    elif "://" in url:
        raise ConfigurationError(
            f"unsupported database URL {hide_passwords(url)!r}: use a file path, "
            "sqlite:///path or postgresql://user@host/dbname"
        )
    else:
        refuse_connection_strings(url)
    file, _ = split_options(url)
    if must_exist and file != ":memory:" and not Path(file).exists():
        raise ConfigurationError(
            f"no database at {file}: there is nothing to read (check --db or DISTILL_DATABASE_URL)"
        )
    return SqliteStore(url), url


def _open_postgres(url: str) -> tuple[Store, str]:
    try:
        import psycopg  # noqa: F401
    except ImportError as exc:
        raise MissingDependency.extra("the PostgreSQL backend needs psycopg", "postgres") from exc
    from distill.adapters.store.postgres import PostgresStore
    from distill.adapters.store.postgres_connection import describe

    return PostgresStore(url), f"postgresql://{describe(url)}"

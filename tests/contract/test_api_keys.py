"""The HTTP API's keys on every store: made with a token shown once and kept as its hash,
found by that hash, listed by project, revoked at once; and which subjects a project holds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from distill import Memory
from distill.errors import InvalidInput, NotFound
from distill.key_ports import KeyCounts
from distill.ports import Store
from distill.service.api_keys import authenticate, create_key, hash_token, key_store

NOW = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)


def test_a_key_is_found_by_its_token_until_it_is_revoked(store: Store) -> None:
    keys = key_store(store)
    assert keys.count_keys() == KeyCounts(made=0, active=0)
    made = create_key(store, "acme", "bot", NOW)
    admin = create_key(store, None, "ops", NOW + timedelta(seconds=1), admin=True)
    assert made.token != admin.token and made.token.startswith("dk_")

    found = authenticate(store, made.token)
    assert found == made.key and found.project == "acme" and not found.admin
    assert authenticate(store, admin.token) == admin.key and admin.key.admin
    assert authenticate(store, made.token + "x") is None
    assert keys.key_by_hash(hash_token(made.token)) == made.key

    assert [k.id for k in keys.api_keys("acme")] == [made.key.id]
    assert [k.id for k in keys.api_keys(None)] == [made.key.id, admin.key.id]
    assert keys.api_keys("other") == []

    revoked = keys.revoke_key(made.key.id, NOW + timedelta(minutes=5))
    assert revoked.revoked_at == NOW + timedelta(minutes=5) and not revoked.active
    assert authenticate(store, made.token) is None
    again = keys.revoke_key(made.key.id, NOW + timedelta(hours=1))
    assert again.revoked_at == revoked.revoked_at  # the first revocation stands
    assert keys.count_keys() == KeyCounts(made=2, active=1)
    with pytest.raises(NotFound):
        keys.revoke_key("0" * 32, NOW)


def test_a_key_belongs_to_one_project_or_is_an_admin_key(store: Store) -> None:
    with pytest.raises(InvalidInput):
        create_key(store, "acme", "", NOW, admin=True)
    with pytest.raises(InvalidInput):
        create_key(store, None, "", NOW)
    with pytest.raises(InvalidInput):
        create_key(store, "  ", "", NOW)


def test_only_the_hash_of_a_token_is_stored(store: Store, database: str, backend: str) -> None:
    made = create_key(store, "acme", "bot", NOW)
    if backend == "sqlite":
        import sqlite3

        rows = sqlite3.connect(database).execute("SELECT * FROM api_keys").fetchall()
    else:
        import psycopg

        with psycopg.connect(database) as conn:
            rows = conn.execute("SELECT * FROM api_keys").fetchall()
    assert made.token not in repr(rows) and hash_token(made.token) in repr(rows)


def test_a_subject_is_known_to_its_project_only_until_it_is_erased(memory: Memory) -> None:
    keys = key_store(memory.store)
    memory.add_event(subject="u1", project="acme", text="I live in Lisbon")
    assert keys.subject_known("acme", "u1")
    assert not keys.subject_known("other", "u1") and not keys.subject_known("acme", "u2")
    memory.erase("acme", "u1")
    assert not keys.subject_known("acme", "u1")

"""Keys of the HTTP API: made, checked and revoked here, stored by the store (`KeyStore`).

A key is a token of `TOKEN_BYTES` random bytes, shown once when it is made; the database
keeps its SHA-256 only. A plain, unsalted hash is enough because the token is not a password:
with 256 bits of entropy no dictionary or table helps, and reversing SHA-256 by brute force
is out of reach, so whoever reads the table learns nothing usable. A slow hash (bcrypt,
argon2) protects low-entropy secrets and would cost every request tens of milliseconds; a
salt would make the lookup by hash impossible. Finding the key by the hash of the token
also means no comparison of secrets in Python whose timing could leak a prefix.

A key belongs to one project; an admin key (project None) may act on any project and must
name it in each request. Revoking sets `revoked_at` and the key stops working at once: every
request looks its key up (an indexed read), nothing is cached.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime

from distill import ids
from distill.core.models import NAME_MAX_LENGTH
from distill.errors import ConfigurationError, InvalidInput
from distill.key_ports import ApiKey, KeyStore
from distill.ports import Store

TOKEN_BYTES = 32  # 256 bits: see the module docstring for why a plain hash then suffices
TOKEN_PREFIX = "dk_"  # tells a Distill key apart in a config file or a secret scanner


@dataclass(frozen=True)
class NewKey:
    """A key just made, with its token: the only time the token exists outside the caller."""

    key: ApiKey
    token: str


def key_store(store: Store) -> KeyStore:
    """The store as a `KeyStore`, or a configuration error for a store without keys."""
    if not isinstance(store, KeyStore):
        raise ConfigurationError(
            f"the store {type(store).__name__} keeps no API keys; serve a SQLite or "
            "PostgreSQL database"
        )
    return store


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def create_key(
    store: Store, project: str | None, name: str, now: datetime, admin: bool = False
) -> NewKey:
    """Make a key of `project` (or, with `admin`, an admin key of no project)."""
    if admin == (project is not None):
        raise InvalidInput("a key belongs to one project, or is an admin key of none")
    if project is not None and not project.strip():
        raise InvalidInput("project: give the project the key belongs to")
    for field, value in (("project", project or ""), ("name", name)):
        if len(value) > NAME_MAX_LENGTH:
            raise InvalidInput(f"{field}: longer than {NAME_MAX_LENGTH} characters")
    token = TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)
    key = ApiKey(id=ids.new_id(), project=project, name=name, created_at=now)
    key_store(store).create_key(key, hash_token(token))
    return NewKey(key, token)


def authenticate(store: Store, token: str) -> ApiKey | None:
    """The active key whose token this is; None for an unknown or revoked one."""
    found = key_store(store).key_by_hash(hash_token(token))
    return found if found is not None and found.active else None

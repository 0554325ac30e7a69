"""The port of the HTTP API's keys: what `distill serve` keeps beside the memory, in the same
database. Both stores implement it (`adapters/store/sql_keys.py`); the engine never uses it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class ApiKey:
    """A key of the HTTP API, as stored: never its token, which is shown once when made and
    kept only as a hash. `project` None: an admin key, which names the project per request."""

    id: str
    project: str | None
    name: str
    created_at: datetime
    revoked_at: datetime | None = None

    @property
    def admin(self) -> bool:
        return self.project is None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


@dataclass(frozen=True)
class KeyCounts:
    made: int  # every key ever made, revoked ones too
    active: int


@runtime_checkable
class KeyStore(Protocol):
    """What the HTTP API keeps beside the memory: its keys, by the hash of their token, and
    whether a project holds anything of a subject (how a subject of another project reads
    as one that does not exist)."""

    def create_key(self, key: ApiKey, token_hash: str) -> None: ...
    def key_by_hash(self, token_hash: str) -> ApiKey | None:
        """The key whose token hashes to `token_hash`, revoked or not; None if none."""
        ...

    def api_keys(self, project: str | None) -> list[ApiKey]:
        """A project's keys, oldest first; every key (admin ones too) with None."""
        ...

    def revoke_key(self, key_id: str, now: datetime) -> ApiKey:
        """Revoke a key (a no-op if it was already); `NotFound` if there is no such key."""
        ...

    def count_keys(self) -> KeyCounts: ...
    def subject_known(self, project: str, subject: str) -> bool: ...

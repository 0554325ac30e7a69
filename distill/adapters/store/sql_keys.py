"""The HTTP API's keys over named SQL, for every backend (`distill.ports.KeyStore`): a key is
found by the SHA-256 of its token (see `distill.service.api_keys` for why a plain hash is
enough), and a revoked key keeps its row."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from distill.adapters.store.sql_base import SqlBase
from distill.errors import NotFound
from distill.key_ports import ApiKey, KeyCounts


class SqlKeys(SqlBase):
    """The `KeyStore` part of a SQL store."""

    def create_key(self, key: ApiKey, token_hash: str) -> None:
        c = self.codec
        params = {
            "id": c.id(key.id),
            "project": key.project,
            "name": key.name,
            "token_hash": token_hash,
            "created_at": c.time(key.created_at),
        }
        self._write("insert_api_key", params)

    def key_by_hash(self, token_hash: str) -> ApiKey | None:
        found = self._read("api_key_by_hash", {"token_hash": token_hash})
        return self._key(found[0]) if found else None

    def api_keys(self, project: str | None) -> list[ApiKey]:
        return [self._key(r) for r in self._read("api_keys_list", {"project": project})]

    def revoke_key(self, key_id: str, now: datetime) -> ApiKey:
        params = {"id": self.codec.id(key_id), "now": self.codec.time(now)}
        with self._tx() as db:
            self._run(db, "revoke_api_key", params)
            found = self._run(db, "api_key_by_id", {"id": params["id"]}).fetchone()
        if found is None:
            raise NotFound(f"no API key {key_id}")
        return self._key(found)

    def count_keys(self) -> KeyCounts:
        with self._tx(write=False) as db:
            row = self._one(db, "count_api_keys")
        return KeyCounts(made=int(row["made"]), active=int(row["active"]))

    def subject_known(self, project: str, subject: str) -> bool:
        found = self._read("subject_known", {"project": project, "subject": subject})
        return bool(found[0]["known"])

    def _key(self, row: Any) -> ApiKey:
        c = self.codec
        return ApiKey(
            id=c.read_id(row["id"]),
            project=row["project"],
            name=row["name"],
            created_at=c.read_time(row["created_at"]),
            revoked_at=c.read_time(row["revoked_at"]),
        )

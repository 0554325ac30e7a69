-- The HTTP API's keys (`distill keys`, distill/service/api_keys.py). A key is a random token
-- shown once; only its SHA-256 is kept, so the table gives nobody a usable key. `project`
-- NULL is an admin key (any project, named per request). A revoked key keeps its row, so
-- that `distill keys list` shows what was revoked and when.

CREATE TABLE api_keys (
    id          BLOB PRIMARY KEY,
    project     TEXT,
    name        TEXT NOT NULL,
    token_hash  TEXT NOT NULL UNIQUE,
    created_at  INTEGER NOT NULL,
    revoked_at  INTEGER
);
CREATE INDEX api_keys_by_project ON api_keys (project, created_at);

-- Procedures and topics (core/patterns.py). Each is written only through the applier, with
-- an audit entry, deleted with its subject (erase) and copied (distill copy).
--
-- events.action: the action an event records (core/event_action.py), JSON or NULL. Part of
-- the event as given: written on insert, never after.
ALTER TABLE events ADD COLUMN action TEXT;
-- The procedures pass reads a subject's action events; most events have none.
CREATE INDEX events_with_action ON events (project, subject) WHERE action IS NOT NULL;

-- `action_a → action_b` for one subject; the id is a hash of the four (core/patterns.py).
-- support is recounted from the events on every run; successes and failures are the uses an
-- agent reported (Memory.record_procedure_use).
CREATE TABLE procedures (
    id                BLOB PRIMARY KEY,
    project           TEXT NOT NULL,
    subject           TEXT NOT NULL,
    action_a          TEXT NOT NULL,
    action_b          TEXT NOT NULL,
    status            TEXT NOT NULL CHECK (status IN ('candidate', 'active', 'deprecated')),
    support           INTEGER NOT NULL CHECK (support >= 0),
    successes         INTEGER NOT NULL DEFAULT 0 CHECK (successes >= 0),
    failures          INTEGER NOT NULL DEFAULT 0 CHECK (failures >= 0),
    precondition      TEXT NOT NULL DEFAULT '',
    source_event_ids  TEXT NOT NULL DEFAULT '[]',
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    UNIQUE (project, subject, action_a, action_b)
);

-- An event names an entity (its key: case-folded name). Derived, written once per event.
CREATE TABLE mentions (
    event_id     BLOB NOT NULL,
    entity       TEXT NOT NULL,
    project      TEXT NOT NULL,
    subject      TEXT NOT NULL,
    name         TEXT NOT NULL,
    origin       TEXT NOT NULL CHECK (origin IN ('claims', 'extracted', 'text')),
    recorded_at  INTEGER NOT NULL,
    PRIMARY KEY (event_id, entity)
) WITHOUT ROWID;
CREATE INDEX mentions_by_subject ON mentions (project, subject, entity);

-- A community of entities; the id is a hash of its scope and sorted member set. A changed
-- community retires its topic (status, retired_at), never deletes it.
CREATE TABLE topics (
    id          BLOB PRIMARY KEY,
    project     TEXT NOT NULL,
    subject     TEXT NOT NULL,
    name        TEXT NOT NULL,
    members     TEXT NOT NULL,
    names       TEXT NOT NULL,
    embedding   TEXT,
    named_by    TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('active', 'retired')),
    created_at  INTEGER NOT NULL,
    retired_at  INTEGER
);
CREATE INDEX topics_by_subject ON topics (project, subject, status);

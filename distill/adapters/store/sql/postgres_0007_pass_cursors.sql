-- Where a pass that walks a scope's backlog stopped (the memory judge: the last audit entry
-- of a memory it judged, as `at|id`). A cursor moves in the transaction that applies the
-- batch it closes (`MoveCursor` through the applier), so it never passes unwritten work;
-- erasing a subject deletes its cursors.

CREATE TABLE pass_cursors (
    project    TEXT NOT NULL,
    subject    TEXT NOT NULL,
    pass_name  TEXT NOT NULL,
    position   TEXT NOT NULL,
    moved_at   TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (project, subject, pass_name)
);

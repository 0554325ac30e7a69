-- The vector change log (`vector_changes`, 0003) is pruned to its newest rows, where it used
-- to grow by a row a vector written, forever (36 bytes an event in bench/storage.py). A
-- reader whose mark is older than what was pruned cannot catch up from the log: it rebuilds
-- its index from the vectors instead, which costs about what reading that many changes
-- would (`VECTOR_LOG_KEEP` in sql_store.py).
--
-- This table says how far the log was pruned: the newest `seq` deleted. A reader at a mark
-- below it may have missed a change. A trigger records every deletion, whoever makes it.

CREATE TABLE vector_changes_pruned (
    one INTEGER PRIMARY KEY CHECK (one = 1),
    seq INTEGER NOT NULL
);

CREATE TRIGGER vector_change_pruned AFTER DELETE ON vector_changes
BEGIN
    INSERT INTO vector_changes_pruned (one, seq) VALUES (1, OLD.seq)
    ON CONFLICT (one) DO UPDATE SET seq = max(seq, excluded.seq);
END;

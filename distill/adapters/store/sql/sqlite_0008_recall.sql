-- Recall: the words of every fact, for the lexical arm of search (distill/core/recall.py).
--
-- An FTS5 index of each fact's predicate, value and text, ranked by its bm25(). It holds no
-- copy of the text (content = ''): the words are in `facts`, and the index only maps each
-- word to its facts. FTS5 needs an integer rowid per document, and a fact's own rowid is not
-- one to keep (VACUUM may renumber the rowids of a table whose key is not an INTEGER PRIMARY
-- KEY), so `fact_words_rows` numbers the facts for it. Every status is indexed: a search of
-- the past (`as_of`, `known_at`) ranks facts retired since. Triggers keep it in step, so no
-- write path can forget to; deleting a fact (erase) deletes its words.
--
-- Tokens: `unicode61 remove_diacritics 2` splits on anything but letters and digits (so
-- `bike_count` is "bike" and "count", and JSON punctuation falls away) and folds case and
-- accents; `distill.core.recall.query_terms` folds the question the same way.

CREATE TABLE fact_words_rows (
    n       INTEGER PRIMARY KEY,
    fact_id BLOB NOT NULL UNIQUE
);

CREATE VIRTUAL TABLE fact_words USING fts5 (
    words, content = '', tokenize = 'unicode61 remove_diacritics 2'
);

INSERT INTO fact_words_rows (fact_id) SELECT id FROM facts ORDER BY id;
INSERT INTO fact_words (rowid, words)
SELECT r.n, coalesce(f.predicate, '') || ' ' || coalesce(f.value, '') || ' ' || f.text
FROM fact_words_rows AS r JOIN facts AS f ON f.id = r.fact_id;

CREATE TRIGGER fact_words_added AFTER INSERT ON facts
BEGIN
    INSERT INTO fact_words_rows (fact_id) VALUES (NEW.id);
    INSERT INTO fact_words (rowid, words)
    VALUES (
        last_insert_rowid(),
        coalesce(NEW.predicate, '') || ' ' || coalesce(NEW.value, '') || ' ' || NEW.text
    );
END;

-- A contentless index forgets a document only when told its words exactly as they were.
CREATE TRIGGER fact_words_changed AFTER UPDATE OF predicate, value, text ON facts
WHEN OLD.predicate IS NOT NEW.predicate OR OLD.value IS NOT NEW.value OR OLD.text IS NOT NEW.text
BEGIN
    INSERT INTO fact_words (fact_words, rowid, words)
    SELECT 'delete', n,
           coalesce(OLD.predicate, '') || ' ' || coalesce(OLD.value, '') || ' ' || OLD.text
    FROM fact_words_rows WHERE fact_id = OLD.id;
    INSERT INTO fact_words (rowid, words)
    SELECT n, coalesce(NEW.predicate, '') || ' ' || coalesce(NEW.value, '') || ' ' || NEW.text
    FROM fact_words_rows WHERE fact_id = NEW.id;
END;

CREATE TRIGGER fact_words_removed AFTER DELETE ON facts
BEGIN
    INSERT INTO fact_words (fact_words, rowid, words)
    SELECT 'delete', n,
           coalesce(OLD.predicate, '') || ' ' || coalesce(OLD.value, '') || ' ' || OLD.text
    FROM fact_words_rows WHERE fact_id = OLD.id;
    DELETE FROM fact_words_rows WHERE fact_id = OLD.id;
END;

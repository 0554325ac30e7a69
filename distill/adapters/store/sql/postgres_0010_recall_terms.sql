-- Recall: a posting list of the facts' words, so that search's lexical arm reads an index
-- alone (distill/core/recall.py, `recall_words` in postgres_queries.sql).
--
-- BM25 needs, for each fact holding one of the question's words, the word's frequency in the
-- fact and the fact's length; and, for the scope filter, the fact's project, subject, kind
-- and status. With the GIN index over `facts.words` (0005) each match cost a read of the
-- fact's row: 3,175 heap blocks for a 3-word question matching 4,743 of 100,000 facts, half
-- of search's time (BENCHMARKS.md). Here each (fact, word) pair is one row whose primary key
-- holds all of that, so the arm is an index-only scan of the question's words: the rows of
-- one word sit together, a few dozen index pages per question.
--
-- Every status is kept, as on SQLite: a search of the past (`as_of`, `known_at`) ranks facts
-- retired since. Triggers keep it in step with `facts` (its `words` column, which is
-- generated, is the source), so no write path can forget to; deleting a fact (erase, prune)
-- deletes its words. The table is derived: `distill copy` leaves it behind, and the target's
-- triggers write it again. The GIN index had no other reader and goes.
--
-- `tf` is the word's number of positions in the fact (tsvector keeps at most 256), `len` the
-- fact's number of distinct words (length of its tsvector, stop words included), as
-- `recall_words` read them.
--
-- The stop words a question never asks for (`distill.core.recall.STOP_WORDS`, the same list:
-- a test compares them) have no rows: they were 55% of the rows at 100,000 facts
-- (bench/search.py), 35% of the distinct words of LoCoMo's dialogue turns. A word taken off
-- that list needs a migration that writes its rows; a word added only leaves rows nobody
-- reads.

CREATE FUNCTION recall_stop_words() RETURNS text[] LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT
    '{a,an,and,are,as,at,be,been,but,by,did,do,does,for,from,had,has,have,he,her,his,how,i,
      if,in,into,is,it,its,me,my,of,on,or,our,she,so,that,the,their,them,they,this,to,was,
      we,were,what,when,where,which,who,whom,why,will,with,you,your}'::text[];
$$;

CREATE TABLE fact_terms (
    project text NOT NULL,
    term    text NOT NULL,
    subject text NOT NULL,
    fact_id text NOT NULL,
    kind    text NOT NULL,
    status  text NOT NULL,
    tf      smallint NOT NULL,
    len     integer NOT NULL
);

INSERT INTO fact_terms (project, term, subject, fact_id, kind, status, tf, len)
SELECT f.project, w.lexeme, f.subject, f.id, f.kind, f.status, cardinality(w.positions),
       length(f.words)
FROM facts AS f, unnest(f.words) AS w
WHERE w.lexeme <> ALL (recall_stop_words());

-- The key leads with the word (after the project), so that one search reads each of its
-- words' rows in one range, with or without a subject; the rest rides along for the scan.
ALTER TABLE fact_terms ADD PRIMARY KEY (project, term, subject, fact_id)
    INCLUDE (kind, status, tf, len);

CREATE FUNCTION fact_terms_follow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.words = NEW.words AND OLD.project = NEW.project
            AND OLD.subject = NEW.subject THEN
        UPDATE fact_terms SET kind = NEW.kind, status = NEW.status
        WHERE project = OLD.project AND subject = OLD.subject AND fact_id = OLD.id
          AND term = ANY(tsvector_to_array(OLD.words));
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        DELETE FROM fact_terms
        WHERE project = OLD.project AND subject = OLD.subject AND fact_id = OLD.id
          AND term = ANY(tsvector_to_array(OLD.words));
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO fact_terms (project, term, subject, fact_id, kind, status, tf, len)
        SELECT NEW.project, w.lexeme, NEW.subject, NEW.id, NEW.kind, NEW.status,
               cardinality(w.positions), length(NEW.words)
        FROM unnest(NEW.words) AS w
        WHERE w.lexeme <> ALL (recall_stop_words());
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER fact_terms_added AFTER INSERT ON facts
    FOR EACH ROW EXECUTE FUNCTION fact_terms_follow();
-- Only a change of what the rows hold: reinforcing a fact rewrites its row, not its words.
CREATE TRIGGER fact_terms_changed AFTER UPDATE ON facts
    FOR EACH ROW
    WHEN (OLD.words IS DISTINCT FROM NEW.words OR OLD.status IS DISTINCT FROM NEW.status
          OR OLD.kind IS DISTINCT FROM NEW.kind OR OLD.project IS DISTINCT FROM NEW.project
          OR OLD.subject IS DISTINCT FROM NEW.subject)
    EXECUTE FUNCTION fact_terms_follow();
CREATE TRIGGER fact_terms_removed AFTER DELETE ON facts
    FOR EACH ROW EXECUTE FUNCTION fact_terms_follow();

DROP INDEX facts_words;
ANALYZE fact_terms;

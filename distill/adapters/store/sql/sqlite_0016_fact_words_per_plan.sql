-- The full-text index (0008) is fed once per plan instead of by a trigger per inserted fact.
--
-- The trigger `fact_words_added` ran two statements for each fact a plan inserted: a row of
-- `fact_words_rows`, then the fact's words into `fact_words`. It was two thirds of a fact's
-- insert (40-50 µs of 60-70) and the largest single cost of the thread that decides a
-- consolidation (BENCHMARKS.md, "Consolidation cost ÷ embedding cost"). The writers of new
-- facts now run the same two statements once for all the facts they inserted, in the same
-- order (`index_fact_words_rows`, `index_fact_words`, through `SqliteStore._facts_inserted`):
-- the plan writer after its inserts, the copy after each page of facts. Each fact gets the
-- number, words, positions and length the trigger gave it (a test compares the index as
-- fts5vocab sees it, and BM25 scores). Only the layout differs, which no query sees: run
-- inside each insert's statement, the trigger made every fact a segment of its own.
--
-- Updates and deletes keep their triggers (`fact_words_changed`, `fact_words_removed`): a
-- fact's words rarely change after its insert, and every path that deletes facts (erase,
-- prune) is covered by them.

DROP TRIGGER fact_words_added;

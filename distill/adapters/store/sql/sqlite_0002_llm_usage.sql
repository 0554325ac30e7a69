-- What each job cost in model calls, and the model's answers per event, so that a retried or
-- replayed job does not ask the model again for events it has already answered.

ALTER TABLE jobs ADD COLUMN llm_calls INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN prompt_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN completion_tokens INTEGER NOT NULL DEFAULT 0;

-- Derived data, like the embedding cache: `extractor` names the prompt version and the model
-- ("extract_v2-<prompt hash>/ollama/llama3.2"); `candidates` is the JSON list the model proposed,
-- per event (already assigned to it), before validation: a stricter validator judges old
-- answers again.
CREATE TABLE extractions (
    extractor  TEXT NOT NULL,
    event_id   TEXT NOT NULL REFERENCES events (id),
    candidates TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (extractor, event_id)
);

"""Recall: how `Memory.search` ranks facts for a question. Pure: the stores run the two arms.

A question goes to two rankers over the facts that may be served, each returning its best
`ARM_DEPTH`:

- the **lexical arm**: BM25 over the words of each fact (its predicate, its value and its
  text), the question's words joined by OR (SQLite FTS5 and its `bm25()`; on PostgreSQL the
  same formula over a posting list of the facts' words, `fact_terms`, see the store);
- the **vector arm**: cosine distance between the question's embedding and each fact's
  recall vector (`recall_text`: for an attribute the identity text, "bike count: 3", which is
  also what identity matching embeds; for a free-text memory its text).

The two lists are fused by **reciprocal rank with k = 1**: a fact scores
``Σ_arm 1 / (RRF_K + rank_arm)``, ranks from 1, and an arm that did not return it adds 0.
The textbook k = 60 makes a fact that one arm ranks first and the other 40th lose to one both
rank 8th, so each arm's single-handed finds (the lexical arm's rare words, the vector arm's
paraphrases) fall out of the top 5. With k = 1 each arm's first two or three are always near
the top and agreement orders the rest. On LoCoMo (docs/research/search-fusion.md) this gains
+0.058 @5 and +0.048 @20 of evidence recall over the better arm on conversations the choice
was never tuned on; k = 60 gained +0.010 @5.

Recency and reinforcement order only ties (last confirmed first, then most confirmed): as
priors they cost recall on LoCoMo (up to 0.008 @5), so they do not outweigh relevance.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from distill.core.identity import identity_text
from distill.core.models import Event, Fact

# Reciprocal-rank constant, and each arm's depth: measured in docs/research/search-fusion.md
# (k from 1 to 5 is flat; depth 20 against 50 moved recall @20 by at most 0.007).
RRF_K = 1
ARM_DEPTH = 50
MAX_SEARCH_LIMIT = 100  # results one search returns at most (each arm reads at least this many)
MAX_QUERY_TERMS = 32  # words of a question the lexical arm matches; more only slows it down
MAX_QUERY_CHARS = 4_000  # a question longer than a page is not a question

# Words too common to tell facts apart, left out of the lexical query. They cost time (every
# fact that says "is" is scored) and add nothing the idf would not take away; measured on
# LoCoMo: no change in the fused recall. PostgreSQL's posting list holds no rows for them
# (postgres_0010's `recall_stop_words`, compared with this by a test): taking a word off
# this list needs a migration that writes its rows there.
STOP_WORDS = frozenset(
    {"a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "did", "do", "does", "for",
     "from", "had", "has", "have", "he", "her", "his", "how", "i", "if", "in", "into", "is", "it",
     "its", "me", "my", "of", "on", "or", "our", "she", "so", "that", "the", "their", "them",
     "they", "this", "to", "was", "we", "were", "what", "when", "where", "which", "who", "whom",
     "why", "will", "with", "you", "your"}
)  # fmt: skip
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def recall_text(predicate: str | None, value: Mapping[str, Any] | None, text: str) -> str:
    """What a fact's recall vector embeds: the identity text of an attribute or an
    occurrence ("bike count: 3"), the text of a free-text memory."""
    if predicate:
        return identity_text(predicate, dict(value) if value else None)
    return text.strip()


def query_terms(query: str) -> list[str]:
    """The question's words as the lexical arm matches them: folded like FTS5's `unicode61
    remove_diacritics 2` tokenizer (case and accents dropped, `_` and punctuation split),
    stop words left out, each once, at most `MAX_QUERY_TERMS`."""
    folded = unicodedata.normalize("NFKD", query.casefold())
    plain = "".join(ch for ch in folded if not unicodedata.combining(ch))
    words = [w for w in _WORD.findall(plain) if w not in STOP_WORDS]
    return list(dict.fromkeys(words))[:MAX_QUERY_TERMS]


@dataclass(frozen=True)
class Ranked:
    """One arm's result: a fact and its rank (from 1), with the arm's own score."""

    fact_id: str
    rank: int
    score: float  # lexical: BM25, higher is better; vector: cosine distance, lower is better


@dataclass(frozen=True)
class Fused:
    fact_id: str
    score: float
    parts: dict[str, dict[str, float | int]]


def fuse(arms: Mapping[str, Sequence[Ranked]]) -> dict[str, Fused]:
    """Reciprocal-rank fusion of the arms (see the module docstring), by fact id; `order`
    sorts the result."""
    fused: dict[str, Fused] = {}
    for arm, ranked in arms.items():
        label = "distance" if arm == "vector" else "score"
        for r in ranked:
            known = fused.get(r.fact_id) or Fused(r.fact_id, 0.0, {})
            parts = {**known.parts, arm: {"rank": r.rank, label: round(r.score, 6)}}
            fused[r.fact_id] = Fused(r.fact_id, known.score + 1.0 / (RRF_K + r.rank), parts)
    return fused


def order(fact: Fact, score: float) -> tuple[float, float, int, str]:
    """Best first: the fused score; among equals the last confirmed, then the most
    confirmed, then the id (so that a search is repeatable)."""
    return (-score, -fact.last_reinforced_at.timestamp(), -fact.reinforcement_count, fact.id)


@dataclass(frozen=True)
class Hit:
    """A fact found by a search: its fused score, what each arm said, whether it is
    contested, and its evidence (the ids always; the events when asked for)."""

    fact: Fact
    score: float
    parts: dict[str, dict[str, float | int]]
    conflict_ids: tuple[str, ...] = ()
    events: tuple[Event, ...] = field(default=())

    @property
    def contested(self) -> bool:
        """The fact sits in an open conflict set: another value (or another name for its
        attribute) is unresolved, so the agent must not take it as settled."""
        return bool(self.conflict_ids)

    def to_dict(self) -> dict[str, Any]:
        f = self.fact
        found: dict[str, Any] = {
            "id": f.id,
            "subject": f.subject,
            "kind": f.kind.value,
            "predicate": f.predicate,
            "value": f.value,
            "text": f.text,
            "status": f.status.value,
            "valid_from": f.valid_from.isoformat(),
            "valid_to": f.valid_to.isoformat() if f.valid_to else None,
            "recorded_at": f.recorded_at.isoformat(),
            "retired_at": f.retired_at.isoformat() if f.retired_at else None,
            "pinned": f.pinned,
            "reinforcement_count": f.reinforcement_count,
            "last_reinforced_at": f.last_reinforced_at.isoformat(),
            "score": self.score,
            "parts": self.parts,
            "contested": self.contested,
            "conflict_ids": list(self.conflict_ids),
            "evidence_event_ids": list(f.source_event_ids),
        }
        if self.events:
            found["events"] = [
                {
                    "id": e.id,
                    "text": e.text,
                    "occurred_at": e.occurred_at.isoformat(),
                    "source": e.source,
                }
                for e in self.events
            ]
        return found

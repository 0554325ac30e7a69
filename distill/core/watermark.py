"""The extraction watermark: which facts a pass that derives something from their text has
already read, so that it reads them again only when their text changed.

The graymatter seed's A7 ("every cycle re-extracted every surviving fact"): a pass that puts
facts to a model (the summariser, the memory judge, rule promotion; topics next) keeps, per
fact it has finished with, the SHA-256 of the text it read (`signature`). Its backlog in a
scope is the live memories with no mark of its own, or with a mark of another text
(`Store.unmarked_memories`): a new fact, or one whose text changed. A second run over memory
that did not change therefore reads no fact, asks nothing and writes nothing.

- **Only text counts.** A reinforcement, a new source or a new weight changes no signature:
  what a model would be shown is the same words, so its answer would be the same.
- **Retired facts are skipped.** A backlog holds live memories only, so retired content never
  goes back to a model; a fact that comes back (a resurrection) with the text it had is not
  read again.
- **A mark goes with its fact.** Erasing a subject deletes its marks, pruning a tombstone
  deletes the tombstone's marks; the store's foreign key refuses a mark of a fact that is not
  there.
- **Written through the applier.** A pass marks what it finished with (`MarkFacts`) in the
  transaction that applies what it derived, so a mark never covers work that was not written;
  each mark says which signature it replaces, and one that changed meanwhile refuses the
  plan, as any stale read does.

One mechanism for one job: this replaced the per-scope cursors (a position in the audit) the
judge, the summariser and rule promotion each walked, which counted a reinforcement as a
change and so asked the model again about words it had already answered on.

Pure: the signature, and the action that moves the watermark.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass


def signature(text: str) -> str:
    """The watermark's signature of a fact's text: the SHA-256 of its UTF-8 bytes, in hex.
    The PostgreSQL store computes the same in SQL (`sha256(convert_to(text, 'UTF8'))`), the
    SQLite store through this function; a contract test holds them equal."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Mark:
    """One fact's mark: the signature the pass read it under (`before`, None: unmarked) and
    the signature of the text it finished with (`after`)."""

    fact_id: str
    before: str | None
    after: str

"""Embeddings through the store's (model, text hash) cache, in three steps that may run apart.

`embed` looks the texts up in the cache, computes the missing ones with the model and
writes them back. A consolidation runs the three steps on different threads
(`preparation`): the deciding thread looks a batch's texts up while it stages the batch,
the preparation thread runs the model (for a batch no model extracts from, nothing else),
and the deciding thread writes the new vectors to the cache before it decides anything of
the batch. A cache write on the preparation
thread waited for the job being decided to commit (SQLite has one writer at a time), and
the model waited with it.

Every vector a batch needs is in the cache before its first decision, as before: the plans
name vectors by their text's hash.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from distill.core.identity import content_hash
from distill.errors import EmbeddingMismatch
from distill.ports import Embedder, Store, Vector


@dataclass(frozen=True)
class Lookup:
    """Texts looked up in the cache: each text's hash, and the vectors found by hash."""

    texts: list[str]
    hashes: dict[str, str]
    found: dict[str, Vector]

    @property
    def missing(self) -> list[str]:
        return [t for t in self.texts if self.hashes[t] not in self.found]

    def with_found(self, vectors: dict[str, Vector]) -> Lookup:
        """This lookup, with the vectors (by hash) of texts it did not find added."""
        extra = {
            h: vectors[h] for h in self.hashes.values() if h not in self.found and h in vectors
        }
        return Lookup(self.texts, self.hashes, {**self.found, **extra}) if extra else self


class CachedEmbedding:
    def __init__(self, store: Store, embedder: Embedder) -> None:
        self.store = store
        self.embedder = embedder

    def embed(self, texts: Sequence[str]) -> dict[str, Vector]:
        """Embeddings by text: looked up, computed where missing, the new ones kept."""
        if not texts:
            return {}
        lookup = self.lookup(texts)
        fresh = self.compute(lookup)
        self.keep(fresh)
        return self.by_text(lookup, fresh)

    def lookup(self, texts: Sequence[str]) -> Lookup:
        hashes = {t: content_hash(t) for t in texts}
        found = self.store.cached_embeddings(self.embedder.model_id, list(hashes.values()))
        return Lookup(list(texts), hashes, found)

    def compute(self, lookup: Lookup) -> dict[str, Vector]:
        """The model's vectors of the texts the cache lacks, by hash; not kept yet."""
        missing, model, size = lookup.missing, self.embedder.model_id, self.embedder.max_batch
        fresh: dict[str, Vector] = {}
        for start in range(0, len(missing), size):
            chunk = missing[start : start + size]
            rows = self.embedder.embed_batch(chunk)
            if rows.shape != (len(chunk), self.embedder.dimension):
                raise EmbeddingMismatch(
                    f"the embedder {model} returned vectors of shape {rows.shape} for "
                    f"{len(chunk)} texts, but says its vectors have {self.embedder.dimension} "
                    "values"
                )
            fresh.update({lookup.hashes[t]: rows[i] for i, t in enumerate(chunk)})
        return fresh

    def keep(self, fresh: dict[str, Vector]) -> None:
        if fresh:
            self.store.cache_embeddings(self.embedder.model_id, fresh)

    def by_text(self, lookup: Lookup, fresh: dict[str, Vector]) -> dict[str, Vector]:
        found = {
            t: np.asarray(fresh[h] if h in fresh else lookup.found[h], dtype=np.float32)
            for t, h in lookup.hashes.items()
        }
        sizes = {len(v) for v in found.values()}
        if len(sizes) > 1:
            # The cache holds another model's vectors under this id (a server that now serves
            # another model under the same name): any distance between them would be wrong.
            raise EmbeddingMismatch(
                f"vectors of {sorted(sizes)} values are stored under the one embedder id "
                f"{self.embedder.model_id!r}: two models have used this id. Give the new "
                "model its own id (model_id=...) or go back to the model the store was "
                "filled with"
            )
        return found

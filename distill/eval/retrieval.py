"""Ranking for the evaluation suites: Okapi BM25 and embedding similarity over a small corpus,
and the recall of the evidence a question cites among the top-ranked documents.

Written here rather than taken from a library: a corpus is one conversation (a few hundred
short documents), so a dense numpy matrix is enough, and the default install stays light.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

import numpy as np
import numpy.typing as npt

from distill.ports import Embedder, Vector

Scores = npt.NDArray[np.float64]

_WORD = re.compile(r"\w+")


def tokens(text: str) -> list[str]:
    """Lower-cased words: the plain tokenisation both documents and queries go through."""
    return _WORD.findall(text.lower())


class BM25:
    """Okapi BM25 (k1, b) over a fixed list of documents.

    The weight of each (document, term) pair is computed once, so scoring a query is one
    matrix-vector product. The idf is Lucene's ``ln(1 + (N - n + 0.5) / (n + 0.5))``, which
    stays positive for terms found in most documents (the classic form goes negative).
    """

    def __init__(self, documents: Sequence[str], k1: float = 1.5, b: float = 0.75) -> None:
        docs = [tokens(d) for d in documents]
        self.vocabulary = {t: i for i, t in enumerate(sorted({t for d in docs for t in d}))}
        tf = np.zeros((len(docs), len(self.vocabulary)))
        for row, words in enumerate(docs):
            for word in words:
                tf[row, self.vocabulary[word]] += 1
        lengths = tf.sum(axis=1)
        average = max(float(lengths.mean()), 1.0) if len(docs) else 1.0
        df = (tf > 0).sum(axis=0)
        idf = np.log1p((len(docs) - df + 0.5) / (df + 0.5))
        norm = k1 * (1 - b + b * lengths / average)
        self.weights = idf * tf * (k1 + 1) / (tf + norm[:, None])

    def scores(self, query: str) -> Scores:
        """One score per document; a query term counts once per occurrence in the query."""
        counts = np.zeros(len(self.vocabulary))
        for word in tokens(query):
            column = self.vocabulary.get(word)
            if column is not None:
                counts[column] += 1
        return np.asarray(self.weights @ counts, dtype=np.float64)


def ranking(scores: Scores) -> list[int]:
    """Document indices, best first; ties keep the corpus order (a stable sort)."""
    return [int(i) for i in np.argsort(-scores, kind="stable")]


def recall_at(evidence: frozenset[str], cited: Sequence[Iterable[str]], k: int) -> float:
    """The share of `evidence` found among what the first `k` ranked documents cite."""
    found: set[str] = set()
    for ids in cited[:k]:
        found.update(ids)
    return len(evidence & found) / len(evidence)


def embed_all(
    embedder: Embedder,
    texts: Sequence[str],
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Vector]:
    """Each distinct text's vector, embedded in the embedder's batch size."""
    distinct = list(dict.fromkeys(texts))
    vectors: dict[str, Vector] = {}
    for start in range(0, len(distinct), embedder.max_batch):
        chunk = distinct[start : start + embedder.max_batch]
        vectors.update(zip(chunk, embedder.embed_batch(chunk), strict=True))
        if progress is not None:
            progress(start + len(chunk), len(distinct))
    return vectors

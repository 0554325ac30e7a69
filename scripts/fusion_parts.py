"""What `search_fusion_study.py` ranks with: the corpus, built once (LoCoMo's conversations
consolidated by the suite's own functions, every text embedded once), the lexical arms
(tokenizers close to the suite's, SQLite FTS5's and PostgreSQL's, and a term-count index
scored as BM25, FTS5's bm25() or ts_rank) and the score transforms of score fusion."""

from __future__ import annotations

import math
import re
import sys
import time
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from distill.eval.context import EvalContext
from distill.eval.locomo import FILE, Doc, Question, consolidate, read
from distill.eval.retrieval import embed_all
from distill.eval.retrieval import tokens as suite_tokens

Matrix = npt.NDArray[np.float64]

# PostgreSQL's english.stop (the Snowball list): what the `english` configuration drops.
_ENGLISH_STOP = """
i me my myself we our ours ourselves you your yours yourself yourselves he him his
himself she her hers herself it its itself they them their theirs themselves what which
who whom this that these those am is are was were be been being have has had having do
does did doing a an the and but if or because as until while of at by for with about
against between into through during before after above below to from up down in out on
off over under again further then once here there when where why how all any both each
few more most other some such no nor not only own same so than too very s t can will
just don should now
"""
STOP_WORDS = frozenset(_ENGLISH_STOP.split())


# -- tokenizers ------------------------------------------------------------------------------------
def fts5_tokens(text: str) -> list[str]:
    """SQLite FTS5 `unicode61 remove_diacritics 2`: runs of letters and digits (everything
    else, the underscore included, separates), case-folded, diacritics removed."""
    folded = unicodedata.normalize("NFKD", text.lower())
    plain = "".join(c for c in folded if not unicodedata.combining(c))
    return re.findall(r"[^\W_]+", plain)


_PG_WORD = re.compile(r"[^\W_]+(?:-[^\W_]+)*")


def pg_simple_tokens(text: str) -> list[str]:
    """PostgreSQL's default parser with the `simple` dictionary: lower-cased words, no stop
    words, no stemming, accents kept; a hyphenated word yields itself and its parts."""
    out: list[str] = []
    for word in _PG_WORD.findall(text.lower()):
        if "-" in word:
            out.append(word)
            out.extend(word.split("-"))
        else:
            out.append(word)
    return out


def pg_english_tokens(text: str) -> list[str]:
    """The `english` configuration without its stemmer: `simple` minus english.stop."""
    return [t for t in pg_simple_tokens(text) if t not in STOP_WORDS]


def suite_stop_tokens(text: str) -> list[str]:
    return [t for t in suite_tokens(text) if t not in STOP_WORDS]


TOKENIZERS: dict[str, Callable[[str], list[str]]] = {
    "suite": suite_tokens,
    "suite-stop": suite_stop_tokens,
    "fts5": fts5_tokens,
    "pg-simple": pg_simple_tokens,
    "pg-english": pg_english_tokens,
}


# -- a lexical index over one conversation -------------------------------------------------------
class Lexical:
    """Term counts of a fixed list of documents, scored several ways."""

    def __init__(self, docs: Sequence[str], tokenize: Callable[[str], list[str]]) -> None:
        self.tokenize = tokenize
        words = [tokenize(d) for d in docs]
        self.vocabulary = {t: i for i, t in enumerate(sorted({t for w in words for t in w}))}
        self.tf = np.zeros((len(docs), len(self.vocabulary)))
        for row, ws in enumerate(words):
            for w in ws:
                self.tf[row, self.vocabulary[w]] += 1
        self.lengths = self.tf.sum(axis=1)
        self.n = len(docs)
        self.df = (self.tf > 0).sum(axis=0)

    def query_counts(self, queries: Sequence[str]) -> Matrix:
        counts = np.zeros((len(queries), len(self.vocabulary)))
        for row, q in enumerate(queries):
            for w in self.tokenize(q):
                col = self.vocabulary.get(w)
                if col is not None:
                    counts[row, col] += 1
        return counts

    def idf(self, kind: str = "lucene") -> Matrix:
        n, df = self.n, self.df
        if kind == "lucene":  # the suite's: ln(1 + (N - n + 0.5) / (n + 0.5))
            return np.asarray(np.log1p((n - df + 0.5) / (df + 0.5)), dtype=np.float64)
        if kind == "fts5":  # FTS5 bm25(): ln((N - n + 0.5) / (n + 0.5)), at least 1e-6
            return np.asarray(
                np.maximum(np.log((n - df + 0.5) / (df + 0.5)), 1e-6), dtype=np.float64
            )
        if kind == "none":
            return np.ones_like(df, dtype=np.float64)
        raise ValueError(kind)

    def bm25_weights(self, k1: float, b: float, idf: str) -> Matrix:
        average = max(float(self.lengths.mean()), 1.0)
        norm = k1 * (1 - b + b * self.lengths / average)
        return np.asarray(
            self.idf(idf) * self.tf * (k1 + 1) / (self.tf + norm[:, None]), dtype=np.float64
        )

    def ts_rank(self, counts: Matrix, normalization: int = 0) -> Matrix:
        """PostgreSQL ts_rank of an OR query (calc_rank_or), every lexeme at weight D (0.1):
        per matched distinct query lexeme 0.1·Σ_{j≤tf} 1/j² / (π²/6), divided by the number
        of distinct query lexemes; no idf. Normalisation 1 divides by 1 + ln(length)."""
        harmonic = np.zeros_like(self.tf)
        nz = self.tf > 0
        # Σ_{j=1..tf} 1/j²; tf is small, so a table is enough.
        table = np.cumsum(1.0 / np.arange(1, 64) ** 2)
        harmonic[nz] = table[np.minimum(self.tf[nz].astype(int), 63) - 1]
        per_term = 0.1 * harmonic / (math.pi**2 / 6)
        present = (counts > 0).astype(np.float64)
        size = np.maximum(present.sum(axis=1, keepdims=True), 1.0)
        scores = (present @ per_term.T) / size
        if normalization == 1:
            scores = scores / (1 + np.log(np.maximum(self.lengths, 1.0)))[None, :]
        return np.asarray(scores, dtype=np.float64)


# -- the data, built once ------------------------------------------------------------------------
@dataclass
class Conversation:
    name: str
    docs: list[Doc]
    questions: list[Question]
    doc_vectors: Matrix  # n × d, unit rows
    question_vectors: Matrix  # m × d
    recency: Matrix  # n: 0 for the oldest session, 1 for the newest
    reinforcement: Matrix  # n: the facts' reinforcement counts
    lexical: dict[str, Lexical] = field(default_factory=dict)
    counts: dict[str, Matrix] = field(default_factory=dict)  # tokenizer → m × V
    cache: dict[str, Matrix] = field(default_factory=dict)

    @property
    def cos(self) -> Matrix:
        if "cos" not in self.cache:
            self.cache["cos"] = self.question_vectors @ self.doc_vectors.T
        return self.cache["cos"]

    def bm25(
        self, tok: str = "suite", k1: float = 1.5, b: float = 0.75, idf: str = "lucene"
    ) -> Matrix:
        key = f"bm25:{tok}:{k1}:{b}:{idf}"
        if key not in self.cache:
            weights = self.lexical[tok].bm25_weights(k1, b, idf)
            self.cache[key] = self.counts[tok] @ weights.T
        return self.cache[key]


def build(data: Path, limit: int | None) -> list[Conversation]:
    ctx = EvalContext(data_dir=data, limit=limit)
    conversations = ctx.take(ctx.read_json(*FILE))
    said, questions = read(conversations)
    started = time.perf_counter()
    reinforced: dict[tuple[str, str], int] = {}
    with ctx.memory(extractor="claims") as mem:
        done = consolidate(mem, said, lambda n, total: None)
        for project in done.live.docs:
            for fact in mem.facts(project=project):
                reinforced[(project, fact.text)] = fact.reinforcement_count
    print(f"consolidated in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    embedder = ctx.shared_embedder()
    texts = [d.text for docs in done.live.docs.values() for d in docs] + [q.text for q in questions]
    started = time.perf_counter()
    vectors = embed_all(embedder, texts)
    print(
        f"embedded {len(vectors)} texts in {time.perf_counter() - started:.1f} s", file=sys.stderr
    )
    asked: dict[str, list[Question]] = defaultdict(list)
    for q in questions:
        if q.evidence:  # the suite scores questions with evidence only
            asked[q.conversation].append(q)
    out = []
    for name, facts in done.live.docs.items():
        docs = sorted(facts, key=lambda d: (d.since, d.text))  # the suite's order
        days = np.array([d.since.toordinal() for d in docs], dtype=np.float64)
        span = max(days.max() - days.min(), 1.0)
        conv = Conversation(
            name=name,
            docs=docs,
            questions=asked[name],
            doc_vectors=np.array([vectors[d.text] for d in docs], dtype=np.float64),
            question_vectors=np.array([vectors[q.text] for q in asked[name]], dtype=np.float64),
            recency=(days - days.min()) / span,
            reinforcement=np.array([reinforced.get((name, d.text), 0) for d in docs], float),
        )
        for tok, fn in TOKENIZERS.items():
            conv.lexical[tok] = Lexical([d.text for d in docs], fn)
            conv.counts[tok] = conv.lexical[tok].query_counts([q.text for q in conv.questions])
        out.append(conv)
    # One FTS5 table holds every project's facts, and its bm25() takes N and each term's
    # document count from the whole table: "fts5-global" scores with those.
    df: Counter[str] = Counter()
    for conv in out:
        lexi = conv.lexical["fts5"]
        df.update({t: int(lexi.df[i]) for t, i in lexi.vocabulary.items()})
    total = sum(len(conv.docs) for conv in out)
    average = sum(float(c.lexical["fts5"].lengths.sum()) for c in out) / max(total, 1)
    for conv in out:
        lexi = conv.lexical["fts5"]
        n = np.array(
            [df[t] for t in sorted(lexi.vocabulary, key=lexi.vocabulary.__getitem__)],
            dtype=np.float64,
        )
        idf = np.maximum(np.log((total - n + 0.5) / (n + 0.5)), 1e-6)
        norm = 1.2 * (1 - 0.75 + 0.75 * lexi.lengths / average)
        weights = idf * lexi.tf * 2.2 / (lexi.tf + norm[:, None])
        conv.cache["lex:fts5-global"] = conv.counts["fts5"] @ weights.T
    return out


# -- score transforms ------------------------------------------------------------------------------
def minmax(s: Matrix) -> Matrix:
    lo, hi = s.min(axis=1, keepdims=True), s.max(axis=1, keepdims=True)
    return np.asarray((s - lo) / np.where(hi > lo, hi - lo, 1.0), dtype=np.float64)


def zscore(s: Matrix) -> Matrix:
    sd = s.std(axis=1, keepdims=True)
    return np.asarray(
        (s - s.mean(axis=1, keepdims=True)) / np.where(sd > 0, sd, 1.0), dtype=np.float64
    )


def maxnorm(s: Matrix) -> Matrix:
    hi = s.max(axis=1, keepdims=True)
    return s / np.where(hi > 0, hi, 1.0)


def ranks(s: Matrix) -> Matrix:
    """1-based rank of each document per row (ties broken by corpus order, as the suite)."""
    order = np.argsort(-s, axis=1, kind="stable")
    r = np.empty_like(order)
    rows = np.arange(s.shape[0])[:, None]
    r[rows, order] = np.arange(1, s.shape[1] + 1)[None, :]
    return r.astype(np.float64)


def top_mask(s: Matrix, depth: int) -> Matrix:
    """1 where the document is among the row's `depth` best with a positive score."""
    return ((ranks(s) <= depth) & (s > 0)).astype(np.float64)

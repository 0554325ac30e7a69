"""Which fusion of a lexical and a vector arm beats both on LoCoMo evidence recall?

Research for `Memory.search`: its evidence recall on the `locomo` suite must beat the better
of the suite's BM25 and embedding arms by at least 0.03 at @5 and at @20. This script builds
the suite's documents (the live facts after consolidation, each with the dialog ids its
source events cite) and questions once, with the suite's own functions, embeds every text
once (in memory), and then scores many rankers on the same data:

* each arm alone (the suite's BM25; cosine similarity with the run's embedder);
* reciprocal-rank fusion (several k, weighted), rank interleaving;
* score fusion after normalisation (min-max, z-score, max), with weights;
* the lexical arm on other terms: its query terms weighted (stop words dropped, idf
  counted twice), expanded by the terms of the embedding's nearest documents, gated
  (the embedding ranking restricted to, or boosted by, lexical matches);
* the embedding query expanded by its nearest documents (Rocchio);
* recency and reinforcement as a small prior;
* lexical arms the product can run: a tokenizer close to SQLite FTS5's ``unicode61
  remove_diacritics 2`` scored with FTS5's bm25() (k1 1.2, b 0.75, its idf), and
  PostgreSQL's ``simple``/``english`` configurations scored like ``ts_rank`` (no idf).

Parameters are chosen on the TUNE conversations (the first half) only; every ranker is then
reported on the tune half, the HELD-OUT half (never tuned on) and all conversations. The
choice maximises the worse of the two margins over the better single arm of the tune half:
``min(recall@5 - best@5, recall@20 - best@20)``.

    python scripts/search_fusion_study.py [--data DIR] [--limit N] [--tune N]
        [--markdown FILE] [--examples N]

``--limit`` reads the first N conversations only (a quick run); ``--tune`` is how many of
them are tuned on (half by default).
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from fusion_parts import (  # scripts/ is on the path when run as a script
    Conversation,
    Matrix,
    build,
    maxnorm,
    minmax,
    ranks,
    top_mask,
    zscore,
)

from distill.eval.context import default_data_dir
from distill.eval.retrieval import recall_at

KS = (5, 20)
DEPTH = max(KS)


# -- rankers ---------------------------------------------------------------------------------------
Ranker = Callable[[Conversation], Matrix]


@dataclass(frozen=True)
class Candidate:
    family: str
    name: str
    fn: Ranker


def lex(c: Conversation, tok: str = "suite") -> Matrix:
    if tok == "fts5":
        return np.asarray(c.bm25("fts5", 1.2, 0.75, "fts5"), dtype=np.float64)
    if tok.startswith("pg-") and not tok.endswith("-bm25"):
        name, _, norm = tok.partition(":")
        key = f"ts:{tok}"
        if key not in c.cache:
            c.cache[key] = c.lexical[name].ts_rank(c.counts[name], int(norm or 0))
        return c.cache[key]
    if tok == "fts5-global":
        return c.cache["lex:fts5-global"]
    if tok == "fts5-and":  # FTS5's default MATCH: every query term must be in the document
        present = (c.counts["fts5"] > 0).astype(np.float64)
        matched = present @ (c.lexical["fts5"].tf > 0).T
        every = matched >= present.sum(axis=1, keepdims=True)
        return np.where(every, lex(c, "fts5"), 0.0)
    if tok == "pg-simple-bm25":  # tsquery finds the rows, the store adds bm25 with its own df
        return np.asarray(c.bm25("pg-simple", 1.2, 0.75, "fts5"), dtype=np.float64)
    if tok == "pg-english-bm25":
        return np.asarray(c.bm25("pg-english", 1.2, 0.75, "fts5"), dtype=np.float64)
    if tok.endswith("-noidf"):
        return np.asarray(c.bm25(tok.removesuffix("-noidf"), 1.2, 0.75, "none"), dtype=np.float64)
    if tok == "idf2":
        return weighted_query("idf2", 1.0)(c)
    if tok.startswith("prf"):  # "prf3": expanded by the embedding's 3 nearest, weight 0.3
        key = f"lex:{tok}"
        if key not in c.cache:
            c.cache[key] = expanded(c, int(tok[3:]), 0.3)
        return c.cache[key]
    return np.asarray(c.bm25(tok), dtype=np.float64)


def expanded(c: Conversation, m: int, beta: float, tok: str = "suite") -> Matrix:
    """BM25 of the query plus the terms of the embedding's `m` nearest documents, each
    weighted `beta` times the share of those neighbours that hold it."""
    lexi = c.lexical[tok]
    near = np.argsort(-c.cos, axis=1, kind="stable")[:, :m]
    expansion = (lexi.tf[near] > 0).sum(axis=1) / m  # m × V
    counts = c.counts[tok] + beta * expansion
    if tok == "fts5":
        return np.asarray(counts @ lexi.bm25_weights(1.2, 0.75, "fts5").T, dtype=np.float64)
    return np.asarray(counts @ lexi.bm25_weights(1.5, 0.75, "lucene").T, dtype=np.float64)


def rrf(k: float, w_lex: float = 1.0, tok: str = "suite", depth: int | None = None) -> Ranker:
    """Reciprocal-rank fusion. With `depth`, each arm hands over only its `depth` best (the
    lexical arm only documents it matches, as FTS5 and tsquery do); others add nothing."""

    def fn(c: Conversation) -> Matrix:
        lexical, cos = lex(c, tok), c.cos
        rl, re_ = ranks(lexical), ranks(cos)
        fused = w_lex / (k + rl) + 1.0 / (k + re_)
        if depth is None:
            return fused
        keep_l = (rl <= depth) & (lexical > 0)
        keep_e = re_ <= depth
        return np.where(keep_l, w_lex / (k + rl), 0.0) + np.where(keep_e, 1.0 / (k + re_), 0.0)

    return fn


def convex(norm: Callable[[Matrix], Matrix], alpha: float, tok: str = "suite") -> Ranker:
    def fn(c: Conversation) -> Matrix:
        return alpha * norm(lex(c, tok)) + (1 - alpha) * norm(c.cos)

    return fn


def cos_plus_raw(alpha: float, tok: str = "suite") -> Ranker:
    """Cosine plus the lexical score unnormalised: a query whose rare terms match strongly
    lets the lexical arm weigh more, a weak lexical match barely moves the embedding order."""

    def fn(c: Conversation) -> Matrix:
        return c.cos + alpha * lex(c, tok)

    return fn


def cos_plus_query_norm(alpha: float, tok: str = "suite") -> Ranker:
    """Cosine plus the lexical score divided by the best score the query could reach (its
    terms' idf mass): the share of the query's information a document matches."""

    def fn(c: Conversation) -> Matrix:
        lexi = c.lexical[tok]
        k1 = 1.5
        ceiling = c.counts[tok] @ (lexi.idf("lucene") * (k1 + 1))
        return c.cos + alpha * lex(c, tok) / np.maximum(ceiling, 1e-9)[:, None]

    return fn


def interleave(lead: str, every: int) -> Ranker:
    """Alternate the two rankings: `every` from the leading arm, then one from the other,
    skipping documents already taken."""

    def fn(c: Conversation) -> Matrix:
        first, second = (c.cos, lex(c)) if lead == "emb" else (lex(c), c.cos)
        o1 = np.argsort(-first, axis=1, kind="stable")
        o2 = np.argsort(-second, axis=1, kind="stable")
        out = np.zeros_like(first)
        n = first.shape[1]
        for row in range(first.shape[0]):
            taken: list[int] = []
            seen: set[int] = set()
            i = j = 0
            while len(taken) < n:
                for _ in range(every):
                    while i < n and int(o1[row, i]) in seen:
                        i += 1
                    if i < n:
                        taken.append(int(o1[row, i]))
                        seen.add(int(o1[row, i]))
                while j < n and int(o2[row, j]) in seen:
                    j += 1
                if j < n:
                    taken.append(int(o2[row, j]))
                    seen.add(int(o2[row, j]))
            out[row, taken] = np.arange(n, 0, -1)
        return out

    return fn


def gate(depth: int, bonus: float) -> Ranker:
    """The embedding ranking, with a bonus for documents in the lexical arm's top `depth`
    (bonus 1 = restricted to them first)."""

    def fn(c: Conversation) -> Matrix:
        return c.cos + bonus * top_mask(lex(c), depth)

    return fn


def weighted_query(mode: str, alpha: float) -> Ranker:
    """BM25 with its query terms reweighted, fused by min-max with the embedding."""

    def fn(c: Conversation) -> Matrix:
        key = f"wq:{mode}"
        if key not in c.cache:
            tok = "suite-stop" if mode == "stop" else "suite"
            counts = c.counts[tok]
            weights = c.lexical[tok].bm25_weights(1.5, 0.75, "lucene")
            if mode == "idf2":
                counts = counts * c.lexical[tok].idf("lucene")
            c.cache[key] = counts @ weights.T
        scores = c.cache[key]
        return scores if alpha >= 1 else alpha * minmax(scores) + (1 - alpha) * minmax(c.cos)

    return fn


def lexical_prf(m: int, beta: float, alpha: float) -> Ranker:
    """The lexical query expanded with the terms of the embedding's `m` nearest documents
    (weight `beta`, shared among them), then fused by min-max with the embedding."""

    def fn(c: Conversation) -> Matrix:
        return alpha * minmax(expanded(c, m, beta)) + (1 - alpha) * minmax(c.cos)

    return fn


def rocchio(m: int, beta: float, alpha: float, seed: str = "emb") -> Ranker:
    """The embedding query moved toward its `m` best documents (by the embedding alone or
    by the fused ranking), then fused by min-max with the lexical arm."""

    def fn(c: Conversation) -> Matrix:
        first = c.cos if seed == "emb" else alpha * minmax(lex(c)) + (1 - alpha) * minmax(c.cos)
        near = np.argsort(-first, axis=1, kind="stable")[:, :m]
        q = c.question_vectors + beta * c.doc_vectors[near].mean(axis=1)
        q /= np.linalg.norm(q, axis=1, keepdims=True)
        cos = q @ c.doc_vectors.T
        return alpha * minmax(lex(c)) + (1 - alpha) * minmax(cos)

    return fn


def with_prior(base: Ranker, recency: float, reinforcement: float) -> Ranker:
    def fn(c: Conversation) -> Matrix:
        s = minmax(base(c))
        return s + recency * c.recency[None, :] + reinforcement * np.log1p(c.reinforcement)[None, :]

    return fn


def candidates() -> list[Candidate]:
    out = [
        Candidate("arm", "BM25 (suite)", lambda c: lex(c)),
        Candidate("arm", "embedding", lambda c: c.cos),
    ]
    for tok in ("suite-stop", "fts5", "pg-simple", "pg-simple:1", "pg-english", "pg-english:1"):
        out.append(Candidate("lexical arm", tok, functools.partial(lex, tok=tok)))
    for tok in ("fts5-noidf", "fts5-and", "fts5-global", "pg-simple-bm25", "pg-english-bm25"):
        out.append(Candidate("lexical arm", tok, functools.partial(lex, tok=tok)))
    for k in (1, 5, 10, 20, 30, 60, 100):
        for w in (0.5, 0.75, 1.0, 1.5):
            out.append(Candidate("RRF", f"k={k} w_lex={w}", rrf(k, w)))
    alphas = [round(a, 2) for a in np.arange(0.05, 1.0, 0.05)]
    for nname, norm in (("min-max", minmax), ("z-score", zscore), ("max", maxnorm)):
        for a in alphas:
            out.append(Candidate(f"convex {nname}", f"a_lex={a}", convex(norm, a)))
    for a in (0.002, 0.005, 0.01, 0.015, 0.02, 0.03, 0.05, 0.1):
        out.append(Candidate("cos + a*BM25 (raw)", f"a={a}", cos_plus_raw(a)))
    for a in (0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.6):
        out.append(Candidate("cos + a*BM25/query ceiling", f"a={a}", cos_plus_query_norm(a)))
    for lead, every in (("emb", 1), ("emb", 2), ("lex", 1)):
        out.append(Candidate("interleave", f"{lead} first, {every}:1", interleave(lead, every)))
    for depth in (5, 10, 20, 50):
        for bonus in (0.05, 0.1, 0.2, 1.0):
            out.append(Candidate("lexical gate", f"top{depth} +{bonus}", gate(depth, bonus)))
    for mode in ("stop", "idf2"):
        out.append(Candidate("weighted query", f"{mode} alone", weighted_query(mode, 1.0)))
        for a in (0.3, 0.4, 0.5, 0.6, 0.7):
            out.append(Candidate("weighted query", f"{mode} mm a={a}", weighted_query(mode, a)))
    for m in (3, 5):
        for beta in (0.1, 0.3):
            for a in (0.4, 0.5, 0.6):
                out.append(
                    Candidate("lexical PRF", f"m={m} b={beta} a={a}", lexical_prf(m, beta, a))
                )
    for seed in ("emb", "fused"):
        for m in (3, 5, 10):
            for beta in (0.25, 0.5, 1.0):
                for a in (0.4, 0.5, 0.6):
                    out.append(
                        Candidate(
                            f"Rocchio ({seed} seed)",
                            f"m={m} b={beta} a={a}",
                            rocchio(m, beta, a, seed),
                        )
                    )
    for tok in ("idf2", "prf3", "prf5"):
        for k in (1, 5, 10, 20):
            for w in (0.75, 1.0):
                out.append(Candidate(f"RRF, lexical {tok}", f"k={k} w_lex={w}", rrf(k, w, tok)))
    # What the product can run: FTS5 or tsquery hands over the documents it matches, the
    # vector index its nearest; both cut at a depth.
    for tok in (
        "fts5",
        "fts5-global",
        "fts5-and",
        "pg-simple-bm25",
        "pg-english-bm25",
        "pg-english",
        "pg-english:1",
        "pg-simple",
        "fts5-noidf",
    ):
        for k in (1, 5, 10, 60):
            for depth in (20, 50):
                out.append(
                    Candidate(
                        f"product RRF, {tok}", f"k={k} depth={depth}", rrf(k, 1.0, tok, depth)
                    )
                )
    base = convex(minmax, 0.5)
    for r in (-0.1, -0.05, -0.02, 0.02, 0.05, 0.1):
        out.append(Candidate("recency prior (mm 0.5)", f"r={r}", with_prior(base, r, 0.0)))
    out.append(Candidate("reinforcement prior (mm 0.5)", "g=0.05", with_prior(base, 0.0, 0.05)))
    return out


# -- measuring -------------------------------------------------------------------------------------
def recalls(c: Conversation, scores: Matrix) -> Matrix:
    """m × len(KS): each question's evidence recall at each k."""
    top = np.argsort(-scores, axis=1, kind="stable")[:, :DEPTH]
    out = np.zeros((len(c.questions), len(KS)))
    for row, q in enumerate(c.questions):
        cited = [c.docs[int(i)].dia_ids for i in top[row]]
        out[row] = [recall_at(q.evidence, cited, k) for k in KS]
    return out


@dataclass
class Result:
    candidate: Candidate
    per_conv: list[Matrix]  # one m × len(KS) per conversation

    def mean(self, convs: Sequence[int]) -> tuple[float, ...]:
        rows = np.vstack([self.per_conv[i] for i in convs])
        return tuple(float(x) for x in rows.mean(axis=0))


def evaluate(convs: list[Conversation], cands: list[Candidate]) -> list[Result]:
    results = []
    for cand in cands:
        results.append(Result(cand, [recalls(c, cand.fn(c)) for c in convs]))
    return results


def margin(r: tuple[float, ...], best: tuple[float, ...]) -> float:
    return min(a - b for a, b in zip(r, best, strict=True))


def fmt(r: tuple[float, ...]) -> str:
    return " / ".join(f"{x:.3f}" for x in r)


def table(results: list[Result], tune: list[int], held: list[int], every: list[int]) -> str:
    arms = [r for r in results if r.candidate.family == "arm"]
    best = {
        name: tuple(max(a.mean(idx)[i] for a in arms) for i in range(len(KS)))
        for name, idx in (("tune", tune), ("held", held), ("all", every))
    }
    lines = [
        "| family | ranker | tune @5 / @20 | held-out @5 / @20 | all @5 / @20 | "
        "margin tune | margin held-out |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        t, h, a = r.mean(tune), r.mean(held), r.mean(every)
        lines.append(
            f"| {r.candidate.family} | {r.candidate.name} | {fmt(t)} | {fmt(h) if held else '—'} "
            f"| {fmt(a)} | {margin(t, best['tune']):+.3f} | "
            f"{margin(h, best['held']):+.3f} |"
            if held
            else f"| {r.candidate.family} | {r.candidate.name} | {fmt(t)} | — | {fmt(a)} | "
            f"{margin(t, best['tune']):+.3f} | — |"
        )
    return "\n".join(lines)


def chosen(results: list[Result], tune: list[int]) -> list[Result]:
    """Per family, the configuration with the best tune margin."""
    arms = [r for r in results if r.candidate.family == "arm"]
    best = tuple(max(a.mean(tune)[i] for a in arms) for i in range(len(KS)))
    by_family: dict[str, list[Result]] = defaultdict(list)
    for r in results:
        by_family[r.candidate.family].append(r)
    out = []
    for family, rs in by_family.items():
        if family in ("arm", "lexical arm"):
            out.extend(rs)
            continue
        out.append(max(rs, key=lambda r: (margin(r.mean(tune), best), r.mean(tune))))
    return out


PRODUCT = "product RRF, fts5"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


def first_hit(c: Conversation, scores: Matrix) -> list[int]:
    """Per question, the 1-based rank of the first document citing its evidence (0: none)."""
    order = np.argsort(-scores, axis=1, kind="stable")
    out = []
    for row, q in enumerate(c.questions):
        hit = next((i + 1 for i, d in enumerate(order[row]) if c.docs[d].dia_ids & q.evidence), 0)
        out.append(hit)
    return out


def explain(
    convs: list[Conversation], results: list[Result], winner: Result, examples: int
) -> None:
    """Why the winner works: what each arm misses that the other finds, by category, and a
    few questions where it shows."""
    arms = {r.candidate.name: r for r in results if r.candidate.family == "arm"}
    bm25, emb = arms["BM25 (suite)"], arms["embedding"]
    print("\n## Recall by category (all conversations), @5 / @20\n")
    print("| ranker | " + " | ".join(CATEGORIES.values()) + " | all |")
    print("|---|" + "---|" * (len(CATEGORIES) + 1))
    cats = [q.category for c in convs for q in c.questions]
    for r in (bm25, emb, winner):
        rows = np.vstack(r.per_conv)
        cells = [
            fmt(tuple(rows[[i for i, x in enumerate(cats) if x == cat]].mean(axis=0)))
            for cat in CATEGORIES
        ]
        print(
            f"| {r.candidate.family}: {r.candidate.name} | " + " | ".join(cells) + " | "
            f"{fmt(tuple(rows.mean(axis=0)))} |"
        )
    # Where the other arm ranks what one arm misses.
    only: dict[str, Counter[str]] = {"BM25": Counter(), "embedding": Counter()}
    shown: Counter[str] = Counter()
    lines: list[str] = []
    total = 0
    for c in convs:
        hb, he = first_hit(c, lex(c)), first_hit(c, c.cos)
        hw = first_hit(c, winner.candidate.fn(c))
        for row, q in enumerate(c.questions):
            total += 1
            for name, mine, other in (("BM25", hb[row], he[row]), ("embedding", he[row], hb[row])):
                if not (0 < mine <= 5 and not 0 < other <= 5):
                    continue
                only[name]["1" if mine == 1 else "2-3" if mine <= 3 else "4-5"] += 1
                if 0 < hw[row] <= 5 and shown[name] < examples and mine == 1 and other > 20:
                    shown[name] += 1
                    arm = lex(c) if name == "BM25" else c.cos
                    doc = c.docs[int(np.argmax(arm[row]))]
                    lines.append(
                        f"- only {name} [{c.name}, {CATEGORIES[q.category]}] Q: {q.text!r}\n"
                        f"  evidence fact: {doc.text!r}\n  first evidence rank: BM25 "
                        f"{hb[row] or '-'}, embedding {he[row] or '-'}, winner {hw[row]}"
                    )
    print("\n## Complementarity (all conversations)\n")
    print("\n".join(lines))
    for name, bands in only.items():
        n = sum(bands.values())
        print(
            f"\nquestions whose first evidence only {name} puts in its top 5: {n} of {total}; "
            f"its rank there: " + ", ".join(f"{b}: {bands[b]}" for b in ("1", "2-3", "4-5"))
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=default_data_dir())
    parser.add_argument("--limit", type=int, default=None, help="first N conversations")
    parser.add_argument("--tune", type=int, default=None, help="conversations tuned on")
    parser.add_argument("--markdown", type=Path, help="write every ranker's row here")
    parser.add_argument("--examples", type=int, default=3, help="questions shown as examples")
    args = parser.parse_args(argv)

    started = time.perf_counter()
    convs = build(args.data, args.limit)
    n_tune = args.tune if args.tune is not None else max(1, len(convs) // 2)
    tune, held = list(range(n_tune)), list(range(n_tune, len(convs)))
    every = list(range(len(convs)))
    print(
        f"{len(convs)} conversations, {sum(len(c.docs) for c in convs)} live facts, "
        f"{sum(len(c.questions) for c in convs)} questions; tune "
        f"{[convs[i].name for i in tune]} ({sum(len(convs[i].questions) for i in tune)} q), "
        f"held out {[convs[i].name for i in held]} "
        f"({sum(len(convs[i].questions) for i in held)} q)",
        file=sys.stderr,
    )
    results = evaluate(convs, candidates())
    print(f"{len(results)} rankers in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    print("## Chosen on the tune half (one per family)\n")
    picked = chosen(results, tune)
    print(table(picked, tune, held, every))
    arms = [r for r in results if r.candidate.family == "arm"]
    best = tuple(max(a.mean(tune)[i] for a in arms) for i in range(len(KS)))
    fused = [r for r in picked if r.candidate.family not in ("arm", "lexical arm")]
    winner = max(fused, key=lambda r: (margin(r.mean(tune), best), r.mean(tune)))
    print(f"\nbest on the tune half: {winner.candidate.family}, {winner.candidate.name}")
    # The design proposed for the product: the best the product can run as it is (FTS5's
    # bm25 and the vector index, fused by rank), chosen on the tune half too.
    product = max(
        (r for r in results if r.candidate.family == PRODUCT),
        key=lambda r: (margin(r.mean(tune), best), r.mean(tune)),
    )
    print(f"proposed (best of {PRODUCT!r} on the tune half): {product.candidate.name}")
    print(table([*arms, product], tune, held, every))
    explain(convs, results, product, args.examples)
    if args.markdown:
        args.markdown.write_text(table(results, tune, held, every) + "\n", encoding="utf-8")
        print(f"\nevery ranker: {args.markdown}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""How much onnxruntime's second intra-op thread speeds up the default embedder, on this machine.

    python bench/embed_threads.py                 # the 10,062 texts of a 10,000-event round
    python bench/embed_threads.py --n 3000 --rounds 5

Embeds the texts `bench/consolidate.py` embeds for N events, with onnxruntime's default
thread count (one per core) and with one thread, alternating, a fresh embedder each time,
and prints wall and CPU seconds of each round and the median speedup of the default.

Why it matters (BENCHMARKS.md, "Consolidation cost ÷ embedding cost"): during a
consolidation the deciding thread competes with the embedder's threads for the cores. With
one intra-op thread the embedder keeps one core to itself and deciding runs on the other,
so a consolidation would take about as long as one-thread embedding, that is `speedup`
times the two-thread embedding the ratio divides by. One thread is the better choice for
consolidation only if the speedup printed here is below the ratio the bench measures with
the default. Run it on a quiet machine: under load neither figure means anything.
"""

from __future__ import annotations

import statistics
import time

import click
from consolidate import make_events  # bench/ is on the path when run as a script


@click.command()
@click.option("--n", default=10_000, show_default=True, help="Events whose texts are embedded.")
@click.option("--rounds", default=3, show_default=True, help="Rounds of each setting.")
def main(n: int, rounds: int) -> None:
    from distill.adapters.embed.local import LocalEmbedder
    from distill.core.identity import identity_text

    events = make_events(n)
    texts = {e["text"] for e in events}
    texts |= {identity_text(c["predicate"], c["value"]) for e in events for c in e["claims"]}
    ordered = sorted(texts)
    walls: dict[str, list[float]] = {"default": [], "1": []}
    for _ in range(rounds):
        for name, threads in (("default", None), ("1", 1)):
            embedder = LocalEmbedder(intra_op_threads=threads)
            embedder.embed_batch(ordered[:8])  # the model is loaded outside the timing
            t0, cpu0 = time.perf_counter(), time.process_time()
            for start in range(0, len(ordered), embedder.max_batch):
                embedder.embed_batch(ordered[start : start + embedder.max_batch])
            wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
            walls[name].append(wall)
            print(f"threads {name:7s} {len(ordered):,} texts: {wall:.2f} s wall, {cpu:.2f} s CPU")
    speedup = statistics.median(walls["1"]) / statistics.median(walls["default"])
    print(f"speedup of the default over one thread (median wall): {speedup:.3f}")


if __name__ == "__main__":
    main()

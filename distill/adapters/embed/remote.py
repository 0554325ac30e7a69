"""What the embedders behind an HTTP API share: batching, retries, and the checks every
answer passes before a vector reaches the engine.

A server's answer is trusted for nothing. Each request must come back with one finite,
non-zero vector per text, all of one dimension, and that dimension must be the embedder's:
the one asked for (`dimensions=`) or the one its first answer had. A server whose vectors
change size has started serving another model under the same name; its vectors cannot be
compared with the ones already stored, so that is refused, never truncated or padded. Rows
are L2-normalised here because the port promises unit vectors and servers differ (OpenAI's
are unit length; llama.cpp's depend on its pooling and normalisation flags).

Failures are reported as every provider reports them (`distill.adapters.llm.calls`): a
transient one (transport, timeout, 5xx, 408, 429) is retried by the same policy, anything
else fails at once, and the key never appears in an error or a repr.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from distill.adapters.llm.calls import RetryPolicy, with_retries
from distill.errors import ConfigurationError, MalformedAnswer, ProviderError
from distill.ports import Vector

DEFAULT_TIMEOUT = 60.0  # seconds per request: a CPU server loading its model first is slow
# Texts per request. Distill embeds short identity texts; 64 keeps a request inside the
# physical batch of small local servers (llama.cpp refuses inputs beyond its --ubatch-size)
# and far inside OpenAI's limits (2,048 inputs, 300,000 tokens).
DEFAULT_MAX_BATCH = 64
# Embedded to learn the dimension when it is asked for before any other text was embedded.
PROBE_TEXT = "dimension probe"


class RemoteEmbedder:
    """A subclass sets `provider`, `model`, `model_id`, `base_url` (as it may be shown),
    `retry`, `max_batch`, `_client` (the SDK's client) and `_secret`, calls
    ``super().__init__(dimensions)``, and implements `_request`, which raises Distill errors
    only."""

    provider: str
    model: str
    model_id: str
    base_url: str
    max_batch: int
    retry: RetryPolicy
    _client: Any
    _secret: str | None

    def __init__(self, dimensions: int | None) -> None:
        if dimensions is not None and dimensions < 1:
            raise ConfigurationError(f"dimensions must be at least 1, got {dimensions}")
        self._dimension = dimensions
        self._asked_dimension = dimensions is not None
        self._lock = threading.Lock()

    def __repr__(self) -> str:  # never the key
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    @property
    def dimension(self) -> int:
        """The vectors' size: asked for, or learned from the first answer (one short request
        is made for it if nothing was embedded yet)."""
        if self._dimension is None:
            self.embed_batch([PROBE_TEXT])
        assert self._dimension is not None  # embed_batch learned it or raised
        return self._dimension

    def embed_batch(self, texts: Sequence[str]) -> Vector:
        """One L2-normalised float32 row per text, in input order, `max_batch` texts per
        request."""
        if not texts:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        rows: list[Vector] = []
        for start in range(0, len(texts), self.max_batch):
            chunk = list(texts[start : start + self.max_batch])
            raw = with_retries(
                functools.partial(self._request, chunk),
                self.retry,
                f"{self.model_id} at {self.base_url}",
            )
            rows.append(self._checked(raw, len(chunk)))
        return np.concatenate(rows) if len(rows) > 1 else rows[0]

    def _request(self, texts: list[str]) -> list[Any]:
        """The server's vectors for `texts`, in input order, as it sent them."""
        raise NotImplementedError

    def _checked(self, raw: list[Any], count: int) -> Vector:
        if len(raw) != count:
            raise MalformedAnswer(
                f"{self.model_id}: {len(raw)} vectors for {count} texts from {self.base_url}"
            )
        try:
            matrix = np.asarray(raw, dtype=np.float64)
        except (TypeError, ValueError) as exc:  # ragged rows, strings, nested junk
            sizes = sorted({len(r) for r in raw if isinstance(r, Sequence)})
            raise MalformedAnswer(
                f"{self.model_id}: the vectors are not rows of numbers of one size "
                f"(sizes {sizes}): {exc}"
            ) from exc
        if matrix.ndim != 2 or matrix.shape[1] == 0:
            raise MalformedAnswer(f"{self.model_id}: the vectors have shape {matrix.shape}")
        if not np.isfinite(matrix).all():
            raise MalformedAnswer(f"{self.model_id}: a vector holds NaN or infinity")
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        if (norms == 0.0).any():
            raise MalformedAnswer(f"{self.model_id}: a vector is all zeros")
        self._settle_dimension(matrix.shape[1])
        unit: Vector = (matrix / norms).astype(np.float32)
        return unit

    def _settle_dimension(self, found: int) -> None:
        with self._lock:
            if self._dimension is None:
                self._dimension = found
                return
            expected = self._dimension
        if found == expected:
            return
        why = (
            f"dimensions={expected} was asked for"
            if self._asked_dimension
            else f"its earlier answers had {expected}"
        )
        # Not a transient failure: the server serves another model under this name now, and
        # its vectors cannot be compared with the ones stored for this model id.
        raise ProviderError(
            f"{self.model_id} at {self.base_url} answered vectors of {found} values, but "
            f"{why}: the server is serving another model under the name {self.model!r}. "
            "Point Distill at the model its facts were embedded with, or use another model "
            "id for the new one (facts embedded by the old model are then not matched by "
            "meaning)"
        )

    def close(self) -> None:
        """Close the HTTP connections this embedder holds."""
        self._client.close()

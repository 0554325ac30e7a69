"""Embeddings from any OpenAI-compatible `/embeddings` endpoint: OpenAI itself, vLLM,
llama.cpp's server started with `--embeddings`, LM Studio, LiteLLM, Ollama's /v1.

Vectors are asked for as floats. The SDK asks for base64 unless told otherwise, which not
every compatible server speaks; floats are the API's own default and every server has them.
The answer's rows are put back in input order by their `index` (a server may send them in
any order), then checked and normalised by `RemoteEmbedder`.

The model id names the vector space, because the store keys every vector and cache entry by
it and the semantic-match threshold is calibrated per model id. A model name is a promise of
the same vectors only on OpenAI's own API. A compatible server may serve its own quantisation
under a shared name, and llama.cpp answers with whatever model it loaded, whatever the name:
so for any other server the id carries the server's host and port,
``openai@gpu-box:8080/bge-small-en-v1.5``. Vectors of two servers are then never compared (a
mixed comparison gives a wrong distance silently); the cost is that moving a server to a new
address makes its old vectors another model's (matching by meaning misses the facts
embedded before, it never merges wrongly). ``model_id=`` names the space explicitly when the
same model moves. Asking for fewer `dimensions` gives other vectors, so that is in the id
too (``openai/text-embedding-3-small#256``).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from distill.adapters.embed.remote import DEFAULT_MAX_BATCH, DEFAULT_TIMEOUT, RemoteEmbedder
from distill.adapters.llm.calls import RetryPolicy, display_url, openai_client, sdk_errors
from distill.errors import ConfigurationError, MalformedAnswer, MissingDependency

DEFAULT_MODEL = "text-embedding-3-small"
OPENAI_HOST = "api.openai.com"  # where a model name alone identifies the vectors


class OpenAIEmbedder(RemoteEmbedder):
    """An embedding model behind an OpenAI-compatible `/embeddings` endpoint.

    Args:
        model: the model name the server knows.
        base_url: the API root, for example ``http://localhost:8080/v1``; OpenAI's by default.
        api_key: the bearer token; by default ``DISTILL_LLM_API_KEY``, or ``OPENAI_API_KEY``
            when talking to OpenAI itself. Local servers need none.
        timeout: seconds one request may take.
        retry: how transient failures (transport, timeouts, 5xx, 408, 429) are retried.
        dimensions: ask for vectors of this size (``text-embedding-3-*`` and servers that
            support it); by default the model's own, learned from the first answer.
        max_batch: texts per request.
        model_id: the name of the vector space, when the default (see the module) will not do.
    """

    provider = "openai"

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        dimensions: int | None = None,
        max_batch: int = DEFAULT_MAX_BATCH,
        model_id: str | None = None,
    ) -> None:
        try:
            import openai
        except ImportError as exc:
            raise MissingDependency.extra(
                "the openai embedder needs the OpenAI SDK", "openai"
            ) from exc
        if max_batch < 1:
            raise ConfigurationError(f"max_batch must be at least 1, got {max_batch}")
        super().__init__(dimensions)
        self._sdk = openai
        self._client, self._secret = openai_client(
            openai, api_key, base_url, timeout, "the openai embedder"
        )
        self.model = model
        self.dimensions = dimensions
        self.base_url = display_url(str(self._client.base_url))
        self.retry = retry or RetryPolicy()
        self.max_batch = max_batch
        self.model_id = model_id or self._default_model_id()
        self.calibrate_args: tuple[str, ...] = ("--embedder", "openai", "--model", model)
        if base_url is not None:
            self.calibrate_args += ("--base-url", self.base_url)
        if dimensions is not None:
            self.calibrate_args += ("--dimensions", str(dimensions))

    def _default_model_id(self) -> str:
        suffix = f"#{self.dimensions}" if self.dimensions else ""
        # The client's URL, not the argument: the SDK also reads OPENAI_BASE_URL.
        parts = urlsplit(str(self._client.base_url))
        if parts.hostname == OPENAI_HOST:
            return f"openai/{self.model}{suffix}"
        host = f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname)
        return f"openai@{host}/{self.model}{suffix}"

    def _request(self, texts: list[str]) -> list[Any]:
        options: dict[str, Any] = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self.dimensions is not None:
            options["dimensions"] = self.dimensions
        with sdk_errors(self._sdk, self, "is the model name right for this server?", self._secret):
            response = self._client.embeddings.create(**options)
        return self._in_order(response)

    def _in_order(self, response: Any) -> list[Any]:
        """The vectors by their `index`; a server that sends no index at all is taken in the
        order it answered, one that numbers them wrongly is refused."""
        data = getattr(response, "data", None)
        if not isinstance(data, list):
            raise MalformedAnswer(f"{self.model_id}: the response has no `data` list")
        vectors = [getattr(item, "embedding", None) for item in data]
        indices = [getattr(item, "index", None) for item in data]
        if not all(isinstance(v, list) for v in vectors):
            raise MalformedAnswer(f"{self.model_id}: an item has no `embedding` list")
        if all(i is None for i in indices):
            return vectors
        by_index = {i: v for i, v in zip(indices, vectors, strict=True) if isinstance(i, int)}
        if sorted(by_index) != list(range(len(data))):
            raise MalformedAnswer(
                f"{self.model_id}: the answer's indices {indices[:10]} are not 0..{len(data) - 1}"
            )
        return [by_index[i] for i in range(len(data))]

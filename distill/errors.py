"""Every error Distill raises on purpose derives from :class:`DistillError`.

    DistillError
    ├── ConfigurationError      bad arguments or environment; raised at construction
    │   ├── MissingDependency   an optional extra is not installed (the message has the pip line)
    │   └── EmbeddingMismatch   vectors of two embedding models were about to be compared (two
    │                           models under one model id): found when used, not when built
    ├── InvalidInput            a malformed event, claim or JSONL line (nothing was written)
    ├── NotFound                no such fact, conflict or event in this project
    ├── InvalidOperation        the request is well-formed but not allowed in the current state
    │   ├── AlreadyResolved     the conflict set was resolved before
    │   ├── PinnedFact          an automatic or API path tried to change a pinned fact
    │   └── ClaimLost           a run's claim on a job was taken back (its writes roll back)
    ├── IntegrityViolation      the store refused a write that would break an invariant
    │                           (for example a second active fact for one identity)
    ├── StoreError              the database failed or is at an unknown schema version
    ├── BacklogFull             a project's backlog is at its bound: nothing was stored; send
    │                           again after `retry_after` seconds (HTTP 429 with Retry-After)
    └── ProviderError           an LLM or embedding provider failed
        ├── TransientProviderError   worth retrying later (transport, timeout, 5xx, 408)
        │   ├── RateLimited          429: the run stops and unstarted jobs go back to pending
        │   └── ProviderTimeout      no answer in time, retries included: the run stops too
        └── MalformedAnswer          the model answered something that is not a valid proposal

Driver and SDK errors are translated at the adapter boundary with ``raise ... from exc``.
"""

from __future__ import annotations


class DistillError(Exception):
    """Root of every error Distill raises on purpose."""


class ConfigurationError(DistillError):
    """Bad configuration; raised when the object is built, not on first use."""


class MissingDependency(ConfigurationError):
    """An optional dependency is not installed."""

    @classmethod
    def extra(cls, needs: str, extra: str) -> MissingDependency:
        """`needs` (what is missing, and for what), and how to install the optional extra
        that brings it, whether Distill came from a package index or from a clone."""
        return cls(
            f"{needs}: pip install 'distill[{extra}]' (in a clone of the repository: "
            f"pip install -e '.[{extra}]')"
        )


class EmbeddingMismatch(ConfigurationError):
    """Vectors of different sizes under one model id: a distance between them would be wrong."""


class InvalidInput(DistillError):
    """Input that Distill refuses; nothing was written."""


class NotFound(DistillError):
    """The referenced object does not exist in this project."""


class InvalidOperation(DistillError):
    """A well-formed request that the current state does not allow."""


class AlreadyResolved(InvalidOperation):
    """The conflict set was already resolved."""


class PinnedFact(InvalidOperation):
    """A pinned fact cannot be changed by this path."""


class ClaimLost(InvalidOperation):
    """A run no longer holds the job it was working on: the claim was taken back (its
    owner looked dead, or its heartbeat stale) and the job may be someone else's now."""


class IntegrityViolation(DistillError):
    """The store refused a write that would break an invariant."""


class BacklogFull(DistillError):
    """A project's events waiting for consolidation reached the bound set for it: the request
    was refused whole (nothing stored, so nothing accepted is ever dropped). `at` builds it
    with the message that says what to do."""

    def __init__(
        self,
        message: str,
        project: str = "default",
        backlog: int = 0,
        limit: int = 0,
        retry_after: float = 1.0,
    ) -> None:
        super().__init__(message)
        self.project = project
        self.backlog = backlog
        self.limit = limit
        self.retry_after = retry_after

    @classmethod
    def at(cls, project: str, backlog: int, limit: int, retry_after: float) -> BacklogFull:
        message = (
            f"project {project!r} has {backlog} events waiting for consolidation (the bound "
            f"is {limit}); send them again in {retry_after:g} s, or start more workers"
        )
        return cls(message, project, backlog, limit, retry_after)


class StoreError(DistillError):
    """The database failed, or its schema is not one this version understands."""


class ProviderError(DistillError):
    """An LLM or embedding provider failed."""


class TransientProviderError(ProviderError):
    """A failure worth retrying later: transport error, timeout, 5xx, 408.

    `retry_after` is the wait in seconds the provider asked for, when it said.
    """

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class RateLimited(TransientProviderError):
    """The provider answered 429; the run stops instead of failing job after job."""


class ProviderTimeout(TransientProviderError):
    """The provider did not answer in time. Raised by a provider once its own retries are
    spent, it stops the run: a server that hangs would make every job wait as long."""


class MalformedAnswer(ProviderError):
    """The model's answer could not be parsed into a proposal."""

"""Distill: memory consolidation for AI agents. Events in, durable, auditable facts out."""

from distill.core.context import Context
from distill.core.models import (
    Added,
    Claim,
    ConflictSet,
    Event,
    Fact,
    FactKind,
    FactStatus,
    Observation,
    Trust,
)
from distill.core.recall import Hit
from distill.errors import (
    AlreadyResolved,
    BacklogFull,
    ClaimLost,
    ConfigurationError,
    DistillError,
    EmbeddingMismatch,
    IntegrityViolation,
    InvalidInput,
    InvalidOperation,
    MalformedAnswer,
    MissingDependency,
    NotFound,
    PinnedFact,
    ProviderError,
    ProviderTimeout,
    RateLimited,
    StoreError,
    TransientProviderError,
)
from distill.memory import History, Memory
from distill.report import Report
from distill.status import Status

__all__ = [
    "Added",
    "AlreadyResolved",
    "BacklogFull",
    "Claim",
    "ClaimLost",
    "ConfigurationError",
    "ConflictSet",
    "Context",
    "DistillError",
    "EmbeddingMismatch",
    "Event",
    "Fact",
    "FactKind",
    "FactStatus",
    "History",
    "Hit",
    "IntegrityViolation",
    "InvalidInput",
    "InvalidOperation",
    "MalformedAnswer",
    "Memory",
    "MissingDependency",
    "NotFound",
    "Observation",
    "PinnedFact",
    "ProviderError",
    "ProviderTimeout",
    "RateLimited",
    "Report",
    "Status",
    "StoreError",
    "TransientProviderError",
    "Trust",
]
__version__ = "0.1.0"

"""Distill: memory consolidation for AI agents. Events in, durable, auditable facts out."""

from distill.core.models import (
    Claim,
    ConflictSet,
    Event,
    Fact,
    FactKind,
    FactStatus,
    Observation,
    Trust,
)
from distill.errors import DistillError
from distill.memory import History, Memory, Status
from distill.report import Report

__all__ = [
    "Claim",
    "ConflictSet",
    "DistillError",
    "Event",
    "Fact",
    "FactKind",
    "FactStatus",
    "History",
    "Memory",
    "Observation",
    "Report",
    "Status",
    "Trust",
]
__version__ = "0.1.0"

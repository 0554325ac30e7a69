"""The README's promise: every error class is importable from `distill`, so a caller catches
them without knowing where each is defined."""

from __future__ import annotations

import inspect

import distill
from distill import errors


def test_every_error_class_is_importable_from_distill() -> None:
    classes = {
        name
        for name, value in vars(errors).items()
        if inspect.isclass(value)
        and issubclass(value, Exception)
        and value.__module__ == errors.__name__
    }
    assert "BacklogFull" in classes and "DistillError" in classes
    missing = sorted(c for c in classes if getattr(distill, c, None) is not getattr(errors, c))
    assert missing == []
    assert classes <= set(distill.__all__)

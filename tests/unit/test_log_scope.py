"""Log lines name what they are about: a job's project, subject and id; a scheduled pass's
project and name; nothing when outside any scope."""

from __future__ import annotations

import logging

import pytest

from distill import Memory
from distill.log_scope import ScopeFilter, scoped
from distill.scheduled_passes import ScheduledPass
from distill.scheduler import Scheduler, ScheduleSettings


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.addFilter(ScopeFilter())
        self.setFormatter(logging.Formatter("%(message)s%(scope)s"))
        self.lines: list[str] = []
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))
        self.records.append(record)


@pytest.fixture
def lines() -> Lines:
    handler = Lines()
    logger = logging.getLogger("distill")
    logger.addHandler(handler)
    old = logger.level
    logger.setLevel(logging.INFO)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(old)


def test_scopes_nest_and_end(lines: Lines) -> None:
    log = logging.getLogger("distill.test")
    with scoped(project="acme"):
        with scoped(subject="u1", job="j1"):
            log.info("inner")
        log.info("outer")
    log.info("none")
    assert lines.lines == [
        "inner [project=acme subject=u1 job=j1]",
        "outer [project=acme]",
        "none",
    ]
    assert lines.records[0].job == "j1"  # type: ignore[attr-defined]


def test_a_failing_job_s_line_names_its_job(make_memory: object, lines: Lines) -> None:
    mem: Memory = make_memory(extractor="llm", llm="fake")  # type: ignore[operator]
    mem.add_event(subject="u1", text="I live in Lyon.")
    job = mem.jobs()[0]

    def boom(*args: object, **kwargs: object) -> object:
        raise RuntimeError("the model exploded")

    mem.engine._decide_and_apply = boom  # type: ignore[method-assign]
    mem.consolidate()

    failed = [line for line in lines.lines if "failed" in line or "unexpected" in line]
    assert failed and all(f"job={job.id}" in line for line in failed)
    assert all("project=default subject=u1" in line for line in failed)


def test_a_scheduled_pass_s_lines_name_its_project_and_pass(
    make_memory: object, lines: Lines
) -> None:
    mem: Memory = make_memory()  # type: ignore[operator]
    mem.add_event(subject="u1", text="I live in Lyon.", project="acme")

    def tidy(memory: Memory, project: str, settings: object) -> object:
        raise RuntimeError("tidy broke")

    registry = {"tidy": ScheduledPass("tidy", tidy)}  # type: ignore[arg-type]
    Scheduler(mem, ScheduleSettings(), "w", registry=registry).run_next()
    about = [line for line in lines.lines if "tidy" in line]
    assert about and all("[project=acme pass_name=tidy]" in line for line in about)

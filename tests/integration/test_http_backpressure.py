"""The HTTP API under backpressure: a full backlog answers 429 with Retry-After and stores
nothing; /metrics counts the refusals and shows the backlog."""

from __future__ import annotations

from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from distill.service.config import Reloader, load
from tests.http_server import assert_error, running_api, wait_for


def test_a_full_backlog_answers_429_with_retry_after_and_metrics_show_it(tmp_path: Path) -> None:
    with running_api(str(tmp_path / "api.db"), worker_threads=0) as api:
        api.service.memory.set_backlog_bound(2, retry_after=3.0)
        own, admin_key = api.key("acme"), api.key(None, admin=True)
        with api.client(own) as client:
            batch = {"events": [{"subject": "u", "text": f"Fact {n}."} for n in range(2)]}
            assert client.post("/v1/events", json=batch).status_code == 202
            refused = client.post("/v1/events", json={"subject": "u", "text": "One more."})
            assert_error(refused, 429, "backlog_full")
            assert refused.headers["Retry-After"] == "3"
            assert "2 events waiting" in refused.json()["error"]["message"]
        assert api.service.memory.backlog("acme") == 2  # the refused one was not stored
        with api.client(admin_key) as admin:
            scraped = admin.get("/metrics").text
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(scraped)
        for s in family.samples
    }
    assert samples[("distill_events_refused_total", ())] == 1
    assert samples[("distill_backlog_events", (("project", "acme"),))] == 2
    assert samples[("distill_backlog_bound_events", ())] == 2


def test_metrics_count_each_pass_s_cycles_facts_and_duration(tmp_path: Path) -> None:
    """`distill serve --config`: the background worker extracts (pass `extract`) and runs
    the scheduled dedupe; /metrics says so per pass."""
    config = Reloader(load(None, {"DISTILL_WORKER__MIN_EVENTS": "1"}))  # extract at once
    with running_api(str(tmp_path / "api.db"), config=config) as api:
        admin_key = api.key(None, admin=True)
        with api.client(api.key("acme")) as client:
            client.post("/v1/events", json={"subject": "u", "text": "I live in Lyon."})
        totals = api.service.totals
        assert totals is not None
        wait_for(lambda: totals.cycles[("dedupe", "clean")] >= 1, what="the scheduled dedupe")
        with api.client(admin_key) as admin:
            scraped = admin.get("/metrics").text
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(scraped)
        for s in family.samples
    }
    assert samples[("distill_pass_cycles_total", (("pass", "extract"), ("result", "clean")))] == 1
    assert samples[("distill_pass_cycles_total", (("pass", "dedupe"), ("result", "clean")))] == 1
    created = (("change", "created"), ("pass", "extract"))
    assert samples[("distill_pass_facts_total", created)] == 1
    assert samples[("distill_pass_duration_seconds_count", (("pass", "extract"),))] == 1
    assert samples[("distill_pass_duration_seconds_sum", (("pass", "dedupe"),))] >= 0
    assert samples[("distill_backlog_bound_events", ())] == 10_000

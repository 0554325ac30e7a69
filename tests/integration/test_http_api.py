"""The HTTP API through a real uvicorn on 127.0.0.1, as a client uses it: events in, the
background worker consolidates, memories out; a person's decisions; erase; the admin routes.
The whole life runs on SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.http_server import Api, assert_error, claim_event, running_api, wait_for


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    with running_api(str(tmp_path / "api.db")) as found:
        yield found


def facts_of(client: httpx.Client, subject: str, **filters: Any) -> list[dict[str, Any]]:
    response = client.post("/v1/memories/list", json={"subject": subject, **filters})
    assert response.status_code == 200, response.text
    return list(response.json()["results"])


def consolidated(client: httpx.Client, subject: str, count: int) -> list[dict[str, Any]]:
    """The subject's facts once the background worker has made `count` of them."""
    return wait_for(
        lambda: (found := facts_of(client, subject)) and len(found) >= count and found,
        what=f"{count} fact(s) of {subject}",
    )


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_memory_s_life_over_http(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    database = (
        str(tmp_path / "api.db")
        if backend == "sqlite"
        else str(request.getfixturevalue("postgres_database"))
    )
    with running_api(database) as api, api.client(api.key("acme")) as client:
        sent = client.post(
            "/v1/events",
            json={
                "events": [
                    claim_event("u1", "home_city", {"city": "Lisbon"}),
                    claim_event("u1", "bike_count", {"count": 3}),
                ]
            },
        )
        assert sent.status_code == 202, sent.text
        assert len(sent.json()["ids"]) == 2 and sent.json()["already_stored"] == []

        [bikes, city] = sorted(consolidated(client, "u1", 2), key=lambda f: f["predicate"])
        assert city["value"] == {"city": "Lisbon"} and city["project"] == "acme"

        found = client.post("/v1/memories/search", json={"query": "which city", "subject": "u1"})
        assert found.status_code == 200, found.text
        assert city["id"] in [h["id"] for h in found.json()["results"]]

        assert client.get(f"/v1/memories/{city['id']}").json()["id"] == city["id"]
        assert client.get(f"/v1/memories/{city['id'][:24]}").json()["id"] == city["id"]
        history = client.get(f"/v1/memories/{city['id']}/history").json()
        assert [v["id"] for v in history["versions"]] == [city["id"]]
        assert any(e["action"] == "create_fact" for e in history["audit"])
        evidence = client.get(f"/v1/memories/{city['id']}/evidence").json()["events"]
        assert [e["id"] for e in evidence] == city["source_event_ids"]
        assert evidence[0]["text"].startswith("home_city is")

        assert client.post(f"/v1/memories/{bikes['id']}/pin").json()["pinned"] is True
        assert client.delete(f"/v1/memories/{bikes['id']}/pin").json()["pinned"] is False
        retracted = client.post(f"/v1/memories/{bikes['id']}/retract", json={"reason": "sold them"})
        assert retracted.json()["status"] == "retracted"
        assert [f["id"] for f in facts_of(client, "u1")] == [city["id"]]
        assert len(facts_of(client, "u1", include_retired=True)) == 2
        again = client.post(f"/v1/memories/{bikes['id']}/retract", json={"reason": "twice"})
        assert_error(again, 409, "invalid_operation")

        block = client.post("/v1/context", json={"subject": "u1", "budget_tokens": 200}).json()
        assert "Lisbon" in block["text"] and [f["id"] for f in block["facts"]] == [city["id"]]

        status = client.get("/v1/status").json()
        assert status["project"] == "acme" and status["events"] == 2
        assert "database" not in status
        audit = client.get("/v1/audit", params={"subject": "u1", "limit": 50}).json()
        assert any(e["action"] == "retract_fact" and "sold them" in e["reason"] for e in audit)


def test_events_are_idempotent_and_answered_at_once(api: Api) -> None:
    event = {**claim_event("u1", "home_city", {"city": "Lisbon"}), "idempotency_key": "m-1"}
    with api.client(api.key("acme"), header="x-api-key") as client:
        first = client.post("/v1/events", json=event)
        second = client.post("/v1/events", json={"events": [event, {**event, "text": "other"}]})
    assert first.status_code == second.status_code == 202
    [stored] = first.json()["ids"]
    assert second.json() == {"ids": [stored, stored], "already_stored": [stored, stored]}


def test_a_conflict_is_listed_and_resolved(api: Api) -> None:
    with api.client(api.key("acme")) as client:
        client.post(
            "/v1/events",
            json={
                "events": [
                    claim_event("u1", "language", {"lang": "fr"}),
                    claim_event("u1", "language", {"lang": "de"}),
                ]
            },
        )
        [conflict] = wait_for(lambda: client.get("/v1/conflicts").json(), what="a conflict")
        assert conflict["status"] == "open" and len(conflict["member_ids"]) == 2
        assert client.get("/v1/conflicts", params={"subject": "u1"}).json() == [conflict]
        keep = conflict["member_ids"][0]
        done = client.post(f"/v1/conflicts/{conflict['id']}/resolve", json={"keep": keep})
        assert done.status_code == 200 and done.json()["kept_fact_id"] == keep
        assert client.get("/v1/conflicts").json() == []
        assert len(client.get("/v1/conflicts", params={"status": "all"}).json()) == 1
        again = client.post(f"/v1/conflicts/{conflict['id']}/resolve", json={"keep": keep})
        assert_error(again, 409, "already_resolved")
        assert_error(client.get("/v1/conflicts", params={"status": "closed"}), 422)


def test_erase_forgets_a_subject_and_then_search_finds_nothing(api: Api) -> None:
    with api.client(api.key("acme")) as client:
        client.post("/v1/events", json=claim_event("u1", "home_city", {"city": "Zanzibar7731"}))
        client.post("/v1/events", json=claim_event("u2", "home_city", {"city": "Lisbon"}))
        consolidated(client, "u1", 1)
        consolidated(client, "u2", 1)

        assert_error(client.post("/v1/erase", json={}), 422, "invalid_input")
        both = {"subject": "u1", "all_subjects": True}
        assert_error(client.post("/v1/erase", json=both), 422, "invalid_input")
        done = client.post("/v1/erase", json={"subject": "u1"}).json()
        assert done["erased"]["events"] == 1 and done["erased"]["facts"] == 1

        found = client.post("/v1/memories/search", json={"query": "Zanzibar7731 city"}).json()
        assert all(h["subject"] == "u2" for h in found["results"])
        gone = client.post("/v1/memories/search", json={"query": "city", "subject": "u1"})
        assert_error(gone, 404, "not_found")
        everyone = client.post("/v1/erase", json={"all_subjects": True}).json()
        assert everyone["erased"]["events"] == 1 and everyone["subject"] is None
        listed = client.post("/v1/memories/list", json={}).json()
        assert listed == {"results": [], "next_cursor": None}


def test_list_pages_with_a_cursor(api: Api) -> None:
    with api.client(api.key("acme")) as client:
        events = [claim_event("u1", f"attribute_{n}", {"n": n}) for n in range(7)]
        client.post("/v1/events", json={"events": events})
        every = consolidated(client, "u1", 7)
        seen: list[str] = []
        cursor = None
        while True:
            page = client.post(
                "/v1/memories/list", json={"subject": "u1", "limit": 3, "cursor": cursor}
            ).json()
            seen += [f["id"] for f in page["results"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert seen == sorted(f["id"] for f in every) and len(seen) == 7
        memory = client.post("/v1/memories/list", json={"kinds": ["memory"]}).json()
        assert memory["results"] == []
        bad = client.post("/v1/memories/list", json={"cursor": "@@"})
        assert_error(bad, 422, "invalid_input")
        assert_error(client.post("/v1/memories/list", json={"limit": 501}), 422)


def test_consolidate_takes_an_admin_key_and_a_dry_run_writes_nothing(tmp_path: Path) -> None:
    with running_api(str(tmp_path / "api.db"), worker_threads=0) as api:
        admin, own = api.key(None, admin=True), api.key("acme")
        with api.client(own) as client:
            client.post("/v1/events", json=claim_event("u1", "home_city", {"city": "Lisbon"}))
            refused = client.post("/v1/consolidate", json={"dry_run": True})
            assert_error(refused, 403, "forbidden")
        with api.client(admin) as client:
            dry = client.post("/v1/consolidate", json={"dry_run": True})
            assert dry.status_code == 200 and dry.json()["dry_run"] is True
            assert dry.json()["counters"]["created"] == 1
            listed = client.post("/v1/memories/list", params={"project": "acme"}, json={})
            assert listed.json()["results"] == []
            done = client.post("/v1/consolidate", json={})
            assert done.json()["counters"]["created"] == 1
            listed = client.post("/v1/memories/list", params={"project": "acme"}, json={})
            assert len(listed.json()["results"]) == 1
            unnamed = client.post("/v1/memories/list", json={})
            assert "?project=" in assert_error(unnamed, 400, "project_required")


def test_keys_are_checked_on_every_request(api: Api) -> None:
    token = api.key("acme")
    with api.client(token) as client:
        assert client.get("/v1/status").status_code == 200
        other = client.get("/v1/status", params={"project": "other"})
        assert_error(other, 403, "forbidden")
        [key] = api.service.keys.api_keys("acme")
        api.service.keys.revoke_key(key.id, datetime.now(UTC))
        assert_error(client.get("/v1/status"), 401, "unauthorized")
    with api.client() as anonymous:
        message = assert_error(anonymous.get("/v1/status"), 401, "unauthorized")
        assert "Authorization: Bearer" in message
    with api.client("dk_not-a-key") as wrong:
        assert_error(wrong.get("/v1/status"), 401, "unauthorized")


def test_errors_have_one_shape_and_their_status(api: Api) -> None:
    with api.client(api.key("acme")) as client:
        malformed = client.post(
            "/v1/events", content=b'{"subject": "u1",', headers={"content-type": "application/json"}
        )
        assert_error(malformed, 400, "invalid_json")
        projected = client.post("/v1/events", json={"subject": "u1", "text": "x", "project": "b"})
        assert "project" in assert_error(projected, 422, "invalid_request")
        blank = client.post("/v1/events", json={"subject": "  ", "text": "hello"})
        assert "subject" in assert_error(blank, 422, "invalid_input")
        future = client.post(
            "/v1/events", json={**claim_event("u1", "a", {"b": 1}, "2999-01-01T00:00:00Z")}
        )
        assert "occurred_at" in assert_error(future, 422, "invalid_input")
        too_many = {"events": [claim_event("u1", "a", {"n": n}) for n in range(1_001)]}
        assert_error(client.post("/v1/events", json=too_many), 422, "invalid_request")
        # One event or a batch: only the problems of the shape that was sent are told.
        lone = client.post("/v1/events", json={"text": "no subject"})
        assert assert_error(lone, 422, "invalid_request") == "body.subject: Field required"
        batch = {"events": [{"subject": "u1", "text": "x", "occurred_at": "2024-01-01T00:00"}]}
        told = assert_error(client.post("/v1/events", json=batch), 422, "invalid_request")
        assert told.startswith("body.events.0.occurred_at: ") and ";" not in told
        assert_error(client.get("/v1/memories/0123456789abcdef"), 404, "not_found")
        assert_error(client.get("/v1/nowhere"), 404, "not_found")
        assert_error(client.put("/v1/events", json={}), 405, "method_not_allowed")
        naive = client.post("/v1/memories/list", json={"as_of": "2024-01-01T00:00:00"})
        assert_error(naive, 422, "invalid_request")


def test_a_body_over_the_limit_is_refused_before_it_is_read(api: Api) -> None:
    big = b'{"subject": "u1", "text": "' + b"x" * (1024 * 1024) + b'"}'
    with api.client(api.key("acme")) as client:
        declared = client.post(
            "/v1/events", content=big, headers={"content-type": "application/json"}
        )
        assert "bytes" in assert_error(declared, 413, "payload_too_large")

        def chunks() -> Iterator[bytes]:
            for start in range(0, len(big), 64 * 1024):
                yield big[start : start + 64 * 1024]

        streamed = client.post(
            "/v1/events", content=chunks(), headers={"content-type": "application/json"}
        )
        assert_error(streamed, 413, "payload_too_large")


def test_an_unexpected_failure_is_a_500_without_its_details(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("secret internal detail")

    monkeypatch.setattr(api.service.memory, "facts", broken)
    with api.client(api.key("acme")) as client:
        failed = client.post("/v1/memories/list", json={})
    message = assert_error(failed, 500, "internal_error")
    assert "secret" not in failed.text and "server's log" in message


def test_healthz_needs_no_key_and_metrics_an_admin_key(api: Api) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    own, admin_key = api.key("acme"), api.key(None, admin=True)
    with api.client() as anonymous:
        assert anonymous.get("/healthz").json() == {"status": "ok"}
        assert_error(anonymous.get("/metrics"), 401)
    with api.client(own) as client:
        client.post("/v1/events", json=claim_event("u1", "home_city", {"city": "Lisbon"}))
        consolidated(client, "u1", 1)
        assert_error(client.get("/metrics"), 403, "forbidden")
    with api.client(admin_key) as admin:
        scraped = admin.get("/metrics")
    assert scraped.headers["content-type"].startswith("text/plain")
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(scraped.text)
        for s in family.samples
    }
    assert samples[("distill_events_accepted_total", (("stored", "new"),))] == 1
    assert samples[("distill_facts", (("status", "active"),))] == 1
    assert samples[("distill_worker_jobs_total", (("outcome", "done"),))] >= 1
    assert samples[("distill_derive_total", (("what", "cycles"),))] == 0  # none run yet
    assert samples[("distill_patterns", (("kind", "procedure"), ("status", "active")))] == 0
    assert samples[("distill_patterns", (("kind", "topic"), ("status", "active")))] == 0
    route = (("method", "POST"), ("route", "/v1/events"), ("status", "202"))
    assert samples[("distill_http_requests_total", route)] == 1
    forbidden = (("method", "GET"), ("route", "/metrics"), ("status", "403"))
    assert samples[("distill_http_requests_total", forbidden)] == 1
    assert any(name == "distill_http_request_duration_seconds_bucket" for name, _ in samples)


def test_the_openapi_document_is_served(api: Api) -> None:
    with api.client() as client:
        document = client.get("/openapi.json").json()
        assert client.get("/docs").status_code == 200
    assert "/v1/memories/search" in document["paths"]
    schemes = document["components"]["securitySchemes"]
    assert {s["type"] for s in schemes.values()} == {"http", "apiKey"}


def test_both_time_axes_through_every_read(api: Api) -> None:
    with api.client(api.key("acme")) as client:
        client.post("/v1/events", json=claim_event("u1", "bike_count", {"count": 3}))
        [first] = consolidated(client, "u1", 1)
        later = {
            **claim_event("u1", "bike_count", {"count": 4}, "2024-06-01T10:00:00Z"),
            "claims": [{"predicate": "bike_count", "value": {"count": 4}, "action": "supersede"}],
        }
        client.post("/v1/events", json=later)
        wait_for(lambda: facts_of(client, "u1")[0]["value"] == {"count": 4}, what="the supersede")
        then = {"known_at": first["recorded_at"]}
        mid_may = {"as_of": "2024-05-15T00:00:00Z"}

        assert [f["value"] for f in facts_of(client, "u1", **then)] == [{"count": 3}]
        assert [f["value"] for f in facts_of(client, "u1", **mid_may)] == [{"count": 3}]
        for axis in (then, mid_may):
            found = client.post(
                "/v1/memories/search",
                json={"query": "bikes", "subject": "u1", "include": ["events"], **axis},
            ).json()["results"]
            assert [h["value"] for h in found] == [{"count": 3}]
            assert found[0]["events"][0]["text"].startswith("bike_count is")
            block = client.post("/v1/context", json={"subject": "u1", **axis}).json()
            assert "count=3" in block["text"] and "count=4" not in block["text"]
        now = client.post("/v1/memories/search", json={"query": "bikes", "kinds": ["state"]})
        assert [h["value"] for h in now.json()["results"]] == [{"count": 4}]
        bad = client.post("/v1/memories/search", json={"query": "bikes", "limit": 101})
        assert_error(bad, 422, "invalid_request")

"""A key never reads, writes or learns the existence of another project's data: every route
of the live server's OpenAPI document, called with project B's key against project A's ids
and subject, answers 404 or 403, and never with anything of A in its body.

The routes come from `/openapi.json` itself, so a route added later is walked too: the test
fails until the route is given its foreign request below (or listed among those that cannot
name another project's data).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.http_server import Api, assert_error, claim_event, running_api, wait_for

SUBJECT = "alice-7731"  # project A's subject; nothing of it may reach project B
CITY = "Zanzibar7731"

# What each route is sent with B's key: A's ids and subject where the route takes them.
# `{fact}` and `{conflict}` are replaced with A's ids (whole, then as 8-character prefixes).
FOREIGN: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/v1/memories/search"): {"json": {"query": "city", "subject": SUBJECT}},
    ("POST", "/v1/memories/list"): {"json": {"subject": SUBJECT, "include_retired": True}},
    ("GET", "/v1/memories/{fact_id}"): {},
    ("GET", "/v1/memories/{fact_id}/history"): {},
    ("GET", "/v1/memories/{fact_id}/evidence"): {},
    ("POST", "/v1/memories/{fact_id}/pin"): {},
    ("DELETE", "/v1/memories/{fact_id}/pin"): {},
    ("POST", "/v1/memories/{fact_id}/retract"): {"json": {"reason": "not mine"}},
    ("POST", "/v1/context"): {"json": {"subject": SUBJECT, "query": "city"}},
    ("GET", "/v1/conflicts"): {"params": {"subject": SUBJECT, "status": "all"}},
    ("POST", "/v1/conflicts/{conflict_id}/resolve"): {"json": {"keep": "{fact}"}},
    ("GET", "/v1/audit"): {"params": {"subject": SUBJECT}},
    ("POST", "/v1/erase"): {"json": {"subject": SUBJECT}},
    ("POST", "/v1/consolidate"): {"json": {"dry_run": True}},  # admin only: 403
    ("GET", "/metrics"): {},  # every project's counts: admin only, 403
}
# Routes that name no stored data: they act on the caller's own project (or on none), so
# they answer 2xx, and nothing of A may be in what they say.
OWN_ONLY: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/v1/events"): {"json": claim_event("bob", "home_city", {"city": "Oslo"})},
    ("GET", "/v1/status"): {},
    ("GET", "/healthz"): {},
}


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    with running_api(str(tmp_path / "api.db")) as found:
        yield found


def seed_project_a(client: httpx.Client) -> dict[str, str]:
    """Project A's subject with a fact and an open conflict; returns their ids, and in
    `secrets` everything of A that B must never see (joined by spaces)."""
    client.post(
        "/v1/events",
        json={
            "events": [
                claim_event(SUBJECT, "home_city", {"city": CITY}),
                claim_event(SUBJECT, "language", {"lang": "fr"}),
                claim_event(SUBJECT, "language", {"lang": "de"}),
            ]
        },
    )
    [conflict] = wait_for(lambda: client.get("/v1/conflicts").json(), what="A's conflict")
    [fact] = [
        f
        for f in client.post("/v1/memories/list", json={"subject": SUBJECT}).json()["results"]
        if f["predicate"] == "home_city"
    ]
    every = client.post("/v1/memories/list", json={"include_retired": True}).json()["results"]
    secrets = {CITY, conflict["id"]}
    for found in every:
        secrets |= {found["id"], *found["source_event_ids"]}
    return {"fact": fact["id"], "conflict": conflict["id"], "secrets": " ".join(secrets)}


def walk(document: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted(
        (method.upper(), path)
        for path, operations in document["paths"].items()
        for method in operations
    )


def call(
    client: httpx.Client, method: str, path: str, spec: dict[str, Any], ids: dict[str, str]
) -> httpx.Response:
    url = path.replace("{fact_id}", ids["fact"]).replace("{conflict_id}", ids["conflict"])
    json = spec.get("json")
    if json is not None:
        json = {k: ids["fact"] if v == "{fact}" else v for k, v in json.items()}
    return client.request(method, url, json=json, params=spec.get("params"))


def assert_nothing_of_a(response: httpx.Response, ids: dict[str, str]) -> None:
    """Nothing of A is in the answer but what B itself sent (an id a 404 names)."""
    sent = str(response.request.url) + response.request.content.decode()
    for secret in ids["secrets"].split():
        if secret not in sent:
            assert secret not in response.text, (response.request.url, response.text)
    assert "Traceback" not in response.text


def test_every_route_refuses_another_project_s_data(api: Api) -> None:
    with api.client(api.key("alpha")) as a:
        ids = seed_project_a(a)
        before = a.post("/v1/memories/list", json={"include_retired": True}).json()
    with api.client() as anonymous:
        routes = walk(anonymous.get("/openapi.json").json())
    unclassified = set(routes) - set(FOREIGN) - set(OWN_ONLY)
    assert not unclassified, f"give these routes a foreign request: {sorted(unclassified)}"

    with api.client(api.key("beta")) as b:
        for whole in (True, False):
            named = (
                ids if whole else {**ids, "fact": ids["fact"][:8], "conflict": ids["conflict"][:8]}
            )
            for method, path in routes:
                if (method, path) not in FOREIGN:
                    continue
                response = call(b, method, path, FOREIGN[method, path], named)
                assert response.status_code in (403, 404), (method, path, response.text)
                assert_error(response, response.status_code)
                assert_nothing_of_a(response, ids)
        # Naming A's project is refused on every route that takes a key, whatever it holds.
        for method, path in routes:
            spec = {**FOREIGN, **OWN_ONLY}[method, path]
            spec = {**spec, "params": {**spec.get("params", {}), "project": "alpha"}}
            response = call(b, method, path, spec, ids)
            if path == "/healthz":
                assert response.status_code == 200
            else:
                assert_error(response, 403, "forbidden")
            assert_nothing_of_a(response, ids)
        for method, path in routes:
            if (method, path) in OWN_ONLY:
                response = call(b, method, path, OWN_ONLY[method, path], ids)
                assert response.is_success, (method, path, response.text)
                assert_nothing_of_a(response, ids)
        # Reads over every subject of B's project find B's own data only.
        for response in (
            b.post("/v1/memories/search", json={"query": "home city language"}),
            b.post("/v1/memories/list", json={"include_retired": True}),
            b.get("/v1/conflicts", params={"status": "all"}),
            b.get("/v1/audit"),
        ):
            assert response.status_code == 200, response.text
            assert_nothing_of_a(response, ids)

    with api.client(api.key("alpha")) as a:
        after = a.post("/v1/memories/list", json={"include_retired": True}).json()
        assert after == before, "project B's calls changed project A"
        [conflict] = a.get("/v1/conflicts").json()
        assert conflict["status"] == "open"


def test_a_subject_of_another_project_reads_as_one_that_never_existed(api: Api) -> None:
    with api.client(api.key("alpha")) as a:
        seed_project_a(a)
    with api.client(api.key("beta")) as b:
        foreign = b.post("/v1/memories/search", json={"query": "x", "subject": SUBJECT})
        missing = b.post("/v1/memories/search", json={"query": "x", "subject": "nobody-ever"})
    assert assert_error(foreign, 404).replace(SUBJECT, "S") == assert_error(missing, 404).replace(
        "nobody-ever", "S"
    )

"""Schemathesis against the live server's own OpenAPI document: requests generated from every
operation's schema (valid ones and near misses), sent with an admin key acting on one
project, must never get a 5xx. Bounded: `EXAMPLES` per operation, a few seconds in all."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from tests.http_server import Api, claim_event, running_api, wait_for

EXAMPLES = 20  # per operation: about 20 operations, 15 s in all


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Api, str]]:
    """A server with a few facts and a conflict in project `fuzz`, and an admin key."""
    database = tmp_path_factory.mktemp("schemathesis") / "api.db"
    with running_api(str(database)) as api:
        token = api.key(None, admin=True)
        with api.client(token) as client:
            events = [
                claim_event("u1", "home_city", {"city": "Lisbon"}),
                claim_event("u1", "language", {"lang": "fr"}),
                claim_event("u1", "language", {"lang": "de"}),
            ]
            client.post("/v1/events", params={"project": "fuzz"}, json={"events": events})
            wait_for(
                lambda: client.get("/v1/conflicts", params={"project": "fuzz"}).json(),
                what="the seed to be consolidated",
            )
        yield api, token


@pytest.fixture(scope="module")
def api_schema(live: tuple[Api, str]) -> Any:
    api, _ = live
    return schemathesis.openapi.from_url(f"{api.url}/openapi.json")


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
)
def test_no_request_gets_a_server_error(case: Any, live: tuple[Api, str]) -> None:
    _, token = live
    response = case.call(headers={"Authorization": f"Bearer {token}"}, params={"project": "fuzz"})
    assert response.status_code < 500, (case.method, case.path, response.text)
    assert "Traceback" not in response.text
    if response.status_code >= 400:
        assert set(response.json()) == {"error"}, response.text

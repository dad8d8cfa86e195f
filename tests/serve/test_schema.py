"""Requests generated from the OpenAPI schema, and arbitrary bodies for real tasks: none gets a 500.

Schemathesis (on hypothesis) generates requests for every operation of the
schema; a second test sends arbitrary JSON to every state-changing route of
tasks that exist, in each state a person meets (waiting for approval, for an
answer, queued, ended), where the generated ids of the first test rarely go.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hypothesis
import pytest
import schemathesis
from hypothesis import strategies as st
from starlette.testclient import TestClient

from ratchet.runtime import Runtime
from ratchet.serve import create_app

from ..helpers.people_flows import asks, mail
from .support import BASE, JSON

_QUIET = hypothesis.settings(deadline=None, suppress_health_check=list(hypothesis.HealthCheck))


def _store_url(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'served.db'}"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def on_sqlite(tmp_path: Path) -> Iterator[TestClient]:
    """The app over a store, served by its lifespan as `ratchet serve` serves it."""
    with TestClient(create_app(f"sqlite:///{tmp_path / 'served.db'}"), base_url=BASE) as client:
        yield client


@pytest.fixture
def on_postgres(postgres_url: str) -> Iterator[TestClient]:
    with TestClient(create_app(postgres_url), base_url=BASE) as client:
        yield client


@pytest.fixture
def api_schema() -> Any:
    return schemathesis.openapi.from_dict(create_app("memory://").openapi())


# The live streams (tag "live") answer with a stream that lasts as long as its subject: a request
# there has no response to judge (test_live.py covers their 400s and 404s). The filter goes on the
# lazy schema: the one a fixture returns is loaded again unfiltered for each test.
schema = schemathesis.pytest.from_fixture("api_schema").exclude(tag="live")


def _check(case: schemathesis.Case[Any], client: TestClient) -> None:
    sent = case.as_transport_kwargs(base_url=BASE, headers=JSON)
    sent.pop("cookies", None)
    response = client.request(**sent)
    assert response.status_code < 500, (case.method, case.formatted_path, response.text)
    if response.status_code >= 400:
        assert list(response.json()) == ["detail"]


@schema.parametrize()
@hypothesis.settings(_QUIET, max_examples=20)
def test_no_generated_request_is_answered_with_a_500_on_sqlite(
    case: schemathesis.Case[Any], on_sqlite: TestClient
) -> None:
    _check(case, on_sqlite)


@schema.parametrize()
@hypothesis.settings(_QUIET, max_examples=10)
def test_no_generated_request_is_answered_with_a_500_on_postgres(
    case: schemathesis.Case[Any], on_postgres: TestClient
) -> None:
    _check(case, on_postgres)


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=8,
)
_FIELDS = st.sampled_from(
    [
        "reason",
        "text",
        "edit_args",
        "name",
        "payload",
        "action",
        "result",
        "checkpoint",
        "from_step",
        "instruction",
    ]
)
_BODIES = _JSON | st.dictionaries(_FIELDS, _JSON, max_size=3)
_ACTIONS = [
    "approve",
    "deny",
    "answer",
    "cancel",
    "resume",
    "retry",
    "fork",
    "messages",
    "notes",
    "in-doubt/0",
]


async def _seed(url: str, ledger: str) -> list[str]:
    async with Runtime(url) as rt:
        return [
            (await rt.run(mail, {"ledger": ledger})).id,  # waits for an approval
            (await rt.run(asks)).id,  # waits for an answer
            await rt.submit(mail, {"ledger": ledger}),  # queued
            (await rt.cancel(await rt.submit(mail, {"ledger": ledger}))).id,  # ended
        ]


@pytest.fixture(params=["sqlite", "postgres"])
def seeded(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, list[str]]:
    """A store of each kind holding a task in each state a person meets, and their ids."""
    url = _store_url(request.param, request, tmp_path)
    return url, asyncio.run(_seed(url, str(tmp_path / "ledger")))


@hypothesis.settings(_QUIET, max_examples=60)
@hypothesis.given(data=st.data())
def test_arbitrary_bodies_for_real_tasks_get_no_500(
    seeded: tuple[str, list[str]], data: st.DataObject
) -> None:
    url, tasks = seeded
    task_id = data.draw(st.sampled_from(tasks))
    action = data.draw(st.sampled_from(_ACTIONS))
    body = data.draw(_BODIES)
    with TestClient(create_app(url), base_url=BASE) as client:
        response = client.post(f"/api/tasks/{task_id}/{action}", json=body)
    assert response.status_code < 500, (action, body, response.text)
    if response.status_code >= 400:
        assert list(response.json()) == ["detail"]

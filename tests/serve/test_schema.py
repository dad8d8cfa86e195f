"""Requests generated from the OpenAPI schema (schemathesis, on hypothesis): none is answered with a 500."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import hypothesis
import pytest
import schemathesis
from starlette.testclient import TestClient

from ratchet.serve import create_app


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> TestClient:
    db: Path = tmp_path_factory.mktemp("schema") / "r.db"
    with TestClient(create_app(f"sqlite:///{db}"), base_url="http://127.0.0.1:8000") as client:
        yield client  # type: ignore[misc]


def _schema() -> Any:
    return schemathesis.openapi.from_dict(create_app("memory://").openapi())


schema = schemathesis.pytest.from_fixture("api_schema")


@pytest.fixture(scope="module")
def api_schema() -> Any:
    return _schema()


@schema.parametrize()
@hypothesis.settings(max_examples=25, deadline=None, suppress_health_check=list(hypothesis.HealthCheck))
def test_no_request_is_answered_with_a_500(case: schemathesis.Case, served: TestClient) -> None:
    response = served.request(
        **case.as_transport_kwargs(
            base_url="http://127.0.0.1:8000", headers={"content-type": "application/json"}
        )
    )
    assert response.status_code < 500, (case.method, case.formatted_path, response.text)
    assert list(response.json()) == ["detail"] if response.status_code >= 400 else True

"""`ratchet serve`'s /metrics: prometheus-client's exposition (OpenMetrics on request), behind the guard."""

from __future__ import annotations

from pathlib import Path

from ratchet.store import StateStore
from ratchet.trust.tokens import load_tokens

from .support import client_for

TOKEN = "s3cret-metrics-token"
OPENMETRICS = "application/openmetrics-text; version=1.0.0"


async def test_metrics_need_the_token_and_a_name_of_the_server_and_speak_openmetrics(
    store: StateStore, tmp_path: Path
) -> None:
    token_file = tmp_path / "tokens"
    token_file.write_text(f"{TOKEN}\n")
    bearer = {"authorization": f"Bearer {TOKEN}"}
    async with client_for(store, tokens=load_tokens(token_file)) as client:
        without = await client.get("/metrics")
        rebound = await client.get("/metrics", headers={**bearer, "host": "attacker.example:8000"})
        plain = await client.get("/metrics", headers=bearer)
        opened = await client.get("/metrics", headers={**bearer, "accept": OPENMETRICS})

    assert without.status_code == 401 and "ratchet_tasks" not in without.text
    assert rebound.status_code == 421 and "ratchet_tasks" not in rebound.text
    assert plain.status_code == 200 and plain.headers["content-type"].startswith("text/plain")
    assert opened.status_code == 200 and opened.headers["content-type"].startswith(
        "application/openmetrics-text"
    )
    assert 'ratchet_tasks{status="queued"} 0.0' in opened.text and opened.text.endswith("# EOF\n")

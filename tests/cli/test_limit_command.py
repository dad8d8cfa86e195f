"""`ratchet limit set|list|delete` and `ratchet submit --queue --partition`: what they keep; bad input."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from ratchet.records import Task
from ratchet.store import open_store

from ..helpers.cli import RunRatchet, assert_one_line_error


def _store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'r.db'}"


def _task(url: str, task_id: str) -> Task:
    async def read() -> Task:
        store = await open_store(url, create=False)
        try:
            return await store.get_task(task_id)
        finally:
            await store.close()

    return asyncio.run(read())


def test_limits_set_are_listed_replaced_and_deleted(run_ratchet: RunRatchet, tmp_path: Path) -> None:
    url = _store(tmp_path)
    assert (
        run_ratchet(
            "limit", "set", "openai:gpt-4o", "--rpm", "500", "--tpm", "30000", "--store", url
        ).returncode
        == 0
    )
    assert run_ratchet("limit", "set", "queue:emails", "--concurrency", "2", "--store", url).returncode == 0
    assert run_ratchet("limit", "set", "openai:gpt-4o", "--rpm", "60", "--store", url).returncode == 0

    listed = run_ratchet("limit", "list", "--store", url)
    as_json = json.loads(run_ratchet("limit", "list", "--json", "--store", url).stdout)
    deleted = run_ratchet("limit", "delete", "queue:emails", "--store", url)
    after = json.loads(run_ratchet("limit", "list", "--json", "--store", url).stdout)

    assert listed.stdout.splitlines() == ["openai:gpt-4o  rpm 60", "queue:emails   concurrency 2"]
    assert [(row["key"], row["rpm"], row["tpm"], row["concurrency"]) for row in as_json] == [
        ("openai:gpt-4o", 60, None, None),
        ("queue:emails", None, None, 2),
    ]
    assert deleted.returncode == 0 and deleted.stdout == "queue:emails: limits deleted\n"
    assert [row["key"] for row in after] == ["openai:gpt-4o"]


def test_bad_limits_are_one_line_and_store_nothing(run_ratchet: RunRatchet, tmp_path: Path) -> None:
    url = _store(tmp_path)
    run_ratchet("migrate", "--store", url)

    assert_one_line_error(run_ratchet("limit", "set", "openai:gpt-4o", "--store", url), "--rpm N")
    assert_one_line_error(run_ratchet("limit", "set", "nowhere:x", "--rpm", "5", "--store", url), "'nowhere'")
    assert_one_line_error(
        run_ratchet("limit", "set", "queue:q", "--rpm", "5", "--store", url), "--concurrency"
    )
    assert_one_line_error(
        run_ratchet("limit", "set", "queue:", "--concurrency", "1", "--store", url), "queue"
    )
    assert_one_line_error(run_ratchet("limit", "set", "openai", "--rpm", "0", "--store", url), "--rpm")
    assert_one_line_error(run_ratchet("limit", "delete", "openai", "--store", url), "no limit")
    assert json.loads(run_ratchet("limit", "list", "--json", "--store", url).stdout) == []


def test_submit_puts_the_task_in_its_queue_and_partition(run_ratchet: RunRatchet, tmp_path: Path) -> None:
    url = _store(tmp_path)
    (tmp_path / "script.json").write_text(json.dumps({"plan": []}))
    args = ("submit", "send the digest", "--model", "scripted:script.json", "--store", url, "--json")

    done = run_ratchet(*args, "--queue", "emails", "--partition", "tenant-42")

    assert done.returncode == 0, done.stderr
    task = _task(url, json.loads(done.stdout)["task_id"])
    assert (task.queue, task.partition) == ("emails", "tenant-42")
    assert_one_line_error(run_ratchet(*args, "--partition", "tenant-42"), "--queue")
    assert_one_line_error(run_ratchet(*args, "--queue", "two words"), "the queue 'two words'")

"""Schedules: time zones, cron macros, pause and resume, run now, and the overlap policy."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from zoneinfo import ZoneInfo

import pytest
from pydantic import JsonValue

from ratchet.errors import InputError
from ratchet.records import TaskFilter, TaskStatus, utcnow
from ratchet.runtime import Runtime
from ratchet.schedules import PAUSED_FIRE_AT, Schedule, next_due
from ratchet.store import StateStore

from .flows import FLOWS, entries
from .schedule_support import EVERY_MINUTE, backdated, fire_due_schedules, work

PARIS = ZoneInfo("Europe/Paris")


def _flow(ledger: str) -> tuple[str, dict[str, JsonValue]]:
    return f"{FLOWS}:call_one", {"ledger": ledger, "tool_name": "record"}


async def _schedule_of(rt: Runtime, schedule_id: str) -> tuple[Schedule, dt.datetime]:
    [found] = [(plan, due) for plan, due in await rt.schedules() if plan.id == schedule_id]
    return found


async def test_a_cron_is_read_in_the_schedules_time_zone(rt: Runtime, ledger: str) -> None:
    before = utcnow()
    queued = await rt.schedule(*_flow(ledger), every="0 9 * * *", tz="Europe/Paris", schedule_id="paris")
    local = queued.fire_at.astimezone(PARIS)
    assert (local.hour, local.minute) == (9, 0) and queued.fire_at.hour in (7, 8)  # CEST or CET
    assert queued.fire_at == next_due("0 9 * * *", before, "Europe/Paris")
    plan, due = await _schedule_of(rt, "paris")
    assert (plan.tz, due) == ("Europe/Paris", queued.fire_at)


def test_daylight_saving_changes_are_croniters() -> None:
    spring = dt.datetime(2026, 3, 28, 12, tzinfo=PARIS)  # 02:00 -> 03:00 the next night
    skipped = next_due("30 2 * * *", spring, "Europe/Paris")
    assert skipped == dt.datetime(2026, 3, 29, 1, 0, tzinfo=dt.UTC)  # 03:00 CEST, after the gap
    assert next_due("30 2 * * *", skipped, "Europe/Paris") == dt.datetime(2026, 3, 30, 0, 30, tzinfo=dt.UTC)
    autumn = dt.datetime(2026, 10, 24, 12, tzinfo=PARIS)  # 03:00 -> 02:00 the next night
    first = next_due("30 2 * * *", autumn, "Europe/Paris")
    second = next_due("30 2 * * *", first, "Europe/Paris")
    assert (first, second) == (
        dt.datetime(2026, 10, 25, 0, 30, tzinfo=dt.UTC),  # 02:30 CEST
        dt.datetime(2026, 10, 25, 1, 30, tzinfo=dt.UTC),  # 02:30 CET, the same wall-clock time again
    )


@pytest.mark.parametrize(
    ("macro", "local"),
    [
        ("@hourly", lambda t: (t.minute, t.second) == (0, 0)),
        ("@daily", lambda t: (t.hour, t.minute) == (0, 0)),
        ("@weekly", lambda t: (t.weekday(), t.hour, t.minute) == (6, 0, 0)),
        ("@monthly", lambda t: (t.day, t.hour, t.minute) == (1, 0, 0)),
        ("@yearly", lambda t: (t.month, t.day, t.hour) == (1, 1, 0)),
    ],
)
async def test_cron_macros_are_schedules(
    rt: Runtime, ledger: str, macro: str, local: Callable[[dt.datetime], bool]
) -> None:
    queued = await rt.schedule(*_flow(ledger), every=macro, tz="Europe/Paris")
    assert queued.fire_at > utcnow()
    assert local(queued.fire_at.astimezone(PARIS))


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"every": "@reboot"}, "not a cron macro"),
        ({"every": "@daily", "tz": "Mars/Olympus"}, "'Mars/Olympus' is not a time zone"),
        ({"every": "@daily", "tz": "../etc/passwd"}, "is not a time zone"),
        ({"every": "@daily", "overlap": "queue"}, "overlap 'queue'"),
    ],
)
async def test_bad_schedule_options_are_refused(
    rt: Runtime, ledger: str, options: dict[str, str], expected: str
) -> None:
    with pytest.raises(InputError, match=expected):
        await rt.schedule(*_flow(ledger), **options)  # type: ignore[arg-type]
    assert await rt.schedules() == []


async def test_a_paused_schedule_fires_nothing_and_resumes_without_making_up(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    plan, due = await backdated(rt, ledger, minutes=3)
    paused = await rt.pause_schedule(plan.id)
    assert paused is not None and paused.paused
    assert await _schedule_of(rt, plan.id) == (paused, PAUSED_FIRE_AT)

    await work(store)
    assert await store.list_tasks() == [] and entries(ledger) == []

    before = utcnow()
    resumed = await rt.resume_schedule(plan.id)
    assert resumed is not None
    schedule, next_time = resumed
    assert not schedule.paused and next_time > before and next_time == next_due(EVERY_MINUTE, before)
    assert next_time > due[-1]
    assert await _schedule_of(rt, plan.id) == (schedule, next_time)
    assert await fire_due_schedules(store) == []  # the due times missed while paused are not made up
    assert await rt.resume_schedule(plan.id) == (schedule, next_time)  # not paused: left as it was


async def test_pause_resume_and_trigger_of_an_unknown_schedule_say_so(rt: Runtime) -> None:
    assert await rt.pause_schedule("nope") is None
    assert await rt.resume_schedule("nope") is None
    assert await rt.trigger_schedule("nope") is None


async def test_trigger_runs_a_task_now_and_keeps_the_next_due_time(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    queued = await rt.schedule(*_flow(ledger), every="0 9 * * 1", schedule_id="weekly")
    await rt.pause_schedule("weekly")

    task_id = await rt.trigger_schedule("weekly")  # paused: an operator's request runs all the same

    assert task_id is not None and task_id.startswith("weekly-")
    plan, due = await _schedule_of(rt, "weekly")
    assert (plan.paused, plan.last_task, due) == (True, task_id, PAUSED_FIRE_AT)
    await work(store)
    assert (await store.get_task(task_id)).status is TaskStatus.COMPLETED
    assert len(entries(ledger, "record")) == 1
    resumed = await rt.resume_schedule("weekly")
    assert resumed is not None and resumed[1] == queued.fire_at


async def test_every_task_a_schedule_makes_has_its_labels(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    await rt.schedule(*_flow(ledger), every="0 9 * * 1", schedule_id="labelled", labels={"team": "ops"})

    task_id = await rt.trigger_schedule("labelled")

    assert task_id is not None
    assert (await store.get_task(task_id)).labels == {"team": "ops"}
    assert [row.id for row in await store.list_task_rows(TaskFilter(labels=(("team", "ops"),)))] == [task_id]


async def test_skip_makes_no_task_while_the_last_run_goes_and_says_so(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    plan, due = await backdated(rt, ledger, minutes=3, overlap="skip")
    assert len(due) >= 3

    [first] = await fire_due_schedules(store)  # it stays queued: no worker runs it yet

    assert [task.id for task in await store.list_tasks()] == [first.id]
    skipped = [e for e in await store.list_events(first.id) if e.kind == "schedule_skipped"]
    assert [e.data["due"] for e in skipped] == [t.isoformat() for t in due[1:]]
    assert all(e.data["schedule"] == plan.id for e in skipped)
    _, next_time = await _schedule_of(rt, plan.id)
    assert next_time > utcnow()

    await work(store)  # the last run ends: the next due time makes a task again
    assert (await store.get_task(first.id)).status is TaskStatus.COMPLETED
    [queued] = await store.list_triggers()
    assert await store.update_trigger(queued.model_copy(update={"fire_at": utcnow()}))
    [second] = await fire_due_schedules(store)
    assert second.id != first.id


async def test_allow_makes_a_task_at_each_due_time_while_others_go(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    _, due = await backdated(rt, ledger, minutes=3, overlap="allow")

    made = await fire_due_schedules(store)

    assert len(made) == len(due) and all(task.status is TaskStatus.QUEUED for task in made)
    for task in made:
        assert all(e.kind != "schedule_skipped" for e in await store.list_events(task.id))


async def test_a_triggered_run_is_the_last_run_skip_waits_for(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    plan, _ = await backdated(rt, ledger, minutes=1, overlap="skip")
    task_id = await rt.trigger_schedule(plan.id)

    assert await fire_due_schedules(store) == []

    assert task_id is not None
    skipped = [e for e in await store.list_events(task_id) if e.kind == "schedule_skipped"]
    assert len(skipped) >= 1


async def test_a_schedule_stored_before_these_settings_reads_as_utc_skip_running(
    store: StateStore, rt: Runtime, ledger: str
) -> None:
    queued = await rt.schedule(*_flow(ledger), every="0 9 * * *", schedule_id="old")
    older = {k: v for k, v in queued.payload.items() if k not in {"tz", "overlap", "paused", "last_task"}}
    assert await store.update_trigger(queued.model_copy(update={"payload": older}))

    plan, due = await _schedule_of(rt, "old")

    assert (plan.tz, plan.overlap, plan.paused, plan.last_task, due) == (
        "UTC",
        "skip",
        False,
        None,
        queued.fire_at,
    )

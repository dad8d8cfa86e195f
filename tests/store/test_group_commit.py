"""Group commit: write transactions that arrive together share one commit, and each keeps its own fate.

The behaviour tests run on every store (the memory store commits nothing to
share, so there each transaction commits alone and the same things hold); the
SQL stores must also show that the writes did share commits.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import psycopg
import pytest

from ratchet.errors import DuplicateRecord, LeaseLost, StoreError, StoreURLError
from ratchet.records import Lease, OpStatus, Task
from ratchet.store import StateStore, open_store

from ..helpers.builders import finish, make_event, make_op, make_task
from ..helpers.disk import SmallDisk
from ..helpers.fences import leased_task
from ..helpers.stores import opened, sharing_commits

WRITERS = 12
LONG = 30.0  # a patience or wait no loaded machine runs out of: a test arranges its groups itself


class Boom(Exception):
    """Raised inside a transaction block to make it roll back."""


@pytest.fixture
async def store(store_url: str) -> AsyncIterator[StateStore]:
    """The suite's store with group commit on (by default only SQLite with durability=full has it)."""
    async with opened(sharing_commits(store_url)) as store:
        if store.groups is not None and store.groups.patience is not None:
            store.groups.patience = LONG  # joiners wait for their leader, however loaded the machine
        yield store


async def _tasks_with_leases(store: StateStore, count: int) -> list[tuple[Task, Lease]]:
    return [await leased_task(store, f"t{i}") for i in range(count)]


def _grouped(store: StateStore, writes: int) -> None:
    """On a store that groups, `writes` transactions that arrived together took fewer commits."""
    groups = store.groups
    if groups is not None:
        assert groups.members == writes
        assert groups.commits < writes


async def test_writers_at_once_share_commits_and_one_that_fails_fails_alone(store: StateStore) -> None:
    leased = await _tasks_with_leases(store, WRITERS)
    await store.claim_lease(leased[3][0].id, "w2", 60, take_over=True)  # w1's lease on t3 is stale now
    if store.groups is not None:
        store.groups.commits = store.groups.members = 0

    async def write(i: int, task: Task, lease: Lease) -> None:
        async with store.transaction(fence=lease) as tx:
            await tx.append_event(make_event(task.id, "before"))
            await tx.record_op_started(make_op(task.id, 0))
            if i == 5:
                await tx.create_task(make_task("t0"))  # a duplicate: DuplicateRecord
            if i == 7:
                raise Boom

    outcomes = await asyncio.gather(
        *(write(i, *pair) for i, pair in enumerate(leased)), return_exceptions=True
    )

    assert isinstance(outcomes[3], LeaseLost)
    assert isinstance(outcomes[5], DuplicateRecord)
    assert isinstance(outcomes[7], Boom)
    failed = {3, 5, 7}
    assert [i for i, outcome in enumerate(outcomes) if outcome is not None] == sorted(failed)
    for i, (task, _) in enumerate(leased):
        kept = i not in failed
        assert (await store.get_op(task.id, 0) is not None) is kept
        assert [e.message for e in await store.list_events(task.id)] == (["before"] if kept else [])
    _grouped(store, WRITERS - len(failed))


async def test_a_stale_lease_fails_alone_when_a_member_writes_only_its_journal_row(store: StateStore) -> None:
    """A driver may hold a journal write back to send it with the next statement: still, its
    failure is its member's, never the next member's or the group's."""
    leased = await _tasks_with_leases(store, 8)
    for i in (2, 6):
        await store.claim_lease(leased[i][0].id, "w2", 60, take_over=True)

    async def write(task: Task, lease: Lease) -> None:
        async with store.transaction(fence=lease) as tx:
            await tx.record_op_started(make_op(task.id, 0))

    outcomes = await asyncio.gather(*(write(*pair) for pair in leased), return_exceptions=True)

    assert [i for i, o in enumerate(outcomes) if o is not None] == [2, 6]
    assert all(isinstance(outcomes[i], LeaseLost) for i in (2, 6))
    for i, (task, _) in enumerate(leased):
        assert (await store.get_op(task.id, 0) is not None) is (i not in (2, 6))


async def test_members_refused_at_the_commit_fail_alone_beside_members_that_write_more(
    store: StateStore,
) -> None:
    """A member writing only its journal row may have it sent with the commit (PostgreSQL: the whole
    group's in one round trip); one whose fence or write fails there is rolled back alone, also when
    a later member's statement, not the commit, is what sends it."""
    leased = await _tasks_with_leases(store, 12)
    for i in (1, 6):
        await store.claim_lease(leased[i][0].id, "w2", 60, take_over=True)  # stale from now on
    done = finish(make_op(leased[9][0].id, 0))
    async with store.transaction(fence=leased[9][1]) as tx:
        await tx.record_op_started(make_op(leased[9][0].id, 0))
        await tx.record_op_finished(done)  # so its intent again is refused: DuplicateRecord

    async def write(i: int, task: Task, lease: Lease) -> None:
        async with store.transaction(fence=lease) as tx:
            await tx.record_op_started(make_op(task.id, 0))
            if i % 3 == 2:  # an event too: a member with more than its journal row
                await tx.append_event(make_event(task.id, "after"))

    outcomes = await asyncio.gather(
        *(write(i, *pair) for i, pair in enumerate(leased)), return_exceptions=True
    )

    assert [i for i, o in enumerate(outcomes) if o is not None] == [1, 6, 9]
    assert isinstance(outcomes[1], LeaseLost) and isinstance(outcomes[6], LeaseLost)
    assert isinstance(outcomes[9], DuplicateRecord)
    for i, (task, _) in enumerate(leased):
        op = await store.get_op(task.id, 0)
        if i == 9:
            assert op is not None and op.status is OpStatus.SUCCEEDED
            continue
        assert (op is not None) is (i not in (1, 6))
        assert [e.message for e in await store.list_events(task.id)] == (["after"] if i % 3 == 2 else [])


async def test_the_journal_s_own_writes_fail_alone_beside_members_in_savepoints(store: StateStore) -> None:
    """The journal's writes (`record_op_started`/`_finished` on the store: one write each) may join
    without a savepoint (SQLite). One refused, for its fence or its row, leaves nothing behind and
    takes nothing with it: neither the members before it, in savepoints or not, nor those after."""
    leased = await _tasks_with_leases(store, 12)
    for i in (1, 4):
        await store.claim_lease(leased[i][0].id, "w2", 60, take_over=True)  # stale from now on
    for i in (7, 10):  # their intent again is refused: DuplicateRecord
        done = finish(make_op(leased[i][0].id, 0))
        await store.record_op_started(make_op(leased[i][0].id, 0), fence=leased[i][1])
        await store.record_op_finished(done, fence=leased[i][1])
    if store.groups is not None:
        store.groups.commits = store.groups.members = 0

    async def write(i: int, task: Task, lease: Lease) -> None:
        if i % 3 == 0:  # a member in a savepoint, right before each refused one
            async with store.transaction(fence=lease) as tx:
                await tx.append_event(make_event(task.id, "before"))
                await tx.record_op_started(make_op(task.id, 0))
            return
        await store.record_op_started(make_op(task.id, 0), fence=lease)
        await store.record_op_finished(finish(make_op(task.id, 0)), fence=lease)

    outcomes = await asyncio.gather(
        *(write(i, *pair) for i, pair in enumerate(leased)), return_exceptions=True
    )

    assert [i for i, o in enumerate(outcomes) if o is not None] == [1, 4, 7, 10]
    assert isinstance(outcomes[1], LeaseLost) and isinstance(outcomes[4], LeaseLost)
    assert isinstance(outcomes[7], DuplicateRecord) and isinstance(outcomes[10], DuplicateRecord)
    for i, (task, _) in enumerate(leased):
        op = await store.get_op(task.id, 0)
        events = [e.message for e in await store.list_events(task.id)]
        if i % 3 == 0:
            assert op is not None and op.status is OpStatus.STARTED and events == ["before"]
        elif i in (1, 4):
            assert op is None and events == []
        else:  # 7 and 10 kept the row they had; the others wrote theirs, intent then outcome
            assert op is not None and op.status is OpStatus.SUCCEEDED and events == []
    # 4 members in savepoints, and 4 tasks' intents and outcomes: 12 writes, in fewer commits.
    _grouped(store, 12)


async def test_each_task_s_writes_stay_in_order(store: StateStore) -> None:
    leased = await _tasks_with_leases(store, 8)

    async def write(task: Task, lease: Lease) -> None:
        intent = make_op(task.id, 0)
        for n in range(10):
            async with store.transaction(fence=lease) as tx:
                await tx.append_event(make_event(task.id, str(n)))
                if n == 3:
                    await tx.record_op_started(intent)
                if n == 4:
                    await tx.record_op_finished(finish(intent))

    await asyncio.gather(*(write(*pair) for pair in leased))

    for task, _ in leased:
        events = await store.list_events(task.id)
        assert [(e.seq, e.message) for e in events] == [(n + 1, str(n)) for n in range(10)]
        op = await store.get_op(task.id, 0)
        assert op is not None and op.status is OpStatus.SUCCEEDED


async def test_a_nested_transaction_is_refused_in_a_member_too(store: StateStore) -> None:
    leased = await _tasks_with_leases(store, 4)

    async def write(task: Task, lease: Lease) -> None:
        async with store.transaction(fence=lease) as tx:
            await tx.append_event(make_event(task.id))
            await store.append_event(make_event(task.id, "nested"))

    outcomes = await asyncio.gather(*(write(*pair) for pair in leased), return_exceptions=True)

    assert all(isinstance(o, StoreError) and "inside one of its own" in str(o) for o in outcomes)
    for task, _ in leased:
        assert await store.list_events(task.id) == []


async def test_a_failed_commit_fails_every_member_of_the_group(postgres_url: str) -> None:
    """A deferred constraint refuses one member's event at COMMIT: none of the group is kept."""
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        async with await open_store(postgres_url) as store:
            leased = await _tasks_with_leases(store, 6)
        conn.execute(
            "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            "IF NEW.message = 'refused' THEN RAISE EXCEPTION 'refused at commit'; END IF; RETURN NULL; END $$"
        )
        conn.execute(
            "CREATE CONSTRAINT TRIGGER refuse AFTER INSERT ON events DEFERRABLE INITIALLY DEFERRED "
            "FOR EACH ROW EXECUTE FUNCTION refuse()"
        )
    async with await open_store(f"{postgres_url}?group_commit=on") as store:
        assert store.groups is not None
        store.groups.patience = store.groups.max_wait = 30.0  # one group, however loaded the machine

        async def write(i: int, task: Task, lease: Lease) -> None:
            async with store.transaction(fence=lease) as tx:
                await tx.append_event(make_event(task.id, "refused" if i == 0 else "fine"))
                await tx.record_op_started(make_op(task.id, 0))

        outcomes = await asyncio.gather(
            *(write(i, *pair) for i, pair in enumerate(leased)), return_exceptions=True
        )

        assert all(isinstance(o, StoreError) and "refused at commit" in str(o) for o in outcomes), outcomes
        for task, _ in leased:
            assert await store.get_op(task.id, 0) is None
            assert await store.list_events(task.id) == []
        assert store.groups.commits == 0


async def test_a_full_disk_fails_every_member_and_keeps_none(small_disk: SmallDisk) -> None:
    async with await open_store(f"sqlite:///{small_disk.directory / 'r.db'}") as store:
        leased = await _tasks_with_leases(store, 6)

        async def write(task: Task, lease: Lease) -> None:
            async with store.transaction(fence=lease) as tx:
                await tx.append_event(make_event(task.id, "x" * 2000))
                await tx.record_op_started(make_op(task.id, 0))

        small_disk.fill()
        try:
            outcomes = await asyncio.gather(*(write(*pair) for pair in leased), return_exceptions=True)
        finally:
            small_disk.free()

        assert all(isinstance(o, StoreError) for o in outcomes), outcomes
        for task, _ in leased:
            assert await store.get_op(task.id, 0) is None
            assert await store.list_events(task.id) == []
        await store.append_event(make_event(leased[0][0].id, "after"))  # the store still works
        assert [e.message for e in await store.list_events(leased[0][0].id)] == ["after"]


async def test_group_commit_off_commits_each_transaction_alone(url: str) -> None:
    async with await open_store(url + ("&" if "?" in url else "?") + "group_commit=off") as store:
        assert store.groups is None
        leased = await _tasks_with_leases(store, 4)

        async def write(task: Task, lease: Lease) -> None:
            async with store.transaction(fence=lease) as tx:
                await tx.append_event(make_event(task.id))

        await asyncio.gather(*(write(*pair) for pair in leased))
        for task, _ in leased:
            assert len(await store.list_events(task.id)) == 1


@pytest.mark.parametrize("value", ["yes", ""])
async def test_group_commit_takes_on_or_off(url: str, value: str) -> None:
    with pytest.raises(StoreURLError, match="group_commit must be 'on' or 'off'"):
        await open_store(url + ("&" if "?" in url else "?") + f"group_commit={value}")


# ---------------------------------------------------------------- fences against a sibling's lease change
# A task's own transactions (children gathered under asyncio.gather) may release its lease while a
# sibling's fenced transaction waits to run: the sibling's fence must come out as it would alone.


async def test_a_sibling_queued_in_a_group_is_fenced_before_a_later_release_on_another_connection(
    postgres_url: str,
) -> None:
    """PostgreSQL: a sibling waits in a full group behind another task's block; its task's release,
    arriving next, would lead a group of its own on another connection and commit first."""
    async with opened(sharing_commits(postgres_url)) as store:
        assert store.groups is not None
        store.groups.patience = LONG
        store.groups.max_members = 2  # the other task's block and the sibling: the release leads elsewhere
        (other, other_lease), (task, lease) = await _tasks_with_leases(store, 2)
        leading, go = asyncio.Event(), asyncio.Event()

        async def lead() -> None:
            async with store.transaction(fence=other_lease) as tx:
                await tx.get_task(other.id)
                leading.set()
                await go.wait()

        async def sibling() -> None:
            await leading.wait()
            async with store.transaction(fence=lease) as tx:
                await tx.append_event(make_event(task.id, "sibling"))

        async def release_lease() -> None:
            await leading.wait()
            for _ in range(3):
                await asyncio.sleep(0)  # the sibling is queued first
            async with store.transaction(fence=lease) as tx:
                await tx.release_lease(lease)

        running = [asyncio.create_task(work()) for work in (lead, sibling, release_lease)]
        await asyncio.sleep(0.2)  # what an overtaking release needs to commit
        go.set()
        outcomes = await asyncio.gather(*running, return_exceptions=True)

        assert outcomes == [None, None, None]
        assert [e.message for e in await store.list_events(task.id)] == ["sibling"]
        released = await store.get_lease(task.id)
        assert released is not None and released.released


async def test_a_joiner_whose_group_ran_out_of_time_still_runs_before_later_arrivals(
    store: StateStore,
) -> None:
    """A joiner queued before the group stopped admitting runs in it, before a transaction the
    leader's task opens next (here: the release of the lease the joiner is fenced by)."""
    task, lease = await leased_task(store)
    if store.groups is not None:
        store.groups.max_wait = 0.0  # the group stops admitting as soon as the leader's block ends
    leading = asyncio.Event()

    async def lead_then_release() -> None:
        async with store.transaction(fence=lease) as tx:
            await tx.append_event(make_event(task.id, "leader"))
            leading.set()
            for _ in range(3):
                await asyncio.sleep(0)  # the sibling arrives and waits
        async with store.transaction(fence=lease) as tx:
            await tx.release_lease(lease)

    async def sibling() -> None:
        await leading.wait()
        async with store.transaction(fence=lease) as tx:
            await tx.append_event(make_event(task.id, "sibling"))

    outcomes = list(await asyncio.gather(lead_then_release(), sibling(), return_exceptions=True))

    assert outcomes == [None, None]
    assert [e.message for e in await store.list_events(task.id)] == ["leader", "sibling"]


async def test_the_joiners_of_a_failed_leader_still_run_before_what_its_task_writes_next(
    store: StateStore,
) -> None:
    task, lease = await leased_task(store)
    leading = asyncio.Event()

    async def fail_then_release() -> None:
        with pytest.raises(Boom):
            async with store.transaction(fence=lease) as tx:
                await tx.append_event(make_event(task.id, "rolled back"))
                leading.set()
                for _ in range(3):
                    await asyncio.sleep(0)  # the siblings arrive and wait
                raise Boom
        async with store.transaction(fence=lease) as tx:
            await tx.release_lease(lease)

    async def sibling(i: int) -> None:
        await leading.wait()
        async with store.transaction(fence=lease) as tx:
            await tx.append_event(make_event(task.id, f"sibling {i}"))

    outcomes = list(await asyncio.gather(fail_then_release(), sibling(0), sibling(1), return_exceptions=True))

    assert outcomes == [None, None, None]
    assert [e.message for e in await store.list_events(task.id)] == ["sibling 0", "sibling 1"]

"""What a PostgreSQL store says about where it connects: a multi-host URL's servers, and a failover.

The failover itself, with real servers killed and promoted, is in
tests/failover/test_primary_failover.py; these hold the words to what the
store saw.
"""

from __future__ import annotations

import logging

import pytest

from ratchet.store.sql.postgresql.failover import FailoverWatch, ServerState
from ratchet.store.sql.postgresql.schema import Target

SYNC = ServerState(timeline=1, standby_names="replica_a", commit_level="on", port=5432)
ASYNC = ServerState(timeline=1, standby_names="", commit_level="on", port=5432)


def test_a_multi_host_url_names_each_host_with_its_port() -> None:
    target = Target.of("postgresql://ratchet@db1:5432,db2:5433/ratchet?target_session_attrs=read-write")
    assert str(target) == "database 'ratchet' on db1:5432,db2:5433"
    assert Target.of("postgresql://ratchet@db1,db2:6000/r").server == "db1:5432,db2:6000"
    assert Target.of("postgresql://ratchet@db1:7000/r").server == "db1:7000"


@pytest.mark.parametrize("level", ["on", "remote_write", "remote_apply"])
def test_replication_is_synchronous_only_with_a_standby_named_and_a_commit_that_waits_for_it(
    level: str,
) -> None:
    assert ServerState(1, "ANY 1 (a, b)", level, None).synchronous
    assert not ServerState(1, "", level, None).synchronous
    assert not ServerState(1, "a", "local", None).synchronous


def test_the_same_timeline_says_nothing_and_a_new_one_says_what_the_old_primary_promised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    watch = FailoverWatch(Target.of("postgresql://ratchet@db1,db2/ratchet"))
    watch.saw(SYNC)
    watch.saw(SYNC)
    watch.saw(ServerState(None, "", "on", 5433))  # a standby: no timeline, no news
    assert caplog.text == "" and watch.failovers == 0
    watch.saw(ServerState(2, "", "on", 5433))
    assert watch.failovers == 1
    said = caplog.text
    assert "the database failed over" in said and "port 5433" in said
    assert "WAL timeline 2, where it was on timeline 1" in said
    assert "ran synchronous replication (synchronous_standby_names='replica_a'" in said
    assert "may have been lost" not in said


def test_after_asynchronous_replication_a_failover_says_what_may_have_been_lost(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    watch = FailoverWatch(Target.of("postgresql://ratchet@db1,db2/ratchet"))
    watch.saw(ASYNC)
    watch.saw(ServerState(2, "", "on", 5433))
    said = caplog.text
    assert "ran asynchronous (or no) replication" in said
    assert "may have been lost" in said and "idempotency key" in said and "may run again" in said
    assert said.count("failed over") == 1

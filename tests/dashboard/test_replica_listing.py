"""The task list of a store with a read replica (``?read_url=``) in headless Chromium: it says where the
page was read, and how far behind that copy was, beside the count.

`ratchet serve` runs over a real PostgreSQL primary streaming to a real hot standby (one pair for the
module); the tasks are made on the primary through the real runtime.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from playwright.sync_api import expect

from ..helpers.replication import ReplicatedPair, replicated_pair
from .conftest import OpenPage
from .list_support import make_tasks
from .support import serving


@pytest.fixture(scope="module")
def pair() -> Iterator[ReplicatedPair]:
    with replicated_pair(synchronous=False) as started:
        yield started


def test_the_list_says_it_was_read_on_the_replica_and_how_far_behind(
    pair: ReplicatedPair, open_page: OpenPage, tmp_path: Path
) -> None:
    database = pair.create_database()
    read_url = quote(pair.replica.url(database), safe="")
    store = f"{pair.primary.url(database)}?read_url={read_url}"
    make_tasks(store, ["first", "second"])  # the primary gets the schema and the tasks
    pair.wait_replayed()
    with serving(tmp_path, store) as server:
        page = open_page(server)
        page.goto("/")
        expect(page.locator("#tasks-count")).to_have_text("Tasks 1\u20132 of 2")
        source = page.locator("#tasks-replica")
        expect(source).to_be_visible()
        # Nothing is behind here, but the server may write as the page reads: a lag is a number.
        lag = re.compile(rf"from replica localhost:{pair.replica.port}, \d+\.\d s behind")
        expect(source).to_have_text(lag)


def test_a_list_without_a_replica_says_nothing_of_one(
    pair: ReplicatedPair, open_page: OpenPage, tmp_path: Path
) -> None:
    store = pair.primary.url(pair.create_database())
    make_tasks(store, ["only"])
    with serving(tmp_path, store) as server:
        page = open_page(server)
        page.goto("/")
        expect(page.locator("#tasks-count")).to_have_text(re.compile(r"Task 1 of 1"))
        expect(page.locator("#tasks-replica")).to_be_hidden()

"""The timeline's time scale (static/timescale.js), run in the browser the dashboard runs in.

A task that waits four minutes between two bursts of calls must show both bursts across the width,
not squeezed into a pixel column at each end; a task that never waits long is drawn linearly.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from importlib import resources
from typing import Any, Protocol

import pytest
from playwright.sync_api import Browser

T0 = dt.datetime(2030, 1, 1, 12, 0, tzinfo=dt.UTC)
WIDTH = 1000


class Scale(Protocol):
    def __call__(self, attempts: list[dict[str, Any]], at: list[float]) -> dict[str, Any]: ...


# The module as it is shipped (from a data: URL, so no server is needed): the scale of `attempts`
# over WIDTH pixels, with x() of each instant of `at` (seconds after T0) and the breaks.
_HARNESS = """async ([source, attempts, at, t0, width]) => {
  const scale = await import("data:text/javascript;charset=utf-8," + encodeURIComponent(source));
  const drawn = scale.compressedScale(attempts, { width, now: Date.parse(t0) });
  return { xs: at.map((s) => drawn.x(Date.parse(t0) + s * 1000)), gaps: drawn.gaps, width: drawn.width };
}"""


def call(start: float, seconds: float, kind: str = "clock", seq: int = 0) -> dict[str, Any]:
    """An attempt of the timeline's API from `start` seconds after T0, lasting `seconds`."""
    return {
        "seq": seq,
        "kind": kind,
        "started_at": (T0 + dt.timedelta(seconds=start)).isoformat(),
        "finished_at": (T0 + dt.timedelta(seconds=start + seconds)).isoformat(),
    }


@pytest.fixture(scope="module")
def scale(browser: Browser) -> Iterator[Scale]:
    source = (resources.files("ratchet.serve") / "static" / "timescale.js").read_text()
    page = browser.new_page()

    def run(attempts: list[dict[str, Any]], at: list[float]) -> dict[str, Any]:
        found: dict[str, Any] = page.evaluate(_HARNESS, [source, attempts, at, T0.isoformat(), WIDTH])
        return found

    yield run
    page.close()


def test_a_four_minute_wait_is_a_narrow_break_and_both_bursts_keep_their_width(scale: Scale) -> None:
    first = [call(i * 0.1, 0.05, seq=i) for i in range(10)]  # a burst of 1 s
    wait = call(1.0, 240.0, kind="sleep", seq=10)  # four minutes asleep
    second = [call(241 + i * 0.1, 0.05, seq=11 + i) for i in range(10)]

    found = scale([*first, wait, *second], [0, 0.95, 241, 241.95])  # each burst's first start and last end

    start_first, end_first, start_second, end_second = found["xs"]
    [gap] = found["gaps"]
    origin = T0.timestamp() * 1000
    assert (gap["start"] - origin, gap["end"] - origin) == (pytest.approx(950), pytest.approx(241_000))  # ms
    assert end_first - start_first > 0.4 * WIDTH and end_second - start_second > 0.4 * WIDTH
    assert start_second - end_first < 0.1 * WIDTH  # the wait itself: a narrow break
    assert found["width"] == pytest.approx(WIDTH)


def test_a_task_that_never_waits_long_is_drawn_linearly(scale: Scale) -> None:
    calls = [call(i * 0.5, 0.4, seq=i) for i in range(20)]  # 10 s of calls, 0.1 s between each

    found = scale(calls, [0, 2.5, 5, 9.9])

    assert found["gaps"] == []
    assert found["xs"] == pytest.approx([0, WIDTH * 2.5 / 9.9, WIDTH * 5 / 9.9, WIDTH], abs=0.01)


def test_many_breaks_share_at_most_half_the_width(scale: Scale) -> None:
    calls = [call(i * 100.0, 0.5, seq=i) for i in range(40)]  # 39 waits of 99.5 s

    found = scale(calls, [0, 3900.5])

    assert len(found["gaps"]) == 39
    assert sum(gap["width"] for gap in found["gaps"]) == pytest.approx(WIDTH / 2)
    assert found["xs"] == pytest.approx([0, WIDTH])

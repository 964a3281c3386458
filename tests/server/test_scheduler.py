"""When the scheduler runs a document's checks: at once after a pause, debounced while typing."""

from __future__ import annotations

import asyncio

import pytest

from torchlint.server.scheduler import Scheduler

pytestmark = pytest.mark.asyncio
DELAY = 0.3


async def test_a_change_after_a_pause_runs_at_once_and_a_quick_follower_waits():
    loop = asyncio.get_running_loop()
    started: list[tuple[str, float]] = []

    def run(name: str):
        async def check(is_current) -> None:
            started.append((name, loop.time()))
        return check

    scheduler = Scheduler(report_error=print)
    first = loop.time()
    scheduler.request("doc", DELAY, run("first"))
    await asyncio.sleep(0.05)
    second = loop.time()
    scheduler.request("doc", DELAY, run("second"))
    await asyncio.sleep(DELAY + 0.2)
    assert [name for name, _ in started] == ["first", "second"]
    assert started[0][1] - first < DELAY / 2
    assert started[1][1] - second >= DELAY


async def test_keystrokes_in_quick_succession_run_once_with_the_last_text():
    started: list[str] = []

    def run(name: str):
        async def check(is_current) -> None:
            started.append(name)
        return check

    scheduler = Scheduler(report_error=print)
    scheduler.request("doc", DELAY, run("opened"))
    await asyncio.sleep(DELAY + 0.1)
    for key in "abc":
        scheduler.request("doc", DELAY, run(key))
        await asyncio.sleep(0.02)
    await asyncio.sleep(DELAY + 0.2)
    # "a" follows the open after a pause and runs at once; "b" and "c" are debounced into "c".
    assert started == ["opened", "a", "c"]

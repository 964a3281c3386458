"""When the scheduler runs a document's checks (at once after a pause, debounced while typing), and
the worker processes that run them."""

from __future__ import annotations

import asyncio
import os

import pytest

from torchlint.config import Settings
from torchlint.rules import get_rule
from torchlint.server import worker
from torchlint.server.scheduler import Scheduler, WorkerCrashed, WorkerPool

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


async def test_a_pool_forked_before_serving_checks_and_replaces_a_crashed_worker():
    pool = WorkerPool.forked_before_serving()
    settings = Settings(rules=(get_rule("TL102"),))
    try:
        found = await pool.call(worker.check_text, "import torch\nx = torch.Tensor(3)\n", "a.py", settings)
        assert [d.code for d in found] == ["TL102"]
        with pytest.raises(WorkerCrashed):
            await pool.call(os._exit, 1)
        # The replacement pool is spawned, and answers like the first.
        found = await pool.call(worker.check_text, "import torch\ny = torch.Tensor(2)\n", "a.py", settings)
        assert [d.code for d in found] == ["TL102"]
    finally:
        pool.shutdown()

"""When checks run: debounced per document, one at a time per document, in worker processes, with
the result of a check dropped when a newer request for its document arrived meanwhile."""

from __future__ import annotations

import asyncio
import math
import multiprocessing
import sys
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Awaitable, Callable

from torchlint.server import worker

# A check's coroutine: it receives a function telling whether its result is still wanted.
CheckRun = Callable[[Callable[[], bool]], Awaitable[None]]


class WorkerCrashed(Exception):
    """A worker process died during a call (the pool is replaced; the next call works again)."""


class WorkerPool:
    """Worker processes. Forking a process that runs threads and an event loop can leave locks
    held in the child, so workers are started fresh (`spawn`: half a second each to import
    libcst and the rules), except by `forked_before_serving`."""

    def __init__(self, workers: int = 2, start_method: str = "spawn") -> None:
        self._workers = workers
        self._executor = self._start(start_method)

    @classmethod
    def forked_before_serving(cls) -> "WorkerPool":
        """A pool whose workers are forked now, while this process runs one thread and has not
        started serving: they start with the rules this process imported, so the first file
        opened is answered without waiting for workers to import (Linux; elsewhere `spawn`).
        Workers that replace a crashed one are spawned."""
        if sys.platform != "linux":
            return cls()
        worker.load_rules()
        pool = cls(start_method="fork")
        pool.warm_up()  # forks every worker now (a fork pool starts them all at the first call)
        return pool

    def _start(self, start_method: str = "spawn") -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            max_workers=self._workers, mp_context=multiprocessing.get_context(start_method),
            initializer=worker.start_worker,
        )

    def warm_up(self) -> None:
        """Start the workers now, so that the first check does not wait for them to import."""
        for _ in range(self._workers):
            self._executor.submit(worker.load_rules)

    async def call(self, function, *args):
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, function, *args)
        except BrokenProcessPool:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = self._start()
            raise WorkerCrashed() from None

    def shutdown(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)


class Scheduler:
    """Per document: a request that follows the last one by less than `delay` seconds waits that
    long for the next (a keystroke restarts the wait), then runs; one that comes after a pause
    runs at once (waiting would only add to what the user waits for). Requests arriving while a
    check runs make its result stale."""

    def __init__(self, report_error: Callable[[str], None]) -> None:
        self._report_error = report_error
        self._generation: dict[str, int] = {}
        self._last_request: dict[str, float] = {}
        self._due: dict[str, float] = {}
        self._waiting: dict[str, CheckRun] = {}
        self._drains: dict[str, asyncio.Task] = {}

    def request(self, key: str, delay: float, run: CheckRun) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        after_pause = now - self._last_request.get(key, -math.inf) >= delay
        self._last_request[key] = now
        self._generation[key] = self._generation.get(key, 0) + 1
        self._due[key] = now if after_pause else now + delay
        self._waiting[key] = run
        if key not in self._drains:
            self._drains[key] = loop.create_task(self._drain(key))

    def forget(self, key: str) -> None:
        """The document closed: nothing waiting runs, and a running check's result is stale."""
        self._generation[key] = self._generation.get(key, 0) + 1
        self._waiting.pop(key, None)
        self._last_request.pop(key, None)

    async def _drain(self, key: str) -> None:
        loop = asyncio.get_running_loop()
        try:
            while key in self._waiting:
                while (wait := self._due[key] - loop.time()) > 0:
                    await asyncio.sleep(wait)
                run = self._waiting.pop(key, None)
                if run is None:
                    continue
                generation = self._generation[key]
                try:
                    await run(lambda: self._generation.get(key) == generation)
                except WorkerCrashed:
                    self._report_error(f"torchlint: the check of {key} stopped its worker process")
                except Exception as error:  # noqa: BLE001 - one document's failure never stops the server
                    self._report_error(f"torchlint: internal error while checking {key}: {type(error).__name__}: {error}")
        finally:
            del self._drains[key]

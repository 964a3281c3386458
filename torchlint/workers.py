"""Worker processes with a time limit per file.

libcst parses in native code, which neither a signal nor an exception can interrupt, and a few
inputs make it slow (thousands of chained operators on one line) or crash it. So each file is
checked in a worker process that the parent kills when that file takes longer than its limit, or
replaces when it dies; the file gets a result saying so (`lost`) and the run goes on. The work is
handed out one file at a time, in order of the list, so a slow file holds up one worker only.
"""

from __future__ import annotations

import multiprocessing
import time
from collections import deque
from multiprocessing.connection import Connection, wait
from typing import Callable


def _serve(connection: Connection, worker: Callable) -> None:
    while True:
        try:
            message = connection.recv()
        except EOFError:
            return
        if message is None:
            return
        index, job = message
        connection.send((index, worker(job)))


class _Worker:
    def __init__(self, context, worker: Callable) -> None:
        self.connection, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child, worker), daemon=True)
        self.process.start()
        child.close()
        self.index: int | None = None  # the item it is working on
        self.deadline = 0.0

    def give(self, index: int, job, time_limit: float) -> None:
        self.index, self.deadline = index, time.monotonic() + time_limit
        self.connection.send((index, job))

    def stop(self) -> None:
        try:
            self.connection.send(None)
        except OSError:
            pass
        self.process.join(timeout=1)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.connection.close()

    def kill(self) -> None:
        self.process.kill()
        self.process.join()
        self.connection.close()


def _context():
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


def map_bounded(worker: Callable, work: list, processes: int, time_limit: float,
                lost: Callable[[object, str], object]) -> list:
    """`worker` over each item of `work` (results in order) in `processes` worker processes.
    An item whose worker takes longer than `time_limit` seconds or dies gets `lost(item, why)`."""
    context = _context()
    results: list = [None] * len(work)
    pending = deque(enumerate(work))
    idle = [_Worker(context, worker) for _ in range(min(processes, len(work)))]
    busy: list[_Worker] = []
    try:
        while pending or busy:
            while idle and pending:
                index, job = pending.popleft()
                chosen = idle.pop()
                chosen.give(index, job, time_limit)
                busy.append(chosen)
            timeout = max(0.0, min(w.deadline for w in busy) - time.monotonic())
            ready = set(wait([w.connection for w in busy] + [w.process.sentinel for w in busy], timeout))
            for current in list(busy):
                why = None
                if current.connection in ready:
                    try:
                        index, result = current.connection.recv()
                        results[index] = result
                        busy.remove(current)
                        idle.append(current)
                        continue
                    except (EOFError, OSError):
                        why = "the worker checking it stopped (a crash in the parser)"
                elif current.process.sentinel in ready:
                    why = "the worker checking it stopped (a crash in the parser)"
                elif time.monotonic() >= current.deadline:
                    why = f"it took longer than {time_limit:g} s to check"
                if why is not None:
                    results[current.index] = lost(work[current.index], why)
                    current.kill()
                    busy.remove(current)
                    if pending:
                        idle.append(_Worker(context, worker))
    finally:
        for current in idle:
            current.stop()
        for current in busy:
            current.kill()
    return results

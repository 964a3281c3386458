"""Worker processes with a time and a memory limit per file.

libcst parses in native code, which neither a signal nor an exception can interrupt, and a few
inputs make it slow (thousands of chained operators on one line) or crash it. So each file is
checked in a worker process that ends when that file has used more than its limit of CPU time
(the kernel's RLIMIT_CPU, so that the verdict does not depend on the machine's load), or that the
parent kills when the file has taken several times the limit of wall-clock time (a backstop, and
the only bound where there is no RLIMIT_CPU). On Linux a worker's address space may also grow by
only `MEMORY_LIMIT` bytes (RLIMIT_AS): past it an allocation fails, and the worker ends (Python's
MemoryError, or an abort in the native parser). A worker that dies is replaced; its file gets a
result saying why (`lost`) and the run goes on. Work is handed out one file at a time, in order.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import signal
import time
from collections import deque
from multiprocessing.connection import Connection, wait
from typing import Callable

try:
    import resource
except ImportError:  # Windows
    resource = None

# The wall-clock backstop, as a multiple of the CPU-time limit.
_WALL_CLOCK_FACTOR = 4
# A worker's exit status after a MemoryError.
_OUT_OF_MEMORY = 112
# How often an idle worker looks whether its parent still runs, in seconds.
_PARENT_CHECK_S = 1.0


def _memory_limit() -> int:
    """How much a worker's address space may grow: a quarter of the machine's memory, at most 4
    GiB (far above what a file can use in its CPU time at the pace of libcst's parse, about 50 MB
    a second)."""
    most = 4 << 30
    try:
        return min(most, os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 4)
    except (AttributeError, ValueError, OSError):
        return most


MEMORY_LIMIT = _memory_limit()


def _limit_cpu_time(seconds: float) -> None:
    """End this process (SIGXCPU) once it has used `seconds` more of CPU time."""
    if resource is None:
        return
    usage = resource.getrusage(resource.RUSAGE_SELF)
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = math.ceil(usage.ru_utime + usage.ru_stime + seconds)
    resource.setrlimit(resource.RLIMIT_CPU, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))


def _limit_memory(limit: int) -> None:
    """Let this process's address space grow by at most `limit` bytes more (Linux, where /proc
    gives its current size; elsewhere no limit). A forked worker may also reuse what its parent
    freed but still maps: slack that stays small in the CLI, whose parent does little."""
    if resource is None:
        return
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            size = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    soft = size + limit if hard == resource.RLIM_INFINITY else min(size + limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


# In a worker process: where `report_progress` sends, and when it last did.
_reporting: dict[str, object] = {}
_PROGRESS_INTERVAL = 0.2  # seconds between a worker's progress messages


def report_progress(fraction: float) -> None:
    """How far the worker's current item is (0 to 1), for the parent's `on_progress`: sent at
    once the first time for an item, then at most every `_PROGRESS_INTERVAL` seconds. Nothing
    outside a worker process (the language server checks in its own process)."""
    connection = _reporting.get("connection")
    if connection is None:
        return
    now = time.monotonic()
    if now - _reporting["last"] < _PROGRESS_INTERVAL:
        return
    _reporting["last"] = now
    connection.send(("progress", _reporting["index"], fraction))


def _serve(connection: Connection, worker: Callable, memory_limit: int) -> None:
    if resource is not None:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crash leaves no core file in the project
    _limit_memory(memory_limit)
    parent = os.getppid()
    while True:
        try:
            # A killed run (a timeout's SIGTERM, a cancelled CI job) never closes the pipe: forked
            # siblings hold its other end. An idle worker whose parent is gone ends by itself.
            while not connection.poll(_PARENT_CHECK_S):
                if os.getppid() != parent:
                    return
            message = connection.recv()
        except EOFError:
            return
        if message is None:
            return
        index, job, time_limit = message
        _limit_cpu_time(time_limit)
        _reporting.update(connection=connection, index=index, last=-math.inf)
        try:
            result = worker(job)
        except MemoryError:
            os._exit(_OUT_OF_MEMORY)  # at once: with the memory spent, even sending a result may fail
        connection.send(("done", index, result))


class _Worker:
    def __init__(self, context, worker: Callable) -> None:
        self.memory_limit = MEMORY_LIMIT
        self.connection, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child, worker, self.memory_limit), daemon=True)
        self.process.start()
        child.close()
        self.index: int | None = None  # the item it is working on
        self.deadline = 0.0
        self.time_limit = 0.0  # its CPU time limit

    def give(self, index: int, job, time_limit: float) -> None:
        backstop = time_limit * (_WALL_CLOCK_FACTOR if resource is not None else 1)
        self.index, self.deadline, self.time_limit = index, time.monotonic() + backstop, time_limit
        self.connection.send((index, job, time_limit))

    def why_stopped(self) -> str:
        """Why the worker's process ended while it worked on a file."""
        self.process.join(timeout=1)
        if self.process.exitcode == -getattr(signal, "SIGXCPU", -1):
            return f"it took longer than {self.time_limit:g} s to check"
        memory = f"{self.memory_limit >> 20} MB of memory"
        if self.process.exitcode == _OUT_OF_MEMORY:
            return f"it needed more than {memory} to check"
        if self.process.exitcode == -signal.SIGABRT:  # the native parser aborts when an allocation fails
            return f"the worker checking it stopped (the parser crashed, or needed more than {memory})"
        return "the worker checking it stopped (a crash in the parser)"

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


def map_bounded(worker: Callable, work: list, processes: int, time_limit: Callable[[object], float],
                lost: Callable[[object, str], object], on_done: Callable[[], None] | None = None,
                on_progress: Callable[[object, float], None] | None = None) -> list:
    """`worker` over each item of `work` (results in order) in `processes` worker processes.
    An item whose worker takes longer than `time_limit(item)` seconds or dies gets
    `lost(item, why)`; `on_done()` after each item and `on_progress(item, fraction)` when its
    worker calls `report_progress` (a progress meter)."""
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
                chosen.give(index, job, time_limit(job))
                busy.append(chosen)
            timeout = max(0.0, min(w.deadline for w in busy) - time.monotonic())
            ready = set(wait([w.connection for w in busy] + [w.process.sentinel for w in busy], timeout))
            for current in list(busy):
                why = None
                if current.connection in ready:
                    try:
                        kind, index, result = current.connection.recv()
                        if kind == "progress":
                            if on_progress is not None:
                                on_progress(work[index], result)
                            continue
                        results[index] = result
                        busy.remove(current)
                        idle.append(current)
                        if on_done is not None:
                            on_done()
                        continue
                    except (EOFError, OSError):
                        why = current.why_stopped()
                elif current.process.sentinel in ready:
                    why = current.why_stopped()
                elif time.monotonic() >= current.deadline:
                    why = f"it took longer than {current.time_limit:g} s to check"
                if why is not None:
                    results[current.index] = lost(work[current.index], why)
                    if on_done is not None:
                        on_done()
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

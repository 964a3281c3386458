"""Worker processes do not outlive a run that is killed: an idle worker whose parent is gone
ends by itself (the pipe it waits on never closes, as forked siblings hold its other end)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

# A run whose first file takes a minute and whose other two are done at once: two workers wait
# idle while the first works. It prints its workers' process ids, then waits.
RUN = textwrap.dedent(
    """
    import multiprocessing, sys, threading, time
    from torchlint.workers import map_bounded

    def check(seconds):
        time.sleep(seconds)
        return seconds

    def report():
        time.sleep(1.0)
        print(" ".join(str(child.pid) for child in multiprocessing.active_children()), flush=True)

    threading.Thread(target=report, daemon=True).start()
    map_bounded(check, [60, 0, 0], 3, lambda job: 120, lambda job, why: None)
    """
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split(")")[-1].split()[0] != "Z"  # a zombie has ended


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_idle_workers_end_when_their_run_is_killed():
    run = subprocess.Popen([sys.executable, "-c", RUN], stdout=subprocess.PIPE, text=True)
    workers = [int(pid) for pid in run.stdout.readline().split()]
    assert len(workers) == 3
    run.send_signal(signal.SIGKILL)
    run.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and sum(map(_alive, workers)) > 1:
        time.sleep(0.2)
    left = [pid for pid in workers if _alive(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert len(left) <= 1, f"idle workers left running: {left}"  # the one still sleeping may remain

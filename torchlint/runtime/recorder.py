"""What a process of the run observed, kept small and written to a JSON file the parent reads.

Observations are aggregated as they arrive (one entry per rule code and user position), written
atomically (temp file + rename) to `observed.PID.json` at the end, on SIGTERM, and at most every
few seconds while the script runs, so a killed child still leaves its verdicts so far. Every
process of the run (the script's, its DataLoader workers, spawned children) writes its own file;
`merge` combines them in the parent.
"""

from __future__ import annotations

import json
import os
import time

from torchlint.runtime.frames import Position

FLUSH_INTERVAL = 2.0


class Recorder:
    def __init__(self, directory: str, main: bool = True) -> None:
        self.directory = directory
        self.main = main  # the script's own process (its exit status is the run's)
        self.probing = False  # a probe's hook is running (instrument.Probe)
        self.pid = os.getpid()
        self.loaded_files = list  # () -> the user's files this process has loaded
        self.notes: list[str] = []  # said once to the user (e.g. torch.compile ran eagerly)
        self.end_hooks: list = []  # called before each flush (checks whose flags live on the device)
        self._reset()

    def _reset(self) -> None:
        self.reached: set[int] = set()
        # Loops that hold a flagged TL302 sync: (file, row) of the sync -> loop id (its site id),
        # and how many iterations each loop ran (probes.py marks each iteration).
        self.loop_rows: dict[tuple[str, int], int] = {}
        self.iterations: dict[int, int] = {}
        self.confirmed: dict[int, str] = {}  # site id -> detail (a probe saw the pitfall)
        self.refuted: dict[int, str] = {}  # site id -> detail (a probe saw it not happen)
        self.events: dict[tuple[str, Position], dict] = {}
        self.steps = 0  # optimizer steps so far
        self.steps_by_optimizer: dict[int, int] = {}  # id(optimizer) -> its steps
        # What the health checks saw of the training, for `--report` (health.py, at the end).
        self.training: dict = {}
        self.exception: str | None = None
        self.exit_status: int | None = None
        self._last_flush = time.monotonic()
        self._flushing = False

    @property
    def path(self) -> str:
        return os.path.join(self.directory, f"observed.{self.pid}.json")

    def after_fork(self) -> None:
        """In a child process (multiprocessing's after-fork hook): start afresh, in a file of its
        own, written when the child leaves (it exits through os._exit, without atexit)."""
        from multiprocessing import util

        if os.getpid() != self.pid:
            self.pid = os.getpid()
            self.main = False
            self.end_hooks = []  # the training state they read belongs to the parent
            self.notes = []
            self._reset()
        util.Finalize(self, self.flush, exitpriority=0)

    # -- sites (probes) ---------------------------------------------------------------------
    def confirm(self, site: int, detail: str) -> None:
        self.confirmed.setdefault(site, detail)

    def refute(self, site: int, detail: str) -> None:
        self.refuted.setdefault(site, detail)

    # -- events (anything observed at a user position) --------------------------------------
    def event(self, code: str, position: Position | None, detail: str = "",
              related: list[tuple[Position, str]] = ()) -> None:
        """`related`: other places the finding rests on, each with what it is (kept from the first
        time the event is seen)."""
        if position is None:
            return
        key = (code, position)
        entry = self.events.get(key)
        if entry is None:
            loop = self.loop_rows.get((os.path.realpath(position[0]), position[1])) if self.loop_rows else None
            entry = self.events[key] = {
                "code": code, "position": list(position), "detail": detail,
                "count": 0, "loop": loop, "intervals": 0, "last": -1,
                "related": [{"position": list(place), "message": message} for place, message in related],
            }
        entry["count"] += 1
        # Intervals: iterations of the loop the flagged sync sits in, else optimizer steps.
        loop = entry["loop"]
        current = self.steps if loop is None else self.iterations.get(loop, 0)
        if entry["last"] != current:
            entry["last"] = current
            entry["intervals"] += 1

    def step(self, optimizer: int) -> None:
        self.steps += 1
        self.steps_by_optimizer[optimizer] = self.steps_by_optimizer.get(optimizer, 0) + 1
        self.maybe_flush()

    def iterate(self, loop: int) -> None:
        self.iterations[loop] = self.iterations.get(loop, 0) + 1

    # -- output ----------------------------------------------------------------------------
    def to_json(self) -> dict:
        return {
            "reached": sorted(self.reached),
            "confirmed": {str(k): v for k, v in self.confirmed.items()},
            "refuted": {str(k): v for k, v in self.refuted.items()},
            "events": list(self.events.values()),
            "steps": self.steps,
            # A loop that steps several optimizers makes one iteration per step of each.
            "iteration_steps": max(self.steps_by_optimizer.values(), default=0),
            "iterations": {str(k): v for k, v in self.iterations.items()},
            "training": self.training,
            "exception": self.exception,
            "exit_status": self.exit_status,
            "main": self.main,
            "loaded": self.loaded_files(),
            "notes": self.notes,
        }

    def maybe_flush(self) -> None:
        if time.monotonic() - self._last_flush > FLUSH_INTERVAL:
            self.flush(final=False)

    def flush(self, final: bool = True) -> None:
        """Write the file; `final` when the process is ending (some checks judge only then)."""
        if self._flushing:
            return
        self._flushing = True
        try:
            for hook in self.end_hooks:
                try:
                    hook(final)
                except Exception:  # noqa: BLE001 - a check never breaks the user's program
                    pass
            data = json.dumps(self.to_json())
            temporary = f"{self.path}.{os.getpid()}.tmp"
            try:
                with open(temporary, "w", encoding="utf-8") as handle:
                    handle.write(data)
                os.replace(temporary, self.path)
            except FileNotFoundError:
                return  # a helper process (the resource tracker) outlived the run: no one reads it now
            self._last_flush = time.monotonic()
        finally:
            self._flushing = False


def merge(observations: list[dict]) -> dict:
    """One view of the run from the files of all its processes."""
    merged: dict = {
        "reached": set(), "confirmed": {}, "refuted": {}, "events": {}, "steps": 0, "iteration_steps": 0, "iterations": {},
        "training": {}, "exception": None, "exit_status": None, "loaded": set(), "notes": [],
    }
    for observed in observations:
        merged["reached"].update(observed.get("reached", []))
        for verdict in ("confirmed", "refuted"):
            for site, detail in observed.get(verdict, {}).items():
                merged[verdict].setdefault(site, detail)
        for event in observed.get("events", []):
            key = (event["code"], tuple(event["position"]))
            known = merged["events"].get(key)
            if known is None:
                merged["events"][key] = dict(event)
            else:
                known["count"] += event["count"]
                known["intervals"] += event["intervals"]
        merged["steps"] += observed.get("steps", 0)
        merged["iteration_steps"] += observed.get("iteration_steps", 0)
        for loop, count in observed.get("iterations", {}).items():
            merged["iterations"][loop] = merged["iterations"].get(loop, 0) + count
        # The training the script's own process did, else the first a child did (spawned DDP ranks).
        if observed.get("training") and (observed.get("main") or not merged["training"]):
            merged["training"] = observed["training"]
        merged["loaded"].update(observed.get("loaded", []))
        merged["notes"] += [note for note in observed.get("notes", []) if note not in merged["notes"]]
        if observed.get("main"):
            merged["exception"], merged["exit_status"] = observed.get("exception"), observed.get("exit_status")
    merged["events"] = list(merged["events"].values())
    return merged

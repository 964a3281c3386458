"""What the child observed, kept small and written to a JSON file the parent reads.

Observations are aggregated as they arrive (one entry per rule code and user position), written
atomically (temp file + rename) at the end, on SIGTERM, and at most every few seconds while the
script runs, so a killed child still leaves its verdicts so far.
"""

from __future__ import annotations

import json
import os
import time

from torchlint.runtime.frames import Position

FLUSH_INTERVAL = 2.0


class Recorder:
    def __init__(self, path: str) -> None:
        self.path = path
        self.reached: set[int] = set()
        self.confirmed: dict[int, str] = {}  # site id -> detail (a probe saw the pitfall)
        self.refuted: dict[int, str] = {}  # site id -> detail (a probe saw it not happen)
        self.events: dict[tuple[str, Position], dict] = {}
        self.steps = 0  # optimizer steps so far
        self.exception: str | None = None
        self.exit_status: int | None = None
        self._last_flush = time.monotonic()
        self._flushing = False

    # -- sites (probes) ---------------------------------------------------------------------
    def confirm(self, site: int, detail: str) -> None:
        self.confirmed.setdefault(site, detail)

    def refute(self, site: int, detail: str) -> None:
        self.refuted.setdefault(site, detail)

    # -- events (anything observed at a user position) --------------------------------------
    def event(self, code: str, position: Position | None, detail: str = "") -> None:
        if position is None:
            return
        key = (code, position)
        entry = self.events.get(key)
        if entry is None:
            entry = self.events[key] = {
                "code": code, "position": list(position), "detail": detail,
                "count": 0, "steps": 0, "last_step": -1,
            }
        entry["count"] += 1
        if entry["last_step"] != self.steps:
            entry["last_step"] = self.steps
            entry["steps"] += 1  # distinct optimizer-step intervals this event happened in

    def step(self) -> None:
        self.steps += 1
        self.maybe_flush()

    # -- output ----------------------------------------------------------------------------
    def to_json(self) -> dict:
        return {
            "reached": sorted(self.reached),
            "confirmed": {str(k): v for k, v in self.confirmed.items()},
            "refuted": {str(k): v for k, v in self.refuted.items()},
            "events": list(self.events.values()),
            "steps": self.steps,
            "exception": self.exception,
            "exit_status": self.exit_status,
        }

    def maybe_flush(self) -> None:
        if time.monotonic() - self._last_flush > FLUSH_INTERVAL:
            self.flush()

    def flush(self) -> None:
        if self._flushing:
            return
        self._flushing = True
        try:
            data = json.dumps(self.to_json())
            temporary = f"{self.path}.{os.getpid()}.tmp"
            with open(temporary, "w", encoding="utf-8") as handle:
                handle.write(data)
            os.replace(temporary, self.path)
            self._last_flush = time.monotonic()
        finally:
            self._flushing = False

"""Progress of a long run on stderr: `checked 120/3000 files`, on a terminal only, with how far
the check of a long file has come (`checked 0/1 files; generated.py 40%`).

Shown once a run has taken more than a second, on stderr only (stdout keeps the findings), and
never when the `CI` variable is set (CI logs are read later) unless asked with `--progress`.
"""

from __future__ import annotations

import os
import sys
import time

from torchlint.output.text import shown_filename

_DELAY = 1.0  # seconds before the first report
_INTERVAL = 0.2  # seconds between reports on a terminal
_LOG_INTERVAL = 5.0  # ... and in a log (`--progress` where stderr is no terminal)


class Progress:
    def __init__(self, total: int, requested: bool = False, stream=None) -> None:
        self._stream = stream or sys.stderr
        self._terminal = self._stream.isatty()
        self._enabled = requested or (self._terminal and "CI" not in os.environ)
        self._total, self._done = total, 0
        self._started = self._last = time.monotonic()
        self._shown = False
        self._current = ""  # the file being checked, and how far, where a worker says so

    def advance(self) -> None:
        """One more file done."""
        self._done += 1
        self._current = ""
        self._show()

    def within(self, name: str, fraction: float) -> None:
        """The file `name` is checked as far as `fraction` (0 to 1) of its statements."""
        self._current = f"; {shown_filename(name)} {fraction:.0%}"
        self._show()

    def _show(self) -> None:
        if not self._enabled:
            return
        now = time.monotonic()
        interval = _INTERVAL if self._terminal else _LOG_INTERVAL
        if now - self._started < _DELAY or (self._shown and now - self._last < interval):
            return
        text = f"checked {self._done}/{self._total} files{self._current}"
        self._stream.write(f"\r{text}\033[K" if self._terminal else f"torchlint: {text}\n")
        self._stream.flush()
        self._shown, self._last = True, now

    def close(self) -> None:
        """Clear the progress line, so that what follows starts on a clean row."""
        if self._shown and self._terminal:
            self._stream.write("\r\033[K")
            self._stream.flush()

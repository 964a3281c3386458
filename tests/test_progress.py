"""Progress goes to a terminal's stderr after a second, never into CI logs unless asked."""

from __future__ import annotations

import io

from torchlint import progress
from torchlint.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_on_a_terminal_after_the_delay_and_cleared(monkeypatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    clock = iter([0.0, 0.5, 1.5, 1.6, 2.0]).__next__
    monkeypatch.setattr(progress.time, "monotonic", clock)
    stream = Terminal()
    meter = Progress(4, stream=stream)
    for _ in range(4):
        meter.advance()
    meter.close()
    # 0.5 s: too early; 1.5 s: shown; 1.6 s: too soon after; 2.0 s: shown.
    assert stream.getvalue() == "\rchecked 2/4 files\033[K\rchecked 4/4 files\033[K\r\033[K"


def test_no_progress_in_ci_or_in_a_pipe_unless_requested(monkeypatch) -> None:
    monkeypatch.setattr(progress, "_DELAY", 0.0)
    monkeypatch.setenv("CI", "true")
    terminal = Terminal()
    Progress(1, stream=terminal).advance()
    assert terminal.getvalue() == ""
    pipe = io.StringIO()
    Progress(1, stream=pipe).advance()
    assert pipe.getvalue() == ""
    requested = io.StringIO()
    Progress(1, requested=True, stream=requested).advance()
    assert requested.getvalue() == "torchlint: checked 1/1 files\n"

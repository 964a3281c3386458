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


def test_a_long_files_progress_is_shown_with_its_name_escaped(monkeypatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(progress, "_DELAY", 0.0)
    monkeypatch.setattr(progress, "_INTERVAL", 0.0)
    stream = Terminal()
    meter = Progress(2, stream=stream)
    meter.within("gen\nerated.py", 0.4)
    meter.advance()
    assert stream.getvalue() == "\rchecked 0/2 files; gen\\nerated.py 40%\033[K\rchecked 1/2 files\033[K"


def test_a_worker_reports_how_far_its_file_is_checked(tmp_path) -> None:
    from torchlint.config import Options, resolve_settings
    from torchlint.engine import check_files

    path = tmp_path / "generated.py"
    path.write_text("import torch\n" + "".join(f"w{i} = torch.zeros({i})\n" for i in range(400)), encoding="utf-8")
    reports: list[tuple[str, float]] = []
    check_files([(str(path), "generated.py")], resolve_settings(Options()), jobs=1,
                on_progress=lambda name, fraction: reports.append((name, fraction)))
    # The first report of a file goes out at once; later ones at most five times a second.
    assert reports[0] == ("generated.py", 0.0)
    fractions = [fraction for _, fraction in reports]
    assert fractions == sorted(fractions) and all(0.0 <= fraction < 1.0 for fraction in fractions)

"""Whether code is written to run without CUDA too: it falls back to the CPU, or lets the user
choose the device. A text question, asked of one file by TL505 and of every file of a project
by the project index (the option that picks the device often lives in `main.py`, the
`torch.load` in the module that restores a checkpoint)."""

from __future__ import annotations

import re

_FALLBACK = re.compile(
    r"""is_available\(\)\s*(?:\)\s*)?else\s*(?:torch\.device\(\s*)?["']cpu"""
    r"""|["']cpu["']\)?\s*if\s+not\s+[\w.]*is_available\(\)"""
    r"""|["']--(?:cpu|no[-_]cuda|disable[-_]cuda|no[-_]gpu|device|use[-_]cuda|cuda|gpu)["']"""
    # `if torch.cuda.is_available():` then `.cuda()` on the next line: the pre-0.4 way to move only
    # where CUDA is.
    r"""|if\s+torch\.cuda\.is_available\(\)\s*:[ \t]*\n[^\n]*\.cuda\("""
)


def cpu_fallback_row(source: str) -> int | None:
    """The 1-based row of the file's first CPU fallback (`"cuda" if torch.cuda.is_available()
    else "cpu"`, `.cuda()` only under `if torch.cuda.is_available():`, or a `--cpu` /
    `--no-cuda` / `--disable-cuda` / `--device` / `--gpu` option); None when it has none. A
    docstring's example (`>>> device = torch.device("cuda" if ... else "cpu")`) does not count."""
    # Every match holds one of these: a fast look before the regex, which has no literal
    # prefix to skip ahead with and tries every position of the file.
    if "is_available()" not in source and "'--" not in source and '"--' not in source:
        return None
    for match in _FALLBACK.finditer(source):
        line_start = source.rfind("\n", 0, match.start()) + 1
        if not _EXAMPLE_PROMPT.match(source, line_start):
            return source.count("\n", 0, match.start()) + 1
    return None


# A line of an interactive example in a docstring (`>>> device = torch.device(...)`): text that
# shows how to call the code, not code the file runs.
_EXAMPLE_PROMPT = re.compile(r"[ \t]*(?:>>>|\.\.\.)[ \t]")

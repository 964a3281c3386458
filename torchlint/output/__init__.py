"""Output formats: each module renders a sorted list of findings to one string."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from torchlint.rules import RuleInfo


@dataclass(frozen=True)
class OutputContext:
    color: bool
    rules: tuple[RuleInfo, ...]  # the enabled rules (SARIF lists them)
    summary: bool = True  # the closing `Found N findings` line of the text formats
    # `--unsafe-fixes`: unsafe fixes count as available (`[*]`) too.
    unsafe_fixes: bool = False
    # `--fix`: how many fixes were applied (None when not fixing).
    fixed: int | None = None
    # `--show-fixes`: the list of what was fixed, shown before the summary of the text formats.
    fix_listing: str = ""
    # `--runtime`: the run record (script, arguments, exit status, timed out, device...).
    run: dict | None = None


def repository_root(start: Path | None = None) -> Path:
    """The enclosing git repository's root, else the working directory: GitHub and SARIF paths
    are relative to it."""
    start = (start or Path.cwd()).resolve()
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return start


def repository_path(filename: str, root: Path) -> str:
    absolute = Path(os.path.abspath(filename))
    try:
        return absolute.relative_to(root).as_posix()
    except ValueError:
        return absolute.as_posix()


def format_names() -> tuple[str, ...]:
    return ("full", "concise", "json", "github", "sarif")


def render(format_name: str, diagnostics, context: OutputContext) -> str:
    from torchlint.output import github, json, sarif, text

    renderers = {
        "full": text.render_full, "concise": text.render_concise, "json": json.render,
        "github": github.render, "sarif": sarif.render,
    }
    return renderers[format_name](diagnostics, context)

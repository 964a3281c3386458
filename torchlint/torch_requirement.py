"""The lowest torch version a project declares it supports: the default `target-torch-version`.

Read from the project's pyproject.toml (`[project] dependencies`, `[project.optional-dependencies]`,
Poetry's and PDM's dependency tables) and the `requirements*.txt` files beside it, else from the
package metadata of a project without one (`Requires-Dist:` lines of an unpacked wheel's
`*.dist-info/METADATA`, of a `PKG-INFO`, or of the `*.egg-info` that `pip install -e` of a
setup.py project writes). Each torch
requirement admits versions from its lower bound (`torch>=2.6`, `torch~=2.6.0`, `torch==2.6.*`,
Poetry's `^2.6`: 2.6); the project supports the lowest of them. A requirement without a lower
bound admits any version, so nothing is inferred from it.
"""

from __future__ import annotations

import os
import re
import stat
from functools import lru_cache
from pathlib import Path

_REQUIREMENT = re.compile(r"^\s*torch\s*(?:\[[^\]]*\])?\s*(?P<spec>(?:[<>=!~^(][^;#]*)?)(?:[;#].*)?$", re.I)
_LOWER_BOUND = re.compile(r"(?:>=|==|~=|>|\^|~(?!=)|===)\s*v?(?P<version>\d+(?:\.\d+)?)")
_BARE_VERSION = re.compile(r"^\s*v?(?P<version>\d+(?:\.\d+)?)")
_REQUIRES_DIST = re.compile(r"^Requires-Dist:\s*(.+)$", re.M)
# Package metadata is a few kilobytes; a larger (or special) file is not read.
_MAX_METADATA_BYTES = 1_000_000


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))[:2]


def lower_bound(specifier: str, poetry: bool = False) -> tuple[int, ...] | None:
    """The lowest version a specifier admits (`>=2.6,<3` -> (2, 6)); Poetry reads a bare `2.6`
    as `==2.6`."""
    bounds = [_version(match.group("version")) for match in _LOWER_BOUND.finditer(specifier)]
    if poetry and not bounds and (bare := _BARE_VERSION.match(specifier)):
        bounds.append(_version(bare.group("version")))
    return max(bounds) if bounds else None


def _pep508(requirements: list, origin: str) -> list[tuple[tuple[int, ...], str]]:
    found = []
    for requirement in requirements:
        match = _REQUIREMENT.match(requirement) if isinstance(requirement, str) else None
        if match and (bound := lower_bound(match.group("spec"))):
            found.append((bound, f"`{requirement.strip()}` in {origin}"))
    return found


def _poetry(table: dict, origin: str) -> list[tuple[tuple[int, ...], str]]:
    value = table.get("torch")
    if isinstance(value, dict):
        value = value.get("version")
    if isinstance(value, str) and (bound := lower_bound(value, poetry=True)):
        return [(bound, f"torch = \"{value}\" in {origin}")]
    return []


@lru_cache(maxsize=4096)
def metadata_files(directory: Path) -> tuple[Path, ...]:
    """The package metadata files directly in `directory`: an unpacked wheel's one `*.dist-info`,
    an sdist's `PKG-INFO`, the `*.egg-info` of a project installed with `pip install -e`. A
    directory with several (site-packages) describes other packages: nothing."""
    found = {"PKG-INFO": [], ".dist-info": [], ".egg-info": []}
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                kind = entry.name if entry.name == "PKG-INFO" else os.path.splitext(entry.name)[1]
                if kind in found:
                    found[kind].append(entry.path)
                    if len(found[kind]) > 1:
                        return ()
    except OSError:
        return ()
    candidates = [Path(path) for path in found["PKG-INFO"]]
    candidates += [Path(path, "METADATA") for path in found[".dist-info"]]
    candidates += [Path(path, "PKG-INFO") for path in found[".egg-info"]]
    return tuple(path for path in candidates if path.is_file())


def metadata_torch_version(directory: Path) -> tuple[tuple[int, ...], str] | None:
    """The lowest torch version the package metadata in `directory` requires, and where."""
    found = []
    for path in metadata_files(directory):
        text = _read_small(path)
        if text:
            found += _pep508(_REQUIRES_DIST.findall(text), str(path.relative_to(directory)))
    return min(found) if found else None


def _read_small(path: Path) -> str:
    """A regular file's text, or nothing when it is something else (a FIFO, a device) or large."""
    try:
        with open(path, "rb", opener=lambda name, flags: os.open(name, flags | os.O_NONBLOCK)) as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_METADATA_BYTES:
                return ""
            return handle.read(_MAX_METADATA_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return ""


def declared_torch_version(pyproject: Path, document: dict) -> tuple[tuple[int, ...], str] | None:
    """The lowest torch version the project at `pyproject` declares, and where it says so."""
    name = pyproject.name
    project = document.get("project", {})
    tool = document.get("tool", {})
    found = _pep508(project.get("dependencies", []), f"{name} [project] dependencies")
    for extra, requirements in project.get("optional-dependencies", {}).items():
        found += _pep508(requirements, f"{name} [project.optional-dependencies] {extra}")
    poetry = tool.get("poetry", {})
    found += _poetry(poetry.get("dependencies", {}), f"{name} [tool.poetry.dependencies]")
    for group, table in poetry.get("group", {}).items():
        found += _poetry(table.get("dependencies", {}), f"{name} [tool.poetry.group.{group}.dependencies]")
    for group, requirements in tool.get("pdm", {}).get("dev-dependencies", {}).items():
        found += _pep508(requirements, f"{name} [tool.pdm.dev-dependencies] {group}")
    for requirements_file in sorted(pyproject.parent.glob("requirements*.txt")):
        try:
            lines = requirements_file.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        found += _pep508(lines, requirements_file.name)
    return min(found) if found else None

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
from functools import lru_cache
from pathlib import Path

from torchlint.sources import read_auxiliary

_REQUIREMENT = re.compile(r"^\s*torch\s*(?:\[[^\]]*\])?\s*(?P<spec>(?:[<>=!~^(][^;#]*)?)(?:[;#].*)?$", re.I)
_LOWER_BOUND = re.compile(r"(?:>=|==|~=|>|\^|~(?!=)|===)\s*v?(?P<version>\d+(?:\.\d+)?)")
_BARE_VERSION = re.compile(r"^\s*v?(?P<version>\d+(?:\.\d+)?)")
_MAX_REQUIREMENTS_FILES = 20
_REQUIRES_DIST = re.compile(r"^Requires-Dist:\s*(.+)$", re.M)


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
        data = read_auxiliary(path)
        if data:
            text = data.decode("utf-8", errors="replace")
            found += _pep508(_REQUIRES_DIST.findall(text), str(path.relative_to(directory)))
    return min(found) if found else None


class MalformedTable(ValueError):
    """A dependency table of the project's pyproject.toml holds a value of the wrong type."""

    def __init__(self, key: str, expected: str, value: object) -> None:
        super().__init__(key, expected, value)
        self.key, self.expected, self.value = key, expected, value


def _typed(table: dict, key: str, kind: type, where: str):
    """`table[key]` (an empty `kind` when absent), when it is a `kind`."""
    value = table.get(key, kind())
    if not isinstance(value, kind):
        raise MalformedTable(f"{where}{key}", "a table" if kind is dict else "a list", value)
    return value


def declared_torch_version(pyproject: Path, document: dict) -> tuple[tuple[int, ...], str] | None:
    """The lowest torch version the project at `pyproject` declares, and where it says so.
    Raises MalformedTable for a dependency table of the wrong type."""
    name = pyproject.name
    project = _typed(document, "project", dict, "")
    tool = _typed(document, "tool", dict, "")
    found = _pep508(_typed(project, "dependencies", list, "project."), f"{name} [project] dependencies")
    for extra, requirements in _typed(project, "optional-dependencies", dict, "project.").items():
        found += _pep508(requirements if isinstance(requirements, list) else [],
                         f"{name} [project.optional-dependencies] {extra}")
    poetry = _typed(tool, "poetry", dict, "tool.")
    found += _poetry(_typed(poetry, "dependencies", dict, "tool.poetry."), f"{name} [tool.poetry.dependencies]")
    for group, table in _typed(poetry, "group", dict, "tool.poetry.").items():
        dependencies = table.get("dependencies", {}) if isinstance(table, dict) else {}
        found += _poetry(dependencies if isinstance(dependencies, dict) else {},
                         f"{name} [tool.poetry.group.{group}.dependencies]")
    pdm = _typed(tool, "pdm", dict, "tool.")
    for group, requirements in _typed(pdm, "dev-dependencies", dict, "tool.pdm.").items():
        found += _pep508(requirements if isinstance(requirements, list) else [],
                         f"{name} [tool.pdm.dev-dependencies] {group}")
    for requirements_file in sorted(pyproject.parent.glob("requirements*.txt"))[:_MAX_REQUIREMENTS_FILES]:
        data = read_auxiliary(requirements_file)
        if data is not None:
            found += _pep508(data.decode("utf-8", errors="replace").splitlines(), requirements_file.name)
    return min(found) if found else None

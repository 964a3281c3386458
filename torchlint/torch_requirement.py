"""The torch versions a project declares it supports: the lowest (the default
`target-torch-version`) and the bound below which they all lie.

Read from the project's pyproject.toml (`[project] dependencies`, `[project.optional-dependencies]`,
Poetry's and PDM's dependency tables) and the `requirements*.txt` files beside it, else from the
package metadata of a project without one (`Requires-Dist:` lines of an unpacked wheel's
`*.dist-info/METADATA`, of a `PKG-INFO`, or of the `*.egg-info` that `pip install -e` of a
setup.py project writes). Each torch
requirement admits versions from its lower bound (`torch>=2.6`, `torch~=2.6.0`, `torch==2.6.*`,
Poetry's `^2.6`: 2.6); the project supports the lowest of them. A requirement without a lower
bound admits any version, so nothing is inferred from it. Each requirement also admits versions
below its upper bound (`torch<1.13`: below 1.13; `torch<=1.12.1`, `torch==1.12.*` or
`torch~=1.12.0`: below 1.13; Poetry's `^1.12`: below 2.0), and the project's versions all lie
below the highest of them, unless one of its requirements has none.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from torchlint.sources import read_auxiliary

_REQUIREMENT = re.compile(r"^\s*torch\s*(?:\[[^\]]*\])?\s*(?P<spec>(?:[<>=!~^(][^;#]*)?)(?:[;#].*)?$", re.I)
_LOWER_BOUND = re.compile(r"(?:>=|==|~=|>|\^|~(?!=)|===)\s*v?(?P<version>\d+(?:\.\d+)?)")
_BARE_VERSION = re.compile(r"^\s*v?(?P<version>\d+(?:\.\d+)?)")
# An upper bound, with the whole version it names: `<1.13`, `<=1.12.1`, `==1.12.*`, `~=1.12.0`, `^1.12`.
_UPPER_BOUND = re.compile(r"(?P<operator><=|<|===|==|~=|\^|~(?!=))\s*v?(?P<version>\d+(?:\.\d+)*)(?P<wildcard>\.\*)?")
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


def upper_bound(specifier: str, poetry: bool = False) -> tuple[int, int] | None:
    """The (major, minor) every version a specifier admits lies below (`>=1.10,<1.13` -> (1, 13),
    `<=1.12.1` -> (1, 13)), or None when it admits every newer version."""
    bounds = [_below(match.group("operator"), match.group("version"), bool(match.group("wildcard")))
              for match in _UPPER_BOUND.finditer(specifier)]
    if poetry and not bounds and (bare := _BARE_VERSION.match(specifier)):
        bounds.append(_below("==", bare.group("version"), False))
    return min(bounds) if bounds else None


def _below(operator: str, version: str, wildcard: bool) -> tuple[int, int]:
    """The (major, minor) below which the versions `operator version` admits lie."""
    parts = [int(part) for part in version.split(".")]
    major, minor = parts[0], parts[1] if len(parts) > 1 else 0
    if operator == "<":  # `<1.13` and `<1.13.0` stop below 1.13; `<1.13.1` admits 1.13.0
        return (major, minor + 1) if any(parts[2:]) else (major, minor)
    if operator == "~=" and len(parts) == 2 or operator == "^" and major > 0 \
            or len(parts) == 1 and (wildcard or operator in ("^", "~")):
        return (major + 1, 0)  # `~=1.12`, `^1.12`, `==1.*`, Poetry's `~1`: the same major version
    if operator == "^":
        return (0, minor + 1)  # `^0.4`: the same minor version
    return (major, minor + 1)  # `<=1.12.1`, `==1.12.*`, `~=1.12.0`, Poetry's `~1.12`: the same minor


@dataclass(frozen=True)
class TorchRequirement:
    """One torch requirement: the lowest version it admits and the (major, minor) all its
    versions lie below (None: no bound), with where it is written."""

    floor: tuple[int, ...] | None
    ceiling: tuple[int, int] | None
    origin: str


@dataclass(frozen=True)
class SupportedTorch:
    """The torch versions a project supports: from `floor`, below `ceiling` (None: unbounded)."""

    floor: tuple[tuple[int, ...], str] | None = None
    ceiling: tuple[tuple[int, int], str] | None = None


def supported(requirements: list[TorchRequirement]) -> SupportedTorch:
    floors = [(requirement.floor, requirement.origin) for requirement in requirements if requirement.floor]
    ceilings = [(requirement.ceiling, requirement.origin) for requirement in requirements]
    bounded = bool(ceilings) and all(ceiling for ceiling, _ in ceilings)
    return SupportedTorch(min(floors) if floors else None, max(ceilings) if bounded else None)


def _pep508(requirements: list, origin: str) -> list[TorchRequirement]:
    found = []
    for requirement in requirements:
        match = _REQUIREMENT.match(requirement) if isinstance(requirement, str) else None
        if match:
            spec = match.group("spec")
            found.append(TorchRequirement(lower_bound(spec), upper_bound(spec), f"`{requirement.strip()}` in {origin}"))
    return found


def _poetry(table: dict, origin: str) -> list[TorchRequirement]:
    value = table.get("torch")
    if isinstance(value, dict):
        value = value.get("version")
    if isinstance(value, str):
        return [TorchRequirement(lower_bound(value, poetry=True), upper_bound(value, poetry=True),
                                 f"torch = \"{value}\" in {origin}")]
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


def metadata_torch_requirements(directory: Path) -> list[TorchRequirement]:
    """The torch requirements of the package metadata in `directory`."""
    found = []
    for path in metadata_files(directory):
        data = read_auxiliary(path)
        if data:
            text = data.decode("utf-8", errors="replace")
            found += _pep508(_REQUIRES_DIST.findall(text), str(path.relative_to(directory)))
    return found


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


def declared_torch_requirements(pyproject: Path, document: dict) -> list[TorchRequirement]:
    """The torch requirements the project at `pyproject` declares. Raises MalformedTable for a
    dependency table of the wrong type."""
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
    return found

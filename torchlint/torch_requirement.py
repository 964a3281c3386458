"""The lowest torch version a project declares it supports: the default `target-torch-version`.

Read from the project's pyproject.toml (`[project] dependencies`, `[project.optional-dependencies]`,
Poetry's and PDM's dependency tables) and the `requirements*.txt` files beside it. Each torch
requirement admits versions from its lower bound (`torch>=2.6`, `torch~=2.6.0`, `torch==2.6.*`,
Poetry's `^2.6`: 2.6); the project supports the lowest of them. A requirement without a lower
bound admits any version, so nothing is inferred from it.
"""

from __future__ import annotations

import re
from pathlib import Path

_REQUIREMENT = re.compile(r"^\s*torch\s*(?:\[[^\]]*\])?\s*(?P<spec>(?:[<>=!~^(][^;#]*)?)(?:[;#].*)?$", re.I)
_LOWER_BOUND = re.compile(r"(?:>=|==|~=|>|\^|~(?!=)|===)\s*v?(?P<version>\d+(?:\.\d+)?)")
_BARE_VERSION = re.compile(r"^\s*v?(?P<version>\d+(?:\.\d+)?)")


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

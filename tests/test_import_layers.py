"""The rule base class, the configuration, the file context and the analyses do not import each other in a
circle, not even for type annotations: the types both sides need live in `torchlint/reports.py`."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "torchlint"
LAYER = ("torchlint.context", "torchlint.config", "torchlint.rule", "torchlint.reports")


def _imports(module: str) -> set[str]:
    """Every module of the layer that `module` imports, also under `if TYPE_CHECKING:`."""
    path = PACKAGE.parent.joinpath(*module.split(".")).with_suffix(".py")
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module in LAYER:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in LAYER)
    return found


def test_context_config_and_rule_have_no_import_cycle() -> None:
    graph = {module: _imports(module) for module in LAYER}
    for start in LAYER:
        seen, pending = set(), list(graph[start])
        while pending:
            current = pending.pop()
            assert current != start, f"{start} imports itself back through {sorted(seen)}"
            if current not in seen:
                seen.add(current)
                pending.extend(graph[current])


def test_the_context_imports_neither_rule_nor_configuration() -> None:
    assert _imports("torchlint.context") == {"torchlint.reports"}


def test_analysis_never_imports_the_context_the_configuration_or_the_rules() -> None:
    """The context builds the analyses; they name `CheckedFile` (analysis/checked_file.py) for it."""
    for path in sorted((PACKAGE / "analysis").rglob("*.py")) + sorted((PACKAGE / "project").rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        assert _imports(module) & {"torchlint.context", "torchlint.config", "torchlint.rule"} == set(), module


def test_the_analyses_never_import_the_project_index() -> None:
    """`project/` summarizes other files with the analyses' vocabulary; the analyses see the
    project only through `analysis/project_facts.py`, so the imports go one way."""
    analysis = PACKAGE / "analysis"
    for path in analysis.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else (
                [alias.name for alias in node.names] if isinstance(node, ast.Import) else [])
            assert not any(name.startswith("torchlint.project") for name in names), path

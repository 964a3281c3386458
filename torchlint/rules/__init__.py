"""The rule registry: every module in this package defines one rule, found by its code."""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from torchlint.rule import Rule


@lru_cache(maxsize=None)
def all_rules() -> tuple[type[Rule], ...]:
    """Every rule class, sorted by code."""
    found: dict[str, type[Rule]] = {}
    for module_info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Rule) and value.__module__ == module.__name__:
                if value.code in found:
                    raise RuntimeError(f"two rules claim {value.code}")
                found[value.code] = value
    return tuple(found[code] for code in sorted(found))


def get_rule(code: str) -> type[Rule] | None:
    return next((rule for rule in all_rules() if rule.code == code), None)

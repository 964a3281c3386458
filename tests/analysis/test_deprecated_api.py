"""The deprecated-API table: consistent data, and every entry exercised by a fixture positive."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from torchlint.analysis.deprecated_api import (
    AMP_BY_NAME, DEPRECATED_AMP_APIS, DEPRECATED_APIS, DEPRECATED_BY_NAME, FixKind, replacement_unavailable,
)
from torchlint.config import Settings
from torchlint.engine import check_source
from torchlint.rules import get_rule

FIXTURES = Path(__file__).parent.parent / "fixtures" / "rules"


def test_names_are_unique_and_no_name_prefixes_another() -> None:
    names = [api.name for api in DEPRECATED_APIS] + [api.name for api in DEPRECATED_AMP_APIS]
    assert len(names) == len(set(names))
    for name in names:
        assert not any(other.startswith(name + ".") for other in names), name


@pytest.mark.parametrize("api", DEPRECATED_APIS, ids=lambda api: api.name)
def test_entries_are_complete(api) -> None:
    assert api.replacement
    assert (api.rename_to is None) == (api.fix is FixKind.NONE)
    if api.rename_to is not None:
        assert api.rename_to != api.name
        assert api.rename_to.split(".")[0] in ("torch",), "a rename fix writes a torch name"
    assert api.since is None or api.since >= (1, 0)


def _reported_names(code: str, fixture: str) -> set[str]:
    path = FIXTURES / fixture
    settings = Settings(rules=(get_rule(code),), show_hints=True)
    diagnostics = check_source(path.read_text(encoding="utf-8"), path.name, settings)
    return {name for d in diagnostics for name in re.findall(r"`([\w.]+)`", d.message)}


def test_every_table_entry_has_a_fixture_positive() -> None:
    reported = _reported_names("TL504", "TL504_deprecated_api.py")
    missing = sorted(api.name for api in DEPRECATED_APIS if api.name not in reported)
    assert not missing, f"no TL504 fixture positive for: {missing}"


def test_every_amp_family_has_a_fixture_positive() -> None:
    reported = _reported_names("TL501", "TL501_deprecated_cuda_amp.py")
    # The `*_mode.` / `grad_scaler.` module paths are aliases of the same objects.
    canonical = {name for name in AMP_BY_NAME if "_mode." not in name and "grad_scaler." not in name}
    assert not sorted(canonical - reported)


def test_replacement_availability_follows_the_target_version() -> None:
    assert not replacement_unavailable((2, 3), None)
    assert replacement_unavailable((2, 3), (2, 2))
    assert not replacement_unavailable((2, 3), (2, 3))
    assert not replacement_unavailable(None, (1, 8))
    assert DEPRECATED_BY_NAME["torch.ger"].rename_to == "torch.outer"

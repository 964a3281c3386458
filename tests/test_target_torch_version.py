"""Rules that read `target-torch-version` (`ctx.settings.target_torch_version`)."""

from __future__ import annotations

import textwrap

from torchlint.config import Settings
from torchlint.engine import check_source
from torchlint.rules import get_rule

SOURCE = textwrap.dedent(
    """
    import torch
    from functorch import vmap

    def run(model, path, x):
        state = torch.load(path)
        unsafe = torch.load(path, weights_only=False)
        scaler = torch.cuda.amp.GradScaler()
        with torch.cuda.amp.autocast():
            y = vmap(model)(x)
        with torch.backends.cuda.sdp_kernel(enable_flash=True):
            z = model(x)
        return state, unsafe, scaler, y, z
    """
)


def rows(code: str, target: tuple[int, int] | None, ceiling: tuple[int, int] | None = None,
         show_hints: bool = False) -> list[int]:
    settings = Settings(rules=(get_rule(code),), target_torch_version=target, torch_ceiling=ceiling,
                        show_hints=show_hints)
    return [d.location.row for d in check_source(SOURCE, "t.py", settings)]


def test_torch_load_default_is_safe_from_2_6() -> None:
    assert rows("TL502", None, show_hints=True) == [6, 7]
    assert rows("TL502", (2, 5), show_hints=True) == [6, 7]
    # From 2.6 a missing weights_only means True; an explicit False stays a finding (a hint).
    assert rows("TL502", (2, 6), show_hints=True) == [7]
    assert rows("TL502", (3, 0), show_hints=True) == [7]
    assert rows("TL502", (2, 5)) == [6]


def test_torch_load_of_a_pickled_model_fails_from_2_6() -> None:
    source = "import torch\n\ndef restore(path, x):\n    model = torch.load(path)\n    return model(x)\n"
    for target in (None, (2, 5), (2, 6)):
        settings = Settings(rules=(get_rule("TL502"),), target_torch_version=target)
        [finding] = check_source(source, "t.py", settings)
        assert finding.fix is None  # `weights_only=True` would break this load
        assert ("fails here from torch 2.6 on" in finding.message) == (target == (2, 6))


def test_amp_replacements_need_their_torch_version() -> None:
    assert rows("TL501", None) == [8, 9]
    # torch.amp.autocast exists since 1.10, torch.amp.GradScaler since 2.3.
    assert rows("TL501", (2, 2)) == [9]
    assert rows("TL501", (1, 9)) == []
    assert rows("TL501", (2, 4)) == [8, 9]


def test_apis_deprecated_after_every_supported_torch_are_not_reported() -> None:
    # torch.cuda.amp is deprecated from 2.4, functorch from 2.0, sdp_kernel from 2.3.
    assert rows("TL501", (1, 10), ceiling=(1, 13)) == []
    assert rows("TL501", (2, 3), ceiling=(2, 4)) == []
    assert rows("TL501", (2, 3), ceiling=(2, 5)) == [8, 9]
    assert rows("TL504", (2, 3), ceiling=(2, 0)) == []
    assert rows("TL504", (2, 3), ceiling=(2, 3)) == [3, 10]
    assert rows("TL504", (2, 3), ceiling=(2, 4)) == [3, 10, 11]  # 2.3 is supported: deprecated there


def test_deprecated_api_replacements_need_their_torch_version() -> None:
    assert rows("TL504", None) == [3, 10, 11]
    assert rows("TL504", (1, 13)) == []
    assert rows("TL504", (2, 2)) == [3, 10]
    assert rows("TL504", (2, 3)) == [3, 10, 11]


WORKER_SOURCE = textwrap.dedent(
    """
    import numpy as np
    from torch.utils.data import DataLoader, Dataset

    class Jitter(Dataset):
        def __getitem__(self, i):
            return i * np.random.uniform(0.9, 1.1)

    loader = DataLoader(Jitter(), batch_size=4, num_workers=4)
    """
)


def test_numpy_global_random_in_workers_only_before_1_9() -> None:
    def worker_rows(target):
        settings = Settings(rules=(get_rule("TL022"),), target_torch_version=target)
        return [d.location.row for d in check_source(WORKER_SOURCE, "t.py", settings)]

    # Torch 1.9 and later reseed NumPy's global generator in every worker; an unknown floor is quiet.
    assert worker_rows((1, 8)) == [7]
    assert worker_rows((1, 9)) == []
    assert worker_rows(None) == []

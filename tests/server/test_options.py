"""Initialization options (select, ignore, unsafeFixes, debounceMs), each test with a server of
its own; and stale results: a check whose document changed meanwhile publishes nothing."""

from __future__ import annotations

import ast
import asyncio

import pytest
from lsprotocol import types

from tests.server.lsp_client import Document, EditorClient, initialize
from tests.server.test_editing import cli_fix

pytestmark = pytest.mark.asyncio

TWO_FINDINGS = "import torch\n\ny = torch.log(torch.softmax(torch.Tensor(3), dim=0))\n"
UNSAFE = "import torch.nn.functional as F\n\np = F.softmax(x)\n"


def codes(diagnostics: list[types.Diagnostic]) -> list[str]:
    return sorted(d.code for d in diagnostics)


async def test_select_and_ignore_options_override_the_config(client: EditorClient, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nselect = ["TL102"]\n', encoding="utf-8")
    await initialize(client, tmp_path, {"select": ["TL1", "TL2"], "ignore": ["TL102"]})
    _, diagnostics = await Document.open(client, tmp_path / "model.py", TWO_FINDINGS)
    assert codes(diagnostics) == ["TL201"]


async def test_an_invalid_option_is_reported_and_left_out(client: EditorClient, tmp_path):
    await initialize(client, tmp_path, {"select": ["XX9"], "unsafeFixes": "yes"})
    _, diagnostics = await Document.open(client, tmp_path / "model.py", TWO_FINDINGS)
    assert codes(diagnostics) == ["TL102", "TL201"]
    messages = [message.message for message in client.messages]
    assert len(messages) == 2
    assert any("unknown rule selector 'XX9'" in message for message in messages)
    assert any("'unsafeFixes' in the initialization options must be true or false" in message for message in messages)


async def test_unsafe_fixes_are_offered_when_allowed_and_labelled(client: EditorClient, tmp_path):
    await initialize(client, tmp_path, {"unsafeFixes": True})
    document, diagnostics = await Document.open(client, tmp_path / "model.py", UNSAFE)
    assert codes(diagnostics) == ["TL202"]
    actions = await document.code_actions(diagnostics[0])
    fix = next(action for action in actions if "TL202" in action.title and "unsafe" in action.title)
    assert not fix.is_preferred
    assert await document.apply(fix) == []
    ast.parse(document.text)
    assert document.text == cli_fix(tmp_path, UNSAFE, "--unsafe-fixes") != UNSAFE


def slow_text() -> str:
    """A module that takes seconds to check (1,600 lines)."""
    block = "\ndef step_{0}(model, batch):\n    x = batch.permute(0, 2, 1).reshape(4, -1)\n    return torch.Tensor(x)\n"
    return "import torch\n" + "".join(block.format(index) for index in range(400))


async def test_a_result_for_an_older_version_is_dropped(client: EditorClient, tmp_path):
    # No debounce: every change starts a check, so the slow one is still running when the next
    # version arrives.
    await initialize(client, tmp_path, {"debounceMs": 0})
    document, _ = await Document.open(client, tmp_path / "model.py", "import torch\n")
    slow = slow_text()
    since = len(client.published)
    stale = document.send_change(slow)
    await asyncio.sleep(0.3)
    current = await document.change("import torch\n\nx = torch.Tensor(3)\n")
    assert codes(current) == ["TL102"]
    dropped = f"dropped the findings of version {stale} of {document.uri}"
    await client.wait_for(lambda: next((m for m in client.log_messages if dropped in m.message), None), dropped)
    assert [p.version for p in client.published[since:] if p.uri == document.uri] == [stale + 1]


async def test_a_slow_document_does_not_delay_another(client: EditorClient, tmp_path):
    await initialize(client, tmp_path, {"debounceMs": 0})
    slow, _ = await Document.open(client, tmp_path / "slow.py", "import torch\n")
    since = len(client.published)
    slow.send_change(slow_text())
    _, diagnostics = await Document.open(client, tmp_path / "quick.py", TWO_FINDINGS)
    assert codes(diagnostics) == ["TL102", "TL201"]
    assert len(await client.published_for(slow.uri, since, slow.version)) == 400
    order = [p.uri for p in client.published[since:]]
    assert order.index((tmp_path / "quick.py").as_uri()) < order.index(slow.uri)

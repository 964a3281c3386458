"""`torchlint mcp` as coding agents meet it: started as a subprocess and driven by the MCP SDK's
own client (and, for what a client library never sends, by raw lines on its stdin)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

REPO = Path(__file__).resolve().parent.parent
SERVER = [sys.executable, "-m", "torchlint", "mcp"]
LOG_OF_SOFTMAX = "import torch\n\n\ndef f(x):\n    return torch.log(torch.softmax(x, dim=-1))\n"
FIXED_LINE = "    return torch.log_softmax(x, dim=-1)"


def _environment() -> dict[str, str]:
    # The whole environment: the client library passes on only a few variables by default, and
    # the test's private cache directory (conftest.py) must reach the server.
    return {**os.environ, "PYTHONPATH": str(REPO)}


@contextlib.asynccontextmanager
async def mcp_session(cwd: Path):
    """An initialized client session with `torchlint mcp` started in `cwd`."""
    server = StdioServerParameters(command=SERVER[0], args=SERVER[1:], cwd=cwd, env=_environment())
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def _text(result) -> str:
    return "".join(block.text for block in result.content)


@pytest.mark.asyncio
async def test_initialize_and_list_the_three_tools(project: Path):
    server = StdioServerParameters(command=SERVER[0], args=SERVER[1:], cwd=project, env=_environment())
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        initialized = await session.initialize()
        tools = (await session.list_tools()).tools
    assert initialized.server_info.name == "torchlint"
    assert initialized.capabilities.tools is not None
    assert sorted(tool.name for tool in tools) == ["check", "explain_rule", "fix"]
    for tool in tools:
        assert tool.description and tool.input_schema["type"] == "object" and tool.input_schema["properties"]


@pytest.mark.asyncio
async def test_check_a_buffer(project: Path):
    async with mcp_session(project) as session:
        result = await session.call_tool("check", {"source": "import torch\nx = torch.Tensor(3)\n"})
    assert not result.is_error
    assert "untitled.py:2:5: TL102 " in _text(result)
    [finding] = result.structured_content["findings"]
    assert (finding["code"], finding["location"]) == ("TL102", {"row": 2, "column": 5})
    assert finding["filename"] == str(project / "untitled.py")


@pytest.mark.asyncio
async def test_check_a_directory(project: Path):
    package = project / "package"
    package.mkdir()
    (package / "first.py").write_text("import torch\nx = torch.Tensor(3)\n")
    (package / "second.py").write_text(LOG_OF_SOFTMAX)
    async with mcp_session(project) as session:
        result = await session.call_tool("check", {"paths": ["package"]})
    findings = result.structured_content["findings"]
    assert [(Path(f["filename"]).name, f["code"]) for f in findings] == [("first.py", "TL102"), ("second.py", "TL201")]
    assert os.path.join("package", "second.py") + ":5:12: TL201 [*]" in _text(result)


@pytest.mark.asyncio
async def test_check_reads_the_project_configuration(project: Path):
    (project / "pyproject.toml").write_text("[project]\nname = 'demo'\n\n[tool.torchlint]\nignore = ['TL102']\n")
    (project / "model.py").write_text("import torch\nx = torch.Tensor(3)\n" + LOG_OF_SOFTMAX)
    async with mcp_session(project) as session:
        on_disk = await session.call_tool("check", {"paths": ["model.py"]})
        buffer = await session.call_tool("check", {"source": "import torch\nx = torch.Tensor(3)\n",
                                                   "filename": "model.py"})
    assert [f["code"] for f in on_disk.structured_content["findings"]] == ["TL201"]
    assert buffer.structured_content["findings"] == []
    assert "All checks passed!" in _text(buffer)


@pytest.mark.asyncio
async def test_explain_a_rule(project: Path):
    async with mcp_session(project) as session:
        by_code = await session.call_tool("explain_rule", {"code": "TL101"})
        by_name = await session.call_tool("explain_rule", {"code": "view-after-permute"})
    assert not by_code.is_error
    assert "view-after-permute" in _text(by_code)
    assert _text(by_name) == _text(by_code)


@pytest.mark.asyncio
async def test_explain_an_unknown_rule_is_a_tool_error(project: Path):
    async with mcp_session(project) as session:
        result = await session.call_tool("explain_rule", {"code": "TL999"})
    assert result.is_error
    assert "unknown rule code 'TL999'" in _text(result)


@pytest.mark.asyncio
async def test_fix_returns_a_diff_and_writes_nothing(project: Path):
    model = project / "model.py"
    model.write_text(LOG_OF_SOFTMAX)
    async with mcp_session(project) as session:
        result = await session.call_tool("fix", {"path": "model.py"})
    assert not result.is_error
    assert f"+{FIXED_LINE}\n" in _text(result)
    assert result.structured_content["fixed"] == ["TL201"]
    assert FIXED_LINE in result.structured_content["fixed_source"]
    assert result.structured_content["remaining"] == []
    assert model.read_text() == LOG_OF_SOFTMAX


@pytest.mark.asyncio
async def test_fix_a_buffer(project: Path):
    async with mcp_session(project) as session:
        result = await session.call_tool("fix", {"source": LOG_OF_SOFTMAX, "filename": "model.py"})
    assert result.structured_content["diff"].startswith("--- model.py\n+++ model.py\n")
    assert result.structured_content["fixed_source"] == LOG_OF_SOFTMAX.replace(
        "    return torch.log(torch.softmax(x, dim=-1))", FIXED_LINE)


@pytest.mark.asyncio
async def test_bad_arguments_are_tool_errors_and_the_session_goes_on(project: Path):
    async with mcp_session(project) as session:
        neither = await session.call_tool("check", {})
        wrong_type = await session.call_tool("check", {"paths": "model.py"})
        missing = await session.call_tool("check", {"paths": ["missing.py"]})
        afterwards = await session.call_tool("check", {"source": "x = 1\n"})
    assert neither.is_error and "give exactly one of 'paths' or 'source'" in _text(neither)
    assert wrong_type.is_error and "'paths' must be a list of strings" in _text(wrong_type)
    assert missing.is_error and "missing.py: no such file or directory" in _text(missing)
    assert not afterwards.is_error and afterwards.structured_content == {"findings": []}


def test_raw_protocol_errors_leave_the_server_answering(project: Path):
    """What a client library never sends: a line that is not JSON, an unknown method; and no
    answer at all to a notification."""
    lines = [
        "this is not JSON",
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "no/such/method"}),
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"protocolVersion": "1999-01-01"}}),
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "ping"}),
    ]
    completed = subprocess.run(SERVER, input="\n".join(lines) + "\n", cwd=project, env=_environment(),
                               capture_output=True, text=True, timeout=60)
    answers = [json.loads(line) for line in completed.stdout.splitlines()]
    assert [answer["id"] for answer in answers] == [None, 1, 2, 3]
    assert answers[0]["error"]["code"] == -32700
    assert answers[1]["error"]["code"] == -32601
    assert answers[2]["result"]["protocolVersion"] == "2025-11-25"
    assert answers[3]["result"] == {}

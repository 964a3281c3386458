"""`torchlint mcp`: a Model Context Protocol server on stdio, for coding agents.

MCP's stdio transport is JSON-RPC 2.0, one JSON object per line on stdin and stdout, logs on
stderr. That small a protocol is written here by hand: static torchlint needs no package beyond
libcst and click, and the MCP SDK would add dozens. The tools run the engine, configuration and
output code that `torchlint check` and `torchlint rule` run.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Callable, TextIO

from torchlint import __version__
from torchlint.config import ConfigError, Options, Settings, SettingsResolver
from torchlint.diagnostics import Diagnostic
from torchlint.discovery import Discovery, PathError, display_name
from torchlint.docs import rule_page
from torchlint.engine import check_files, check_source
from torchlint.fix import fix_notebook, fix_text, notebook_diff, unified_diff
from torchlint.output import OutputContext, render
from torchlint.output.json import to_dict
from torchlint.rules import find_rule
from torchlint.sources import UnreadableFile, read_source

# The revisions this server speaks, oldest to newest (structuredContent came in 2025-06-18; an
# older client ignores it).
PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602

INSTRUCTIONS = (
    "torchlint finds PyTorch pitfalls in Python code without running it. Call `check` on the files "
    "you changed (or on a buffer), `explain_rule` for what a finding's code means and how to fix it, "
    "and `fix` for the safe fixes as a diff (it never writes files)."
)

_CODES = {"type": "array", "items": {"type": "string"}}
_FINDINGS = {"type": "array", "items": {"type": "object"}}
_FILENAME = {
    "type": "string",
    "description": "The buffer's file name (default untitled.py), relative to the working directory: "
                   "its configuration ([tool.torchlint] in the nearest pyproject.toml) applies, and "
                   "findings show it.",
}

TOOLS = [
    {
        "name": "check",
        "title": "Check for PyTorch pitfalls",
        "description": (
            "Check Python code for PyTorch pitfalls (shape bugs, silent copies, deprecated APIs, "
            "training-loop mistakes). Give `paths` (files or directories, relative to the working "
            "directory) or `source` (the code itself, with an optional `filename`). Returns one line "
            "per finding, `path:row:col: CODE message` (`[*]` marks a safe fix that `fix` applies), and "
            "the findings as objects in `findings`. The project's [tool.torchlint] configuration applies; "
            "`select` and `ignore` narrow it (codes or prefixes such as TL1)."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "paths": {**_CODES, "description": "Files and directories to check."},
                "source": {"type": "string", "description": "Python source code to check, instead of paths."},
                "filename": _FILENAME,
                "select": {**_CODES, "description": "Rule codes or prefixes to enable, replacing the configured set."},
                "ignore": {**_CODES, "description": "Rule codes or prefixes to disable."},
            },
        },
        "outputSchema": {"type": "object", "properties": {"findings": _FINDINGS}, "required": ["findings"]},
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "explain_rule",
        "title": "Explain a torchlint rule",
        "description": (
            "Explain a rule: what it finds, why it is a problem, the code to write instead and how safe "
            "its fix is. `code` is a rule code from a finding (TL101) or a rule name (view-after-permute)."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {"code": {"type": "string", "description": "A rule code (TL101) or name."}},
            "required": ["code"],
        },
        "annotations": {"readOnlyHint": True},
    },
    {
        "name": "fix",
        "title": "Safe fixes as a diff",
        "description": (
            "Apply torchlint's safe fixes (those that keep the code's behaviour) to one Python file or a "
            "buffer and return a unified diff. Nothing is written: apply the diff, or use `fixed_source`, "
            "yourself. Give `path` (one file) or `source` (with an optional `filename`). The result also "
            "lists the codes fixed and the findings left, which need a change by hand."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "The file to fix (it is read, never written)."},
                "source": {"type": "string", "description": "Python source code to fix, instead of a path."},
                "filename": _FILENAME,
            },
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "diff": {"type": "string"}, "fixed_source": {"type": "string"}, "fixed": _CODES,
                "remaining": _FINDINGS,
            },
            "required": ["diff", "fixed_source", "fixed", "remaining"],
        },
        "annotations": {"readOnlyHint": True},
    },
]


class ToolError(Exception):
    """A tool call that cannot be answered as asked; its message goes back to the agent."""


def serve(stdin: TextIO, stdout: TextIO) -> None:
    """Answer each message on `stdin` until it closes."""
    for line in stdin:
        if not line.strip():
            continue
        answer = handle_line(line)
        if answer is not None:
            stdout.write(json.dumps(answer, ensure_ascii=False) + "\n")
            stdout.flush()


def run_server() -> None:
    """`torchlint mcp`: serve on this process's stdin and stdout. File descriptor 1 is pointed at
    stderr first, so that nothing but protocol messages reaches stdout: not a stray print, nor the
    output of a worker process that checks files."""
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8", newline="\n")
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    stdin = open(sys.stdin.fileno(), encoding="utf-8", errors="replace", newline="\n", closefd=False)
    serve(stdin, protocol)


def handle_line(line: str) -> dict | None:
    """The answer to one line of input; None for a notification (or a response), which gets none."""
    try:
        message = json.loads(line)
    except ValueError as error:
        return _error(None, PARSE_ERROR, f"Parse error: {error}")
    if not isinstance(message, dict) or not isinstance(message.get("method"), str):
        if isinstance(message, dict) and "method" not in message and ("result" in message or "error" in message):
            return None  # a response: this server sends no requests, so there is nothing it answers
        return _error(message.get("id") if isinstance(message, dict) else None, INVALID_REQUEST,
                      "Invalid Request: a JSON-RPC message is an object with a method")
    if "id" not in message:
        return None  # notifications/initialized, notifications/cancelled: nothing to do
    return _answer(message["id"], message["method"], message.get("params", {}))


def _answer(request_id, method: str, params) -> dict:
    handler = _METHODS.get(method)
    if handler is None:
        return _error(request_id, METHOD_NOT_FOUND, f"Method not found: {method}")
    if not isinstance(params, dict):
        return _error(request_id, INVALID_PARAMS, "Invalid params: params must be an object")
    try:
        return {"jsonrpc": "2.0", "id": request_id, "result": handler(params)}
    except ToolError as error:
        return _error(request_id, INVALID_PARAMS, f"Invalid params: {error}")


def _error(request_id, code: int, message: str) -> dict:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _initialize(params: dict) -> dict:
    requested = params.get("protocolVersion")
    return {
        "protocolVersion": requested if requested in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1],
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "torchlint", "version": __version__},
        "instructions": INSTRUCTIONS,
    }


def _call_tool(params: dict) -> dict:
    """A tool's result. Unknown tools are protocol errors; a tool's own failure is a result with
    `isError`, which the agent reads and can correct."""
    tool = next((tool for tool in TOOLS if tool["name"] == params.get("name")), None)
    if tool is None:
        raise ToolError(f"unknown tool {params.get('name')!r}; the tools are {', '.join(t['name'] for t in TOOLS)}")
    arguments = params.get("arguments") or {}
    try:
        _validate(arguments, tool["inputSchema"])
        return _TOOLS[tool["name"]](arguments)
    except (ToolError, ConfigError, PathError, UnreadableFile) as error:
        return _text_result(f"{tool['name']}: {error}", is_error=True)
    except Exception as error:  # noqa: BLE001 - a torchlint bug fails this call, never the server
        print(f"torchlint mcp: internal error in {tool['name']}: {type(error).__name__}: {error}", file=sys.stderr)
        return _text_result(f"{tool['name']}: internal error: {type(error).__name__}: {error}", is_error=True)


def _validate(arguments, schema: dict) -> None:
    """The arguments against a tool's input schema, whose properties are strings or string lists."""
    if not isinstance(arguments, dict):
        raise ToolError("arguments must be an object")
    properties = schema["properties"]
    for name, value in arguments.items():
        if name not in properties:
            raise ToolError(f"unknown argument {name!r}; the arguments are {', '.join(properties)}")
        if properties[name]["type"] == "string" and not isinstance(value, str):
            raise ToolError(f"{name!r} must be a string")
        if properties[name]["type"] == "array" and not (
            isinstance(value, list) and all(isinstance(item, str) for item in value)
        ):
            raise ToolError(f"{name!r} must be a list of strings")
    missing = [name for name in schema.get("required", ()) if name not in arguments]
    if missing:
        raise ToolError(f"{missing[0]!r} is required")


def _one_of(arguments: dict, *names: str) -> str:
    given = [name for name in names if name in arguments]
    if len(given) != 1:
        raise ToolError(f"give exactly one of {' or '.join(repr(name) for name in names)}")
    return given[0]


def _text_result(text: str, structured: dict | None = None, is_error: bool = False) -> dict:
    result: dict = {"content": [{"type": "text", "text": text}], "isError": is_error}
    if structured is not None:
        result["structuredContent"] = structured
    return result


def _check(arguments: dict) -> dict:
    resolver = SettingsResolver(Options(select=arguments.get("select"), ignore=arguments.get("ignore")))
    internal_errors: list[str] = []
    if _one_of(arguments, "paths", "source") == "source":
        filename = arguments.get("filename", "untitled.py")
        settings = resolver.for_file(filename)
        diagnostics = settings.fix_policy.applied(check_source(arguments["source"], filename, settings))
    else:
        diagnostics, internal_errors = _check_paths(arguments["paths"] or ["."], resolver)
    text = render("concise", diagnostics, OutputContext(color=False, rules=resolver.default.rules))
    # As `torchlint check` does: a file that met a torchlint bug is named, the others still checked.
    text += "".join(f"torchlint: internal error: {error}\n" for error in internal_errors)
    return _text_result(text, {"findings": [to_dict(d) for d in diagnostics]})


def _check_paths(paths: list[str], resolver: SettingsResolver) -> tuple[list[Diagnostic], list[str]]:
    """The findings in the files under `paths`, each file with its own configuration, as
    `torchlint check PATHS` finds them; and the internal errors met."""
    settings = resolver.default
    discovery = Discovery(settings.exclude, settings.root)
    named = [(path, display_name(path)) for path in discovery.files(paths)]
    for warning in discovery.warnings:
        print(f"torchlint mcp: warning: {warning}", file=sys.stderr)
    errors: list[str] = []
    diagnostics = [
        d for group_settings, group in resolver.groups(named)
        for d in check_files(group, group_settings, errors=errors, use_cache=True)
    ]
    return sorted(diagnostics, key=Diagnostic.sort_key), errors


def _explain_rule(arguments: dict) -> dict:
    rule = find_rule(arguments["code"])
    if rule is None:
        raise ToolError(f"unknown rule code {arguments['code']!r} (codes look like TL101)")
    return _text_result(rule_page(rule))


def _fix(arguments: dict) -> dict:
    name, text, settings, notebook = _fix_target(arguments)
    outcome = (fix_notebook if notebook else fix_text)(text, name, settings)
    diff = (notebook_diff if notebook else unified_diff)(text, outcome.text, name)
    remaining = settings.fix_policy.applied(outcome.diagnostics)
    fixed = sorted(outcome.fixed.elements())
    summary = render("concise", remaining, OutputContext(color=False, rules=settings.rules, fixed=len(fixed)))
    shown = [diff or "No safe fixes apply.\n", *(problem + "\n" for problem in outcome.problems), summary]
    return _text_result("".join(shown), {
        "diff": diff, "fixed_source": outcome.text, "fixed": fixed, "remaining": [to_dict(d) for d in remaining],
    })


def _fix_target(arguments: dict) -> tuple[str, str, Settings, bool]:
    """What `fix` fixes: its shown name, text and settings, and whether it is a notebook's JSON
    (a file only: a buffer is Python, as `torchlint check -` reads it)."""
    resolver = SettingsResolver(Options())
    if _one_of(arguments, "path", "source") == "source":
        name = arguments.get("filename", "untitled.py")
        return name, arguments["source"], resolver.for_file(name), False
    path = arguments["path"]
    if os.path.isdir(path):
        raise ToolError(f"{path} is a directory; fix takes one file (call it once per file)")
    return display_name(path), read_source(path).text, resolver.for_file(path), path.endswith(".ipynb")


_METHODS: dict[str, Callable[[dict], dict]] = {
    "initialize": _initialize,
    "ping": lambda params: {},
    "tools/list": lambda params: {"tools": TOOLS},
    "tools/call": _call_tool,
}

_TOOLS: dict[str, Callable[[dict], dict]] = {"check": _check, "explain_rule": _explain_rule, "fix": _fix}

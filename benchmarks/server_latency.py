"""Latency of `torchlint server`: from a didChange to the publishDiagnostics of that version.

Usage: python benchmarks/server_latency.py FILE [--edits N] [--pause SECONDS] [--transcript OUT] [--ruff]

Starts the real server (`python -m torchlint server`), opens FILE, then sends N edits (each
inserts a line near the middle, the way typing does, and waits for its findings), and prints
the median and maximum latency. The time includes the round trip through the worker process
and the check itself; the edits come --pause seconds apart, so each is an edit after a pause,
which the server checks at once (the debounce, 50 ms by default, applies to quicker ones); for scale it also prints how long
one in-process `check_source` of the file takes and how long libcst's bare parse of it takes
(the floor), and the time from didOpen to the first diagnostics. With --ruff, the same session
is run against `ruff server` (ruff on PATH) for comparison. With --transcript, every message of the session
(initialize to exit, also the code actions for the whole file and a hover) is written to OUT, long strings cut.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

import libcst as cst

from torchlint.config import Options, resolve_settings
from torchlint.engine import check_source

# Strings longer than this are cut in the transcript (a whole file is sent on open).
TRANSCRIPT_STRING = 160


class Connection:
    """A minimal LSP client over the server's stdin/stdout: JSON-RPC with Content-Length framing."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.transcript: list[str] = []
        self.started = time.perf_counter()
        self._next_id = 0
        self._answers: dict[int, asyncio.Future] = {}
        self.notifications: asyncio.Queue = asyncio.Queue()
        self._reader = asyncio.create_task(self._read())

    def _log(self, direction: str, message: dict) -> None:
        elapsed = time.perf_counter() - self.started
        self.transcript.append(f"{elapsed:9.3f} {direction} {json.dumps(_shortened(message))}")

    def send(self, message: dict) -> None:
        self._log("->", message)
        body = json.dumps(message).encode("utf-8")
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def notify(self, method: str, params: dict | None = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})})

    async def request(self, method: str, params: dict | None = None):
        self._next_id += 1
        answer = self._answers[self._next_id] = asyncio.get_running_loop().create_future()
        self.send({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params})
        return await asyncio.wait_for(answer, 60)

    async def _read(self) -> None:
        stream = self.process.stdout
        while True:
            headers = {}
            while (line := await stream.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode("ascii").partition(":")
                headers[name.strip().lower()] = value.strip()
            if not headers:
                return
            message = json.loads(await stream.readexactly(int(headers["content-length"])))
            self._log("<-", message)
            if "id" in message and "method" in message:  # a request from the server
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            elif "id" in message:
                self._answers.pop(message["id"]).set_result(message.get("result"))
            else:
                await self.notifications.put(message)

    async def diagnostics(self, uri: str, version: int) -> list[dict]:
        while True:
            message = await asyncio.wait_for(self.notifications.get(), 60)
            params = message.get("params", {})
            if message["method"] == "textDocument/publishDiagnostics" and params["uri"] == uri \
                    and params.get("version") == version:
                return params["diagnostics"]


def _shortened(value):
    if isinstance(value, str) and len(value) > TRANSCRIPT_STRING:
        return f"{value[:TRANSCRIPT_STRING]}... ({len(value)} characters)"
    if isinstance(value, dict):
        return {key: _shortened(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_shortened(item) for item in value]
    return value


async def session(server: list[str], path: Path, edits: int, pause: float) -> tuple[float, list[float], list[str], int]:
    """From didOpen to the first diagnostics, then each edit's latency; the transcript; the findings."""
    process = await asyncio.create_subprocess_exec(
        *server, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=os.environ.copy(),
        # ruff logs each request to standard error; torchlint's errors are worth seeing.
        stderr=asyncio.subprocess.DEVNULL if server[0] == "ruff" else None,
    )
    connection = Connection(process)
    uri, text = path.resolve().as_uri(), path.read_text(encoding="utf-8")
    await connection.request("initialize", {
        "processId": os.getpid(), "rootUri": path.resolve().parent.as_uri(),
        "capabilities": {"textDocument": {"publishDiagnostics": {"versionSupport": True}}},
    })
    connection.notify("initialized", {})
    opened = time.perf_counter()
    connection.notify("textDocument/didOpen", {
        "textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text},
    })
    findings = await connection.diagnostics(uri, 1)
    first_diagnostics = time.perf_counter() - opened
    line = len(text.splitlines()) // 2
    latencies = []
    for version in range(2, edits + 2):
        await asyncio.sleep(pause)
        start = time.perf_counter()
        connection.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"range": {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 0}},
                                "text": f"# edit {version}\n"}],
        })
        await connection.diagnostics(uri, version)
        latencies.append(time.perf_counter() - start)
    if findings:
        every_row = {"start": {"line": 0, "character": 0}, "end": {"line": len(text.splitlines()), "character": 0}}
        await connection.request("textDocument/codeAction", {
            "textDocument": {"uri": uri}, "range": every_row, "context": {"diagnostics": findings},
        })
        first = findings[0]["range"]["start"]
        await connection.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": first})
    await connection.request("shutdown")
    connection.notify("exit")
    await process.wait()
    return first_diagnostics, latencies, connection.transcript, len(findings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--pause", type=float, default=0.5, help="seconds between edits (default 0.5)")
    parser.add_argument("--transcript", type=Path)
    parser.add_argument("--ruff", action="store_true", help="also run the session against `ruff server`")
    args = parser.parse_args()
    text = args.file.read_text(encoding="utf-8")
    settings = resolve_settings(Options(), args.file.resolve().parent)
    check_ms = _median_ms(lambda: check_source(text, str(args.file), settings))
    parse_ms = _median_ms(lambda: cst.parse_module(text))
    print(f"{args.file}: {len(text.splitlines())} lines")
    print(f"in-process: check_source median {check_ms:.0f} ms, bare libcst parse median {parse_ms:.0f} ms (5 runs each)")
    servers = {"torchlint": [sys.executable, "-m", "torchlint", "server"]}
    if args.ruff:
        servers["ruff"] = ["ruff", "server"]
    for name, command in servers.items():
        first, latencies, transcript, findings = asyncio.run(session(command, args.file, args.edits, args.pause))
        milliseconds = [1000 * latency for latency in latencies]
        median = statistics.median(milliseconds)
        print(f"{name}: {findings} findings; didOpen -> first diagnostics {1000 * first:.0f} ms; didChange -> "
              f"publishDiagnostics over {len(milliseconds)} edits: median {median:.0f} ms "
              f"({median / parse_ms:.2f}x the bare parse), max {max(milliseconds):.0f} ms, min {min(milliseconds):.0f} ms")
        print("  each (ms): " + " ".join(f"{value:.0f}" for value in milliseconds))
        if args.transcript and name == "torchlint":
            args.transcript.write_text("\n".join(transcript) + "\n", encoding="utf-8")
            print(f"  transcript: {args.transcript} ({len(transcript)} messages)")


def _median_ms(run) -> float:
    times = []
    for _ in range(5):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


if __name__ == "__main__":
    main()

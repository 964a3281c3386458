"""Latency of `torchlint server`: from a didChange to the publishDiagnostics of that version.

Usage: python benchmarks/server_latency.py FILE [--edits N] [--pause SECONDS] [--transcript OUT]

Starts the real server (`python -m torchlint server`), opens FILE, then sends N edits (each
inserts a line near the middle, the way typing does, and waits for its findings), and prints
the median and maximum latency. The time includes the round trip through the worker process
and the check itself; the edits come --pause seconds apart, so each is an edit after a pause,
which the server checks at once (the debounce, 50 ms by default, applies to quicker ones); for scale it also prints how long
one in-process `check_source` of the file takes. With --transcript, every message of the session
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


async def session(path: Path, edits: int, pause: float) -> tuple[list[float], list[str], int]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "torchlint", "server",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=os.environ.copy(),
    )
    connection = Connection(process)
    uri, text = path.resolve().as_uri(), path.read_text(encoding="utf-8")
    await connection.request("initialize", {
        "processId": os.getpid(), "rootUri": path.resolve().parent.as_uri(),
        "capabilities": {"textDocument": {"publishDiagnostics": {"versionSupport": True}}},
    })
    connection.notify("initialized", {})
    connection.notify("textDocument/didOpen", {
        "textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text},
    })
    findings = await connection.diagnostics(uri, 1)
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
    return latencies, connection.transcript, len(findings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path)
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--pause", type=float, default=0.5, help="seconds between edits (default 0.5)")
    parser.add_argument("--transcript", type=Path)
    args = parser.parse_args()
    text = args.file.read_text(encoding="utf-8")
    settings = resolve_settings(Options(), args.file.resolve().parent)
    check_times = []
    for _ in range(5):
        start = time.perf_counter()
        check_source(text, str(args.file), settings)
        check_times.append(time.perf_counter() - start)
    latencies, transcript, findings = asyncio.run(session(args.file, args.edits, args.pause))
    milliseconds = [1000 * latency for latency in latencies]
    print(f"{args.file}: {len(text.splitlines())} lines, {findings} findings")
    print(f"in-process check_source: median {1000 * statistics.median(check_times):.0f} ms over 5 runs")
    print(f"didChange -> publishDiagnostics over {len(milliseconds)} edits: median {statistics.median(milliseconds):.0f} ms, "
          f"max {max(milliseconds):.0f} ms, min {min(milliseconds):.0f} ms")
    print("each (ms): " + " ".join(f"{value:.0f}" for value in milliseconds))
    if args.transcript:
        args.transcript.write_text("\n".join(transcript) + "\n", encoding="utf-8")
        print(f"transcript: {args.transcript} ({len(transcript)} messages)")


if __name__ == "__main__":
    main()

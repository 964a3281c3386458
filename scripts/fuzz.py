"""Fuzz the engine and the fixer with inputs nobody wrote by hand (issue #18).

    python scripts/fuzz.py --kind all --count 10000 --seconds 3600 --seed 1 --jobs 1 \\
        --corpus /work/corpus/src_timm --save fuzz-failures

Four kinds of input:
  generated  programs from hypothesmith (grammar- and libcst-based), with torch-flavoured names
             swapped in and torch snippets appended, so that rules fire and fixes run;
  mutated    real modules (the test fixtures, examples/ and any --corpus directory) mutated at
             the token level: lines deleted or duplicated, indentation changed, tokens swapped,
             a bracket dropped, a tab, form feed or carriage return inserted, a non-UTF-8 byte,
             a huge literal, `# noqa` comments added on the rows of findings;
  notebook   valid JSON notebooks with odd cells (empty, magics only, source as a string,
             missing keys, non-code cells holding code, cells that are not objects);
  repository hostile trees, each checked through the CLI: ordinary files with a pitfall beside
             links to devices, FIFOs, link loops, deep nesting, huge or malformed pyproject.toml,
             requirements, .gitignore and METADATA files, file names made to forge finding lines,
             sources and notebooks that cannot be read.

Every input is checked for the properties in `input_problems` and, in batches, for the same
findings with one and two processes and with and without the cache; every tree for those in
`tree_problems`. A failing input is saved under --save (the input and a .problems file; a tree's
.problems file and a .planted file listing its hostile entries); the same --seed gives the same
inputs (hypothesis draws the generated programs from the seed too), and tree N of a seed is
rebuilt alone with `hostile_tree(directory, random.Random(f"repository-{seed}-{N}"))`.
"""

from __future__ import annotations

import argparse
import io
import json
import keyword
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tokenize
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import libcst as cst

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from torchlint.config import UNSUPPRESSIBLE, Options, resolve_settings  # noqa: E402
from torchlint.engine import check_file, check_files  # noqa: E402
from torchlint.fix import fix_file  # noqa: E402
from torchlint.output import OutputContext, render  # noqa: E402
from torchlint.output.text import shown_filename  # noqa: E402
from torchlint.sources import LINE_BREAK, UnreadableFile, decode_source, source_rows  # noqa: E402

SARIF_SCHEMA = REPO / "tests" / "data" / "sarif" / "sarif-schema-2.1.0.json"
KINDS = ("generated", "mutated", "notebook", "repository")
# An input that takes more CPU time than this (check, two fixes, outputs) is reported as slow.
SLOW_SECONDS = 20.0
# Inputs per batch for the -j 1 / -j 2 / cache comparison.
BATCH = 24
# With --verbose, a progress line after this many inputs of a kind.
PROGRESS_EVERY = 250

TORCH_NAMES = (
    "torch", "nn", "F", "view", "item", "optimizer", "step", "backward", "zero_grad", "loss", "model",
    "permute", "softmax", "log", "cuda", "to", "Tensor", "no_grad", "numpy", "detach", "eval", "train",
    "scheduler", "forward", "requires_grad", "grad", "data", "device", "cpu", "load", "dim",
)
HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
TORCH_SNIPPETS = (
    "x = torch.Tensor(3)\n",
    "y = x.permute(0, 2, 1).view(-1)\n",
    "p = F.softmax(x).log()\n",
    "for batch in loader:\n    loss = model(batch)\n    loss.backward()\n    optimizer.step()\n",
    "for i in range(10):\n    optimizer.zero_grad()\n    out = model(x)\n    total += out.sum()\n    out.backward()\n"
    "    optimizer.step()\n    print(out.item())\n",
    "state = torch.load('m.pt')\n",
    "with torch.cuda.amp.autocast():\n    y = model.forward(x)\n",
    "z = x.cuda() + torch.zeros(3)\n",
    "a = x.numpy()\n",
    "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.layers = [nn.Linear(2, 2)]\n"
    "    def forward(self, x):\n        return nn.ReLU()(x)\n",
    "t = torch.tensor([1, 2], requires_grad=True)\n",
    "model.eval()\nout = model(x)  # noqa: TL007\n",
    "w = torch.randn(3, device='cuda')  # noqa\n",
    "q = torch.log(torch.exp(x).sum(dim=1))\n",
    "x.to('cuda')\n",
)
MAGIC_LINES = (
    "%matplotlib inline", "!pip install torch", "%load_ext autoreload", "%autoreload 2", "files = !ls",
    "?torch.zeros", "torch.zeros??", "%time y = x.view(-1)", "  %timeit torch.zeros(3)", "%%",
)
CELL_MAGICS = ("%%time\n", "%%bash\nls -l\n", "%%capture\n", "%%writefile a.py\n")


# Properties of one input ------------------------------------------------------------------


def _comment_rows(text: str) -> dict[int, list[str]] | None:
    """The comments on each row (tokenize's view), None when the text does not tokenize. Rows
    end where Python ends them, at a lone `\r` too (universal newlines), as torchlint counts them."""
    rows: dict[int, list[str]] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(text, newline=None).readline):
            if token.type == tokenize.COMMENT:
                rows.setdefault(token.start[0], []).append(token.string)
    except (tokenize.TokenError, SyntaxError, ValueError):
        return None
    return rows


_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Za-z]+\d+(?:[\s,]+[A-Za-z]+\d+)*))?", re.I)


def _suppresses(comment: str, code: str) -> bool:
    for match in _NOQA.finditer(comment):
        codes = match.group("codes")
        if codes is None or code in {part.upper() for part in re.split(r"[\s,]+", codes) if part}:
            return True
    return False


def _notebook_cells(text: str) -> list[str | None] | None:
    """The text of each cell of a notebook (None for a cell whose text cannot be told)."""
    try:
        cells = json.loads(text)["cells"]
        texts = []
        for cell in cells:
            source = cell.get("source", "") if isinstance(cell, dict) else None
            if isinstance(source, list) and all(isinstance(part, str) for part in source):
                texts.append("".join(source))
            else:
                texts.append(source if isinstance(source, str) else None)
        return texts
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def _location_problems(diagnostics, text: str, notebook: bool) -> list[str]:
    problems = []
    cells = _notebook_cells(text) if notebook else None
    comments_by_text: dict[int, dict | None] = {}
    for d in diagnostics:
        if notebook:
            if d.code in UNSUPPRESSIBLE and d.cell is None:
                continue
            if cells is None or d.cell is None or not 0 < d.cell <= len(cells):
                problems.append(f"location: {d.code} in cell {d.cell} of a notebook of "
                                f"{len(cells) if cells else 0} cells")
                continue
            body = cells[d.cell - 1]
            if body is None:
                continue
        else:
            body = text
        rows = source_rows(body)
        for what, location in (("start", d.location), ("end", d.end_location)):
            if not 0 < location.row <= len(rows) or not 0 < location.column <= len(rows[location.row - 1]) + 1:
                problems.append(f"location: {d.code} {what} {location.row}:{location.column} outside the "
                                f"{'cell' if notebook else 'file'} ({len(rows)} rows)")
        if d.end_location < d.location:
            problems.append(f"location: {d.code} ends before it starts")
        if d.code in UNSUPPRESSIBLE:
            continue
        key = id(body)
        if key not in comments_by_text:
            comments_by_text[key] = _comment_rows(body)
        comments = comments_by_text[key]
        if comments and any(_suppresses(c, d.code) for c in comments.get(d.location.row, ())):
            problems.append(f"noqa: {d.code} reported at {d.location.row}:{d.location.column} under a matching noqa")
    return problems


class _SarifValidator:
    """Validates SARIF logs against the schema, each result on its own, remembering the shapes of
    the valid ones: jsonschema takes longer than the rest of a check, and results repeat shapes.

    A shape is a result with each string that the schema cannot tell apart (it matches none of
    the schema's patterns and enum values) made one string, and each integer above 1 made 2 (101
    above 100): the schema's other constraints on strings and numbers are formats (not checked)
    and the bounds -1, 0, 1 and 100, so a shape is valid exactly when its result is. The log
    around the results (its runs with their results taken out) is validated the same way."""

    _PLAIN = "\x00"

    def __init__(self) -> None:
        import jsonschema

        schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
        items = list(_schema_items(schema))
        bounds = {value for key, value in items if key in ("minimum", "maximum") and isinstance(value, (int, float))}
        assert bounds <= {-1, 0, 1, 100}, f"the shapes keep the bounds -1, 0, 1 and 100 only, not {bounds}"
        patterns = {value for key, value in items if key == "pattern" and isinstance(value, str)}
        self._pattern = re.compile("|".join(f"(?:{pattern})" for pattern in patterns))
        self._enums = {item for key, value in items if key == "enum" and isinstance(value, list) for item in value}
        self._telling: dict[str, bool] = {}  # the strings met so far: is each told apart?
        self._log = jsonschema.Draft4Validator(schema)
        # In draft 4 a "$ref" replaces its siblings: this validates one result.
        self._result = jsonschema.Draft4Validator({**schema, "$ref": "#/definitions/result"})
        self._valid_shapes: set[tuple[str, str]] = set()

    def _shape(self, value):
        if isinstance(value, dict):
            return {key: self._shape(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self._shape(item) for item in value]
        if isinstance(value, str):
            telling = self._telling.get(value)
            if telling is None:
                telling = self._telling[value] = value in self._enums or self._pattern.search(value) is not None
            return value if telling else self._PLAIN
        if isinstance(value, int) and not isinstance(value, bool) and value > 1:
            return 2 if value <= 100 else 101
        return value

    def _error(self, what: str, instance) -> str | None:
        key = (what, json.dumps(self._shape(instance), sort_keys=True))
        if key in self._valid_shapes:
            return None
        validator = self._result if what == "result" else self._log
        errors = sorted(validator.iter_errors(instance), key=str)
        if errors:
            return errors[0].message
        self._valid_shapes.add(key)
        return None

    def first_error(self, log) -> str | None:
        """The first problem of `log` against the schema, None when it is valid."""
        runs = log.get("runs") if isinstance(log, dict) else None
        if not isinstance(runs, list) or not all(
                isinstance(run, dict) and isinstance(run.get("results", []), list) for run in runs):
            return self._error("log", log)
        results = []
        for run in runs:
            if "results" in run:
                results += run["results"]
                run["results"] = []
        return self._error("log", log) or next(filter(None, (self._error("result", r) for r in results)), None)


def _schema_items(schema):
    """Every (keyword, value) pair anywhere in a JSON schema."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            yield key, value
            yield from _schema_items(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _schema_items(value)


class _Outputs:
    """Renders findings in the machine-readable formats and checks that they are valid."""

    def __init__(self, settings) -> None:
        self._sarif = _SarifValidator()
        self._context = OutputContext(color=False, rules=settings.rules)

    def problems(self, diagnostics) -> list[str]:
        problems = []
        try:
            records = json.loads(render("json", diagnostics, self._context))
            if len(records) != len(diagnostics):
                problems.append(f"json: {len(records)} records for {len(diagnostics)} findings")
        except ValueError as error:
            problems.append(f"json: not valid JSON: {error}")
        try:
            error = self._sarif.first_error(json.loads(render("sarif", diagnostics, self._context)))
            if error is not None:
                problems.append(f"sarif: not valid against the schema: {error[:200]}")
        except ValueError as error:
            problems.append(f"sarif: not valid JSON: {error}")
        for line in render("github", diagnostics, self._context).splitlines():
            if not line.startswith("::"):
                problems.append(f"github: not a workflow command: {line[:80]!r}")
        render("full", diagnostics, self._context)
        render("concise", diagnostics, self._context)
        return problems


def _compiles(text: str) -> bool:
    try:
        compile(text, "<fuzz>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _fix_problems(path: Path, original: bytes, settings) -> list[str]:
    """`--fix --unsafe-fixes` writes code that parses and compiles; a second fix changes nothing."""
    first = fix_file(str(path), settings, path.name, unsafe=True)
    if first.internal_error:
        return [f"internal error in fix: {first.internal_error}"]
    if not first.written:
        return []
    try:
        before, after = decode_source(original).text, decode_source(path.read_bytes()).text
    except UnreadableFile as error:
        return [f"fix: the fixed file cannot be read back: {error}"]
    problems = []
    try:
        cst.parse_module(after)
    except (cst.ParserSyntaxError, RecursionError) as error:
        problems.append(f"fix: the fixed file does not parse: {str(error).splitlines()[0]}")
    if _compiles(before) and not _compiles(after):
        problems.append("fix: the fixed file does not compile")
    unsettled = any("did not settle" in problem for problem in first.problems)
    second = fix_file(str(path), settings, path.name, unsafe=True)
    if second.internal_error:
        problems.append(f"internal error in the second fix: {second.internal_error}")
    elif second.written and not unsettled:
        problems.append(f"fix: a second --fix changed the file again ({dict(second.fixed)})")
    return problems


def input_problems(path: Path, settings, outputs: _Outputs) -> list[str]:
    """Every property of one input file that does not hold (empty when all hold)."""
    data = path.read_bytes()
    notebook = path.suffix == ".ipynb"
    try:
        diagnostics = check_file(str(path), settings, path.name)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as error:  # noqa: BLE001 - any failure is the input's, a native panic too
        return [f"internal error in check: {_describe(error)}"]
    try:
        text = decode_source(data).text
    except UnreadableFile:
        text = None
    problems = []
    if text is not None:
        problems += _location_problems(diagnostics, text, notebook)
    problems += outputs.problems(diagnostics)
    try:
        problems += _fix_problems(path, data, settings)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as error:  # noqa: BLE001 - any failure is the input's, a native panic too
        problems.append(f"internal error in fix: {_describe(error)}")
    finally:
        path.write_bytes(data)
    return problems


def _cpu_seconds() -> float:
    """CPU time of this process and of the processes it has waited for (a torchlint run, and the
    workers it waited for)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def _describe(error: BaseException) -> str:
    frames = traceback.extract_tb(error.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    return f"{type(error).__name__}: {str(error)[:200]}{where}"


def batch_problems(paths: list[Path], settings, cache_directory: Path) -> list[tuple[Path | None, str]]:
    """The same findings with one and two processes, and with the cache cold and warm: three runs
    that each differ from another in one of the two (one process or two, the cache or none)."""
    named = [(str(path), path.name) for path in paths]
    runs = {}
    os.environ["TORCHLINT_CACHE_DIR"] = str(cache_directory)
    for label, jobs, use_cache in (("-j 1 cache cold", 1, True), ("-j 2", 2, False), ("-j 2 cache warm", 2, True)):
        errors: list[str] = []
        runs[label] = check_files(named, settings, jobs, errors, use_cache=use_cache)
        if errors:
            return [(None, f"internal error with {label}: {error}") for error in errors]
    problems = []
    reference = runs["-j 2"]
    for label, found in runs.items():
        if found != reference:
            differing = {d.filename for d in set(found) ^ set(reference)} or {"(order)"}
            problems += [(path, f"batch: {label} differs from -j 2 for {path.name}")
                         for path in paths if path.name in differing]
            if "(order)" in differing:
                problems.append((None, f"batch: {label} gives the findings in another order"))
    return problems


# Inputs -----------------------------------------------------------------------------------


def _torch_flavoured(program: str, rng: random.Random) -> str:
    """Some of the program's names become torch's; torch imports first, torch snippets after."""
    pieces, position = [], 0
    rows = [0, *(match.end() for match in LINE_BREAK.finditer(program))]
    try:
        for token in tokenize.generate_tokens(io.StringIO(program).readline):
            if (token.type == tokenize.NAME and not keyword.iskeyword(token.string)
                    and not keyword.issoftkeyword(token.string) and rng.random() < 0.3):
                start = rows[token.start[0] - 1] + token.start[1]
                pieces += [program[position:start], rng.choice(TORCH_NAMES)]
                position = start + len(token.string)
    except (tokenize.TokenError, SyntaxError, IndexError):
        pass
    pieces.append(program[position:])
    tail = "".join(rng.choice(TORCH_SNIPPETS) for _ in range(rng.randint(0, 3)))
    separator = "" if program.endswith(("\n", "\r")) or not program else "\n"
    return HEADER + "".join(pieces) + separator + tail


def _mutate_lines(lines: list[bytes], rng: random.Random) -> list[bytes]:
    if not lines:
        return [b"x = (\n"]
    index = rng.randrange(len(lines))
    line = lines[index]
    choice = rng.randrange(16)
    if choice == 0:
        del lines[index]
    elif choice == 1:
        lines.insert(index, line)
    elif choice == 2:
        lines[index] = rng.choice((b" ", b"    ", b"\t", b"  \t")) + line
    elif choice == 3:
        lines[index] = line.lstrip(b" \t") if rng.random() < 0.5 else line[: rng.randint(0, 3)] + line.lstrip()
    elif choice == 4:
        tokens = re.findall(rb"\w+|\s+|\S", line)
        if len(tokens) > 1:
            i = rng.randrange(len(tokens) - 1)
            tokens[i], tokens[i + 1] = tokens[i + 1], tokens[i]
            lines[index] = b"".join(tokens)
    elif choice == 5:
        brackets = [m.start() for m in re.finditer(rb"[()\[\]{}]", line)]
        if brackets:
            at = rng.choice(brackets)
            lines[index] = line[:at] + line[at + 1:]
    elif choice == 6:
        at = rng.randint(0, len(line))
        lines[index] = line[:at] + rng.choice((b"\t", b"\x0c", b"\r", b"\x0b", b"\x1c", b"\xc2\x85",
                                              b"\xe2\x80\xa8", b"\\")) + line[at:]
    elif choice == 7:
        at = rng.randint(0, len(line))
        lines[index] = line[:at] + rng.choice((b"\xff", b"\x80", b"\xc3", b"\xed\xa0\x80")) + line[at:]
    elif choice == 8:
        literal = rng.choice((b"9" * 50_000, b"'" + b"a" * 200_000 + b"'", b"[" + b"0, " * 20_000 + b"]",
                              b"(" * 150 + b"1" + b")" * 150, b"+".join([b"x"] * 300)))
        lines[index] = re.sub(rb"\b\d+\b|'[^']*'", lambda _: literal, line, count=1) if rng.random() < 0.5 \
            else line.rstrip(b"\r\n") + b" + " + literal + b"\n"
    elif choice == 9:
        lines.insert(index, rng.choice((b"# -*- coding: latin-1 -*-\n", b"# coding: utf-8\n", b"\xef\xbb\xbf",
                                        b"# torchlint: noqa\n", b"# torchlint: noqa: TL102\n")))
    elif choice == 10:
        lines[index] = line.replace(b"\n", b"\r\n") if rng.random() < 0.5 else line.replace(b"\n", b"\r")
    elif choice == 11:
        del lines[index:]
    elif choice == 12:
        lines[index] = line.rstrip(b"\r\n") + rng.choice((b"  # noqa\n", b"  # noqa: TL102\n", b"# noqa:TL301,TL101\n",
                                                          b"  # NOQA: tl201\n", b'  "# noqa"\n'))
    elif choice == 13:
        other = rng.randrange(len(lines))
        lines[index], lines[other] = lines[other], lines[index]
    elif choice == 14:
        at = rng.randint(0, len(line))
        lines[index] = line[:at] + rng.choice((b'"""', b"'", b"f'{", b"#", b":", b"\\\n", b"lambda: ", b"async ",
                                              b"await ", b"match x:\n case 1:\n  pass\n")) + line[at:]
    else:
        lines.insert(index, rng.choice(TORCH_SNIPPETS).encode())
    return lines


def mutated_source(data: bytes, rng: random.Random) -> bytes:
    lines = data.splitlines(keepends=True)
    for _ in range(rng.randint(1, 4)):
        lines = _mutate_lines(lines, rng)
    result = b"".join(lines)
    if rng.random() < 0.1:
        result = result.rstrip(b"\r\n")
    return result


def _with_noqa_on_findings(data: bytes, diagnostics, rng: random.Random) -> bytes | None:
    """The input with `# noqa` comments appended to the rows of some of its findings."""
    rows = {d.location.row: d.code for d in diagnostics if d.code not in UNSUPPRESSIBLE and d.cell is None}
    if not rows:
        return None
    lines = data.splitlines(keepends=True)
    for row in rng.sample(sorted(rows), k=min(len(rows), rng.randint(1, 3))):
        if row <= len(lines):
            line = lines[row - 1]
            body = line.rstrip(b"\r\n")
            comment = rng.choice((b"  # noqa", f"  # noqa: {rows[row]}".encode(), b"  # noqa: TL999"))
            lines[row - 1] = body + comment + line[len(body):]
    return b"".join(lines)


def _cell(rng: random.Random, snippets: list[str]) -> object:
    code = rng.choice(snippets)
    choice = rng.randrange(14)
    lines = code.splitlines(keepends=True)
    if choice == 0:
        return {"cell_type": "code", "metadata": {}, "source": [], "outputs": []}
    if choice == 1:
        return {"cell_type": "code", "metadata": {}, "source": "\n".join(rng.sample(MAGIC_LINES, 3))}
    if choice == 2:
        return {"cell_type": "code", "metadata": {}, "source": code}
    if choice == 3:
        return {"cell_type": "code", "source": rng.choice(CELL_MAGICS) + code}
    if choice == 4:
        return {"cell_type": "code", "metadata": {}}
    if choice == 5:
        return {"source": lines}
    if choice == 6:
        return {"cell_type": rng.choice(("markdown", "raw")), "metadata": {}, "source": lines}
    if choice == 7:
        return rng.choice(("code", 3, None, [], ["x = 1"]))
    if choice == 8:
        return {"cell_type": "code", "source": [line.rstrip("\n") for line in lines]}
    if choice == 9:
        return {"cell_type": "code", "source": [rng.choice(MAGIC_LINES) + "\n", *lines]}
    if choice == 10:
        return {"cell_type": "code", "source": code.replace("\n", "\r\n")}
    if choice == 11:
        return {"cell_type": "code", "source": [*lines, rng.choice((3, None, ["x"]))]}
    if choice == 12:
        return {"cell_type": "code", "source": rng.choice(("\x0c", "\t", "\\", "    x = 1\n", "\u2028x = 1", "x = (\n"))}
    return {"cell_type": "code", "metadata": {}, "source": lines, "outputs": [], "execution_count": 1}


def notebook_document(rng: random.Random, snippets: list[str]) -> bytes:
    cells = [_cell(rng, snippets) for _ in range(rng.randint(0, 12))]
    document: object = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    odd = rng.random()
    if odd < 0.03:
        document = {"worksheets": [{"cells": cells}], "nbformat": 3}
    elif odd < 0.05:
        document = cells
    elif odd < 0.07:
        document = {"cells": {"0": cells}}
    elif odd < 0.08:
        document = {"cells": "import torch\n"}
    return json.dumps(document, indent=rng.choice((None, 1))).encode()


def source_pool(directories: list[Path], limit: int = 30_000) -> list[Path]:
    pool = []
    for directory in directories:
        pool += [path for path in sorted(directory.rglob("*.py")) if path.stat().st_size <= limit]
    return pool


# Hostile repositories ---------------------------------------------------------------------

# Every ordinary file of a hostile tree holds this pitfall, whatever else it holds: its finding
# must be reported, however hostile the entries beside the file.
PITFALL = "x = torch.Tensor(3)\n"
PITFALL_CODE = "TL102"
# Seconds one `torchlint check` of a hostile tree may take before it counts as a hang (a small
# tree takes a few; a file that hangs its worker is cut at 4 x 30 s of wall clock).
TREE_TIMEOUT = 180
# The address space of a `torchlint check` of a tree: a read of /dev/zero that ran away would
# fill the memory of the machine, not only end the run.
TREE_MEMORY = 4 << 30
# A finding's first line in the full and concise formats, as a CI log parser would read it,
# having split the log where a text file's lines end (a source line shown with a form feed is
# one line, as it is to Python).
FINDING_LINE = re.compile(r"^(.+?):(?:cell \d+:)?(\d+):(\d+): (TL\d{3})")
LOG_LINE_BREAK = re.compile(r"\r\n?|\n")
# A line of the full format's source frame: the file's own text after its row number and a bar
# (which only a parser that ignored that prefix could read as a finding), or the gutter.
CODE_FRAME_LINE = re.compile(r"^(?:\d+| *) \|")
# Names of ordinary files, made to forge a finding line or to break the encoding of the output
# (Latin-1, a UTF-8 sequence cut short): each must be reported under its own, escaped, name.
ODD_NAMES = (
    "a\nforged.py:9:9: TL999 planted.py", "b.py:12:3: TL999 planted.py", "carriage\rreturn.py",
    "\x1b[31mred.py", "tab\tname.py", "-n.py", " leading space.py", "line\u2028separator.py", "ümlaut.py",
    os.fsdecode(b"latin\xe9.py"), os.fsdecode(b"cut\xe2\x82.py"), "m" * 250 + ".py",
)
# pyproject.toml files that are not valid configuration, or only just are.
BAD_PYPROJECTS = (
    "[tool]\ntorchlint = 5\n", "tool = 5\n", "[tool.torchlint]\nselect = 5\n", "[tool.torchlint]\nunknown-key = 1\n",
    "[tool.torchlint]\ntarget-torch-version = 'x.y'\n", "[project]\nname = 'x'\ndependencies = 5\n",
    "[project]\nname = 'x'\ndependencies = [5, {a = 1}, 'torch>=', 'torch>=2.0; python_version<']\n",
    "[project]\nname = 'x'\noptional-dependencies = 5\n", "[project.optional-dependencies]\ncuda = 'torch'\n",
    "[tool.poetry.dependencies]\ntorch = 5\n", "[tool.poetry]\ndependencies = ['torch']\n",
    "[tool.pdm]\ndev-dependencies = 5\n", "x = 1\nx = 2\n", "[project\n", "\ufeff[project]\nname = 'x'\n",
)
# Sources that cannot be read, parsed, or trusted at their rows: each one TL901 or TL902.
ODD_SOURCES = (
    b"x = '\xff'\n", b"import torch\x00\n", b"import torch\rx = torch.Tensor(3)\r", b"# coding: rot13\nk = 1\n",
    b"# coding: utf-16\nx = 1\n", b"\xef\xbb\xbf# coding: latin-1\nx = 1\n", b"\xff\xfe" + "x = 1\n".encode("utf-16-le"),
    b"import torch\nx = torch.Tensor(3)\n\\\n", b"x = " + b"(" * 5000 + b"\n", b"# padding\n" * 450_000,
    b"import torch\n\x0cx = torch.Tensor(3)\x0cb.py:1:1: TL999 forged\n",
)
BROKEN_NOTEBOOKS = (
    b"not json", b"{", b"[" * 100_000, b"\xff\xfe{}", b"", b'{"cells": 5}', b"null", b'{"cells": [{"source": 5}]}',
    b'{"cells": [{"cell_type": "code", "source": ["import torch\\n", 3]}]}',
)
# .gitignore patterns too costly to match, or malformed; none matches a file of the tree.
BAD_IGNORE_PATTERNS = (
    "*" * 200 + "generated.txt", "*a" * 12 + "b", "x" * 2000, "[", "\\", "!", "**/**/**/**/x", "a/**/b/**/c/**/d",
    "\x00", "\udcff", "#" + "*" * 5000,
)


@dataclass
class HostileTree:
    """A project tree built to break the walk, the reads or the output of `torchlint check`."""

    root: Path
    names: set[str] = field(default_factory=set)  # every entry made (relative): a finding may name only these
    pitfalls: list[str] = field(default_factory=list)  # ordinary files: each must get PITFALL_CODE
    planted: list[str] = field(default_factory=list)  # the hostile entries, to tell what a failing tree held
    config_planted: bool = False  # a pyproject.toml was planted that may make the run a usage error

    def make(self, path: Path, what: str, maker: Callable[[Path], object]) -> bool:
        """Make one entry unless its name is taken (an earlier entry drew it); True when made.
        `what` names a hostile entry, and is empty for an ordinary file."""
        if os.path.lexists(path):
            return False
        maker(path)
        relative = str(path.relative_to(self.root))
        self.names.add(relative)
        if what:
            self.planted.append(f"{what}: {relative!r}")
        return True

    def ordinary(self, path: Path, rng: random.Random) -> None:
        """A file with the pitfall among torch snippets: a module, or a notebook of one cell."""
        source = HEADER + "".join(rng.sample(TORCH_SNIPPETS, rng.randint(0, 3))) + PITFALL
        if path.suffix == ".ipynb":
            cell = {"cell_type": "code", "metadata": {}, "source": source, "outputs": [], "execution_count": None}
            data = json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()
        else:
            data = source.encode()
        if self.make(path, "", lambda made: made.write_bytes(data)):
            self.pitfalls.append(str(path.relative_to(self.root)))


def _write(data: bytes) -> Callable[[Path], object]:
    return lambda path: path.write_bytes(data)


def _link_to(target: str) -> Callable[[Path], object]:
    return lambda path: os.symlink(target, path)


def _plant_device_link(tree: HostileTree, directory: Path, rng: random.Random) -> None:
    device = rng.choice(("/dev/zero", "/dev/urandom"))
    name = rng.choice(("zeros.py", "noise.ipynb", "stub.pyi", "pyproject.toml", "requirements.txt", ".gitignore",
                       "PKG-INFO"))
    tree.make(directory / name, f"link to {device}", _link_to(device))


def _plant_fifo(tree: HostileTree, directory: Path, rng: random.Random) -> None:
    name = rng.choice(("pipe.py", "pipe.ipynb", "pyproject.toml", "requirements.txt", ".gitignore", "PKG-INFO"))
    if tree.make(directory / name, "FIFO", os.mkfifo) and rng.random() < 0.5:
        tree.make(directory / "to_pipe.py", "link to a FIFO", _link_to(name))


def _plant_loop_link(tree: HostileTree, directory: Path, rng: random.Random) -> None:
    target = rng.choice(("..", ".", str(tree.root)))
    tree.make(directory / rng.choice(("loop", "loop.py", "up.ipynb")), f"link to {target}", _link_to(target))


def _plant_dangling_link(tree: HostileTree, directory: Path, rng: random.Random) -> None:
    name = rng.choice(("gone.py", "gone.ipynb", "self.py", ".gitignore", "pyproject.toml"))
    target = name if name == "self.py" else "missing/nowhere"  # a link to itself cannot be resolved (ELOOP)
    tree.make(directory / name, f"dangling link to {target}", _link_to(target))


def _plant_deep_nesting(tree: HostileTree, directory: Path, rng: random.Random) -> None:
    """Hundreds of nested directories, an ordinary file at the bottom. Made one level at a time:
    mkdir(parents=True) recurses."""
    levels = rng.randint(100, 600)
    if not tree.make(directory / "nest", f"{levels} nested directories", Path.mkdir):
        return
    bottom = directory / "nest"
    for _ in range(levels - 1):
        bottom = bottom / "d"
        bottom.mkdir()
    tree.ordinary(bottom / "deep.py", rng)


def _plant_huge_auxiliary(tree: HostileTree, directory: Path, rng: random.Random) -> None:
    """A configuration, requirements, ignore or metadata file of several MB, whose content, if it
    were read, would change the findings (an ignore file hides every module)."""
    name, line = rng.choice((
        ("pyproject.toml", b"# padding\n"), ("requirements.txt", b"torch>=9.0\n"), (".gitignore", b"*.py\n"),
        ("pkg-1.0.dist-info/METADATA", b"Requires-Dist: torch>=9.0\n"), ("PKG-INFO", b"Requires-Dist: torch>=9.0\n"),
    ))
    path = directory / name
    path.parent.mkdir(exist_ok=True)
    size = rng.randint(1_100_000, 5_000_000)
    if tree.make(path, f"{size / 1e6:.1f} MB", _write(line * (size // len(line)))):
        tree.config_planted |= name == "pyproject.toml"


def _plant_bad_pyproject(tree: HostileTree, directory: Path, rng: random.Random) -> None:
    depth = rng.choice((10, 400, 5000))
    text = rng.choice((*BAD_PYPROJECTS, "[project]\nname = 'x'\nx = " + "[" * depth + "]" * depth + "\n"))
    data = text.encode() if rng.random() < 0.9 else text.encode() + b"# \xff\n"
    if tree.make(directory / "pyproject.toml", f"pyproject.toml {data[:40]!r}", _write(data)):
        tree.config_planted = True


def _plant_odd_name(tree: HostileTree, directory: Path, rng: random.Random) -> None:
    tree.ordinary(directory / rng.choice(ODD_NAMES), rng)


def _plant_odd_source(tree: HostileTree, directory: Path, rng: random.Random) -> None:
    data = rng.choice(ODD_SOURCES)
    tree.make(directory / f"odd_{rng.randrange(100)}.py", f"source {data[:30]!r}", _write(data))


def _plant_broken_notebook(tree: HostileTree, directory: Path, rng: random.Random) -> None:
    data = rng.choice(BROKEN_NOTEBOOKS)
    tree.make(directory / f"broken_{rng.randrange(100)}.ipynb", f"notebook {data[:30]!r}", _write(data))


def _plant_bad_gitignore(tree: HostileTree, directory: Path, rng: random.Random) -> None:
    patterns = rng.sample(BAD_IGNORE_PATTERNS, rng.randint(1, 4))
    data = rng.choice(("\n", "\r\n")).join(patterns).encode("utf-8", "surrogateescape")
    tree.make(directory / ".gitignore", f".gitignore {data[:40]!r}", _write(data))


PLANTERS = (
    _plant_device_link, _plant_fifo, _plant_loop_link, _plant_dangling_link, _plant_deep_nesting, _plant_huge_auxiliary,
    _plant_bad_pyproject, _plant_odd_name, _plant_odd_source, _plant_broken_notebook, _plant_bad_gitignore,
)


def hostile_tree(root: Path, rng: random.Random) -> HostileTree:
    """A small project of ordinary files with pitfalls, in a few packages, with hostile entries
    planted among them; the project's own pyproject.toml unless a planted entry took its name."""
    root.mkdir(parents=True)
    tree = HostileTree(root.resolve())  # as the CLI names the files it reports
    directories = [root]
    for number in range(rng.randint(0, 3)):
        directories.append(rng.choice(directories) / f"pkg{number}")
        directories[-1].mkdir()
    for _ in range(rng.randint(1, 6)):
        rng.choice(PLANTERS)(tree, rng.choice(directories), rng)
    for number in range(rng.randint(1, 4)):
        tree.ordinary(rng.choice(directories) / f"train_{number}{rng.choice(('.py', '.py', '.ipynb'))}", rng)
    tree.make(root / "pyproject.toml", "", _write(b"[project]\nname = 'hostile'\n"))
    return tree


def _limit_tree_memory() -> None:
    import resource  # not on Windows, where the trees' FIFOs and links cannot be made either

    resource.setrlimit(resource.RLIMIT_AS, (TREE_MEMORY, TREE_MEMORY))


def _run_check(root: Path, cache: Path, *arguments: str) -> subprocess.CompletedProcess | None:
    """`torchlint check` of the tree from its root, as CI runs it; None when it did not end in
    TREE_TIMEOUT (it and its workers are killed)."""
    environment = {**os.environ, "PYTHONPATH": str(REPO), "TORCHLINT_CACHE_DIR": str(cache)}
    command = [sys.executable, "-m", "torchlint", "check", "-j", "2", *arguments, "."]
    process = subprocess.Popen(command, cwd=root, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True, preexec_fn=_limit_tree_memory)
    try:
        stdout, stderr = process.communicate(timeout=TREE_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return None
    # A name that is not UTF-8 printed raw (it should be escaped) must not end the fuzzer.
    return subprocess.CompletedProcess(command, process.returncode, stdout.decode("utf-8", "surrogateescape"),
                                       stderr.decode("utf-8", "surrogateescape"))


def _planted_config_error(tree: HostileTree, result: subprocess.CompletedProcess) -> bool:
    """The run ended as it should on a planted pyproject.toml: a usage error naming one."""
    errors = [line for line in result.stderr.splitlines() if line.startswith("torchlint: error: ")]
    return tree.config_planted and result.returncode == 2 and len(errors) == 1 and "pyproject.toml" in errors[0]


def _ending_problems(tree: HostileTree, result: subprocess.CompletedProcess | None, label: str) -> list[str]:
    """A hang, a crash, a traceback, an internal error (a line of its own, exit status 2), or a
    usage error that no planted pyproject.toml explains."""
    if result is None:
        return [f"hang: {label} did not end in {TREE_TIMEOUT} s"]
    problems = [f"internal error with {label}: {line.removeprefix('torchlint: internal error: ')[:150]}"
                for line in result.stderr.splitlines() if line.startswith("torchlint: internal error: ")]
    if "Traceback (most recent call last)" in result.stderr:
        problems.append(f"traceback with {label}: {result.stderr.strip().splitlines()[-1][:150]}")
    if result.returncode not in (0, 1, 2):
        problems.append(f"exit status {result.returncode} with {label}")
    elif result.returncode == 2 and not problems and not _planted_config_error(tree, result):
        problems.append(f"usage error with {label}: {result.stderr.strip()[:150]}")
    return problems


def _text_problems(tree: HostileTree, stdout: str, label: str) -> list[str]:
    """No line a log parser would read as a finding names a file that is not in the tree, and
    every ordinary file has its finding."""
    names = {shown_filename(name): name for name in tree.names}
    problems, reported = [], set()
    for line in LOG_LINE_BREAK.split(stdout):
        match = None if CODE_FRAME_LINE.match(line) else FINDING_LINE.match(line)
        if match is None:
            continue
        name = names.get(match.group(1))
        if name is None:
            problems.append(f"forged: a {label} finding line names no file: {line[:100]!r}")
        elif match.group(4) == PITFALL_CODE:
            reported.add(name)
    return problems + [f"missing: no {PITFALL_CODE} for {name[:60]!r} in {label}"
                       for name in tree.pitfalls if name not in reported]


def _json_problems(tree: HostileTree, stdout: str) -> list[str]:
    try:
        records = json.loads(stdout)
    except ValueError as error:
        return [f"json: not valid JSON: {error}"]
    reported = {record["filename"] for record in records if record["code"] == PITFALL_CODE}
    problems = [f"json: a finding names no file: {record['filename'][-100:]!r}"
                for record in records if not os.path.lexists(record["filename"])]
    return problems + [f"missing: no {PITFALL_CODE} for {name[:60]!r} in json"
                       for name in tree.pitfalls if str(tree.root / name) not in reported]


def _sarif_problems(sarif: Path, json_stdout: str) -> list[str]:
    """The SARIF file written beside the text output (the cache cold) holds the findings of the
    JSON run (the cache warm)."""
    try:
        results = json.loads(sarif.read_text(encoding="utf-8"))["runs"][0]["results"]
        records = json.loads(json_stdout)
    except (OSError, ValueError, KeyError, IndexError) as error:
        return [f"sarif: not written, or not a log: {_describe(error)}"]
    if len(results) != len(records):
        return [f"sarif: {len(results)} results for {len(records)} findings in json"]
    return []


def tree_problems(tree: HostileTree, work: Path, text_format: str) -> list[str]:
    """Every property of `torchlint check` of a hostile tree that does not hold: run twice, in a
    text format writing SARIF too with the cache cold, then as JSON with the cache warm."""
    cache, sarif = work / "tree-cache", work / "tree.sarif"
    sarif.unlink(missing_ok=True)
    text = _run_check(tree.root, cache, "--output-format", text_format, "--sarif-file", str(sarif))
    records = _run_check(tree.root, cache, "--output-format", "json")
    shutil.rmtree(cache, ignore_errors=True)
    problems = _ending_problems(tree, text, text_format) + _ending_problems(tree, records, "json")
    if problems:
        return problems
    if text.returncode != records.returncode:
        return [f"exit status {text.returncode} with {text_format} but {records.returncode} with json"]
    if _planted_config_error(tree, text):
        return []
    return _text_problems(tree, text.stdout, text_format) + _json_problems(tree, records.stdout) + \
        _sarif_problems(sarif, records.stdout)


# The run ----------------------------------------------------------------------------------


@dataclass
class KindReport:
    inputs: int = 0
    # CPU time of the checks in this process (the batch runs not counted); of a tree, the time
    # of the torchlint runs too.
    seconds: float = 0.0
    slowest: float = 0.0
    failures: Counter = field(default_factory=Counter)  # problem (first words) -> inputs


class Fuzzer:
    def __init__(self, work: Path, save: Path | None, seed: int, corpus: list[Path], verbose: bool) -> None:
        self.work = work
        (work / "pyproject.toml").write_text("[tool.torchlint]\nselect = ['TL']\n")
        self.settings = resolve_settings(Options(), cwd=work)
        self.outputs = _Outputs(self.settings)
        self.save = save
        self.seed = seed
        self.verbose = verbose
        self.pool = source_pool([REPO / "tests" / "fixtures", REPO / "examples", *corpus])
        self.snippets = [*TORCH_SNIPPETS, *(path.read_text(encoding="utf-8", errors="replace")
                                            for path in source_pool([REPO / "tests" / "fixtures"], 4000))]
        self.reports = {kind: KindReport() for kind in KINDS}
        self._batch: list[tuple[str, Path]] = []

    def run_input(self, kind: str, name: str, data: bytes) -> None:
        started = time.process_time()
        path = self.work / "inputs" / name
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
        problems = input_problems(path, self.settings, self.outputs)
        self._account(kind, path, problems, time.process_time() - started)
        self._batch.append((kind, path))
        if len(self._batch) >= BATCH:
            self.flush()

    def run_tree(self, name: str, rng: random.Random) -> None:
        started = _cpu_seconds()
        tree = hostile_tree(self.work / "trees" / name, rng)
        try:
            problems = tree_problems(tree, self.work, rng.choice(("full", "concise")))
        finally:
            shutil.rmtree(tree.root)
        if problems and self.save:
            self.save.mkdir(parents=True, exist_ok=True)
            (self.save / f"{name}.planted").write_text("\n".join(tree.planted) + "\n", encoding="utf-8")
        self._account("repository", tree.root, problems, _cpu_seconds() - started)

    def _account(self, kind: str, path: Path, problems: list[str], elapsed: float) -> None:
        report = self.reports[kind]
        if elapsed > SLOW_SECONDS:
            problems.append(f"slow: {elapsed:.1f} s of CPU")
        report.inputs += 1
        report.seconds += elapsed
        report.slowest = max(report.slowest, elapsed)
        self._record(kind, path, problems)
        if self.verbose and report.inputs % PROGRESS_EVERY == 0:
            # So that a run cut short (killed, out of disk) still tells how far it got.
            print(f"{kind}: {report.inputs} inputs, {sum(report.failures.values())} failing, "
                  f"{time.strftime('%H:%M:%S')}", file=sys.stderr, flush=True)

    def flush(self) -> None:
        batch, self._batch = self._batch, []
        if not batch:
            return
        cache = self.work / "cache"
        found = batch_problems([path for _, path in batch], self.settings, cache)
        shutil.rmtree(cache, ignore_errors=True)
        kinds = {path: kind for kind, path in batch}
        for path, problem in found:
            self._record(kinds.get(path, batch[0][0]), path or batch[0][1], [problem])
        for _, path in batch:
            path.unlink(missing_ok=True)

    def _record(self, kind: str, path: Path, problems: list[str]) -> None:
        if not problems:
            return
        report = self.reports[kind]
        for problem in dict.fromkeys(re.sub(r"\d+", "N", problem)[:90] for problem in problems):
            report.failures[problem] += 1
        if self.verbose:
            print(f"{kind} {path.name}: {'; '.join(problems)}", file=sys.stderr, flush=True)
        if self.save:
            self.save.mkdir(parents=True, exist_ok=True)
            if path.is_file():  # a tree is not copied: its FIFOs and device links would hang a copy
                shutil.copyfile(path, self.save / path.name)
            with open(self.save / f"{path.name}.problems", "a", encoding="utf-8") as stream:
                stream.write("\n".join(problems) + "\n")

    # One generator per kind: each stops at `count` inputs or when `deadline` has passed.

    def generated(self, count: int, deadline: float) -> None:
        import hypothesmith
        from hypothesis import HealthCheck, Phase, given, settings, strategies
        from hypothesis import seed as hypothesis_seed

        numbers = iter(range(count))
        spent = []

        # Hypothesis counts only the examples it did not reject: it is allowed more, and the run
        # stops itself after `count` inputs.
        @settings(max_examples=2 * count, database=None, deadline=None, phases=[Phase.generate],
                  suppress_health_check=list(HealthCheck))
        @hypothesis_seed(self.seed)
        @given(strategies.one_of(hypothesmith.from_grammar(), hypothesmith.from_node()), strategies.randoms())
        def one(program: str, rng: random.Random) -> None:
            # Drawn first: a draw from `rng` can overrun hypothesis's buffer, which drops the
            # example (2.7% of them); an input number is taken only for an input that runs.
            source = _torch_flavoured(program, rng)
            number = next(numbers, None)
            if number is None or time.monotonic() > deadline:
                spent.append(True)
                raise TimeoutError("the budget is spent")
            self.run_input("generated", f"generated_{self.seed}_{number}.py", source.encode("utf-8", "surrogatepass"))

        try:
            one()
        except Exception:
            # Stopping hypothesis early means raising; it then replays the example, and may
            # complain that the replay drew differently. Either way the budget ended the run.
            if not spent:
                raise

    def mutated(self, count: int, deadline: float) -> None:
        rng = random.Random(f"mutated-{self.seed}")
        for number in range(count):
            if time.monotonic() > deadline:
                return
            original = rng.choice(self.pool)
            data = mutated_source(original.read_bytes(), rng)
            name = f"mutated_{self.seed}_{number}_{original.stem}.py"
            self.run_input("mutated", name, data)
            if rng.random() < 0.3:
                path = self.work / "inputs" / "noqa_probe.py"
                path.write_bytes(data)
                try:
                    diagnostics = check_file(str(path), self.settings, path.name)
                except (KeyboardInterrupt, SystemExit):
                    raise
                except BaseException:  # noqa: BLE001 - already reported for the input itself
                    continue
                with_noqa = _with_noqa_on_findings(data, diagnostics, rng)
                if with_noqa is not None:
                    self.run_input("mutated", f"noqa_{self.seed}_{number}_{original.stem}.py", with_noqa)

    def notebooks(self, count: int, deadline: float) -> None:
        rng = random.Random(f"notebook-{self.seed}")
        for number in range(count):
            if time.monotonic() > deadline:
                return
            self.run_input("notebook", f"notebook_{self.seed}_{number}.ipynb", notebook_document(rng, self.snippets))

    def repositories(self, count: int, deadline: float) -> None:
        for number in range(count):
            if time.monotonic() > deadline:
                return
            # A generator per tree, so that a failing tree is rebuilt alone from its number.
            self.run_tree(f"repository_{self.seed}_{number}", random.Random(f"repository-{self.seed}-{number}"))


def fuzz(kinds: list[str], count: int, seconds: float, seed: int, corpus: list[Path], save: Path | None,
         verbose: bool = False) -> dict[str, KindReport]:
    """Run `count` inputs of each kind (or until `seconds` per kind are spent); the reports."""
    with tempfile.TemporaryDirectory(prefix="torchlint-fuzz-") as directory:
        fuzzer = Fuzzer(Path(directory), save, seed, corpus, verbose)
        generators = {"generated": fuzzer.generated, "mutated": fuzzer.mutated, "notebook": fuzzer.notebooks,
                      "repository": fuzzer.repositories}
        for kind in kinds:
            generators[kind](count, time.monotonic() + seconds)
            fuzzer.flush()
        return fuzzer.reports


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", choices=[*KINDS, "all"], default="all")
    parser.add_argument("--count", type=int, default=100, help="inputs per kind")
    parser.add_argument("--seconds", type=float, default=600, help="time budget per kind")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--corpus", type=Path, action="append", default=[],
                        help="a directory of Python modules to mutate (besides the test fixtures)")
    parser.add_argument("--save", type=Path, help="save failing inputs here")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help=f"print each failure as it is found, and the progress every {PROGRESS_EVERY} inputs")
    args = parser.parse_args(argv)
    kinds = list(KINDS) if args.kind == "all" else [args.kind]
    reports = fuzz(kinds, args.count, args.seconds, args.seed, args.corpus, args.save, args.verbose)
    failed = 0
    for kind, report in reports.items():
        if kind not in kinds:
            continue
        rate = report.inputs / report.seconds if report.seconds else 0.0
        print(f"{kind}: {report.inputs} inputs in {report.seconds:.0f} s of CPU ({rate:.1f}/s, slowest "
              f"{report.slowest:.1f} s), {sum(report.failures.values())} failing")
        for problem, inputs in report.failures.most_common():
            print(f"  {inputs:6}  {problem}")
        failed += sum(report.failures.values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

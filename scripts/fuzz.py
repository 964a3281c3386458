"""Fuzz the engine and the fixer with inputs nobody wrote by hand (issue #18).

    python scripts/fuzz.py --kind all --count 10000 --seconds 3600 --seed 1 --jobs 1 \\
        --corpus /work/corpus/src_timm --save fuzz-failures

Three kinds of input:
  generated  programs from hypothesmith (grammar- and libcst-based), with torch-flavoured names
             swapped in and torch snippets appended, so that rules fire and fixes run;
  mutated    real modules (the test fixtures, examples/ and any --corpus directory) mutated at
             the token level: lines deleted or duplicated, indentation changed, tokens swapped,
             a bracket dropped, a tab, form feed or carriage return inserted, a non-UTF-8 byte,
             a huge literal, `# noqa` comments added on the rows of findings;
  notebook   valid JSON notebooks with odd cells (empty, magics only, source as a string,
             missing keys, non-code cells holding code, cells that are not objects).

Every input is checked for the properties in `input_problems` and, in batches, for the same
findings with one and two processes and with and without the cache. A failing input is saved
under --save (the input and a .problems file); the same --seed gives the same inputs (hypothesis
draws the generated programs from the seed too).
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
import sys
import tempfile
import time
import tokenize
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from torchlint.config import UNSUPPRESSIBLE, Options, resolve_settings  # noqa: E402
from torchlint.engine import check_file, check_files  # noqa: E402
from torchlint.fix import fix_file  # noqa: E402
from torchlint.output import OutputContext, render  # noqa: E402
from torchlint.sources import LINE_BREAK, UnreadableFile, decode_source, source_rows  # noqa: E402

SARIF_SCHEMA = REPO / "tests" / "data" / "sarif" / "sarif-schema-2.1.0.json"
KINDS = ("generated", "mutated", "notebook")
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
    """The comments on each row (tokenize's view), None when the text does not tokenize."""
    rows: dict[int, list[str]] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
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


# The run ----------------------------------------------------------------------------------


@dataclass
class KindReport:
    inputs: int = 0
    seconds: float = 0.0  # CPU time of the checks in this process (the batch runs not counted)
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
        report = self.reports[kind]
        started = time.process_time()
        path = self.work / "inputs" / name
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
        problems = input_problems(path, self.settings, self.outputs)
        elapsed = time.process_time() - started
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
        self._batch.append((kind, path))
        if len(self._batch) >= BATCH:
            self.flush()

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


def fuzz(kinds: list[str], count: int, seconds: float, seed: int, corpus: list[Path], save: Path | None,
         verbose: bool = False) -> dict[str, KindReport]:
    """Run `count` inputs of each kind (or until `seconds` per kind are spent); the reports."""
    with tempfile.TemporaryDirectory(prefix="torchlint-fuzz-") as directory:
        fuzzer = Fuzzer(Path(directory), save, seed, corpus, verbose)
        generators = {"generated": fuzzer.generated, "mutated": fuzzer.mutated, "notebook": fuzzer.notebooks}
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

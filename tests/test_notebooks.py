"""Jupyter notebooks: IPython syntax, cells that do not parse, locations by cell in every format,
fixes written back into the JSON text with every other byte kept."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest

from tests.conftest import run_torchlint
from torchlint.config import Settings
from torchlint.fix import fix_file
from torchlint.diagnostics import Edit, Location
from torchlint.notebook import edit_cells, python_view, read_notebook
from torchlint.notebook.check import check_notebook
from torchlint.notebook.ipython import mask_cell
from torchlint.rules import all_rules

SETTINGS = Settings(rules=tuple(rule for rule in all_rules() if rule.default_enabled and not rule.runtime_only),
                    show_hints=True)
SCHEMA = Path(__file__).resolve().parent / "data" / "sarif" / "sarif-schema-2.1.0.json"
LEGACY = "x = torch.Tensor([3])"  # TL102
FIXED = "x = torch.tensor([3], dtype=torch.get_default_dtype())"  # its safe fix


def notebook(*sources: str, markdown_first: bool = True) -> dict:
    cells = [{"cell_type": "markdown", "metadata": {}, "source": ["# Title"]}] if markdown_first else []
    for source in sources:
        cells.append({
            "cell_type": "code", "execution_count": None, "metadata": {},
            "outputs": [{"name": "stdout", "output_type": "stream", "text": ["out\n"]}],
            "source": source.splitlines(keepends=True),
        })
    return {"cells": cells, "metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}


def nbformat_text(document: dict) -> str:
    """As Jupyter writes a notebook: indent 1, non-ASCII kept, a final newline."""
    return json.dumps(document, indent=1, ensure_ascii=False) + "\n"


def findings(*sources: str) -> list[tuple]:
    return [(d.code, d.cell, d.location.row, d.location.column)
            for d in check_notebook(nbformat_text(notebook(*sources)), "nb.ipynb", SETTINGS)]


# IPython syntax ---------------------------------------------------------------------------


@pytest.mark.parametrize("line", [
    "%matplotlib inline", "%timeit f(x)", "!pip install torch", "!!ls", "files = !ls *.py",
    "out = %sx ls", "x?", "np.zeros??", "??torch.nn", "?x", "/print 1", ",print a b", ";print a b",
    "%load_ext autoreload \\\n    more",
])
def test_ipython_lines_are_masked_and_yield_no_finding(line) -> None:
    assert findings("import torch\n" + line + "\n" + LEGACY) == [("TL102", 2, len(line.splitlines()) + 2, 5)]


def test_masks_keep_every_row_and_column() -> None:
    source = "import torch\nfiles = !ls -la\nfor f in files:\n    !echo $f\n%time y = 1\nx = 1"
    masked = mask_cell(source)
    assert [len(row) for row in masked.python.split("\n")] == [len(row) for row in source.split("\n")]
    assert masked.python == "import torch\nfiles = _______\nfor f in files:\n    ________\n___________\nx = 1"
    assert [(c.row, c.column, c.text) for c in masked.commands] == [(2, 9, "!ls -la"), (4, 5, "!echo $f"),
                                                                    (5, 1, "%time y = 1")]


def test_only_logical_line_starts_are_masked() -> None:
    source = 'x = (1\n     % 2)\ns = """\n!not a command\n"""\ny = 2 \\\n    % 3'
    assert mask_cell(source).python == source


def test_python_cell_magics_keep_their_body_and_others_are_masked_whole() -> None:
    assert findings("import torch", "%%time\n" + LEGACY, "%%bash\nx = torch.Tensor([3])") == [("TL102", 3, 2, 5)]
    assert mask_cell("%%writefile a.py\nimport os\n").python == "________________\n         \n"


# Cells that do not parse --------------------------------------------------------------------


def test_a_cell_that_does_not_parse_gets_its_own_tl901_and_the_others_are_checked() -> None:
    result = findings("import torch", "criterion = # TODO\n", LEGACY, "def f(:\n    pass")
    assert result == [("TL901", 3, 1, 13), ("TL102", 4, 1, 5), ("TL901", 5, 1, 7)]


def test_names_a_broken_cell_would_define_are_unknown() -> None:
    assert findings("import torch\nx = (", LEGACY) == [("TL901", 2, 2, 5)]


def test_findings_are_sorted_by_cell_then_row() -> None:
    result = findings("import torch\n\n\n\n" + LEGACY, LEGACY)
    assert [(cell, row) for _, cell, row, _ in result] == [(2, 5), (3, 1)]


# Output formats -------------------------------------------------------------------------------

CELLS = ("import torch\n\n\n\n" + LEGACY, "%matplotlib inline\n" + LEGACY)


@pytest.fixture
def project_notebook(project) -> Path:
    (project / "nb.ipynb").write_text(nbformat_text(notebook(*CELLS)))
    return project


def test_text_output_names_the_cell_and_shows_its_source(project_notebook) -> None:
    result = run_torchlint("check", "--show-hints", "nb.ipynb", "--no-color", cwd=project_notebook)
    blocks = result.stdout.split("\n\n")
    assert blocks[0].splitlines()[0].startswith("nb.ipynb:cell 2:5:5: TL102 [*] ")
    assert blocks[0].splitlines()[2:4] == ["5 | x = torch.Tensor([3])", "  |     ^^^^^^^^^^^^^^^^^ TL102"]
    assert blocks[1].splitlines()[0].startswith("nb.ipynb:cell 3:2:5: TL102 [*] ")
    assert blocks[1].splitlines()[2] == "2 | x = torch.Tensor([3])"


def _legacy_rows(project: Path) -> list[int]:
    """The rows of the JSON file that hold `LEGACY`."""
    return [number for number, line in enumerate((project / "nb.ipynb").read_text().splitlines(), 1) if LEGACY in line]


def test_github_names_the_cell_and_points_at_its_json_row(project_notebook) -> None:
    result = run_torchlint("check", "--show-hints", "nb.ipynb", "--output-format", "github", cwd=project_notebook)
    first, second = result.stdout.splitlines()
    rows = _legacy_rows(project_notebook)
    assert first.startswith(f"::notice title=torchlint (TL102) in cell 2,file=nb.ipynb,line={rows[0]},"
                            f"endLine={rows[0]}::TL102 ")
    assert first.endswith("(cell 2, row 5, column 5)")
    assert f"in cell 3,file=nb.ipynb,line={rows[1]}," in second and second.endswith("(cell 3, row 2, column 5)")


def test_sarif_carries_the_cell(project_notebook) -> None:
    result = run_torchlint("check", "--show-hints", "nb.ipynb", "--output-format", "sarif", cwd=project_notebook)
    log = json.loads(result.stdout)
    jsonschema.validate(log, json.loads(SCHEMA.read_text()))
    results = log["runs"][0]["results"]
    regions = [r["locations"][0]["physicalLocation"]["region"] for r in results]
    assert [region["properties"] for region in regions] == [
        {"cell": 2, "row": 5, "column": 5, "endRow": 5, "endColumn": 22},
        {"cell": 3, "row": 2, "column": 5, "endRow": 2, "endColumn": 22},
    ]
    assert [(region["startLine"], region["endLine"]) for region in regions] == [(row, row) for row in _legacy_rows(project_notebook)]
    assert results[0]["message"]["text"].endswith("(cell 2, row 5, column 5)")


def test_json_output_is_sorted_by_cell_with_cell_relative_fixes(project_notebook) -> None:
    result = run_torchlint("check", "--show-hints", "nb.ipynb", "--output-format", "json", cwd=project_notebook)
    found = json.loads(result.stdout)
    assert [(d["cell"], d["location"]["row"]) for d in found] == [(2, 5), (3, 2)]
    assert found[1]["fix"]["edits"] == [
        {"content": "torch.tensor([3], dtype=torch.get_default_dtype())", "location": {"row": 2, "column": 5},
         "end_location": {"row": 2, "column": 22}}
    ]


# Fixes -----------------------------------------------------------------------------------------


def _layouts() -> list[tuple[str, str]]:
    document = notebook("import torch\n" + LEGACY + "\ny = 1", "%matplotlib inline\n" + LEGACY + "  # é")
    one_string = json.loads(json.dumps(document))
    for cell in one_string["cells"]:
        cell["source"] = "".join(cell["source"])
    return [
        ("nbformat", nbformat_text(document)),
        ("indent 2, ASCII escapes, no final newline", json.dumps(document, indent=2)),
        ("one line", json.dumps(document)),
        ("sources as strings", json.dumps(one_string, indent=4)),
    ]


@pytest.mark.parametrize("name,text", _layouts(), ids=[name for name, _ in _layouts()])
def test_fix_changes_only_the_fixed_cell_sources(tmp_path, name, text) -> None:
    path = tmp_path / "nb.ipynb"
    path.write_bytes(text.encode())
    result = fix_file(str(path), SETTINGS, "nb.ipynb")
    written = path.read_bytes().decode()
    assert result.written and result.fixed == {"TL102": 2} and result.diagnostics == []
    assert written == text.replace(LEGACY, FIXED)
    assert json.loads(written)["cells"][1]["outputs"] == json.loads(text)["cells"][1]["outputs"]


def test_fix_keeps_a_byte_order_mark(tmp_path) -> None:
    path = tmp_path / "nb.ipynb"
    text = nbformat_text(notebook("import torch\n" + LEGACY))
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    fix_file(str(path), SETTINGS, "nb.ipynb")
    assert path.read_bytes() == b"\xef\xbb\xbf" + text.replace("torch.Tensor([3])", "torch.tensor([3], dtype=torch.get_default_dtype())").encode()


def test_diff_shows_the_changed_cells_and_writes_nothing(project_notebook) -> None:
    before = (project_notebook / "nb.ipynb").read_text()
    result = run_torchlint("check", "--show-hints", "nb.ipynb", "--diff", cwd=project_notebook)
    assert (project_notebook / "nb.ipynb").read_text() == before
    assert result.returncode == 1
    assert result.stdout == (
        "--- nb.ipynb:cell 2\n+++ nb.ipynb:cell 2\n@@ -2,4 +2,4 @@\n \n \n \n-x = torch.Tensor([3])\n+x = torch.tensor([3], dtype=torch.get_default_dtype())\n"
        "--- nb.ipynb:cell 3\n+++ nb.ipynb:cell 3\n@@ -1,2 +1,2 @@\n %matplotlib inline\n-x = torch.Tensor([3])\n"
        "+x = torch.tensor([3], dtype=torch.get_default_dtype())\n"
    )


def test_fix_leaves_cells_that_do_not_parse_and_their_finding(tmp_path) -> None:
    path = tmp_path / "nb.ipynb"
    text = nbformat_text(notebook("import torch", "lr = \n" + LEGACY, LEGACY))
    path.write_text(text)
    result = fix_file(str(path), SETTINGS, "nb.ipynb")
    assert [(d.code, d.cell) for d in result.diagnostics] == [("TL901", 3)]
    head, _, tail = text.rpartition(LEGACY)
    assert path.read_text() == head + FIXED + tail


def test_a_fix_never_touches_ipython_syntax_nor_leaves_its_cell() -> None:
    view = python_view(read_notebook(nbformat_text(notebook("x = 1\n!ls", "y = 2"))).cells)
    finding = check_notebook(nbformat_text(notebook("import torch\n" + LEGACY)), "nb.ipynb", SETTINGS)[0]

    def editing(start: Location, end: Location):
        return replace(finding, location=start, cell=None, fix=replace(finding.fix, edits=(Edit("z", start, end),)))

    assert view.editable(editing(Location(1, 1), Location(1, 2)))
    assert not view.editable(editing(Location(1, 1), Location(2, 3)))  # over `!ls`
    assert not view.editable(editing(Location(2, 2), Location(2, 2)))  # into `!ls`
    assert not view.editable(editing(Location(1, 1), Location(3, 1)))  # into the next cell


def test_edit_cells_keeps_every_other_byte() -> None:
    text = nbformat_text(notebook("a = 1\nb = 2", "c = 3"))
    edited = edit_cells(read_notebook(text), {3: "c = 4\n"})
    assert edited == text.replace('"c = 3"', '"c = 4\\n"')


# Discovery and the pre-commit hook -------------------------------------------------------------


def test_checkpoints_are_excluded_by_default(project) -> None:
    (project / ".ipynb_checkpoints").mkdir()
    (project / ".ipynb_checkpoints" / "nb-checkpoint.ipynb").write_text(nbformat_text(notebook("import torch\n" + LEGACY)))
    (project / "nb.ipynb").write_text(nbformat_text(notebook("import torch\n" + LEGACY)))
    result = run_torchlint("check", "--show-hints", ".", "--output-format", "json", cwd=project)
    assert [Path(d["filename"]).name for d in json.loads(result.stdout)] == ["nb.ipynb"]


def test_the_pre_commit_hook_covers_notebooks() -> None:
    hooks = (Path(__file__).resolve().parent.parent / ".pre-commit-hooks.yaml").read_text()
    assert "types_or: [python, pyi, jupyter]" in hooks


def test_noqa_in_a_cell_suppresses_its_finding() -> None:
    assert findings("import torch", LEGACY + "  # noqa: TL102", LEGACY) == [("TL102", 4, 1, 5)]


def test_nbformat_3_worksheets_are_read_and_fixed(tmp_path) -> None:
    cells = [{"cell_type": "code", "input": ["import torch\n", LEGACY], "language": "python", "outputs": []}]
    text = json.dumps({"metadata": {}, "nbformat": 3, "nbformat_minor": 0, "worksheets": [{"cells": cells}]}, indent=1)
    assert [(d.code, d.cell) for d in check_notebook(text, "nb.ipynb", SETTINGS)] == [("TL102", 1)]
    path = tmp_path / "nb.ipynb"
    path.write_text(text)
    fix_file(str(path), SETTINGS, "nb.ipynb")
    assert path.read_text() == text.replace(LEGACY, FIXED)


def test_a_notebook_that_is_not_json_is_one_tl902(tmp_path) -> None:
    path = tmp_path / "nb.ipynb"
    path.write_text("{not json")
    result = fix_file(str(path), SETTINGS, "nb.ipynb")
    assert [(d.code, d.message) for d in result.diagnostics] == [
        ("TL902", "cannot read file: not a valid Jupyter notebook (JSON)")
    ]
    assert path.read_text() == "{not json"


def test_a_fix_that_would_break_its_cell_is_not_applied_and_named_by_cell(tmp_path, monkeypatch) -> None:
    from tests.test_fix import _patch_tl102_fix

    _patch_tl102_fix(monkeypatch, lambda fixed, old: fixed[:-1])  # drops a closing parenthesis
    path = tmp_path / "nb.ipynb"
    text = nbformat_text(notebook("import torch", "y = 1\n" + LEGACY))
    path.write_text(text)
    result = fix_file(str(path), SETTINGS, "nb.ipynb")
    assert path.read_text() == text and not result.written
    assert [(d.code, d.cell, d.location.row) for d in result.diagnostics] == [("TL102", 3, 2)]
    assert len(result.problems) == 1
    assert result.problems[0].startswith("torchlint: error: nb.ipynb:cell 3:2:5: the TL102 fix was not applied")


def test_a_cell_holding_nul_is_still_fixed(tmp_path) -> None:
    path = tmp_path / "nb.ipynb"
    text = nbformat_text(notebook("import torch\n" + LEGACY + "  # \x00"))
    path.write_text(text)
    result = fix_file(str(path), SETTINGS, "nb.ipynb")
    assert result.written and path.read_text() == text.replace(LEGACY, FIXED)


def test_a_null_source_is_an_empty_cell() -> None:
    text = nbformat_text(notebook("import torch", LEGACY))
    document = json.loads(text)
    document["cells"][1]["source"] = None
    assert [(d.code, d.cell) for d in check_notebook(json.dumps(document), "nb.ipynb", SETTINGS)] == []
    assert read_notebook(json.dumps(document)).cells[0].source == ""


def test_a_file_level_noqa_silences_its_own_cell_only(tmp_path) -> None:
    cells = ("import torch\n# torchlint: noqa\n" + LEGACY, LEGACY, "# torchlint: noqa: TL102\n" + LEGACY)
    assert findings(*cells) == [("TL102", 3, 1, 5)]
    path = tmp_path / "nb.ipynb"
    path.write_text(nbformat_text(notebook(*cells)))
    result = fix_file(str(path), SETTINGS, "nb.ipynb")
    sources = ["".join(cell["source"]) for cell in json.loads(path.read_text())["cells"][1:]]
    assert result.fixed == {"TL102": 1}
    assert sources == [cells[0], FIXED, cells[2]]

from __future__ import annotations

from collections.abc import Collection, Iterable

from torchlint.diagnostics import Applicability, Diagnostic, Edit, Fix, Location, Severity
from torchlint.rule import Rule
from torchlint.sources import source_rows
from torchlint.suppressions import Directive, Suppressions


class UnusedNoqa(Rule):
    """
    ## What it does
    Reports a `# noqa: TLxxx` comment whose code does not fire on that row, and a `TL` code in a
    noqa comment that names no torchlint rule (a typo such as `TL1O1`). Only torchlint's own
    codes are judged: `# noqa: E501` for another tool and a blanket `# noqa` are left alone, and so
    are codes of rules that are not enabled for the file (they did not run, so torchlint cannot
    tell whether they would fire).

    ## Why is this bad?
    A suppression outlives the finding it was written for: once the code is fixed, the stale
    comment silently hides the next real finding of that rule on the row. A misspelt code
    suppresses nothing while looking as if it did.

    ## Example
    ```python
    x = torch.zeros(3)  # noqa: TL102
    y = torch.Tensor(3)  # noqa: TL1O2
    ```

    ## Use instead
    ```python
    x = torch.zeros(3)
    y = torch.Tensor(3)  # noqa: TL102
    ```

    ## Fix safety
    The fix is safe: it removes the unused codes from the comment, or the whole `# noqa` when
    none is left; the rest of the comment stays.
    """

    code = "TL903"
    name = "unused-noqa"
    summary = "A `# noqa` names a torchlint code that does not fire on its row"
    severity = Severity.WARNING
    fix_applicability = Applicability.SAFE


def unused_noqa(
    suppressions: Suppressions, findings: Iterable[Diagnostic], judged: Collection[str], known: Collection[str],
    source: str, filename: str,
) -> list[Diagnostic]:
    """TL903 findings: codes in `# noqa` comments that suppressed none of `findings` (the file's
    findings before suppression) although their rule ran (`judged`), and TL codes not `known`."""
    used = {(finding.noqa_row, finding.code) for finding in findings}
    rows = source_rows(source)
    reports = []
    for row, directives in suppressions.directives.items():
        for directive in directives:
            codes = directive.codes or ()
            unknown = [code for code in codes if code.startswith("TL") and code not in known]
            unused = [code for code in codes if code in judged and (row, code) not in used]
            if unknown or unused:
                reports.append(_report(directive, unused, unknown, rows[row - 1], filename))
    return reports


def _report(directive: Directive, unused: list[str], unknown: list[str], line: str, filename: str) -> Diagnostic:
    parts = [f"{label}: {', '.join(f'`{code}`' for code in codes)}"
             for label, codes in (("unused", unused), ("unknown", unknown)) if codes]
    kept = [code for code in directive.codes if code not in unused and code not in unknown]
    edit = _edit(directive, kept, line)
    return Diagnostic(
        code=UnusedNoqa.code, name=UnusedNoqa.name, message=f"Unused `noqa` directive ({'; '.join(parts)})",
        filename=filename, location=Location(directive.row, directive.start + 1),
        end_location=Location(directive.row, directive.end + 1), severity=UnusedNoqa.severity,
        fix=Fix(Applicability.SAFE, "Remove the unused codes" if kept else "Remove the `noqa` directive", (edit,)),
        noqa_row=directive.row,
    )


def _edit(directive: Directive, kept: list[str], line: str) -> Edit:
    if kept:
        start, end, content = directive.codes_start, directive.end, ", ".join(kept)
    else:
        rest = line[directive.end:directive.comment_end]
        start, end, content = directive.start, directive.end, ""
        if not rest.strip():  # the directive ends its comment: drop the blanks before it too
            start, end = len(line[:directive.start].rstrip()), directive.comment_end
        elif rest.lstrip().startswith("#"):  # another comment follows: it takes the directive's place
            end = directive.end + len(rest) - len(rest.lstrip())
        elif directive.start == directive.comment_start:
            content = "#"  # the words after the directive stay a comment
    return Edit(content, Location(directive.row, start + 1), Location(directive.row, end + 1))

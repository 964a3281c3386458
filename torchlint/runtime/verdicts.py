"""Parent side: from the child's observations to a verdict per finding, plus runtime-only ones.

Only findings in files the run loaded (the script, and the user's modules any of its processes
imported) get a verdict; the others are left out, as the run says nothing about them. An event
(rule code + user position) belongs to the finding of the same code, in the same file, whose range
overlaps it (the smallest when several do); what is left over becomes a new finding when its
rule's check `adds` it. Each finding's verdict comes from its check's `judge`.
"""

from __future__ import annotations

import linecache
import os

from torchlint.diagnostics import Diagnostic, Location, Related, Severity
from torchlint.runtime.checks import CONFIRMED, RunFacts, SyncInLoop, check_for, sync_intervals, sync_intervals_text
from torchlint.runtime.probes import Site


def sites_for(findings: list[Diagnostic]) -> list[Site]:
    return [
        Site(
            id=index, code=d.code, filename=os.path.realpath(d.filename),
            row=d.location.row, column=d.location.column,
            end_row=d.end_location.row, end_column=d.end_location.column,
        )
        for index, d in enumerate(findings)
    ]


def _char_column(filename: str, row: int, byte_column: int) -> int:
    """0-based UTF-8 byte offset -> 1-based character column."""
    line = linecache.getline(filename, row)
    return len(line.encode("utf-8")[:byte_column].decode("utf-8", errors="ignore")) + 1


def _event_range(event: dict) -> tuple[str, Location, Location | None]:
    filename, row, end_row, column, end_column = event["position"]
    filename = os.path.realpath(filename)
    if column < 0:
        return filename, Location(row, 1), None
    start = Location(row, _char_column(filename, row, column))
    end = Location(end_row, _char_column(filename, end_row, end_column))
    return filename, start, end


def _overlaps(site: Site, start: Location, end: Location | None) -> bool:
    site_start, site_end = (site.row, site.column), (site.end_row, site.end_column)
    if end is None:  # a line only (warnings)
        return site.row <= start.row <= site.end_row
    if site_end <= site_start:  # an empty range: the start alone
        return (start.row, start.column) <= site_start < (end.row, end.column) or site_start == (start.row, start.column)
    return (start.row, start.column) < site_end and site_start < (end.row, end.column)


def loaded_files(observed: dict, main_file: str | None) -> set[str]:
    """The files the run loaded (the script, and the user's modules any process imported): the
    only ones it says anything about."""
    loaded = set(observed.get("loaded", ()))
    if main_file is not None:
        loaded.add(main_file)
    return loaded


def judge_all(
    findings: list[Diagnostic], sites: list[Site], observed: dict, device: str, main_file: str | None = None,
    completed: bool = True,
) -> list[Diagnostic]:
    """`completed`: the script ran to its end, so an absence of the pitfall means something."""
    run = _run_facts(observed, device, completed)
    loaded = loaded_files(observed, main_file)
    events_by_site: dict[int, list[dict]] = {site.id: [] for site in sites}
    leftovers: list[tuple[dict, str, Location, Location | None]] = []
    for event in observed.get("events", []):
        filename, start, end = _event_range(event)
        matching = [
            site for site in sites
            if site.code == event["code"] and site.filename == filename and _overlaps(site, start, end)
        ]
        if not matching:
            matching = _related_sites(event["code"], filename, start.row, sites, findings)
        if matching:
            best = min(matching, key=lambda s: ((s.end_row - s.row), s.end_column - s.column))
            events_by_site[best.id].append(event)
        else:
            leftovers.append((event, filename, start, end))

    reached = set(observed.get("reached", []))
    confirmed = {int(k): v for k, v in observed.get("confirmed", {}).items()}
    refuted = {int(k): v for k, v in observed.get("refuted", {}).items()}
    result: list[Diagnostic] = []
    for site, finding in zip(sites, findings):
        if site.filename not in loaded:
            continue
        state = {
            "loop_iterations": observed.get("iterations", {}).get(str(site.id)),
            "reached": site.id in reached,
            "confirmed": confirmed.get(site.id),
            "refuted": refuted.get(site.id),
        }
        verdict, detail = check_for(finding.code).judge(state, events_by_site[site.id], run)
        result.append(finding.with_runtime(verdict, detail))

    originals = {os.path.realpath(d.filename): d.filename for d in findings}
    # A warning that confirmed a static finding on its line is explained: a runtime-only rule
    # matching the same warning there (TL601 beside TL104's loss broadcast) adds nothing.
    explained = {(os.path.realpath(d.filename), d.location.row, check_for(d.code).warning)
                 for d in result if d.runtime == CONFIRMED}
    # Likewise an error: the shape error that confirmed TL103 at a line adds no TL104 there.
    explained |= {(os.path.realpath(place.filename), place.location.row, check_for(d.code).error)
                  for d in result if d.runtime == CONFIRMED and check_for(d.code).error is not None
                  for place in (d, *d.related)}
    for event, filename, start, end in leftovers:
        check = check_for(event["code"])
        if not check.adds(event) or not check.counts(event, run) or any(
                pattern is not None and (filename, start.row, pattern) in explained
                for pattern in (check.warning, check.error)):
            continue
        result.append(
            Diagnostic(
                code=check.code, name=_rule_name(check), message=_rule_message(check),
                filename=_display_name(filename, originals), location=start,
                end_location=end or start, severity=_rule_severity(check), noqa_row=start.row,
                runtime=CONFIRMED, runtime_detail=check.describe([event], run),
                related=_event_related(event, originals),
            )
        )
    return result


def _event_related(event: dict, originals: dict[str, str]) -> tuple[Related, ...]:
    """The places an event rests on (the layers that made a failed op's operands), as notes."""
    found = []
    for place in event.get("related", ()):
        filename, start, end = _event_range(place)
        found.append(Related(place["message"], _display_name(filename, originals), start, end or start))
    return tuple(found)


def _run_facts(observed: dict, device: str, completed: bool = True) -> RunFacts:
    return RunFacts(
        steps=observed.get("steps", 0), iteration_steps=observed.get("iteration_steps", 0), device=device,
        iterations=observed.get("iterations", {}), completed=completed,
    )


def host_syncs(observed: dict, device: str) -> list[dict]:
    """Each line of the user's code that synced the host with an accelerator: how many syncs, in
    how many of the intervals they are counted in (its loop's iterations, else optimizer steps)."""
    run = _run_facts(observed, device)
    return [
        {
            "position": event["position"], "what": event["detail"], "count": event["count"],
            "intervals": event["intervals"], "total": sync_intervals(event, run),
            "of": sync_intervals_text(event, run),
        }
        for event in observed.get("events", []) if event["code"] == SyncInLoop.code
    ]


def _related_sites(code: str, filename: str, row: int, sites: list[Site], findings: list[Diagnostic]) -> list[Site]:
    """Sites of `code` whose finding names the event's line as a related place: a layer-size
    finding at the layer's construction, whose shape error raises where the layer is applied."""
    return [
        site for site, finding in zip(sites, findings)
        if site.code == code and any(
            os.path.realpath(note.filename) == filename and note.location.row <= row <= note.end_location.row
            for note in finding.related
        )
    ]


def _display_name(filename: str, originals: dict[str, str]) -> str:
    if filename in originals:
        return originals[filename]
    try:
        relative = os.path.relpath(filename)
    except ValueError:
        return filename
    return filename if relative.startswith("..") else relative


def _rule_message(check) -> str:
    rule = _static_rule(check.code)
    return check.message or (rule.summary if rule is not None else check.code)


def _rule_name(check) -> str:
    rule = _static_rule(check.code)
    return rule.name if rule is not None else check.name


def _rule_severity(check) -> Severity:
    rule = _static_rule(check.code)
    return rule.severity if rule is not None else Severity(check.severity)


def _static_rule(code: str):
    try:
        from torchlint.rules import get_rule
    except ImportError:
        return None
    return get_rule(code)

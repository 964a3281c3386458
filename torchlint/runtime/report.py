"""`--report FILE`: one self-contained HTML page of a run, from what it recorded.

Sections: a summary, each layer's gradient norm over the optimizer steps (an inline SVG chart,
log scale), the first non-finite value, the parameters that never learned, the host syncs per
line, and every finding with its verdict. Inline CSS and SVG only, no script: the page fetches
nothing, so it opens anywhere (a CI artifact, an air-gapped machine). Every text from the run
(names, messages, paths) is escaped. Pure functions: the run's data in, HTML out.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from html import escape
from pathlib import Path

from torchlint.diagnostics import Diagnostic
from torchlint.discovery import display_name
from torchlint.output.text import place

# The chart's size and margins, in SVG user units (the page scales it to its width).
WIDTH, HEIGHT = 960, 360
LEFT, RIGHT, TOP, BOTTOM = 64, 24, 28, 64
# Below the plot area, the row where zero norms are drawn (log scale has no zero).
ZERO_GAP = 28
MAX_TICKS = 8
NO_STEPS = "No optimizer step was recorded."
# How many names one line of the report lists before "and N more".
MAX_LISTED = 12

STYLE = """
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1f2328;
       max-width: 1100px; margin: 24px auto; padding: 0 20px; }
h1 { font-size: 24px; margin-bottom: 4px; }
h2 { font-size: 19px; margin-top: 32px; border-bottom: 1px solid #d0d7de; padding-bottom: 4px; }
h3 { font-size: 15px; margin: 16px 0 6px; }
table { border-collapse: collapse; margin: 6px 0; }
th, td { text-align: left; padding: 4px 12px 4px 0; vertical-align: top; }
thead th { border-bottom: 1px solid #d0d7de; font-weight: 600; }
td.number { text-align: right; font-variant-numeric: tabular-nums; }
code, .place { font-family: ui-monospace, "SFMono-Regular", Menlo, monospace; font-size: 13px; }
a { color: #0969da; text-decoration: none; }
.none { color: #57606a; }
.bad { color: #cf222e; font-weight: 600; }
.swatch { display: inline-block; width: 14px; height: 4px; margin: 0 6px 3px 0; border-radius: 2px; }
.verdict { border-radius: 10px; padding: 1px 8px; font-size: 12px; white-space: nowrap; background: #eaeef2; }
.verdict.confirmed { background: #ffebe9; color: #a40e26; }
.verdict.refuted { background: #dafbe1; color: #116329; }
.observed { color: #57606a; }
svg { width: 100%; height: auto; font-size: 12px; }
svg text { fill: #57606a; }
svg .grid { stroke: #eaeef2; }
svg .axis { stroke: #8c959f; }
svg .series path { fill: none; stroke-width: 2; stroke-linecap: round; stroke-linejoin: round; }
svg .non-finite line { stroke: #cf222e; stroke-dasharray: 5 4; }
svg .non-finite text { fill: #cf222e; }
"""


def render_report(run: dict, report, diagnostics: list[Diagnostic]) -> str:
    """The page: `run` is the run record (cli's `--run-record`), `report` the RuntimeReport
    (its steps, training and host syncs), `diagnostics` the findings as reported."""
    training = report.training
    optimizers = training.get("optimizers", [])
    sections = [
        _summary(run, report, diagnostics),
        _section("Gradient flow", _gradient_flow(optimizers)),
        _section("First non-finite value", _first_non_finite(optimizers)),
        _section("Parameters that never learned", _never_learned(optimizers, training.get("frozen", []))),
        _section("Host syncs per iteration", _host_syncs(report.host_syncs, report.device)),
        _section("Findings", _findings(diagnostics)),
    ]
    title = f"torchlint run report: {_command(run)}"
    return (
        f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{escape(title)}</title>\n'
        f"<style>{STYLE}</style>\n</head>\n<body>\n" + "\n".join(sections) + "\n</body>\n</html>\n"
    )


def _section(heading: str, body: str) -> str:
    return f"<section>\n<h2>{escape(heading)}</h2>\n{body}\n</section>"


def _none(text: str) -> str:
    return f'<p class="none">{escape(text)}</p>'


def _command(run: dict) -> str:
    target = run["script"] or f"-m {run['module']}"
    return " ".join(["python", target, *run["args"]])


def _where(position: list | None) -> str:
    """A link to a recorded position (`[file, row, ...]`) of the user's code."""
    if position is None:
        return "?"
    return _link(position[0], position[1], f"{display_name(position[0])}:{position[1]}")


def _link(filename: str, row: int, text: str) -> str:
    uri = Path(os.path.abspath(filename)).as_uri()
    return f'<a class="place" href="{escape(uri)}#L{row}">{escape(text)}</a>'


def _listed(names: list[str]) -> str:
    shown = ", ".join(f"<code>{escape(name)}</code>" for name in names[:MAX_LISTED])
    return shown + (f" and {len(names) - MAX_LISTED} more" if len(names) > MAX_LISTED else "")


def _table(headings: list[str], rows: list[list[str]], numeric: tuple[int, ...] = ()) -> str:
    """Rows of cells (HTML already); the `numeric` columns right-aligned."""
    head = "".join(f"<th>{escape(heading)}</th>" for heading in headings)
    body = "\n".join(
        "<tr>" + "".join(
            f'<td class="number">{cell}</td>' if column in numeric else f"<td>{cell}</td>"
            for column, cell in enumerate(row)
        ) + "</tr>"
        for row in rows
    )
    return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


# -- summary ----------------------------------------------------------------------------------
def _summary(run: dict, report, diagnostics: list[Diagnostic]) -> str:
    status = "timed out" if run["timed_out"] else str(run["exit_status"])
    if report.exception:
        status += f" ({report.exception.strip().splitlines()[-1]})"
    device = run["resolved_device"] + (f" (asked: {run['device']})" if run["device"] != run["resolved_device"] else "")
    verdicts = ", ".join(f"{count} {verdict}" for verdict, count in Counter(d.runtime for d in diagnostics).items())
    rows = [
        ("Script", f"<code>{escape(_command(run))}</code>"),
        ("Device", escape(device)),
        ("Exit status", escape(status) if status == "0" else f'<span class="bad">{escape(status)}</span>'),
        ("Optimizer steps", str(report.steps)),
        ("Findings", escape(f"{len(diagnostics)} ({verdicts})" if diagnostics else "none")),
        *(("Note", escape(note)) for note in run["notes"]),
    ]
    table = "\n".join(f"<tr><th>{name}</th><td>{value}</td></tr>" for name, value in rows)
    return f"<h1>torchlint run report</h1>\n<table>\n{table}\n</table>"


# -- gradient flow ----------------------------------------------------------------------------
def _gradient_flow(optimizers: list[dict]) -> str:
    charted = [o for o in optimizers if o.get("gradient_flow")]
    if not charted:
        return _none("No optimizer step with gradients was recorded.")
    intro = (
        "<p>The norm of each layer's gradient at each optimizer step (log scale; zero on the bottom "
        "line, NaN and Inf left out), colored from the first layer (blue) to the last (red).</p>"
    )
    return intro + "\n".join(_optimizer_flow(optimizer) for optimizer in charted)


def _optimizer_flow(optimizer: dict) -> str:
    flow = optimizer["gradient_flow"]
    recorded = len(flow["steps"])
    shown = "every step" if recorded == optimizer["steps"] else f"{recorded} steps, evenly spaced"
    heading = f"<h3>Optimizer stepped at {_where(optimizer['position'])}: " \
              f"{_plural(optimizer['steps'], 'step')} ({shown})</h3>"
    first_bad = (optimizer.get("first_non_finite") or {}).get("step")
    return "\n".join([heading, _chart(flow, first_bad), _layer_table(flow)])


def _color(index: int, count: int) -> str:
    """From blue (the first layer) through green to red (the last)."""
    hue = 240 - 240 * index / (count - 1) if count > 1 else 240
    return f"hsl({hue:.0f}, 75%, 42%)"


class _Scale:
    """Steps to x, norms to y (log10); zero norms to a row of their own below the plot."""

    def __init__(self, steps: list[int], norms: list[list[float]]) -> None:
        self.first, self.last = steps[0], steps[-1]
        logs = [math.log10(v) for row in norms for v in row if math.isfinite(v) and v > 0]
        self.low = math.floor(min(logs, default=0))
        self.high = max(math.ceil(max(logs, default=1)), self.low + 1)
        self.bottom = HEIGHT - BOTTOM - ZERO_GAP  # of the log-scale area

    def x(self, step: int) -> float:
        span = self.last - self.first
        fraction = (step - self.first) / span if span else 0.5
        return LEFT + fraction * (WIDTH - LEFT - RIGHT)

    def y(self, norm: float) -> float:
        if norm == 0:
            return self.bottom + ZERO_GAP
        fraction = (math.log10(norm) - self.low) / (self.high - self.low)
        return self.bottom - fraction * (self.bottom - TOP)


def _chart(flow: dict, first_bad: int | None) -> str:
    steps, layers, norms = flow["steps"], flow["layers"], flow["norms"]
    scale = _Scale(steps, norms)
    parts = [*_y_axis(scale, norms), *_x_axis(scale)]
    for index, layer in enumerate(layers):
        path = _path(scale, steps, [row[index] for row in norms])
        parts.append(
            f'<g class="series" data-layer="{escape(layer)}"><title>{escape(layer)}</title>'
            f'<path d="{path}" stroke="{_color(index, len(layers))}"/></g>'
        )
    if first_bad is not None and scale.first <= first_bad <= scale.last:
        parts.append(_non_finite_marker(scale, first_bad))
    label = f"Gradient norm per layer over {_plural(len(steps), 'recorded step')}"
    return (
        f'<svg viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{escape(label)}">\n' + "\n".join(parts) + "\n</svg>"
    )


def _path(scale: _Scale, steps: list[int], values: list[float]) -> str:
    """One subpath per run of finite values (`h0` makes a lone point a dot)."""
    commands, drawing = [], False
    for step, value in zip(steps, values):
        if not math.isfinite(value):
            drawing = False
            continue
        point = f"{scale.x(step):.1f} {scale.y(value):.1f}"
        commands.append(f"L{point}" if drawing else f"M{point}h0")
        drawing = True
    return " ".join(commands)


def _y_axis(scale: _Scale, norms: list[list[float]]) -> list[str]:
    parts = [_gridline(scale.y(norm), f"{norm:g}") for norm in _norm_ticks(scale.low, scale.high)]
    if any(value == 0 for row in norms for value in row):
        parts.append(_gridline(scale.y(0), "0"))
    middle = (TOP + scale.bottom) / 2
    parts.append(f'<text transform="translate(14 {middle:.0f}) rotate(-90)" text-anchor="middle">gradient norm</text>')
    return parts


def _norm_ticks(low: int, high: int) -> list[float]:
    """Powers of ten from 10**low to 10**high (every few of them over many decades), and 2 and 5
    times them over one or two decades, where powers alone leave the chart bare."""
    decades = high - low
    every = math.ceil((decades + 1) / MAX_TICKS)
    ticks = [10.0 ** power for power in range(low, high + 1, every)]
    if decades <= 2:
        ticks += [factor * 10.0 ** power for power in range(low, high) for factor in (2, 5)]
    return sorted(ticks)


def _gridline(y: float, label: str) -> str:
    return (
        f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>'
        f'<text x="{LEFT - 8}" y="{y + 4:.1f}" text-anchor="end">{escape(label)}</text>'
    )


def _x_axis(scale: _Scale) -> list[str]:
    axis_y = HEIGHT - BOTTOM + 8
    parts = [f'<line class="axis" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{axis_y}" y2="{axis_y}"/>']
    for step in _step_ticks(scale.first, scale.last):
        x = scale.x(step)
        parts.append(
            f'<line class="axis" x1="{x:.1f}" x2="{x:.1f}" y1="{axis_y}" y2="{axis_y + 5}"/>'
            f'<text x="{x:.1f}" y="{axis_y + 20}" text-anchor="middle">{step}</text>'
        )
    middle = (LEFT + WIDTH - RIGHT) / 2
    parts.append(f'<text x="{middle:.0f}" y="{HEIGHT - 6}" text-anchor="middle">optimizer step</text>')
    return parts


def _step_ticks(first: int, last: int) -> list[int]:
    """Round steps (1, 2 or 5 times a power of ten apart) from `first` to `last`."""
    if first == last:
        return [first]
    spacing = next(
        size for power in range(20) for size in (10 ** power, 2 * 10 ** power, 5 * 10 ** power)
        if (last - first) / size <= MAX_TICKS
    )
    return list(range(math.ceil(first / spacing) * spacing, last + 1, spacing))


def _non_finite_marker(scale: _Scale, step: int) -> str:
    x = scale.x(step)
    right_half = x > (LEFT + WIDTH - RIGHT) / 2
    anchor, shift = ("end", -6) if right_half else ("start", 6)
    return (
        f'<g class="non-finite"><line x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{scale.bottom + ZERO_GAP}"/>'
        f'<text x="{x + shift:.1f}" y="{TOP - 10}" text-anchor="{anchor}">first NaN/Inf: step {step}</text></g>'
    )


def _layer_table(flow: dict) -> str:
    layers, norms = flow["layers"], flow["norms"]
    rows = []
    for index, layer in enumerate(layers):
        values = [row[index] for row in norms]
        finite = [v for v in values if math.isfinite(v)]
        swatch = f'<span class="swatch" style="background:{_color(index, len(layers))}"></span>'
        rows.append([
            f"{swatch}<code>{escape(layer)}</code>", _number(values[0]), _number(values[-1]),
            _number(min(finite, default=math.nan)), _number(max(finite, default=math.nan)),
        ])
    return _table(["layer", "first step", "last step", "smallest", "largest"], rows, numeric=(1, 2, 3, 4))


def _number(value: float) -> str:
    """Three significant digits; NaN and Inf in red."""
    return f"{value:.3g}" if math.isfinite(value) else f'<span class="bad">{value}</span>'


# -- first non-finite value -------------------------------------------------------------------
def _first_non_finite(optimizers: list[dict]) -> str:
    if not optimizers:
        return _none(NO_STEPS)
    found = [o for o in optimizers if o.get("first_non_finite")]
    if not found:
        steps = sum(o["steps"] for o in optimizers)
        return _none(f"None: every parameter and gradient stayed finite over {_plural(steps, 'optimizer step')}.")
    items = []
    for optimizer in found:
        first = optimizer["first_non_finite"]
        items.append(
            f'<li><span class="bad">Step {first["step"]}</span> of the optimizer stepped at '
            f"{_where(optimizer['position'])}: {_listed(first['what'])} first held NaN or Inf.</li>"
        )
    return "<ul>\n" + "\n".join(items) + "\n</ul>"


# -- parameters that never learned -------------------------------------------------------------
def _never_learned(optimizers: list[dict], frozen: list[str]) -> str:
    if not optimizers:
        return _none(NO_STEPS)
    reasons = [
        (name, f"no gradient, or only zero, in {_plural(o['steps'], 'step')} of the optimizer at {_where(o['position'])}")
        for o in optimizers for name in o["no_gradient"]
    ]
    reasons += [(name, "frozen: <code>requires_grad=False</code>") for name in frozen]
    if not reasons:
        return _none("None: every parameter an optimizer stepped had a non-zero gradient.")
    return _table(["parameter", "why"], [[f"<code>{escape(name)}</code>", why] for name, why in reasons])


# -- host syncs -------------------------------------------------------------------------------
def _host_syncs(syncs: list[dict], device: str) -> str:
    if device in ("cpu", "meta"):
        return _none("Not counted: under --device cpu or --dry-run a sync costs nothing. Run with "
                     "--device auto (a GPU, or logical devices) to count them.")
    if not syncs:
        return _none("None: the script's code never waited for the device.")
    rows = [
        [_where(sync["position"]), f"<code>{escape(sync['what'])}</code>", str(sync["count"]),
         escape(f"in {sync['intervals']} of {sync['of']}"),
         _number(sync["count"] / sync["total"] if sync["total"] else math.nan)]
        for sync in sorted(syncs, key=lambda s: -s["count"])
    ]
    return _table(["line", "sync", "syncs", "when", "per iteration"], rows, numeric=(2, 4))


# -- findings ---------------------------------------------------------------------------------
def _findings(diagnostics: list[Diagnostic]) -> str:
    if not diagnostics:
        return _none("No findings.")
    rows = []
    for d in diagnostics:
        verdict = d.runtime or "static"
        observed = f' <span class="observed">({escape(d.runtime_detail)})</span>' if d.runtime_detail else ""
        rows.append([
            _link(d.filename, d.location.row, place(d).rstrip(":")), f"<code>{d.code}</code>",
            f'<span class="verdict {escape(verdict.split()[0])}">{escape(verdict)}</span>',
            escape(d.message) + observed,
        ])
    return _table(["where", "rule", "verdict", "finding"], rows)

"""The command line: `torchlint check`, `torchlint rule`, `torchlint server` and `torchlint mcp`."""

from __future__ import annotations

import json
import os
import sys

import click

from torchlint import __version__
from torchlint.baseline import apply_baseline, write_baseline as write_baseline_file
from torchlint.cache import cached_results
from torchlint.config import ConfigError, Options, Settings, SettingsResolver, describe
from torchlint.diagnostics import Diagnostic, Severity
from torchlint.docs import rule_page
from torchlint.discovery import Discovery, PathError, display_name
from torchlint.git_diff import changed_rows
from torchlint.progress import Progress
from torchlint.output import OutputContext, format_names, render
from torchlint.output.json import render_statistics as render_statistics_json
from torchlint.output.text import fix_listing, forget_sources, render_statistics
from torchlint.rules import all_rules, find_rule
from torchlint.sources import UnreadableFile, decode_source

# The checker itself (engine, fix, add_noqa: libcst and every rule) is imported where it is used:
# a run whose files are all cached needs none of it, and answers in a fraction of the time.


def _codes(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [part.strip() for part in value.split(",") if part.strip()]


def _use_color(color: str) -> bool:
    """`--color`: always, never, or auto (a terminal, unless NO_COLOR is set or FORCE_COLOR is)."""
    if color != "auto":
        return color == "always"
    if os.environ.get("NO_COLOR"):
        return False
    return os.environ.get("FORCE_COLOR", "").lower() not in ("", "0", "false") or sys.stdout.isatty()


class _Main(click.Group):
    """Every error ends in one line on stderr: usage errors exit 2, as do unexpected exceptions
    (never a traceback)."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        try:
            status = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.ClickException as error:
            click.echo(f"torchlint: error: {error.format_message()}", err=True)
            sys.exit(2 if isinstance(error, click.UsageError) else error.exit_code)
        except click.Abort:
            click.echo("torchlint: interrupted", err=True)
            sys.exit(130)
        if standalone_mode:
            sys.exit(status or 0)
        return status

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
            raise
        except (ConfigError, PathError) as error:
            raise click.UsageError(str(error)) from None
        except KeyboardInterrupt:
            raise click.Abort() from None
        except BrokenPipeError:
            # The reader went away (`torchlint rule --all | head -1`): stop quietly, as a
            # program killed by SIGPIPE would, and keep Python from flushing into the closed pipe.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(128 + 13)
        except Exception as error:  # noqa: BLE001 - the last line of defence, by design
            click.echo(f"torchlint: internal error: {type(error).__name__}: {error}", err=True)
            sys.exit(2)


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="torchlint")
def cli() -> None:
    """torchlint: find PyTorch pitfalls in Python code."""


class _CheckCommand(click.Command):
    """`check`: what follows `--` is the script's (with --runtime), never torchlint's paths."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            split = args.index("--")
            ctx.meta["script_args"] = args[split + 1:]
            args = args[:split]
        runtime = "--runtime" in args  # before parsing, which consumes `args`
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as error:
            if runtime:
                error.message += f"; arguments for the script go after `--`: torchlint check --runtime SCRIPT -- {error.option_name} ..."
            raise


@cli.command(cls=_CheckCommand, short_help="Check files and directories for PyTorch pitfalls (or fix them, or run a script).")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--select", help="Comma-separated rule codes or prefixes to enable (replaces the default set).")
@click.option("--ignore", help="Comma-separated rule codes or prefixes to disable.")
@click.option("--extend-select", help="Comma-separated rule codes or prefixes to enable in addition.")
@click.option("--output-format", type=click.Choice(format_names()), default="full", show_default=True)
@click.option("--exit-zero", is_flag=True, help="Exit with status 0 even when there are findings.")
@click.option("--sarif-file", type=click.Path(dir_okay=False), metavar="FILE",
              help="Also write the findings as SARIF to FILE (for code scanning), in the same run.")
@click.option("--statistics", is_flag=True, help="Print the number of findings per rule instead of the findings.")
@click.option("--config", "config_values", multiple=True,
              help="Read settings from this TOML file; or KEY=VALUE (TOML) to override one setting. Repeatable.")
@click.option("--isolated", is_flag=True, help="Read no configuration file.")
@click.option("--show-settings", is_flag=True, help="Print the settings resolved for the single PATH, then exit.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), help="Processes to use (default: all cores).")
@click.option("--force-exclude", is_flag=True, help="Apply excludes to files named on the command line too.")
@click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary.")
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
              help="Colour the output: auto = on a terminal, unless NO_COLOR is set (FORCE_COLOR forces it).")
@click.option("--no-color", is_flag=True, help="The same as --color never.")
@click.option("--stdin-filename", metavar="PATH",
              help="With PATH `-`: the name (and configuration) of the code on stdin.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the result cache (in the user's cache directory).")
@click.option("--fix/--no-fix", default=None, help="Apply the safe fixes, then report the findings left.")
@click.option("--unsafe-fixes/--no-unsafe-fixes", default=None,
              help="Offer unsafe fixes too: `--fix` and `--diff` apply them, and they are shown as `[*]`.")
@click.option("--diff", is_flag=True,
              help="Print a diff of what `--fix` would change; write nothing (exit 1 when there is a change).")
@click.option("--show-fixes", is_flag=True, help="List what was fixed (or with `--diff`: would be), per file and rule.")
@click.option("--exit-non-zero-on-fix", is_flag=True, help="Exit with status 1 when fixes were applied, too.")
@click.option("--baseline", type=click.Path(dir_okay=False), help="Report only findings not in this baseline file.")
@click.option("--write-baseline", type=click.Path(dir_okay=False),
              help="Write the current findings to this baseline file, then exit.")
@click.option("--diff-base", metavar="REF", help="Report only findings on rows changed since the git REF.")
@click.option("--progress", is_flag=True, help="Show progress on stderr even where the CI variable is set.")
@click.option("--add-noqa", is_flag=True, help="Add a `# noqa: CODE` comment for every finding, then exit.")
@click.option("--runtime", is_flag=True,
              help="Run the script (the single PATH; its arguments after `--`) instrumented and give each finding a verdict.")
@click.option("-m", "--module", "module", metavar="MODULE",
              help="With --runtime: run `python -m MODULE` (e.g. pytest) instead of a script; its arguments after `--`.")
@click.option("--fail-on", "fail_on", metavar="LEVEL,VERDICTS",
              help="The least severe finding that fails the run: error, warning (the default: notes never "
                   "fail), note or hint. With --runtime, also the verdicts that fail it (comma-separated: confirmed, "
                   "refuted, not-observed, not-reached, not-checked; default: every verdict).")
@click.option("--show-hints", is_flag=True,
              help="Also report hints: newer or more exact spellings of code that works as intended in most "
                   "code (`torch.Tensor([1, 2])`, `torch.norm`, `log(1 + x)`, an explicit "
                   "`weights_only=False`). The same as --config show-hints=true.")
@click.option("--run-record", "run_record", type=click.Path(dir_okay=False), metavar="FILE",
              help="With --runtime: write the run record (script, arguments, exit status, timed out, device, verdict counts) as JSON to FILE.")
@click.option("--report", "report_file", type=click.Path(dir_okay=False), metavar="FILE",
              help="With --runtime: write a picture of the run to FILE, one self-contained HTML page: each layer's "
                   "gradient norm over the steps, the first NaN/Inf, parameters that never learned, host syncs per "
                   "iteration and every finding with its verdict.")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda", "mps", "logical:cuda", "logical:mps"]),
              default="auto", show_default=True, help="With --runtime: where the script's tensors go.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), help="With --runtime: stop the script after SECONDS.")
@click.option("--dry-run", "dry_run", is_flag=True,
              help="With --runtime: run the script with every tensor on the meta device (shapes, no values), "
                   "for one optimizer step, writing nothing to disk; report its shape errors.")
def check(paths, select, ignore, extend_select, output_format, exit_zero, sarif_file, statistics, config_values, isolated,
          show_settings, jobs, force_exclude, quiet, color, no_color, stdin_filename, no_cache, fix, unsafe_fixes,
          diff, show_fixes, exit_non_zero_on_fix, baseline, write_baseline, diff_base, progress, add_noqa, runtime,
          module, fail_on, show_hints, run_record, report_file, device, timeout, dry_run) -> None:
    """Check PATHS (files or directories; default: the current directory).

    With --runtime: `torchlint check --runtime SCRIPT -- ARGS...` (or `--runtime -m MODULE -- ARGS...`)
    runs the script once, as `python SCRIPT ARGS` would, and gives each finding in the files it ran
    a verdict: confirmed, refuted, not observed in this run, or not-reached. `--report run.html`
    also draws the run: gradient flow per layer, the first NaN/Inf, what never learned, host syncs.
    """
    script_args = click.get_current_context().meta.get("script_args")
    config_values += ("show-hints=true",) if show_hints else ()
    resolver = SettingsResolver(_options(config_values, isolated, select, ignore, extend_select))
    settings = resolver.default
    if show_settings:
        if len(paths) != 1:
            raise click.UsageError("--show-settings needs exactly one PATH")
        shown = resolver.for_directory(paths[0]) if os.path.isdir(paths[0]) else resolver.for_file(paths[0])
        click.echo(describe(shown), nl=False)
        return
    threshold, verdicts = _fail_on(fail_on, settings.fail_on, runtime)
    # `fix = true` in the configuration applies to checks, never to a --runtime run.
    fix = settings.fix and not runtime if fix is None else fix
    unsafe_fixes = settings.unsafe_fixes if unsafe_fixes is None else unsafe_fixes
    discovery = Discovery(settings.exclude, settings.root, force_exclude=force_exclude)
    script_failed = False
    internal_errors: list[str] = []
    fixed = None
    listing = ""
    run = None
    if dry_run:
        if not runtime or device != "auto":
            raise click.UsageError("--dry-run needs --runtime, and chooses its device (meta) itself")
        device = "meta"
    if runtime:
        if fix or diff:
            raise click.UsageError("--fix and --diff cannot be combined with --runtime")
        # Machine-readable output owns stdout: the script's stdout goes to stderr then.
        keep_stdout = output_format in ("full", "concise") and not statistics
        target = _runtime_target(paths, module, script_args)
        diagnostics, run, runtime_report = _check_runtime(
            target, settings, discovery, jobs, device, timeout, keep_stdout, internal_errors, bool(report_file)
        )
        script_failed = run["timed_out"] or run["exit_status"] != 0
        if run_record:
            with open(run_record, "w", encoding="utf-8") as handle:
                json.dump(run, handle, indent=2)
    else:
        if device != "auto" or timeout is not None or module or run_record or report_file:
            raise click.UsageError("--device, --timeout, -m, --run-record and --report need --runtime")
        paths = (*paths, *(script_args or ()))  # without --runtime, `--` only ends the options
        files = [] if paths == ("-",) else _discover(discovery, list(paths) or ["."])
        if not files and paths != ("-",):
            click.echo(f"torchlint: warning: no Python files found under {', '.join(paths or ['.'])}", err=True)
        named = [(path, display_name(path)) for path in files]
        if add_noqa:
            _add_noqa(named, resolver, jobs, list(paths) or ["."])
        if diff:
            if paths == ("-",):
                changed = _diff_stdin(stdin_filename, resolver, unsafe_fixes, quiet)
            else:
                changed = _diff(named, resolver, jobs, unsafe_fixes, show_fixes, quiet)
            sys.exit(1 if changed and not exit_zero else 0)
        if paths == ("-",):
            diagnostics = _check_stdin(stdin_filename, resolver, fix, unsafe_fixes)
        elif fix:
            from torchlint.fix import fix_files

            results = _per_settings(resolver, named, lambda group, group_settings: fix_files(
                group, group_settings, jobs, unsafe=unsafe_fixes, use_cache=not no_cache,
                roots=list(paths) or ["."]))
            _report_problems(results)
            internal_errors = [result.internal_error for result in results if result.internal_error]
            diagnostics = sorted((d for result in results for d in result.diagnostics), key=Diagnostic.sort_key)
            fixed = sum(sum(result.fixed.values()) for result in results)
            if show_fixes:
                listing = fix_listing([(result.filename, result.fixed) for result in results], "Fixed")
            forget_sources()  # the source frames show the files as fixed
        else:
            meter = Progress(len(named), requested=progress)
            diagnostics = sorted(_per_settings(resolver, named, lambda group, group_settings: _check_files(
                group, group_settings, jobs, internal_errors, not no_cache, meter)), key=Diagnostic.sort_key)
            meter.close()
    diagnostics = _narrow(diagnostics, baseline, write_baseline, diff_base)
    if report_file:
        _write_report(report_file, run, runtime_report, diagnostics)
    context = OutputContext(
        color=_use_color("never" if no_color else color), rules=settings.rules, summary=not quiet, unsafe_fixes=unsafe_fixes,
        fixed=fixed, fix_listing=listing if output_format in ("full", "concise") or statistics else "",
        run=run,
    )
    if listing and not context.fix_listing:
        click.echo(listing, err=True)  # keep machine-readable output parseable
    if statistics:
        output = (render_statistics_json if output_format == "json" else render_statistics)(diagnostics, context)
    else:
        output = render(output_format, diagnostics, context)
    if script_failed and not diagnostics and output_format in ("full", "concise") and not statistics:
        output = "" if quiet else "No findings in the code that ran, but the script did not finish.\n"
    click.echo(output, nl=False, color=context.color)  # click strips colour off a pipe otherwise
    if sarif_file:
        with open(sarif_file, "w", encoding="utf-8") as handle:
            handle.write(render("sarif", diagnostics, context))
    _exit_on_internal_errors(internal_errors)
    failing = [d for d in diagnostics if d.severity.at_least(threshold) and (not runtime or d.runtime in verdicts)]
    failed = bool(failing) or script_failed or (exit_non_zero_on_fix and bool(fixed))
    sys.exit(1 if failed and not exit_zero else 0)


def _check_files(files, settings: Settings, jobs, internal_errors: list[str], use_cache: bool,
                 meter: Progress) -> list[Diagnostic]:
    """The files' findings: from the cache alone where it holds every file, else checked."""
    cached = cached_results(files, settings) if use_cache else None
    if cached is not None and None not in cached:
        for _ in files:
            meter.advance()
        return [finding for found in cached for finding in found]
    from torchlint.engine import check_files

    return check_files(files, settings, jobs, internal_errors, use_cache=use_cache, on_done=meter.advance,
                       on_progress=meter.within, cached=cached)


def _read_stdin(stdin_filename: str | None, resolver: SettingsResolver) -> tuple[str, Settings, str | Diagnostic]:
    """The name, settings and text of the code on stdin (the TL902 finding when it cannot be read)."""
    name = stdin_filename or "-"
    settings = resolver.for_file(stdin_filename) if stdin_filename else resolver.default
    try:
        return name, settings, decode_source(sys.stdin.buffer.read()).text
    except UnreadableFile as error:
        from torchlint.engine import file_error

        return name, settings, file_error("TL902", name, f"cannot read stdin: {error}")


def _diff_stdin(stdin_filename: str | None, resolver: SettingsResolver, unsafe: bool, quiet: bool) -> bool:
    """`torchlint check - --diff`: what `--fix` would change in the code on stdin, as for a path
    (editor wrappers pipe buffers); True when something would change."""
    name, settings, text = _read_stdin(stdin_filename, resolver)
    if isinstance(text, Diagnostic):
        click.echo(f"{name}: {text.message}", err=True)
        return False
    from torchlint.fix import fix_text, unified_diff

    outcome = fix_text(text, name, settings, unsafe)
    for problem in outcome.problems:
        click.echo(problem, err=True)
    if outcome.text != text:
        click.echo(unified_diff(text, outcome.text, name), nl=False)
    if not quiet:
        _echo_would_fix(sum(outcome.fixed.values()))
    return outcome.text != text


def _echo_would_fix(count: int) -> None:
    """`--diff`'s closing line on stderr."""
    click.echo(f"Would fix {count} finding{'s' if count != 1 else ''}." if count else "No fixes would be applied.",
               err=True)


def _check_stdin(stdin_filename: str | None, resolver: SettingsResolver, fix: bool, unsafe: bool) -> list[Diagnostic]:
    """`torchlint check -`: the code on stdin, with the settings of `--stdin-filename`. With
    `--fix`, the fixed code goes to stdout and the findings left to stderr (as ruff)."""
    name, settings, text = _read_stdin(stdin_filename, resolver)
    if isinstance(text, Diagnostic):
        return [text]
    from torchlint.engine import check_source
    from torchlint.fix import fix_text

    if not fix:
        return settings.fix_policy.applied(check_source(text, name, settings))
    outcome = fix_text(text, name, settings, unsafe)
    click.echo(outcome.text, nl=False)
    for diagnostic in outcome.diagnostics:
        click.echo(f"{name}:{diagnostic.location.row}:{diagnostic.location.column}: {diagnostic.code} "
                   f"{diagnostic.message}", err=True)
    sys.exit(1 if outcome.diagnostics else 0)


def _options(config_values, isolated, select, ignore, extend_select) -> Options:
    """`--config` names a file, or overrides a key with KEY=VALUE."""
    files = [value for value in config_values if "=" not in value]
    if len(files) > 1:
        raise click.UsageError("--config names at most one file")
    if files and not os.path.isfile(files[0]):
        raise click.UsageError(f"config file {files[0]} does not exist")
    return Options(
        config=files[0] if files else None, select=_codes(select), ignore=_codes(ignore),
        extend_select=_codes(extend_select), isolated=isolated,
        overrides=[value for value in config_values if "=" in value],
    )


def _exit_on_internal_errors(errors: list[str]) -> None:
    """Each internal error (a torchlint bug, kept to its file) is one line; any makes the exit 2."""
    for error in errors:
        click.echo(f"torchlint: internal error: {error}", err=True)
    if errors:
        sys.exit(2)


def _narrow(diagnostics: list[Diagnostic], baseline, write_baseline, diff_base) -> list[Diagnostic]:
    """The findings to report: not in the baseline, on rows changed since the git ref."""
    if write_baseline:
        write_baseline_file(diagnostics, write_baseline)
        click.echo(f"Wrote {len(diagnostics)} findings to the baseline {write_baseline}.", err=True)
        sys.exit(0)
    if diff_base:
        changed = changed_rows(diff_base)
        diagnostics = [d for d in diagnostics if changed.is_new(d)]
    if baseline:
        result = apply_baseline(diagnostics, baseline)
        if result.gone:
            entries = "1 baseline entry no longer occurs" if result.gone == 1 else \
                f"{result.gone} baseline entries no longer occur"
            click.echo(f"torchlint: {entries} (fixed or changed): refresh {baseline} with --write-baseline", err=True)
        diagnostics = result.new
    return diagnostics


def _per_settings(resolver: SettingsResolver, named, run) -> list:
    """`run(files, settings)` for each group of files that share their settings; results joined."""
    return [item for settings, group in resolver.groups(named) for item in run(group, settings)]


def _discover(discovery: Discovery, paths: list[str]) -> list[str]:
    """The files to check, with a warning line for each ignore file or pattern left unused."""
    files = discovery.files(paths)
    for warning in discovery.warnings:
        click.echo(f"torchlint: warning: {warning}", err=True)
    return files


def _add_noqa(named, resolver, jobs, roots: list[str]) -> None:
    """`--add-noqa`: write the comments, say how many, exit (2 when a file could not be handled)."""
    from torchlint.add_noqa import add_noqa_files

    results = _per_settings(resolver, named, lambda group, settings: add_noqa_files(group, settings, jobs, roots))
    _report_problems(results)
    added = sum(result.added for result in results)
    click.echo(f"Added {added} noqa directive{'s' if added != 1 else ''}.", err=True)
    _exit_on_internal_errors([result.internal_error for result in results if result.internal_error])
    sys.exit(2 if any(problem.startswith("torchlint: error:") for r in results for problem in r.problems) else 0)


def _report_problems(results) -> None:
    for result in results:
        for problem in result.problems:
            click.echo(problem, err=True)


def _diff(named, resolver, jobs, unsafe_fixes: bool, show_fixes: bool, quiet: bool) -> bool:
    """`--diff`: print what `--fix` would change, write nothing; True when something would change."""
    from torchlint.fix import fix_files

    results = _per_settings(resolver, named, lambda group, settings: fix_files(
        group, settings, jobs, unsafe=unsafe_fixes, write=False, diff=True))
    _report_problems(results)
    for result in sorted(results, key=lambda result: result.filename):
        if result.diff:
            click.echo(result.diff, nl=False)
    would_fix = sum(sum(result.fixed.values()) for result in results)
    if show_fixes and would_fix:
        click.echo(fix_listing([(result.filename, result.fixed) for result in results], "Would fix"), err=True)
    if not quiet:
        _echo_would_fix(would_fix)
    _exit_on_internal_errors([result.internal_error for result in results if result.internal_error])
    return any(result.diff for result in results)


FAIL_ON = {"confirmed": "confirmed", "refuted": "refuted", "not-observed": "not observed in this run",
           "not-reached": "not-reached", "not-checked": "not checked at run time"}


def _fail_on(fail_on: str | None, configured: Severity, runtime: bool) -> tuple[Severity, set[str]]:
    """`--fail-on`: the least severe finding that fails the run (`fail-on` in the configuration
    otherwise), and with --runtime the verdicts that do (every one unless named)."""
    chosen = _codes(fail_on) or []
    levels = [Severity(name) for name in chosen if name in Severity._value2member_map_]
    named_verdicts = [name for name in chosen if name in FAIL_ON]
    unknown = [name for name in chosen if name not in FAIL_ON and name not in Severity._value2member_map_]
    if unknown:
        choices = ", ".join([*(level.value for level in Severity), *FAIL_ON])
        raise click.UsageError(f"--fail-on: unknown level or verdict {unknown[0]!r}; choose from {choices}")
    if len(levels) > 1:
        raise click.UsageError("--fail-on: name one level (error, warning, note or hint)")
    if named_verdicts and not runtime:
        raise click.UsageError("--fail-on: verdicts need --runtime")
    verdicts = {FAIL_ON[name] for name in named_verdicts} or set(FAIL_ON.values())
    return (levels[0] if levels else configured), verdicts


def _runtime_target(paths, module, script_args) -> dict:
    """What --runtime runs: a script or a module, and the arguments it gets (those after `--`)."""
    args = list(script_args or [])
    if module:
        if paths:
            raise click.UsageError(
                f"with -m {module}, {paths[0]} would not be checked or run: put the module's arguments "
                f"after `--` (torchlint check --runtime -m {module} -- {' '.join(paths)})"
            )
        return {"script": None, "module": module, "args": args}
    if not paths or not os.path.isfile(paths[0]):
        raise click.UsageError("--runtime needs the script to run as the single PATH (its arguments after `--`)")
    if len(paths) > 1:
        raise click.UsageError(
            f"--runtime runs one script; {' '.join(paths[1:])} would be its arguments: put them after `--` "
            f"(torchlint check --runtime {paths[0]} -- {' '.join(paths[1:])})"
        )
    return {"script": paths[0], "module": None, "args": args}


def _check_runtime(target, settings, discovery, jobs, device, timeout, keep_stdout, internal_errors, gradient_flow):
    """Static findings for the script's directory (or the working directory with -m), then one
    instrumented run; returns the judged findings, the run record and the RuntimeReport."""
    from torchlint.engine import check_files
    from torchlint.runtime import RuntimeUnavailable, run_script

    script = target["script"]
    files = _discover(discovery, [os.path.dirname(os.path.abspath(script)) if script else "."])
    if script and os.path.abspath(script) not in {os.path.abspath(f) for f in files}:
        files.append(script)
    findings = check_files([(path, display_name(path)) for path in files], settings, jobs, internal_errors)
    sys.stdout.flush()
    saved = None if keep_stdout else os.dup(1)
    if saved is not None:
        os.dup2(2, 1)  # the child inherits file descriptor 1
    try:
        report = run_script(script, target["args"], findings, device=device, timeout=timeout, module=target["module"],
                            gradient_flow=gradient_flow)
    except (RuntimeUnavailable, ValueError) as error:
        raise click.UsageError(str(error)) from None
    finally:
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)
    # Runtime-only findings follow --select/--ignore like the rest.
    enabled = {rule.code for rule in settings.rules}
    diagnostics = sorted((d for d in report.diagnostics if d.code in enabled), key=lambda d: d.sort_key())
    what = script or f"-m {target['module']}"
    for note in report.notes:
        click.echo(f"torchlint: note: {note}", err=True)
    if report.timed_out:
        click.echo(f"torchlint: {what} timed out after {timeout:g} s; verdicts cover what ran", err=True)
    elif report.exit_status != 0:
        click.echo(f"torchlint: {what} exited with status {report.exit_status}; verdicts cover what ran", err=True)
    return diagnostics, _run_record(target, device, report, diagnostics), report


def _write_report(path: str, run: dict, report, diagnostics: list[Diagnostic]) -> None:
    """`--report`: the run's HTML page, with the findings as reported."""
    from torchlint.runtime.report import render_report

    with open(path, "w", encoding="utf-8") as handle:
        handle.write(render_report(run, report, diagnostics))


def _run_record(target, device, report, diagnostics) -> dict:
    verdicts: dict[str, int] = {}
    for d in diagnostics:
        verdicts[d.runtime] = verdicts.get(d.runtime, 0) + 1
    return {
        "script": target["script"], "module": target["module"], "args": target["args"],
        "exit_status": report.exit_status, "timed_out": report.timed_out,
        "device": device, "resolved_device": report.device, "notes": list(report.notes),
        "verdicts": verdicts,
    }


def rule_summary(rule) -> dict:
    return {
        "code": rule.code, "name": rule.name, "summary": rule.summary, "severity": rule.severity.value,
        "default": rule.default_enabled,
        "fixable": rule.fix_applicability.value if rule.fix_applicability else None,
        "runtime_only": rule.runtime_only,
    }


@cli.command(short_help="Explain a rule (by code or name), or list every rule with --all.")
@click.argument("code", required=False)
@click.option("--all", "show_all", is_flag=True, help="List every rule.")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True)
def rule(code, show_all, output_format) -> None:
    """Explain the rule CODE (a code such as TL101, or a name such as view-after-permute), or list
    every rule with --all."""
    if show_all:
        rules = all_rules()
        if output_format == "json":
            click.echo(json.dumps([rule_summary(r) for r in rules], indent=2))
        else:
            for r in rules:
                marks = [mark for mark, applies in (("off by default", not r.default_enabled),
                                                    ("runtime only: --runtime", r.runtime_only)) if applies]
                click.echo(f"{r.code}  {r.name:<40} {r.severity.value:<8} {r.summary}"
                           + (f" ({'; '.join(marks)})" if marks else ""))
        return
    if not code:
        raise click.UsageError("give a rule code (e.g. TL101) or --all")
    found = find_rule(code)
    if found is None:
        raise click.UsageError(f"unknown rule code '{code}'")
    if output_format == "json":
        click.echo(json.dumps({**rule_summary(found), "doc": found.doc()}, indent=2))
    else:
        click.echo(rule_page(found), nl=False)


@cli.command(short_help="Run the language server (LSP) on stdio, for editors.")
def server() -> None:
    """Run the language server (LSP) on stdin and stdout, for editors (needs `torchlint[server]`)."""
    from torchlint.server import ServerUnavailable, run_server

    try:
        run_server()
    except ServerUnavailable as error:
        raise click.UsageError(str(error)) from None


@cli.command(short_help="Run an MCP server on stdio, for coding agents.")
def mcp() -> None:
    """Run a Model Context Protocol server on stdin and stdout, for coding agents: its tools check
    code, explain a rule and return the safe fixes as a diff (see docs/editors.md)."""
    from torchlint.mcp import run_server

    run_server()


def main() -> None:
    cli(prog_name="torchlint")

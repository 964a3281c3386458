"""The command line: `torchlint check`, `torchlint rule` and `torchlint server`."""

from __future__ import annotations

import json
import os
import sys

import click

from torchlint import __version__
from torchlint.config import ConfigError, Options, resolve_settings
from torchlint.diagnostics import Diagnostic
from torchlint.docs import rule_page
from torchlint.discovery import Discovery, PathError, display_name
from torchlint.engine import check_files
from torchlint.fix import fix_files
from torchlint.output import OutputContext, format_names, render
from torchlint.output.text import fix_listing, forget_sources, render_statistics
from torchlint.rules import all_rules, get_rule


def _codes(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [part.strip() for part in value.split(",") if part.strip()]


def _use_color(no_color: bool) -> bool:
    return not no_color and "NO_COLOR" not in os.environ and sys.stdout.isatty()


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


@cli.command(cls=_CheckCommand)
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--select", help="Comma-separated rule codes or prefixes to enable (replaces the default set).")
@click.option("--ignore", help="Comma-separated rule codes or prefixes to disable.")
@click.option("--extend-select", help="Comma-separated rule codes or prefixes to enable in addition.")
@click.option("--output-format", type=click.Choice(format_names()), default="full", show_default=True)
@click.option("--exit-zero", is_flag=True, help="Exit with status 0 even when there are findings.")
@click.option("--statistics", is_flag=True, help="Print the number of findings per rule instead of the findings.")
@click.option("--config", "config_file", type=click.Path(dir_okay=False), help="Read settings from this TOML file.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), help="Processes to use (default: all cores).")
@click.option("--force-exclude", is_flag=True, help="Apply excludes to files named on the command line too.")
@click.option("-q", "--quiet", is_flag=True, help="Print findings only, no summary.")
@click.option("--no-color", is_flag=True, help="Never colour the output (also: the NO_COLOR variable).")
@click.option("--no-cache", is_flag=True, help="Do not read or write the result cache (.torchlint_cache/).")
@click.option("--fix", is_flag=True, help="Apply the safe fixes, then report the findings left.")
@click.option("--unsafe-fixes", is_flag=True,
              help="Offer unsafe fixes too: `--fix` and `--diff` apply them, and they are shown as `[*]`.")
@click.option("--diff", is_flag=True,
              help="Print a diff of what `--fix` would change; write nothing (exit 1 when there is a change).")
@click.option("--show-fixes", is_flag=True, help="List what was fixed (or with `--diff`: would be), per file and rule.")
@click.option("--exit-non-zero-on-fix", is_flag=True, help="Exit with status 1 when fixes were applied, too.")
@click.option("--runtime", is_flag=True,
              help="Run the script (the single PATH; its arguments after `--`) instrumented and give each finding a verdict.")
@click.option("-m", "--module", "module", metavar="MODULE",
              help="With --runtime: run `python -m MODULE` (e.g. pytest) instead of a script; its arguments after `--`.")
@click.option("--fail-on", "fail_on", metavar="VERDICTS",
              help="With --runtime: only findings with these verdicts fail the run (comma-separated: "
                   "confirmed, refuted, not-observed, not-reached). Default: every finding.")
@click.option("--run-record", "run_record", type=click.Path(dir_okay=False), metavar="FILE",
              help="With --runtime: write the run record (script, arguments, exit status, timed out, device, verdict counts) as JSON to FILE.")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda", "mps", "logical:cuda", "logical:mps"]),
              default="auto", show_default=True, help="With --runtime: where the script's tensors go.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), help="With --runtime: stop the script after SECONDS.")
def check(paths, select, ignore, extend_select, output_format, exit_zero, statistics, config_file, jobs,
          force_exclude, quiet, no_color, no_cache, fix, unsafe_fixes, diff, show_fixes, exit_non_zero_on_fix,
          runtime, module, fail_on, run_record, device, timeout) -> None:
    """Check PATHS (files or directories; default: the current directory).

    With --runtime: `torchlint check --runtime SCRIPT -- ARGS...` (or `--runtime -m MODULE -- ARGS...`)
    runs the script once, as `python SCRIPT ARGS` would, and gives each finding in the files it ran
    a verdict: confirmed, refuted, not observed in this run, or not-reached.
    """
    script_args = click.get_current_context().meta.get("script_args")
    if config_file and not os.path.isfile(config_file):
        raise click.UsageError(f"config file {config_file} does not exist")
    settings = resolve_settings(
        Options(config=config_file, select=_codes(select), ignore=_codes(ignore), extend_select=_codes(extend_select))
    )
    discovery = Discovery(settings.exclude, settings.root, force_exclude=force_exclude)
    script_failed = False
    internal_errors: list[str] = []
    fixed = None
    listing = ""
    run = None
    if runtime:
        if fix or diff:
            raise click.UsageError("--fix and --diff cannot be combined with --runtime")
        # Machine-readable output owns stdout: the script's stdout goes to stderr then.
        keep_stdout = output_format in ("full", "concise") and not statistics
        target = _runtime_target(paths, module, script_args)
        diagnostics, run = _check_runtime(
            target, settings, discovery, jobs, device, timeout, keep_stdout, internal_errors
        )
        script_failed = run["timed_out"] or run["exit_status"] != 0
        if run_record:
            with open(run_record, "w", encoding="utf-8") as handle:
                json.dump(run, handle, indent=2)
    else:
        if device != "auto" or timeout is not None or module or fail_on or run_record:
            raise click.UsageError("--device, --timeout, -m, --fail-on and --run-record need --runtime")
        paths = (*paths, *(script_args or ()))  # without --runtime, `--` only ends the options
        files = discovery.files(list(paths) or ["."])
        named = [(path, display_name(path)) for path in files]
        if diff:
            changed = _diff(named, settings, jobs, unsafe_fixes, show_fixes, quiet)
            sys.exit(1 if changed and not exit_zero else 0)
        if fix:
            results = fix_files(named, settings, jobs, unsafe=unsafe_fixes, use_cache=not no_cache)
            _report_problems(results)
            internal_errors = [result.internal_error for result in results if result.internal_error]
            diagnostics = sorted((d for result in results for d in result.diagnostics), key=Diagnostic.sort_key)
            fixed = sum(sum(result.fixed.values()) for result in results)
            if show_fixes:
                listing = fix_listing([(result.filename, result.fixed) for result in results], "Fixed")
            forget_sources()  # the source frames show the files as fixed
        else:
            diagnostics = check_files(named, settings, jobs, internal_errors, use_cache=not no_cache)
    context = OutputContext(
        color=_use_color(no_color), rules=settings.rules, summary=not quiet, unsafe_fixes=unsafe_fixes,
        fixed=fixed, fix_listing=listing if output_format in ("full", "concise") or statistics else "",
        run=run,
    )
    if listing and not context.fix_listing:
        click.echo(listing, err=True)  # keep machine-readable output parseable
    if statistics:
        output = render_statistics(diagnostics, context)
    else:
        output = render(output_format, diagnostics, context)
    if script_failed and not diagnostics and output_format in ("full", "concise") and not statistics:
        output = "" if quiet else "No findings in the code that ran, but the script did not finish.\n"
    click.echo(output, nl=False)
    _exit_on_internal_errors(internal_errors)
    failing = diagnostics if not runtime else [d for d in diagnostics if d.runtime in _fail_verdicts(fail_on)]
    failed = bool(failing) or script_failed or (exit_non_zero_on_fix and bool(fixed))
    sys.exit(1 if failed and not exit_zero else 0)


def _exit_on_internal_errors(errors: list[str]) -> None:
    """Each internal error (a torchlint bug, kept to its file) is one line; any makes the exit 2."""
    for error in errors:
        click.echo(f"torchlint: internal error: {error}", err=True)
    if errors:
        sys.exit(2)


def _report_problems(results) -> None:
    for result in results:
        for problem in result.problems:
            click.echo(problem, err=True)


def _diff(named, settings, jobs, unsafe_fixes: bool, show_fixes: bool, quiet: bool) -> bool:
    """`--diff`: print what `--fix` would change, write nothing; True when something would change."""
    results = fix_files(named, settings, jobs, unsafe=unsafe_fixes, write=False, diff=True)
    _report_problems(results)
    for result in sorted(results, key=lambda result: result.filename):
        if result.diff:
            click.echo(result.diff, nl=False)
    would_fix = sum(sum(result.fixed.values()) for result in results)
    if show_fixes and would_fix:
        click.echo(fix_listing([(result.filename, result.fixed) for result in results], "Would fix"), err=True)
    if not quiet:
        if would_fix:
            click.echo(f"Would fix {would_fix} finding{'s' if would_fix != 1 else ''}.", err=True)
        else:
            click.echo("No fixes would be applied.", err=True)
    _exit_on_internal_errors([result.internal_error for result in results if result.internal_error])
    return any(result.diff for result in results)


FAIL_ON = {"confirmed": "confirmed", "refuted": "refuted", "not-observed": "not observed in this run",
           "not-reached": "not-reached"}


def _fail_verdicts(fail_on: str | None) -> set[str]:
    if fail_on is None:
        return set(FAIL_ON.values())
    chosen = _codes(fail_on) or []
    unknown = [name for name in chosen if name not in FAIL_ON]
    if unknown:
        raise click.UsageError(f"--fail-on: unknown verdict {unknown[0]!r}; choose from {', '.join(FAIL_ON)}")
    return {FAIL_ON[name] for name in chosen}


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


def _check_runtime(target, settings, discovery, jobs, device, timeout, keep_stdout, internal_errors):
    """Static findings for the script's directory (or the working directory with -m), then one
    instrumented run; returns the judged findings and the run record."""
    from torchlint.runtime import RuntimeUnavailable, run_script

    script = target["script"]
    files = discovery.files([os.path.dirname(os.path.abspath(script)) if script else "."])
    if script and os.path.abspath(script) not in {os.path.abspath(f) for f in files}:
        files.append(script)
    findings = check_files([(path, display_name(path)) for path in files], settings, jobs, internal_errors)
    sys.stdout.flush()
    saved = None if keep_stdout else os.dup(1)
    if saved is not None:
        os.dup2(2, 1)  # the child inherits file descriptor 1
    try:
        report = run_script(script, target["args"], findings, device=device, timeout=timeout, module=target["module"])
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
    return diagnostics, _run_record(target, device, report, diagnostics)


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
    }


@cli.command()
@click.argument("code", required=False)
@click.option("--all", "show_all", is_flag=True, help="List every rule.")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True)
def rule(code, show_all, output_format) -> None:
    """Explain the rule CODE (e.g. TL101), or list every rule with --all."""
    if show_all:
        rules = all_rules()
        if output_format == "json":
            click.echo(json.dumps([rule_summary(r) for r in rules], indent=2))
        else:
            for r in rules:
                default = "" if r.default_enabled else " (off by default)"
                click.echo(f"{r.code}  {r.name:<40} {r.severity.value:<8} {r.summary}{default}")
        return
    if not code:
        raise click.UsageError("give a rule code (e.g. TL101) or --all")
    found = get_rule(code.strip().upper())
    if found is None:
        raise click.UsageError(f"unknown rule code '{code}'")
    if output_format == "json":
        click.echo(json.dumps({**rule_summary(found), "doc": found.doc()}, indent=2))
    else:
        click.echo(rule_page(found), nl=False)


@cli.command()
def server() -> None:
    """Run the language server (LSP) on stdin and stdout, for editors (needs `torchlint[server]`)."""
    from torchlint.server import ServerUnavailable, run_server

    try:
        run_server()
    except ServerUnavailable as error:
        raise click.UsageError(str(error)) from None


def main() -> None:
    cli(prog_name="torchlint")

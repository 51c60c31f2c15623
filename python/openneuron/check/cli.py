"""Command line: ``openneuron check SCRIPT [args] [--out DIR] [--fail-on LIST] [--timeout S]``.
Exit code 0 when none of the --fail-on categories was found, 1 when one was, 2 for a usage
error. Whatever the script does, the report is written and the tool itself does not raise."""

import argparse
import sys

from openneuron.check.report import FAIL_CATEGORIES

_STAGES = ("lint", "cpu", "neuron", "report")
_STAGE_TEXT = {
    "lint": "linting the source",
    "cpu": "running on cpu",
    "neuron": "running on neuron (profiled)",
    "report": "comparing and reporting",
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="openneuron check",
        description="Run a PyTorch script on CPU and on neuron and report whether it is ready "
        "to move: op coverage, numerics, portability, compile, performance.",
    )
    parser.add_argument("script", help="the Python script to check")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")
    parser.add_argument(
        "--out",
        default="openneuron-check",
        help="directory for report.json, report.html and trace.json",
    )
    parser.add_argument(
        "--fail-on",
        default="",
        help="comma-separated categories that make the exit code 1: " + ",".join(FAIL_CATEGORIES),
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        help="seconds each device's run may take (default 600)",
    )
    return parser


def _split_options(argv: list[str]) -> list[str]:
    """Tool options may come before or after SCRIPT; everything after SCRIPT that is not a
    tool option belongs to the script."""
    tool, script_part, i = [], [], 0
    takes_value = {"--out", "--fail-on", "--timeout"}
    while i < len(argv):
        arg = argv[i]
        name = arg.split("=", 1)[0]
        if name in takes_value:
            tool.append(arg)
            if "=" not in arg and i + 1 < len(argv):
                tool.append(argv[i + 1])
                i += 1
        elif arg in ("-h", "--help") and not script_part:
            tool.append(arg)
        else:
            script_part.append(arg)
        i += 1
    return tool + (["--"] if script_part else []) + script_part


class _Progress:
    """A progress bar over the check's stages (rich when available)."""

    def __init__(self) -> None:
        self._bar = None
        try:
            from rich.progress import Progress

            self._bar = Progress(transient=False)
            self._task = self._bar.add_task("openneuron check", total=len(_STAGES))
            self._bar.start()
        except Exception:
            self._bar = None
        self._done = 0

    def __call__(self, stage: str) -> None:
        if self._bar is not None:
            self._bar.update(
                self._task, completed=_STAGES.index(stage), description=_STAGE_TEXT[stage]
            )
        else:
            print(
                f"[{_STAGES.index(stage) + 1}/{len(_STAGES)}] {_STAGE_TEXT[stage]}",
                file=sys.stderr,
                flush=True,
            )

    def close(self) -> None:
        if self._bar is not None:
            self._bar.update(self._task, completed=len(_STAGES), description="done")
            self._bar.stop()


def main(argv: list[str] | None = None) -> None:
    options = _parser().parse_args(_split_options(list(sys.argv[1:] if argv is None else argv)))
    fail_on = [c.strip() for c in options.fail_on.split(",") if c.strip()]
    unknown = [c for c in fail_on if c not in FAIL_CATEGORIES]
    if unknown:
        print(
            f"openneuron check: unknown --fail-on categories {unknown}; known: "
            f"{', '.join(FAIL_CATEGORIES)}",
            file=sys.stderr,
        )
        sys.exit(2)
    from openneuron.check import check_script, exit_code, write_outputs
    from openneuron.check.terminal import print_summary

    progress = _Progress()
    report = None
    try:
        report = check_script(options.script, options.args, options.timeout, options.out, progress)
    except Exception as error:  # a fault of the tool: said plainly, with what was gathered
        print(f"openneuron check: internal error: {type(error).__name__}: {error}", file=sys.stderr)
    finally:
        progress.close()
    if report is None:
        sys.exit(2)
    paths = write_outputs(report, options.out)
    print_summary(report)
    print(f"report: {paths['html']}  json: {paths['json']}")
    sys.exit(exit_code(report, fail_on))

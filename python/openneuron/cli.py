"""The ``openneuron`` console script: ``openneuron check SCRIPT [args]``."""

import sys


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in ("check",):
        print(
            "usage: openneuron check SCRIPT [args] [--out DIR] [--fail-on LIST] [--timeout S]",
            file=sys.stderr,
        )
        sys.exit(2)
    from openneuron.check.cli import main as check_main

    check_main(sys.argv[2:])

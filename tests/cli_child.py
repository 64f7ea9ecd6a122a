"""The vyre-async command line in a child process, once per argument list.

Usage: ``python tests/cli_child.py '[["validate", "F"], ["run", "F", "--out", "O"]]'``;
each call's exit code follows a ``--- exit N`` line on standard error, and the codes
are printed as a JSON list at the end. The tests run it under an address-space limit
and a timeout.
"""

from __future__ import annotations

import json
import sys

from vyre_async.cli import main


def run_all() -> int:
    """Run each argument list through ``main``; print the codes."""
    codes = []
    for argv in json.loads(sys.argv[1]):
        try:
            codes.append(main(argv))
        except SystemExit as exc:  # argparse refuses a command line so
            codes.append(exc.code if isinstance(exc.code, int) else 1)
        print(f"--- exit {codes[-1]}", file=sys.stderr, flush=True)
    print(json.dumps(codes))
    return 0


if __name__ == "__main__":
    sys.exit(run_all())

"""The vyre-async command line in a child process, its blocks slowed as job_child.py's.

Usage: ``python tests/cli_slow_child.py run JOB --out DIR``; ``VYRE_TEST_BLOCK_DELAY``
(and the other hooks of job_child.py) set how slow. Exits with the command's code.
"""

from __future__ import annotations

import functools
import sys

from job_child import slowed

from vyre_async import cli
from vyre_async.jobs import JobRunner

if __name__ == "__main__":
    cli.JobRunner = functools.partial(JobRunner, execute=slowed)  # type: ignore[misc]
    sys.exit(cli.main(sys.argv[1:]))

"""``import vyre_async`` imports nothing a job may never use (#38: start in a second)."""

from __future__ import annotations

import json
import subprocess
import sys

#: Modules only some runs use: YAML job files, the metrics endpoint's HTTP server,
#: CSV export, "did you mean" suggestions in job-file errors, structlog (and the rich
#: it imports where installed) until logging is configured.
OPTIONAL = ("yaml", "wsgiref", "http.server", "socketserver", "csv", "difflib", "structlog", "rich")


def test_importing_the_package_leaves_the_optional_modules_unimported() -> None:
    """A fresh interpreter that imports ``vyre_async`` has none of the optional modules."""
    probe = (
        "import json, sys, vyre_async; "
        f"print(json.dumps([m for m in {OPTIONAL!r} if m in sys.modules]))"
    )
    done = subprocess.run(  # noqa: S603 - this interpreter on a fixed snippet
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert json.loads(done.stdout) == []

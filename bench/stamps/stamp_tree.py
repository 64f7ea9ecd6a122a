"""Copy a vyre_async tree and insert timestamps on the traversal path.

Usage: ``python bench/stamps/stamp_tree.py SRC_ROOT DST_ROOT {run,submit}``

``run`` stamps a tree whose traversals go through ``PreparedSequence.run`` (from
commit 60fc1bd on); ``submit`` stamps the earlier path (``submit`` + ``timed``, as in
a2b73ed). Each stamp is ``__import__('stamps').S(name)``, so ``bench/stamps`` must be
on ``sys.path`` (gpu_stamps.py puts it there). An anchor that is not found stops the
script: stamps only make sense on the code they were written for.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

RUN = [
    (
        "backends/_prepared.py",
        "prefix = self._prefix if not scalars else self._prefix_with(",
        "A run",
        True,
    ),
    (
        "backends/_cuda.py",
        "        self._check_open()\n"
        "        check_repeat_count(repeat_count)\n"
        "        plan = self._plan_of(prepared)",
        "B _run_bound",
        False,
    ),
    (
        "backends/_cuda.py",
        "        kit = self._run_events.pop()",
        "C reserved",
        False,
    ),
    (
        "backends/_cuda.py",
        "            device.call(driver.cuEventRecord, timing[0], stream)",
        "F start event",
        True,
    ),
    (
        "backends/_cuda.py",
        "        if timing is not None:\n"
        "            device.call(driver.cuEventRecord, timing[1], stream)",
        "Fg body launched",
        False,
    ),
    (
        "backends/_cuda.py",
        "            device.call(device.driver.cuEventRecord, event, stream)",
        "Fz completion event",
        True,
    ),
    (
        "streams/_watcher.py",
        "                if result != CUDA_ERROR_NOT_READY:\n"
        "                    del self._following[key]",
        "G seen",
        False,
    ),
    (
        "streams/_watcher.py",
        "                    self._settle(watch, result)",
        "H settled",
        True,
    ),
    (
        "backends/_cuda.py",
        "        if pinned is not None:\n            try:\n                outputs = plan.copy_out",
        "I waited",
        False,
    ),
    (
        "backends/_cuda.py",
        "        return SequenceResult(outputs, device_ns)",
        "J run ret",
        False,
    ),
]
SUBMIT = [
    (
        "backends/_prepared.py",
        "return self._submit(repeat_count, scalars, config, time.perf_counter_ns())",
        "A submit",
        False,
    ),
    (
        "backends/_core.py",
        "        task_group = self._check_open()\n"
        "        _check_repeat_count(repeat_count)\n"
        "        config = config or _DEFAULT_CONFIG\n"
        "        completion",
        "B _submit_bound",
        False,
    ),
    (
        "backends/_core.py",
        "waits = self._registry.reserve(uses, completion)",
        "C reserved",
        True,
    ),
    (
        "backends/_cuda.py",
        "        def enqueue() -> None:\n"
        "            device = self._cuda()\n"
        "            driver = device.driver\n"
        "            loaded = {id(k)",
        "D planned",
        False,
    ),
    (
        "backends/_cuda.py",
        "loaded = {id(k): self._loaded(k) for k in kernels}",
        "E enqueue()",
        False,
    ),
    (
        "backends/_cuda.py",
        "                    device.call(driver.cuEventRecord, timing[0], stream)",
        "F start event",
        True,
    ),
    (
        "backends/_cuda.py",
        "                if timing is not None:\n"
        "                    device.call(driver.cuEventRecord, timing[1], stream)",
        "Fg body launched",
        False,
    ),
    (
        "backends/_cuda.py",
        "                self._finish_on(key, stream, completion, lambda: None, timing)",
        "Fz completion event",
        True,
    ),
    (
        "streams/_watcher.py",
        "                if result == CUDA_ERROR_NOT_READY:\n"
        "                    break\n"
        "                progressed = True",
        "G seen",
        False,
    ),
    (
        "streams/_watcher.py",
        "            watch.completion.complete(error)",
        "H completed",
        True,
    ),
    (
        "streams/_pending.py",
        "            await self._wait_completion()",
        "I woke",
        True,
    ),
    (
        "streams/_pending.py",
        "        return TimedResult(outputs=self._outputs[0], timing=timing)",
        "J timed ret",
        False,
    ),
]
COMMON = [
    (
        "sessions/_repeat.py",
        "            return words, device_ns",
        "K run_prepared ret",
        False,
    ),
    (
        "sessions/_analyses.py",
        "    run.levels_run = int(words[_bfs.STATE_LEVELS_RUN])",
        "L traverse ret",
        True,
    ),
    (
        "sessions/_graph_session.py",
        "        return int(words[_bfs.STATE_REACHED])",
        "M aexit done",
        False,
    ),
]


def insert(path: Path, anchor: str, name: str, after: bool) -> None:
    """Insert a stamp on its own line after (or before) the lines ``anchor`` spans."""
    text = path.read_text()
    at = text.index(anchor)  # ValueError: the anchor is not in this tree
    start = text.rfind("\n", 0, at) + 1
    indent = re.match(r"\s*", text[start:]).group(0)  # type: ignore[union-attr]
    line = f"{indent}__import__('stamps').S({name!r})\n"
    if after:
        end = text.index("\n", at + len(anchor) - 1) + 1
        text = text[:end] + line + text[end:]
    else:
        text = text[:start] + line + text[start:]
    path.write_text(text)


def main() -> None:
    """Copy and stamp."""
    src, dst, layout = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    shutil.copytree(src / "vyre_async", dst / "vyre_async")
    for rel, anchor, name, after in (RUN if layout == "run" else SUBMIT) + COMMON:
        insert(dst / "vyre_async" / rel, anchor, name, after)


if __name__ == "__main__":
    main()

"""How much host memory this process may use, and refusing work estimated above it.

Loaders and the job runner estimate what a graph or a job will allocate from its
parameters or a file's header, before allocating anything, and compare it with
:func:`host_memory_limit`: the machine's physical memory, lowered by a cgroup
limit or an address-space rlimit (less what the process already maps), unless a
caller passes its own limit.
"""

from __future__ import annotations

import os
import resource
from pathlib import Path

from .errors import ValidationError, VyreError

__all__ = [
    "HostMemory",
    "available_host_memory",
    "check_host_memory",
    "host_memory_limit",
    "size_text",
]

GIB = 1 << 30


class HostMemory:
    """A byte limit and where it comes from (for messages).

    Attributes:
        limit: Bytes this process may allocate.
        source: What set the limit, e.g. ``"physical memory"``.
    """

    __slots__ = ("limit", "source")

    def __init__(self, limit: int, source: str) -> None:
        self.limit = limit
        self.source = source


def host_memory_limit(configured: int | None = None) -> HostMemory:
    """The bytes this process may allocate: ``configured`` if given, else the tightest of
    physical memory, the cgroup's ``memory.max`` and ``RLIMIT_AS`` (less what is mapped)."""
    if configured is not None:
        return HostMemory(configured, "the configured limit")
    found = [HostMemory(_physical(), "this machine's physical memory")]
    cgroup = _cgroup_limit()
    if cgroup is not None:
        found.append(HostMemory(cgroup, "the cgroup memory limit"))
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        found.append(HostMemory(max(0, soft - _mapped()), "the address-space limit (ulimit -v)"))
    return min(found, key=lambda m: m.limit)


def available_host_memory() -> int:
    """Bytes this process could allocate now: the kernel's ``MemAvailable`` estimate
    where there is one, never above :func:`host_memory_limit`. Reads files: call it off
    the event loop."""
    limit = host_memory_limit().limit
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return min(limit, int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    return limit


def check_host_memory(
    need: int,
    what: str,
    *,
    fix: str,
    limit: int | None = None,
    error: type[VyreError] = ValidationError,
) -> None:
    """Refuse work estimated to need more host memory than the limit.

    Args:
        need: Estimated bytes.
        what: What needs them, with its numbers (the start of the message).
        fix: What to do instead.
        limit: Bytes allowed; default :func:`host_memory_limit`.
        error: The error class to raise.

    Raises:
        VyreError: ``error``, naming the estimate, the limit and its source.
    """
    memory = host_memory_limit(limit)
    if need > memory.limit:
        raise error(
            f"{what} needs about {size_text(need)} of host memory, more than the "
            f"{size_text(memory.limit)} of {memory.source}",
            fix=fix,
        )


def size_text(nbytes: int) -> str:
    """``12.3 GiB`` / ``456 MiB`` style text for a byte count."""
    if nbytes >= GIB:
        return f"{nbytes / GIB:,.1f} GiB"
    return f"{nbytes / (1 << 20):,.0f} MiB"


def _physical() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):  # not on this platform: no physical bound known
        return 1 << 62


def _cgroup_limit() -> int | None:
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 1 << 60:  # "max" or a huge number: no limit
            return int(text)
    return None


def _mapped() -> int:
    """Bytes of address space this process maps now (``VmSize``)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0

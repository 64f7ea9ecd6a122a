"""Claiming an output folder for one run: refuse what is foreign, lock, keep only its own.

A folder without a manifest must be empty but for a lock and temp files of a run
that stopped at once; a job's folder may hold only the job's own names, its
committed files, and what the last run (its writer token) left uncommitted. The
lock is an ``flock`` on ``.lock`` that the kernel drops with the process.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import secrets
from pathlib import Path

from ...errors import ConfigurationError
from ...logging import get_logger
from ._atomic import TEMP_PREFIX, Folder, NotPlainError
from ._layout import (
    ARRAYS_DIR,
    CHUNK_NAME,
    CHUNKS_DIR,
    FOREIGN_FIX,
    LOCK_FILE,
    MANIFEST_FILE,
    ROOT_DIRS,
    ROOT_FILES,
    ROOT_TEMP,
    ChunkFormatName,
    own_uncommitted,
)
from ._manifest_key import ManifestKey, check_seal
from ._records import FORMAT_VERSION, Manifest

_log = get_logger("vyre_async.jobs")


def unusable(folder: Path, exc: OSError) -> ConfigurationError:
    """The error for a folder that an OSError (or a link in it) makes unusable."""
    if isinstance(exc, NotPlainError):
        return ConfigurationError(
            f"output folder {folder}: {exc.filename} is {exc.strerror}; vyre-async never "
            "follows a link or writes over something else in its output folder",
            fix=FOREIGN_FIX,
        )
    return ConfigurationError(
        f"output folder {folder} cannot be used: {exc.strerror or exc}",
        fix="choose a folder you can write to with --out DIR.",
    )


def refuse_a_folder_without_a_job(root: Folder, resume: bool) -> None:
    """Before writing anything (the lock file included): a folder without a manifest
    must be empty but for a lock and temp files of a run that stopped at once."""
    kinds = dict(root.entries())
    if MANIFEST_FILE in kinds:
        return
    refuse_foreign(root, kinds, has_manifest=False)
    if resume:
        raise ConfigurationError(
            f"output folder {root.path} holds no job (no {MANIFEST_FILE}), so --resume has "
            "nothing to continue",
            fix="run without --resume to start the job in it.",
        )


def refuse_foreign(root: Folder, kinds: dict[str, str], *, has_manifest: bool) -> None:
    """Refuse a folder whose entries (``name -> kind``) are not all a job's own.

    Raises:
        ConfigurationError: Naming up to three of them.
    """
    foreign = foreign_entries(kinds, has_manifest=has_manifest)
    links = any(kind == "link" for kind in kinds.values())
    if not has_manifest and not links and "dir" in (kinds.get(CHUNKS_DIR), kinds.get(ARRAYS_DIR)):
        raise ConfigurationError(
            f"output folder {root.path} holds {CHUNKS_DIR}/ or {ARRAYS_DIR}/ but no "
            f"{MANIFEST_FILE}: without it, committed results cannot be told from "
            "anything else, so nothing in it is used, deleted or overwritten",
            fix=f"restore {MANIFEST_FILE} if it was deleted (then --resume continues), "
            "or choose another folder with --out DIR.",
        )
    if foreign:
        shown = ", ".join(foreign[:3]) + (", ..." if len(foreign) > 3 else "")
        raise ConfigurationError(
            f"output folder {root.path} holds {shown}, which vyre-async did not write"
            + ("" if has_manifest else " (a new job's folder must be empty)"),
            fix=FOREIGN_FIX,
        )


def foreign_entries(kinds: dict[str, str], *, has_manifest: bool) -> list[str]:
    """The entries of a folder (``name -> kind``) that are not a job's own, described."""
    foreign = []
    for name, kind in sorted(kinds.items()):
        if ROOT_TEMP.match(name) or (name == LOCK_FILE and kind == "file"):
            continue
        if has_manifest and (
            (name in ROOT_FILES and kind == "file") or (name in ROOT_DIRS and kind == "dir")
        ):
            continue
        foreign.append(_described(name, kind))
    return foreign


def _described(name: str, kind: str) -> str:
    return f"{name} ({'a symlink' if kind == 'link' else kind})"


def take_lock(root: Folder) -> int:
    """Take the folder's advisory lock; return its descriptor (closing it releases it)."""
    try:
        fd = os.open(
            LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=root.fd
        )
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NotPlainError(exc.errno, "a symlink", LOCK_FILE) from None
        raise
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
        os.close(fd)
        pid = holder if holder.isdigit() else None
        raise ConfigurationError(
            f"output folder {root.path} is in use by another vyre-async run "
            f"({f'pid {pid}' if pid else 'its pid is not recorded yet'})",
            fix=f"wait for that run to end{f' or stop it (kill -TERM {pid})' if pid else ''}, "
            "or choose another folder with --out DIR.",
        ) from None
    except BaseException:
        os.close(fd)
        raise
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def check_same_job(
    folder: Path,
    old: Manifest,
    fingerprint: str,
    total_items: int,
    resume: bool,
    chunk_format: ChunkFormatName,
    key: ManifestKey | None,
) -> None:
    """Refuse to continue a job's folder of another format, without ``resume``, whose
    manifest's MAC does not hold for ``key``, with another job, or in another chunk
    format.

    Raises:
        ConfigurationError: With both formats, fingerprints, item counts or formats,
            or what is wrong with the MAC.
    """
    if old.format != FORMAT_VERSION:
        raise ConfigurationError(
            f"output folder {folder} holds job {old.job!r} in manifest format {old.format}, "
            f"written by an earlier vyre-async; this one continues format {FORMAT_VERSION} "
            "folders only (its records stay readable: read_records, vyre-async verify)",
            fix="finish the job with the vyre-async version that started it, or start it "
            "again in a new folder with --out DIR.",
        )
    if not resume:
        raise ConfigurationError(
            f"output folder {folder} already holds job {old.job!r} "
            f"({old.committed} of {old.total_items} items committed"
            f"{', complete' if old.complete else ''})",
            fix="pass --resume to continue it, or choose another folder with --out DIR "
            "(or delete this one).",
        )
    check_seal(folder / MANIFEST_FILE, old, key)  # before anything it says is believed
    if old.fingerprint != fingerprint:
        raise ConfigurationError(
            f"output folder {folder} holds job {old.job!r} with another graph or other "
            f"workloads (fingerprint {old.fingerprint[:12]}, this job's {fingerprint[:12]})",
            fix="resume with the job file that made it, or choose another folder with --out DIR.",
        )
    if old.total_items != total_items:
        raise ConfigurationError(
            f"output folder {folder} holds job {old.job!r} of {old.total_items} items; this "
            f"job has {total_items} (the fingerprints agree, so {MANIFEST_FILE} was changed)",
            fix="restore the manifest from a backup, or choose another folder with --out DIR.",
        )
    if old.chunk_format != chunk_format:
        raise ConfigurationError(
            f"output folder {folder} holds job {old.job!r} written as {old.chunk_format} "
            f"chunks; this run writes {chunk_format} (one folder's chunks share one format)",
            fix=f'resume it with [output] format = "{old.chunk_format}", or choose another '
            "folder with --out DIR.",
        )


def new_writer(old: Manifest | None) -> str:
    """A fresh writer token, none the folder's manifest or chunk names use."""
    used = {old.writer} | {c.name[7:15] for c in old.chunks} if old is not None else set()
    while (token := secrets.token_hex(4)) in used:
        pass
    return token


def classify(
    folder: Path, chunks: Folder, arrays: Folder, manifest: Manifest | None
) -> list[tuple[Folder, str, int]]:
    """What the last writer left uncommitted, as ``(folder, name, chunk number)``.

    The last writer (the manifest's token) may have left the chunks the manifest
    names as being written (``writing``: the next :data:`CHUNKS_WRITTEN_AT_ONCE`
    after the committed ones, none once the job is complete) and array files of
    chunks from the first of those on, each perhaps still under a temp name. Anything
    else unlisted is refused: a committed chunk whose entry was taken out of the
    manifest, or a file that merely looks like one of the runner's.

    Raises:
        ConfigurationError: A file that is neither committed nor the last writer's.
    """
    leftovers, foreign = sort_unlisted(chunks, arrays, manifest)
    for place, names in foreign:
        raise foreign_in(folder, place, names)
    return leftovers


def sort_unlisted(
    chunks: Folder, arrays: Folder, manifest: Manifest | None
) -> tuple[list[tuple[Folder, str, int]], list[tuple[Folder, list[str]]]]:
    """The entries of ``chunks/`` and ``arrays/`` the manifest does not commit: the last
    writer's leftovers (see :func:`classify`), and the others, described, per folder."""
    chunk_names = {c.name for c in manifest.chunks} if manifest else set()
    array_names = (
        {f.path.removeprefix(f"{ARRAYS_DIR}/") for c in manifest.chunks for f in c.files}
        if manifest
        else set()
    )
    writer = manifest.writer if manifest is not None else None
    writing: dict[str, int] = {}
    for name in manifest.writing if manifest is not None else ():
        match = CHUNK_NAME.match(name)
        if match is not None and match[2] == writer:
            writing[name] = int(match[1])
    temp = rf"(?:{re.escape(TEMP_PREFIX)}\d+-)?"
    names = "|".join(map(re.escape, writing)) or r"(?!)"
    own_chunk = re.compile(rf"^{temp}({names})$")
    own_array = own_uncommitted(writer, "npz") if writer is not None else None
    first_writing = min(writing.values(), default=None)
    leftovers: list[tuple[Folder, str, int]] = []
    strangers: list[tuple[Folder, list[str]]] = []
    for place, listed in ((chunks, chunk_names), (arrays, array_names)):
        foreign = []
        for name, kind in sorted(place.entries()):
            if name in listed and kind == "file":
                continue
            if kind != "dir":
                written = own_chunk.match(name) if place is chunks else None
                if written is not None:
                    leftovers.append((place, name, writing[written[1]]))
                    continue
                mine = own_array.match(name) if place is arrays and own_array else None
                if mine is not None and first_writing is not None and int(mine[1]) >= first_writing:
                    leftovers.append((place, name, int(mine[1])))
                    continue
            foreign.append(_described(name, kind))
        if foreign:
            strangers.append((place, foreign))
    return leftovers, strangers


def remove_leftovers(
    folder: Path, arrays: Folder, leftovers: list[tuple[Folder, str, int]], committed_chunks: int
) -> None:
    """Delete what the last writer left uncommitted (after the folder was verified).

    Raises:
        ConfigurationError: A "leftover" array file of a committed chunk: no run
            leaves one.
    """
    stray = [
        f"{name} (chunk {seq} is committed)"
        for place, name, seq in leftovers
        if place is arrays and seq < committed_chunks
    ]
    if stray:
        raise foreign_in(folder, arrays, stray)
    for place, name, _ in leftovers:
        _log.warning("removing_uncommitted_file", file=str(place.path / name))
        place.remove(name)


def foreign_in(folder: Path, place: Folder, names: list[str]) -> ConfigurationError:
    """The error for files in ``chunks/`` or ``arrays/`` that no run of the job explains."""
    shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
    return ConfigurationError(
        f"output folder {folder}: {place.path.name}/ holds {shown}, which the manifest "
        "does not commit and the last run did not write",
        fix=FOREIGN_FIX,
    )

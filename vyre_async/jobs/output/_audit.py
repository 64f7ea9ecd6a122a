"""``vyre-async verify``: every problem of a job's output folder, not only the first.

What a resume checks before it relies on a folder, reported in full instead of
stopping at the first problem, plus the folder's contents:

- the manifest: its format, that it decodes, the names it lists, that the chunks it
  says are being written follow its committed ones, that it commits no more records
  than the job has items, that it lists no chunk twice, and its MAC (with a key);
- every committed chunk against its size and SHA-256; its records decode, their
  counts (all, failed) match its entry, their ids are items of the job and none is
  committed twice in the folder; they name exactly the array file listed;
- every committed array file against its size and SHA-256, and its members against
  the items whose records name it;
- ``complete`` against the records committed;
- anything in the folder the manifest does not commit: a file the last run left
  uncommitted (a resume removes it) is a note, anything else a problem.

Nothing is written, locked or removed. Checksums alone catch accidents (a torn or
truncated file, a flipped bit, a lost file, a wrong edit); a manifest rewritten to
match a changed file is caught only with the key that sealed it.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import msgspec
import numpy as np

from ...errors import ConfigurationError
from ._atomic import Folder, NotPlainError
from ._claim import foreign_entries, sort_unlisted
from ._layout import ARRAYS_DIR, CHUNKS_DIR, MANIFEST_FILE
from ._manifest_key import ManifestKey, seal_problem
from ._records import Manifest
from ._verify import DAMAGED_FIX, committed_problems, decode_manifest, manifest_problems

__all__ = ["VerifyProblem", "VerifyReport", "describe_report", "verify_output"]


class VerifyProblem(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One thing wrong with an output folder.

    Attributes:
        what: What is wrong, naming the file.
        fix: What to do about it.
    """

    what: str
    fix: str


class VerifyReport(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What :func:`verify_output` found.

    Attributes:
        folder: The folder checked.
        job: The job's name (``None`` when the manifest could not be read).
        format: The manifest's format.
        items_total: Items of the job.
        items_committed: Records the manifest commits.
        complete: Whether the manifest says the job is complete.
        chunks: Chunks the manifest commits.
        chunks_read: Chunks read whose records decoded.
        records_read: Records in them.
        array_files: Array files the manifest commits.
        key_id: The id of the key that sealed the manifest (``None``: unkeyed).
        key_checked: Whether the MAC was checked with the key and holds.
        manifest_sha256: SHA-256 of ``manifest.json`` as read: record it elsewhere to
            tell later whether the folder was rolled back to an older manifest.
        problems: Everything wrong, each with a fix; none when the folder checks.
        notes: What is fine but worth knowing (files the last run left
            uncommitted, which a resume removes).
    """

    folder: str
    job: str | None = None
    format: int | None = None
    items_total: int = 0
    items_committed: int = 0
    complete: bool = False
    chunks: int = 0
    chunks_read: int = 0
    records_read: int = 0
    array_files: int = 0
    key_id: str | None = None
    key_checked: bool = False
    manifest_sha256: str | None = None
    problems: tuple[VerifyProblem, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Whether the folder checks: no problem was found."""
        return not self.problems


def verify_output(
    folder: str | os.PathLike[str], *, manifest_key: ManifestKey | None = None
) -> VerifyReport:
    """Check a job's output folder and everything its manifest commits (blocking).

    Args:
        folder: The output folder.
        manifest_key: The key the folder's manifests were sealed with, if any. A
            keyed manifest checked without it, or an unkeyed one checked with it, is
            a problem (a forger could have stripped the MAC).

    Returns:
        The report; :attr:`VerifyReport.ok` when nothing is wrong.

    Raises:
        ConfigurationError: ``folder`` is not a folder that can be read.
    """
    path = Path(folder)
    try:
        root = Folder.open(path)
    except OSError as exc:
        raise ConfigurationError(
            f"{path} cannot be read as a job's output folder ({exc.strerror or exc})",
            fix="pass the output folder of a vyre-async job (the --out DIR of its run).",
        ) from None
    try:
        return _Audit(root, manifest_key).run()
    finally:
        root.close()


class _Audit:
    def __init__(self, root: Folder, key: ManifestKey | None) -> None:
        self.root = root
        self.key = key
        self.problems: list[VerifyProblem] = []
        self.notes: list[str] = []

    def problem(self, what: str, fix: str = DAMAGED_FIX) -> None:
        self.problems.append(VerifyProblem(what if what.endswith(".") else f"{what}.", fix))

    def error(self, exc: ConfigurationError) -> None:
        self.problems.append(VerifyProblem(exc.what, exc.fix))

    def report(self) -> VerifyReport:
        """The report of a folder whose manifest could not be read."""
        return VerifyReport(str(self.root.path), problems=tuple(self.problems))

    def run(self) -> VerifyReport:
        root, path = self.root, self.root.path / MANIFEST_FILE
        try:
            data = root.read(MANIFEST_FILE)
            manifest = decode_manifest(path, data)
        except ConfigurationError as exc:
            self.error(exc)
            return self.report()
        except OSError as exc:
            self.problem(
                f"{path} cannot be read ({exc.strerror or exc}): without it nothing in the "
                "folder counts as committed",
                f"restore {MANIFEST_FILE} from a backup, or pass the output folder of a "
                "vyre-async job.",
            )
            return self.report()
        sealed = self._check_manifest(manifest, path)
        records_seen: list[int] = []
        self._check_files(manifest, records_seen)
        return VerifyReport(
            str(root.path),
            job=manifest.job,
            format=manifest.format,
            items_total=manifest.total_items,
            items_committed=manifest.committed,
            complete=manifest.complete,
            chunks=len(manifest.chunks),
            chunks_read=len(records_seen),
            records_read=sum(records_seen),
            array_files=sum(len(c.files) for c in manifest.chunks),
            key_id=manifest.mac.key_id if manifest.mac is not None else None,
            key_checked=sealed,
            manifest_sha256=hashlib.sha256(data).hexdigest(),
            problems=tuple(self.problems),
            notes=tuple(self.notes),
        )

    def _check_manifest(self, manifest: Manifest, path: Path) -> bool:
        """The manifest against itself and its MAC; whether a key checked the MAC."""
        mac = seal_problem(manifest, self.key)
        if mac is not None:
            self.problem(f"{path} {mac[0]}", mac[1])
        for what in manifest_problems(manifest):
            self.problem(f"{path} {what}")
        repeated = [name for name, n in Counter(c.name for c in manifest.chunks).items() if n > 1]
        if repeated:
            self.problem(f"{path} lists chunk {repeated[0]} more than once")
        if manifest.committed > manifest.total_items:
            self.problem(
                f"{path} commits {manifest.committed} records for a job of "
                f"{manifest.total_items} items"
            )
        for entry in manifest.chunks:
            if not 0 <= entry.failed <= entry.records:
                self.problem(
                    f"{path} lists {entry.failed} failed of {entry.records} records for "
                    f"chunk {entry.name}"
                )
        return mac is None and self.key is not None

    def _check_files(self, manifest: Manifest, records_seen: list[int]) -> None:
        """Every committed chunk and array file, and whatever else the folder holds."""
        root = self.root
        kinds = dict(root.entries())
        foreign = foreign_entries(kinds, has_manifest=True)
        if foreign:
            self.problem(
                f"{root.path} holds {', '.join(foreign)}, which vyre-async did not write "
                "(a resume refuses the folder)",
                "move the files named away.",
            )
        places: list[Folder] = []
        try:
            for name in (CHUNKS_DIR, ARRAYS_DIR):
                places.append(self._subfolder(name, kinds, needed=_needs(manifest, name)))
            chunks, arrays = places
            if all(place.fd >= 0 or not _needs(manifest, place.path.name) for place in places):
                done = np.zeros(max(manifest.total_items, 0), dtype=bool)
                for exc in committed_problems(
                    root.path, chunks, arrays, manifest, done, records_seen=records_seen
                ):
                    self.error(exc)
            self._check_unlisted(chunks, arrays, manifest)
        finally:
            for place in places:
                place.close()

    def _subfolder(self, name: str, kinds: dict[str, str], *, needed: bool) -> Folder:
        """``name`` opened; when absent, a folder with nothing in it (and a problem, if
        the manifest commits files in it)."""
        if kinds.get(name) == "dir":
            try:
                return self.root.subfolder(name, create=False)
            except (NotPlainError, FileNotFoundError):
                pass
        if needed:
            self.problem(
                f"{self.root.path / name} is missing or not a folder, and the manifest "
                "commits files in it"
            )
        return _AbsentFolder(-1, self.root.path / name)

    def _check_unlisted(self, chunks: Folder, arrays: Folder, manifest: Manifest) -> None:
        leftovers, foreign = sort_unlisted(chunks, arrays, manifest)
        for place, name, _ in leftovers:
            self.notes.append(
                f"{place.path.name}/{name} is not committed: the last run left it (a resume "
                "removes it)"
            )
        for place, names in foreign:
            self.problem(
                f"{place.path} holds {', '.join(names)}, which the manifest does not commit "
                "and the last run did not write (a resume refuses the folder)",
                "move the files named away, or restore the manifest that commits them.",
            )


def _needs(manifest: Manifest, name: str) -> bool:
    if name == CHUNKS_DIR:
        return bool(manifest.chunks)
    return any(c.files for c in manifest.chunks)


class _AbsentFolder(Folder):
    """A subfolder that is not there: it lists nothing."""

    def entries(self) -> Iterator[tuple[str, str]]:
        return iter(())


def describe_report(report: VerifyReport) -> str:
    """The report as lines for a person: the folder, what was checked, each note and
    each problem with its fix, and a last line saying whether the folder checks."""
    lines = [f"{report.folder}:"]
    if report.job is not None:
        if report.key_id is None:
            sealed = "unkeyed (checksums only: a rewritten manifest is not detected)"
        elif report.key_checked:
            sealed = f"keyed with key {report.key_id}, and its MAC holds"
        else:
            sealed = f"keyed with key {report.key_id}, not checked"
        state = "complete" if report.complete else "not complete"
        lines += [
            f"  job {report.job!r}, manifest format {report.format}, {sealed}",
            f"  {report.items_committed} of {report.items_total} items committed in "
            f"{_count(report.chunks, 'chunk')} ({state}); read "
            f"{_count(report.chunks_read, 'chunk')}, {_count(report.records_read, 'record')} "
            f"and {_count(report.array_files, 'array file')}",
            f"  manifest.json sha256 {report.manifest_sha256}",
        ]
    lines += [f"  note: {note}" for note in report.notes]
    lines += [f"  problem: {p.what} Fix: {p.fix}" for p in report.problems]
    lines.append(
        "verified: every check passed"
        if report.ok
        else f"{_count(len(report.problems), 'problem')} found"
    )
    return "\n".join(lines)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"

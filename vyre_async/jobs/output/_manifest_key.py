"""A keyed manifest: an HMAC-SHA256 over the manifest, with a key only its owner holds.

The manifest's checksums tie every committed file to it, so damage to a chunk or an
array file is caught; but whoever can write the folder can also rewrite the manifest
to match what they changed. With a key, every manifest the runner writes carries
``mac``: the key's id and HMAC-SHA256 of the manifest's canonical bytes (msgspec's
JSON encoding of the manifest without its ``mac``, after a fixed label). The MAC is
inside the manifest, so it is written, renamed and fsynced with it: the two always
commit together. A resume or ``vyre-async verify`` given the key recomputes it, so a
manifest rewritten without the key is refused.

The key comes from a file (``--manifest-key-file PATH``, or
``$VYRE_ASYNC_MANIFEST_KEY_FILE``) or from ``$VYRE_ASYNC_MANIFEST_KEY`` itself, never
from a command-line value (which ``ps`` shows to every user). It is at least
:data:`MIN_KEY_BYTES` bytes; whitespace around a file's content is dropped.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from pathlib import Path

import msgspec

from ..._files import FileTooLargeError, read_regular
from ...errors import ConfigurationError
from ._records import Manifest, ManifestMac

#: The environment variable holding the key itself.
KEY_ENV = "VYRE_ASYNC_MANIFEST_KEY"
#: The environment variable naming a file that holds the key.
KEY_FILE_ENV = "VYRE_ASYNC_MANIFEST_KEY_FILE"
#: The shortest key accepted.
MIN_KEY_BYTES = 16
_KEY_FILE_LIMIT = 4096
_LABEL = b"vyre-async manifest hmac-sha256\n"
_KEY_ID_LABEL = b"vyre-async manifest key id"
_encoder = msgspec.json.Encoder()
KEY_FIX = (
    f"give the key the folder was written with: --manifest-key-file PATH, or "
    f"{KEY_FILE_ENV}=PATH, or {KEY_ENV} in the environment."
)


class ManifestKey:
    """The secret that seals a job's manifests; its repr never shows it.

    Args:
        secret: The key's bytes (at least :data:`MIN_KEY_BYTES`).
        source: Where it came from, for messages.

    Attributes:
        key_id: 16 hex digits that name the key (an HMAC of a fixed label, which
            tells nothing about the key) so that a manifest says which key sealed it.
        source: Where it came from.

    Raises:
        ConfigurationError: The key is shorter than :data:`MIN_KEY_BYTES`.
    """

    __slots__ = ("_secret", "key_id", "source")

    def __init__(self, secret: bytes, *, source: str = "the key given") -> None:
        if len(secret) < MIN_KEY_BYTES:
            raise ConfigurationError(
                f"the manifest key from {source} holds {len(secret)} bytes; a key needs at "
                f"least {MIN_KEY_BYTES}",
                fix="make a random one: python -c 'import secrets; print(secrets.token_hex(32))'"
                " > manifest.key; chmod 600 manifest.key",
            )
        self._secret = secret
        self.source = source
        self.key_id = hmac.new(secret, _KEY_ID_LABEL, hashlib.sha256).hexdigest()[:16]

    def __repr__(self) -> str:
        return f"ManifestKey(key_id={self.key_id!r}, source={self.source!r})"

    def mac(self, manifest: Manifest) -> ManifestMac:
        """The MAC of ``manifest`` (whatever ``mac`` it carries now)."""
        digest = hmac.new(self._secret, canonical_bytes(manifest), hashlib.sha256)
        return ManifestMac(self.key_id, digest.hexdigest())


def canonical_bytes(manifest: Manifest) -> bytes:
    """What the MAC covers: a fixed label, then the manifest's JSON without its ``mac``.

    msgspec encodes a struct's fields in their declared order with no whitespace, so
    a manifest read back and encoded again gives the same bytes.
    """
    return _LABEL + _encoder.encode(msgspec.structs.replace(manifest, mac=None))


def seal(manifest: Manifest, key: ManifestKey | None) -> Manifest:
    """``manifest`` with the MAC of ``key``, or with none when ``key`` is ``None``."""
    return msgspec.structs.replace(manifest, mac=None if key is None else key.mac(manifest))


def load_manifest_key(file: str | os.PathLike[str] | None = None) -> ManifestKey | None:
    """The manifest key: from ``file``, else ``$VYRE_ASYNC_MANIFEST_KEY_FILE``, else
    ``$VYRE_ASYNC_MANIFEST_KEY``; ``None`` when none is set (blocking: reads a file).

    Raises:
        ConfigurationError: Both environment variables are set (and no ``file``), the
            file cannot be read or is not a regular file of at most 4 KiB, or the key
            is too short.
    """
    named = os.environ.get(KEY_FILE_ENV) or None
    value = os.environ.get(KEY_ENV) or None
    if file is None and named is not None and value is not None:
        raise ConfigurationError(
            f"both {KEY_FILE_ENV} and {KEY_ENV} are set; a run takes one manifest key",
            fix="unset one of them (or pass --manifest-key-file PATH, which wins).",
        )
    if file is None and named is None:
        return None if value is None else ManifestKey(value.encode(), source=f"${KEY_ENV}")
    path = Path(file if file is not None else str(named))
    source = str(path) if file is not None else f"{path} (${KEY_FILE_ENV})"
    try:
        secret = read_regular(path, _KEY_FILE_LIMIT).strip()
    except FileTooLargeError:
        raise ConfigurationError(
            f"the manifest key file {source} holds more than {_KEY_FILE_LIMIT} bytes",
            fix="put only the key in the file (64 hex digits make a good one).",
        ) from None
    except OSError as exc:
        raise ConfigurationError(
            f"the manifest key file {source} cannot be read ({exc.strerror or exc})",
            fix="name a readable regular file that holds the key.",
        ) from None
    return ManifestKey(secret, source=source)


def seal_problem(manifest: Manifest, key: ManifestKey | None) -> tuple[str, str] | None:
    """What is wrong with the manifest's MAC given ``key``, as ``(what, fix)``, or ``None``.

    A keyed manifest needs its key; given a key, a manifest must carry a MAC of it
    (one whose MAC was removed is refused, or a forger could strip it and rewrite
    the rest); the MAC must match its content.
    """
    mac = manifest.mac
    if mac is None:
        if key is None:
            return None
        return (
            f"carries no MAC, and a manifest key ({key.key_id} from {key.source}) was "
            "given: it was written without a key, or its MAC was removed",
            "if the folder was written without a key, resume or verify it without one "
            f"(unset {KEY_ENV} and {KEY_FILE_ENV}); otherwise restore the folder from a "
            "backup, or start the job again in a new folder with --out DIR.",
        )
    if key is None:
        return (
            f"is sealed with a manifest key (id {mac.key_id}), and none was given, so who "
            "wrote it cannot be checked",
            KEY_FIX,
        )
    if mac.key_id != key.key_id:
        return (
            f"is sealed with another manifest key (id {mac.key_id}; the key from "
            f"{key.source} has id {key.key_id})",
            KEY_FIX,
        )
    if not hmac.compare_digest(mac.hmac_sha256, key.mac(manifest).hmac_sha256):
        return (
            f"does not match its HMAC under key {key.key_id}: it was changed since "
            "vyre-async wrote it, by someone without the key",
            "restore the folder from a backup, or start the job again in a new folder with "
            "--out DIR; nothing in this folder was changed.",
        )
    return None


def check_seal(path: Path, manifest: Manifest, key: ManifestKey | None) -> None:
    """Refuse the manifest at ``path`` when :func:`seal_problem` finds a problem.

    Raises:
        ConfigurationError: Saying what is wrong and what to do.
    """
    problem = seal_problem(manifest, key)
    if problem is not None:
        what, fix = problem
        raise ConfigurationError(f"{path} {what}", fix=fix)

"""The server's bearer token: where it comes from, and the check of each request.

The token comes from an environment variable or a file the config names, never from
the config file or the command line (both end up in shell histories, process lists
and version control). Requests carry it as ``Authorization: Bearer <token>``; the
comparison takes the same time whatever prefix of the token a guess gets right
(:func:`hmac.compare_digest`).
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Mapping
from pathlib import Path

from .._files import FileTooLargeError, NotRegularFileError, read_regular
from ..errors import ConfigurationError
from ._config import AuthSection

#: Largest token file read: a token is a line, not a document.
MAX_TOKEN_FILE_BYTES = 4096
#: Shortest token accepted: a guessable token is no token.
MIN_TOKEN_CHARS = 16


def read_token(
    auth: AuthSection, config_file: Path, environ: Mapping[str, str] | None = None
) -> str | None:
    """The token ``auth`` names, or ``None`` when it names none (blocking: reads a file).

    Args:
        auth: The config's ``[auth]`` section.
        config_file: The config file (a relative ``token_file`` starts at its folder).
        environ: The environment (default: ``os.environ``).

    Raises:
        ConfigurationError: The variable is unset or empty, the file cannot be read or
            is empty, or the token is shorter than :data:`MIN_TOKEN_CHARS` or holds
            whitespace or control characters.
    """
    if auth.token_env is not None:
        value = (os.environ if environ is None else environ).get(auth.token_env, "")
        where = f"the environment variable {auth.token_env}"
        if not value:
            raise ConfigurationError(
                f"[auth] token_env names {auth.token_env}, which is unset or empty",
                fix=f"export {auth.token_env}=<a random token of at least "
                f"{MIN_TOKEN_CHARS} characters> before starting the server.",
            )
        return _checked(value, where)
    if auth.token_file is not None:
        path = config_file.parent / auth.token_file
        try:
            data = read_regular(path, MAX_TOKEN_FILE_BYTES)
        except FileTooLargeError:
            raise ConfigurationError(
                f"[auth] token_file {path} holds more than {MAX_TOKEN_FILE_BYTES} bytes",
                fix="put the token alone in the file.",
            ) from None
        except (NotRegularFileError, OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise ConfigurationError(
                f"[auth] token_file {path} cannot be read ({reason})",
                fix="check the path (relative to the config file) and that the server may read it.",
            ) from None
        try:
            text = data.decode("utf-8").strip()
        except UnicodeDecodeError:
            text = "\x00"
        return _checked(text, f"the token file {path}")
    return None


def _checked(token: str, where: str) -> str:
    if not token.isprintable() or any(c.isspace() for c in token) or not token.isascii():
        raise ConfigurationError(
            f"the token in {where} holds whitespace, control or non-ASCII characters",
            fix="use a token of printable ASCII characters without spaces (for example "
            "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`).",
        )
    if len(token) < MIN_TOKEN_CHARS:
        raise ConfigurationError(
            f"the token in {where} has {len(token)} characters, fewer than {MIN_TOKEN_CHARS}",
            fix="use a longer random token (for example "
            "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`).",
        )
    return token


class BearerCheck:
    """Whether a request's ``Authorization`` header carries the token.

    Args:
        token: The token (``None``: every request is allowed).
    """

    def __init__(self, token: str | None) -> None:
        self._expected = None if token is None else f"Bearer {token}".encode()

    @property
    def required(self) -> bool:
        """Whether requests must carry a token."""
        return self._expected is not None

    def allows(self, header: str | None) -> bool:
        """Whether ``header`` (the ``Authorization`` header's value) is the token's."""
        if self._expected is None:
            return True
        if header is None:
            return False
        return hmac.compare_digest(header.encode("latin-1", "replace"), self._expected)

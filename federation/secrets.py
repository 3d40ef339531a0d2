"""Member credentials sealed at rest: inline kubeconfigs are encrypted before they reach etcd.

Role: the registry codec seals `Cluster.spec.connection.kubeconfig` on write and opens it on
read; the member connector opens a sealed value just before building its client. Fed by a
key from `FEDCTL_ENCRYPTION_KEY` (the key itself) or `FEDCTL_ENCRYPTION_KEY_FILE` (a file
holding it); feeds `federation.registry.objects.ObjectCodec` and `clusters.kube.kubeconfig`.

Why Fernet (AES-128-CBC + HMAC-SHA256 from `cryptography`): authenticated, versioned tokens
with a random IV, so a tampered or truncated value fails loudly instead of yielding a
garbled kubeconfig, and the same plaintext never encrypts to the same bytes. A key file may
hold several keys, one a line: the first seals, all of them open, which is how a key is
rotated without a flag day. Why this module sits at the bottom layer: both the registry and
the member connector need it, and neither may import the other.

Errors: a sealed value that no configured key opens, or a malformed key, is a permanent
`errors.Invalid`; no plaintext or key material ever appears in a message.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from federation import errors

__all__ = [
    "REDACTED",
    "SEALED_PREFIX",
    "Cipher",
    "from_env",
    "generate_key",
    "is_sealed",
    "open_if_sealed",
]

log = logging.getLogger(__name__)

SEALED_PREFIX = "fedctl:sealed:v1:"
ENV_KEY = "FEDCTL_ENCRYPTION_KEY"
ENV_KEY_FILE = "FEDCTL_ENCRYPTION_KEY_FILE"
REDACTED = "<redacted>"
"""An inline kubeconfig as the API shows it; written back, the stored one is kept."""


def generate_key() -> str:
    """A fresh random key, as text suitable for a key file or the environment."""
    return Fernet.generate_key().decode("ascii")


def is_sealed(value: str | None) -> bool:
    """Whether a stored value is a sealed secret rather than plaintext."""
    return value is not None and value.startswith(SEALED_PREFIX)


class Cipher:
    """Seals and opens secrets with one or more keys (the first one seals)."""

    def __init__(self, keys: list[str]) -> None:
        if not keys:
            raise errors.Invalid("no encryption key given")
        try:
            self._fernet = MultiFernet([Fernet(k.strip().encode("ascii")) for k in keys])
        except (ValueError, UnicodeEncodeError) as exc:
            raise errors.Invalid(
                "encryption key must be 32 url-safe base64-encoded bytes"
                " (make one with `python -c 'from federation import secrets;"
                " print(secrets.generate_key())'`)"
            ) from exc

    @classmethod
    def from_file(cls, path: str | Path) -> Cipher:
        """Keys from a file, one a line; blank lines and `#` comments are ignored."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise errors.Invalid(f"cannot read encryption key file {path}: {exc}") from exc
        keys = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
        return cls(keys)

    def seal(self, plaintext: str) -> str:
        """The sealed form of `plaintext`; an already sealed value is returned unchanged."""
        if is_sealed(plaintext):
            return plaintext
        token = self._fernet.encrypt(plaintext.encode("utf-8"))
        return SEALED_PREFIX + token.decode("ascii")

    def open(self, value: str) -> str:
        """The plaintext of a sealed value; a plaintext value is returned unchanged."""
        if not is_sealed(value):
            return value
        try:
            data = self._fernet.decrypt(value[len(SEALED_PREFIX) :].encode("ascii"))
        except (InvalidToken, UnicodeEncodeError) as exc:
            raise errors.Invalid(
                "sealed kubeconfig cannot be opened with the configured encryption key"
            ) from exc
        return data.decode("utf-8")


def from_env(environ: Mapping[str, str] | None = None) -> Cipher | None:
    """The cipher configured in the environment, or None when no key is configured."""
    env = os.environ if environ is None else environ
    if env.get(ENV_KEY):
        return Cipher([k for k in env[ENV_KEY].split(",") if k.strip()])
    if env.get(ENV_KEY_FILE):
        return Cipher.from_file(env[ENV_KEY_FILE])
    return None


def open_if_sealed(value: str, *, cipher: Cipher | None = None) -> str:
    """Plaintext for a value that may be sealed, using `cipher` or the environment's key."""
    if not is_sealed(value):
        return value
    cipher = cipher or from_env()
    if cipher is None:
        raise errors.Invalid(
            f"kubeconfig is sealed but no key is configured (set {ENV_KEY} or {ENV_KEY_FILE})"
        )
    return cipher.open(value)

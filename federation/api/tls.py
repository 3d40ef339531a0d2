"""TLS for the API server, with optional client certificates.

Role: turns `fedctl controller --tls-cert/--tls-key/--client-ca` into the `SSLContext` the
aiohttp site listens with. Fed by PEM files; feeds `controller_cmd.serve` and, through the
peer certificate it verifies, `auth.Authenticator` (CN → user, O → groups).

Why CERT_OPTIONAL rather than REQUIRED: tokens and certificates are both accepted, so a
client without a certificate must still complete the handshake and present its token; a
certificate that is presented is still verified against the client CA. TLS 1.2 is the floor.
"""

from __future__ import annotations

import ssl
from pathlib import Path

from federation import errors

__all__ = ["client_context", "server_context"]


def server_context(
    cert: str | Path, key: str | Path, *, client_ca: str | Path | None = None
) -> ssl.SSLContext:
    """A server context serving `cert`/`key`; verifies client certificates against `client_ca`."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(certfile=str(cert), keyfile=str(key))
        if client_ca is not None:
            ctx.load_verify_locations(cafile=str(client_ca))
            ctx.verify_mode = ssl.CERT_OPTIONAL
    except (OSError, ssl.SSLError) as exc:
        raise errors.Invalid(f"cannot load TLS material: {exc}") from exc
    return ctx


def client_context(
    *,
    ca: str | Path | None = None,
    cert: str | Path | None = None,
    key: str | Path | None = None,
) -> ssl.SSLContext:
    """A client context trusting `ca` (else the system store), presenting `cert` if given."""
    try:
        ctx = ssl.create_default_context(cafile=str(ca) if ca else None)
        if cert is not None:
            ctx.load_cert_chain(certfile=str(cert), keyfile=str(key) if key else None)
    except (OSError, ssl.SSLError) as exc:
        raise errors.Invalid(f"cannot load TLS material: {exc}") from exc
    return ctx

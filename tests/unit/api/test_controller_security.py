"""`fedctl controller` security flags become the API's authenticator, audit, cipher, TLS."""

from __future__ import annotations

from pathlib import Path

import pytest

from federation import secrets
from federation.api import auth
from federation.cli import controller_cmd


def test_flags_build_auth_audit_and_cipher(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FEDCTL_ENCRYPTION_KEY", raising=False)
    # Recorded, so the variable the controller sets is removed again after the test.
    monkeypatch.setenv("FEDCTL_ENCRYPTION_KEY_FILE", "")
    (tmp_path / "tokens.csv").write_text("t1,alice,admin\n")
    key = tmp_path / "key"
    key.write_text(secrets.generate_key())
    flags = controller_cmd.Security(
        tokens=str(tmp_path / "tokens.csv"),
        audit_log=str(tmp_path / "audit.log"),
        encryption_key_file=str(key),
    )
    extras = controller_cmd._api_security(flags)
    assert isinstance(extras["auth"], auth.Authenticator)
    assert extras["auth"].tokens.lookup("t1") is not None
    assert extras["cipher"] is not None and extras["ssl_context"] is None
    assert secrets.from_env() is not None, "the member connector finds the key too"
    extras["audit"].close()


def test_no_flags_is_todays_open_api(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FEDCTL_ENCRYPTION_KEY", raising=False)
    monkeypatch.delenv("FEDCTL_ENCRYPTION_KEY_FILE", raising=False)
    extras = controller_cmd._api_security(controller_cmd.Security())
    assert extras["auth"] is None and extras["cipher"] is None and extras["ssl_context"] is None


def test_cert_without_key_is_refused() -> None:
    with pytest.raises(SystemExit, match="go together"):
        controller_cmd._api_security(controller_cmd.Security(tls_cert="c.pem"))

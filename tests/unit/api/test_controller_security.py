"""`fedctl controller` security flags become the API's authenticator, audit, cipher, TLS."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import pytest

from federation import secrets
from federation.api import audit, auth
from federation.cli import controller_cmd, main, up_cmd


def test_flags_build_auth_audit_and_cipher(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FEDCTL_ENCRYPTION_KEY", raising=False)
    # Recorded, so the variable the controller sets is removed again after the test.
    monkeypatch.setenv("FEDCTL_ENCRYPTION_KEY_FILE", "")
    (tmp_path / "tokens.csv").write_text("t1,alice,uid-1,admin\n")
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


def test_a_client_ca_without_https_is_refused() -> None:
    with pytest.raises(SystemExit, match="--client-ca needs --tls-cert and --tls-key"):
        controller_cmd._api_security(controller_cmd.Security(client_ca="ca.pem"))


@pytest.mark.parametrize(
    ("host", "loud"),
    [
        pytest.param("0.0.0.0", True, id="every interface: anyone reaching it is an admin"),
        pytest.param("10.1.2.3", True, id="a routable address"),
        pytest.param("127.0.0.1", False, id="loopback: local callers only"),
    ],
)
def test_an_api_without_authentication_says_so_at_start_up(
    caplog: pytest.LogCaptureFixture, host: str, *, loud: bool
) -> None:
    with caplog.at_level(logging.WARNING, logger="federation.cli.controller_cmd"):
        controller_cmd._warn_open(host)
    [record] = caplog.records
    assert record.levelno == logging.WARNING
    assert ("WITHOUT AUTHENTICATION" in record.getMessage()) is loud, record.getMessage()


def test_cert_without_key_is_refused() -> None:
    with pytest.raises(SystemExit, match="go together"):
        controller_cmd._api_security(controller_cmd.Security(tls_cert="c.pem"))


def test_without_a_file_the_trail_is_logged_whatever_the_log_level(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """At the default log level, warning, the `fedctl.audit` logger's INFO records were
    dropped: a controller run without --audit-log kept no trail at all."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        main.configure_logging("warning", json_logs=False)
        audit.AuditLog().write({"method": "DELETE", "name": "validate"})
        logging.getLogger("federation.api").info("not shown at warning")
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    err = capsys.readouterr().err
    assert '{"method":"DELETE","name":"validate"}' in err and "not shown" not in err


def test_up_keeps_an_audit_trail_in_its_data_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tokens = tmp_path / "tokens.yaml"
    default = up_cmd._security(argparse.Namespace(audit_log=None), data=tmp_path, tokens=tokens)
    assert default.audit_log == str(tmp_path / "audit.log")
    assert default.tokens == str(tokens) and default.encryption_key_file
    given = up_cmd._security(
        argparse.Namespace(audit_log="/var/log/a.log"), data=tmp_path, tokens=tokens
    )
    assert given.audit_log == "/var/log/a.log"

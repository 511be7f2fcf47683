"""The CLI's exit statuses: a crash is told apart from every finding (1: dead links left in
`fix`/`scan`/`batch`), so a script or a CI job never reads a bug as a result."""

from __future__ import annotations

import pytest

from pagetrail.cli import check_cmd
from pagetrail.cli.common import INTERNAL_ERROR_EXIT
from pagetrail.cli.main import main


def test_an_uncaught_exception_is_an_internal_error_with_its_traceback(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def broken(*_args: object, **_kwargs: object) -> None:
        raise ZeroDivisionError("division by zero in a scorer")

    monkeypatch.setattr(check_cmd, "check_link", broken)
    status = main(["check", "https://example.org/page"])
    err = capsys.readouterr().err
    assert status == INTERNAL_ERROR_EXIT == 70
    assert "Traceback (most recent call last)" in err and "ZeroDivisionError" in err
    assert err.rstrip().splitlines()[-1] == (
        "pagetrail: internal_error: ZeroDivisionError: division by zero in a scorer "
        "(a bug in pagetrail; the traceback is above)")


def test_a_usage_error_keeps_its_own_status(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "not a url"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pagetrail: ") and "internal_error" not in err

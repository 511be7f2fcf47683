"""One masking of every URL pagetrail shows (#37 item 16): `settings.mask_url`, parsed by
SQLAlchemy's own URL parser — the one that reads the database URL to connect — so that what
it takes for the password is what is hidden. A property test over passwords made of every
URL-special character, as SQLAlchemy writes them (percent-encoded), as Redis URLs carry them,
and as people type them raw into a working URL (`postgresql://pt:/S3cretPW@host/db`)."""

from __future__ import annotations

import os
import subprocess
import sys
from urllib.parse import quote

import pytest
from hypothesis import assume, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from pagetrail.tools.net.logsafe import redact_urls
from pagetrail.tools.settings import Settings, mask_url, mask_urls_in

SENTINEL = "Pw9"  # every password starts with it: no other part of a URL holds it
SPECIAL = "/?#@:%[] &=+;,!$'()*~\\\"<>{}|^`\t"
passwords = st.text(alphabet=SPECIAL + "abXY01-._", min_size=0, max_size=20).map(
    lambda rest: SENTINEL + rest)


def _password_of(text: str) -> str | None:
    try:
        return make_url(text).password
    except (ArgumentError, ValueError):
        return None


def _hidden(shown: str, password: str) -> None:
    assert SENTINEL not in shown, shown
    for form in (password, quote(password, safe=""), quote(password, safe=" +")):
        assert form not in shown, (form, shown)


@hypothesis_settings(deadline=None)  # timing is no property here (a loaded 2-core CI)
@given(passwords)
def test_a_password_written_by_sqlalchemy_is_never_shown(password: str) -> None:
    url = URL.create("postgresql+psycopg", username="pt", password=password,
                     host="db.example", port=5432, database="pt")
    text = url.render_as_string(hide_password=False)
    assert make_url(text).password == password  # a working URL: it connects with it
    shown = mask_url(text)
    _hidden(shown, password)
    assert shown == "postgresql+psycopg://pt:***@db.example:5432/pt"
    _hidden(redact_urls(f"could not connect to {text}: refused"), password)


@hypothesis_settings(deadline=None)  # timing is no property here (a loaded 2-core CI)
@given(passwords)
def test_a_redis_password_is_never_shown(password: str) -> None:
    text = f"redis://:{quote(password, safe='')}@127.0.0.1:6379/0"
    shown = mask_url(text)
    _hidden(shown, password)
    assert shown == "redis://:***@127.0.0.1:6379/0"
    _hidden(redact_urls(f"broker {text} did not answer"), password)
    settings = Settings(broker_url=text, database_url="sqlite://")
    _hidden(str(settings.masked()), password)


@hypothesis_settings(deadline=None)  # timing is no property here (a loaded 2-core CI)
@given(passwords)
def test_a_raw_password_in_a_working_url_is_never_shown(password: str) -> None:
    """Typed as it is: SQLAlchemy reads `/`, `?`, `#`, `:`, `%`, brackets and spaces in a
    password (a generic URL split reads the path from the first `/`: issue #37's leak)."""
    text = f"postgresql://pt:{password}@db.example/pt"
    assume(_password_of(text) == password)  # the URL works with this password
    shown = mask_url(text)
    _hidden(shown, password)
    assert shown == "postgresql://pt:***@db.example/pt"
    _hidden(str(Settings(database_url=text).masked()), password)


@hypothesis_settings(deadline=None)  # timing is no property here (a loaded 2-core CI)
@given(passwords)
def test_any_raw_password_is_hidden_even_when_the_url_does_not_work(password: str) -> None:
    """An `@` in a raw password makes a URL SQLAlchemy reads otherwise (the password ends at
    the first `@`): the part it takes for the password is hidden, the rest is what it takes
    for the host — the password as typed is never shown whole, and its start never."""
    text = f"postgresql://pt:{password}@db.example/pt"
    shown = mask_url(text)
    assert SENTINEL not in shown and password not in shown, shown


def test_the_leak_of_issue_37_and_what_stays_legible() -> None:
    assert mask_url("postgresql://pt:/S3cretPW@host/db") == "postgresql://pt:***@host/db"
    assert mask_url("postgresql://pt:S3c?ret@host/db") == "postgresql://pt:***@host/db"
    assert mask_url("sqlite:///:memory:") == "sqlite:///:memory:"
    assert mask_url("https://web.archive.org/web/2020*/https://example.org/a") == \
        "https://web.archive.org/web/2020*/https://example.org/a"
    assert mask_url("https://h.example/api?key=sekrit&x=1#tok") == \
        "https://h.example/api?key=***&x=***#***"
    assert mask_url("https://TOKEN123@h.example/") == "https://***@h.example/"
    assert mask_url("not a url") == "***" and mask_url("u:pw@host") == "***"
    ua = "pagetrail/0.1 (+https://github.com/pagetrail/pagetrail; bot)"
    assert mask_urls_in(ua) == ua  # a user agent naming its homepage stays as it is


@pytest.mark.postgres
def test_doctor_config_show_and_db_upgrade_never_print_the_password(pg_url, tmp_path) -> None:
    """Issue #37's working URL with `/` and `?` in its password, on a real PostgreSQL (the
    test cluster trusts its user, so the password is carried, parsed and never needed):
    every command that names the database shows it masked."""
    secret = "/S3c?ret#PW"
    url = make_url(pg_url).set(password=secret)
    raw = url.render_as_string(hide_password=False).replace(quote(secret, safe=" +"), secret)
    assert _password_of(raw) == secret  # typed raw, as in the issue: a working URL
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("PAGETRAIL_")},
           "PAGETRAIL_DATABASE_URL": raw, "PAGETRAIL_DATA_DIR": str(tmp_path),
           "PAGETRAIL_ARCHIVES": "http://127.0.0.1:9/web", "PAGETRAIL_SEARCH_ENGINES": "local"}
    outputs = []
    for command in (["db", "upgrade"], ["db", "current"], ["config", "show"],
                    ["doctor", "--timeout", "2"], ["-vv", "db", "current"]):
        done = subprocess.run([sys.executable, "-m", "pagetrail.cli.main", *command], env=env,
                              capture_output=True, text=True, timeout=120)
        outputs.append(done.stdout + done.stderr)
        assert done.returncode in (0, 1), (command, done.stderr)  # doctor: 1, archive down
    every = "\n".join(outputs)
    for form in ("S3c", quote(secret, safe=""), quote(secret, safe=" +")):
        assert form not in every, [line for line in every.splitlines() if form in line]
    masked = mask_url(raw)
    assert masked.startswith("postgresql://postgres:***@127.0.0.1:")
    assert f"{masked}: at revision" in outputs[0]
    assert outputs[3].startswith(f"ok    database      {masked}: answers"), outputs[3]

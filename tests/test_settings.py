"""Settings shown to people: `config show` masks every credential; a malformed database URL
is a one-line named error, not a traceback."""

from __future__ import annotations

import json

import pytest

from pagetrail.cli.main import main
from pagetrail.store.db import create_db_engine
from pagetrail.tools.engines.brave import BraveSettings
from pagetrail.tools.engines.google import GoogleSettings
from pagetrail.tools.errors import ConfigError
from pagetrail.tools.settings import Settings, mask_url

SECRETS = ("proxypass", "searxpass", "abc", "dbpass", "archpass", "sekrit", "tok3n")


@pytest.fixture
def hostile_env(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("PAGETRAIL_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("PAGETRAIL_PROXY", "http://alice:proxypass@proxy.corp:3128")
    monkeypatch.setenv("PAGETRAIL_SEARXNG_URL", "https://u:searxpass@searx.example/?token=abc")
    # A working URL whose password holds "/": a generic URL split reads it as the path (#37).
    monkeypatch.setenv("PAGETRAIL_DATABASE_URL", "postgresql://pt:/dbpass@db/pt")
    monkeypatch.setenv("PAGETRAIL_ARCHIVES",
                       "https://arch:archpass@archive.example/web,https://web.archive.org/web")
    monkeypatch.setenv("PAGETRAIL_HN_API_URL", "https://hn.example/api?key=sekrit#tok3n")


@pytest.mark.parametrize("as_json", [False, True])
def test_config_show_masks_every_url_credential(hostile_env, capsys, as_json: bool) -> None:
    assert main(["config", "show", *(["--json"] if as_json else [])]) == 0
    out = capsys.readouterr().out
    for secret in SECRETS:
        assert secret not in out, secret
    shown = Settings().masked()
    assert shown["proxy"] == "http://alice:***@proxy.corp:3128"
    assert shown["searxng_url"] == "https://u:***@searx.example/?token=***"
    assert shown["database_url"] == "postgresql://pt:***@db/pt"
    assert shown["archives"] == ["https://arch:***@archive.example/web",
                                 "https://web.archive.org/web"]
    assert shown["hn_api_url"] == "https://hn.example/api?key=***#***"
    if as_json:
        assert json.loads(out)["proxy"] == "http://alice:***@proxy.corp:3128"


@pytest.mark.parametrize(("url", "shown"), [
    ("sqlite:////var/lib/pagetrail/pagetrail.db", "sqlite:////var/lib/pagetrail/pagetrail.db"),
    ("sqlite:///:memory:", "sqlite:///:memory:"),
    ("postgresql+psycopg://pt:p%40ss@db:5432/pt?sslpassword=x",
     "postgresql+psycopg://pt:***@db:5432/pt?sslpassword=***"),
    ("https://token@h.example/", "https://***@h.example/"),
    ("https://web.archive.org/web", "https://web.archive.org/web"),
    ("pt:dbpass@db/pt", "***"),
    ("postgresql://u:p@h:notaport/db", "***"),
    ("", "***"),
])
def test_mask_url(url: str, shown: str) -> None:
    assert mask_url(url) == shown


@pytest.mark.parametrize("url", ["pt:dbpass@db/pt", "postgresql://u:dbpass@h:notaport/db",
                                 "nosuchdriver://u:dbpass@h/db", "mysql://u:dbpass@h/db",
                                 "postgresql://u:dbpass@h:99999/db",
                                 "postgresql+psycopg2://u:dbpass@h/db",
                                 "postgresql+nosuch://u:dbpass@h/db"])
def test_a_malformed_database_url_is_a_named_one_line_error(monkeypatch, capsys,
                                                            url: str) -> None:
    with pytest.raises(ConfigError):
        create_db_engine(url)
    monkeypatch.setenv("PAGETRAIL_DATABASE_URL", url)
    for command in (["db", "current"], ["db", "upgrade"], ["config", "show"], ["doctor"]):
        assert main(command) == 2
        captured = capsys.readouterr()
        lines = captured.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("pagetrail: config_error: database URL")
        assert "dbpass" not in captured.err + captured.out
        assert "Traceback" not in captured.err


def test_readme_documents_every_setting() -> None:
    """Each Settings field (and the variables read outside it) has its row in the README."""
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    # The general settings, and the distributed mode's own table in its section.
    section = (readme[readme.index("## Configuration"):readme.index("**Security.**")]
               + readme[readme.index("## Running on several machines"):
                        readme.index("## The MCP server")])
    documented = set(re.findall(r"`((?:PAGETRAIL|SLACK)_[A-Z_]+)`", section))
    wanted = {"PAGETRAIL_CONFIG", "PAGETRAIL_DATA_DIR"}
    for name, field in Settings.model_fields.items():
        wanted.add(field.validation_alias if isinstance(field.validation_alias, str)
                   else f"PAGETRAIL_{name.upper()}")
    # Engines own their settings (plugins): the built-ins' are documented too.
    for engine_settings in (BraveSettings, GoogleSettings):
        prefix = engine_settings.model_config["env_prefix"]
        wanted |= {f"{prefix}{name.upper()}" for name in engine_settings.model_fields}
    assert wanted - documented == set()
    assert documented - wanted <= {"PAGETRAIL_PYWB_VENV", "PAGETRAIL_TESTBED_INDEX_CACHE"}


@pytest.mark.parametrize(("name", "url"), [
    ("PAGETRAIL_BROKER_URL", "http://u:brokerpw@h:6379/0"),
    ("PAGETRAIL_BROKER_URL", "redis://:brokerpw@h:notaport/0"),
    ("PAGETRAIL_BROKER_URL", "redis://:brokerpw@h:99999/0"),
    ("PAGETRAIL_REDIS_URL", "u:brokerpw@h"),
    ("PAGETRAIL_REDIS_URL", "redis://:brokerpw@/0"),
])
def test_a_broker_url_that_cannot_work_is_config_error_in_every_command(
        monkeypatch, capsys, tmp_path, name: str, url: str) -> None:
    monkeypatch.setenv("PAGETRAIL_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("PAGETRAIL_DATABASE_URL", f"sqlite:///{tmp_path / 'p.db'}")
    monkeypatch.setenv(name, url)
    for command in (["config", "show"], ["doctor"], ["db", "upgrade"],
                    ["check", "https://example.org/"]):
        assert main(command) == 2, command
        captured = capsys.readouterr()
        lines = captured.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"pagetrail: config_error: {name}"), \
            lines
        assert "brokerpw" not in captured.err + captured.out
    assert not (tmp_path / "p.db").exists()  # refused before anything ran

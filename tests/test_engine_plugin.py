"""A third-party search engine, packaged and pip-installed on its own, used through
`pagetrail search --engine NAME` and listed in the MCP tool schema — pagetrail unedited.

The package registers itself in the `pagetrail.engines` entry-point group and owns its
settings (PAGETRAIL_ECHO_SITE, through its own pydantic-settings class). It is installed into
a temporary directory (`pip install --target`) that the pagetrail processes see through
PYTHONPATH, so the worktree's environment is left as it was.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent

PYPROJECT = """
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "pagetrail-echo-engine"
version = "0.1.0"

[project.entry-points."pagetrail.engines"]
echo = "pagetrail_echo_engine:build"
mapper = "pagetrail_echo_engine:build_mapper"

[tool.setuptools]
py-modules = ["pagetrail_echo_engine"]
"""

MODULE = '''
"""An engine that answers every query with one page on its configured site."""
from pydantic_settings import BaseSettings, SettingsConfigDict

from pagetrail.tools.engines.base import EngineContext, EngineSkipped, make_hits


class EchoSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PAGETRAIL_ECHO_", extra="ignore")

    site: str | None = None


class EchoEngine:
    name = "echo"
    rate_limited = False
    uses_context = False

    def __init__(self, site: str) -> None:
        self.site = site.rstrip("/")

    async def search(self, query, *, site=None, limit=10, context=None):
        slug = "-".join(query.lower().split())
        return make_hits([(f"{self.site}/{slug}", f"Echo of {query}", "an echo")],
                         engine=self.name, limit=limit, site=site)


def build(context: EngineContext) -> EchoEngine:
    own = EchoSettings()
    if not own.site:
        raise EngineSkipped("set PAGETRAIL_ECHO_SITE")
    return EchoEngine(own.site)


class MapperEngine:
    """Searches the dead site itself (its own map), whatever it is called."""

    name = "mapper"
    scope = "site"
    rate_limited = False
    uses_context = True

    async def search(self, query, *, site=None, limit=10, context=None):
        return []


def build_mapper(context: EngineContext) -> MapperEngine:
    return MapperEngine()
'''

SCHEMA_SCRIPT = textwrap.dedent("""
    import json, anyio
    from mcp import Client
    from pagetrail.server.app import build_server

    async def main():
        async with Client(build_server()) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
        schema = tools["search_web"].input_schema["properties"]["engine"]
        print(json.dumps(schema))

    anyio.run(main)
""")


SCOPE_SCRIPT = textwrap.dedent("""
    from pagetrail.tools.engines.registry import build_engine_set
    from pagetrail.tools.net.fetch import Fetcher
    from pagetrail.tools.recovery.context import Engines
    from pagetrail.tools.settings import Settings

    settings = Settings()
    engines = build_engine_set(settings, Fetcher(settings), None, ["echo", "mapper"]).engines
    scoped = Engines.of(engines, host_silent=False)
    print(scoped.web, scoped.site_local, scoped.method("mapper"))
""")


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("echo-engine")
    source = root / "src"
    source.mkdir()
    (source / "pyproject.toml").write_text(PYPROJECT)
    (source / "pagetrail_echo_engine.py").write_text(MODULE)
    target = root / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--no-index", "--target", str(target), str(source)],
                   check=True, capture_output=True, timeout=300)
    assert (target / "pagetrail_echo_engine.py").is_file()
    yield target


def run(args: list[str], env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    full = {key: value for key, value in os.environ.items()
            if not key.startswith("PAGETRAIL_ECHO_")}
    full.update(PAGETRAIL_DATABASE_URL=f"sqlite:///{tmp_path / 'plugin.db'}",
                PAGETRAIL_DATA_DIR=str(tmp_path), PAGETRAIL_CONFIG=str(tmp_path / "none.toml"))
    full.update(env)
    return subprocess.run(args, env=full, capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)


def test_an_installed_engine_plugin_is_searchable_without_editing_pagetrail(
        plugin_path: Path, tmp_path: Path) -> None:
    search = [str(BIN / "pagetrail"), "search", "solar farms", "--engine", "echo", "--json"]
    seen = {"PYTHONPATH": str(plugin_path)}

    absent = run(search, {}, tmp_path)  # not installed: an unknown engine, named
    assert absent.returncode == 2 and "unknown search engine" in absent.stderr

    unconfigured = run(search, seen, tmp_path)  # installed, its own setting missing
    assert unconfigured.returncode == 0, unconfigured.stderr
    assert "echo skipped: set PAGETRAIL_ECHO_SITE" in unconfigured.stderr

    found = run(search, {**seen, "PAGETRAIL_ECHO_SITE": "https://echo.example"}, tmp_path)
    assert found.returncode == 0, found.stderr
    payload = json.loads(found.stdout)
    assert [hit["url"] for hit in payload["hits"]["echo"]] == [
        "https://echo.example/solar-farms"]


def test_the_mcp_schema_lists_the_plugin(plugin_path: Path, tmp_path: Path) -> None:
    listed = run([sys.executable, "-c", SCHEMA_SCRIPT], {"PYTHONPATH": str(plugin_path)},
                 tmp_path)
    assert listed.returncode == 0, listed.stderr
    schema = json.dumps(json.loads(listed.stdout.strip().splitlines()[-1]))
    for name in ("echo", "searxng", "brave", "google", "ddgs", "site", "cdx", "local"):
        assert f'"{name}"' in schema
    bare = run([sys.executable, "-c", SCHEMA_SCRIPT], {}, tmp_path)
    assert bare.returncode == 0, bare.stderr
    assert '"echo"' not in bare.stdout and '"searxng"' in bare.stdout


def test_a_plugin_declares_the_scope_a_recovery_asks_it_for(plugin_path: Path,
                                                            tmp_path: Path) -> None:
    """The plugin's `scope = "site"` puts it with the dead site's engines (its queries are
    SITE's), though pagetrail knows nothing of its name; the echo plugin, declaring none,
    is a web engine."""
    scoped = run([sys.executable, "-c", SCOPE_SCRIPT],
                 {"PYTHONPATH": str(plugin_path), "PAGETRAIL_ECHO_SITE": "https://echo.example"},
                 tmp_path)
    assert scoped.returncode == 0, scoped.stderr
    assert scoped.stdout.split("\n")[-2] == "['echo'] ['mapper'] SITE"

"""Shared fixtures.

Databases: every test that takes `store` runs on SQLite, and also on PostgreSQL when
PAGETRAIL_TEST_POSTGRES_URL points at a server (CI starts a throw-away cluster).
The testbed fixtures (a tiny world served on loopback) live in plugin_testbed.py.
"""

from __future__ import annotations

import os
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest_plugins = ["plugin_testbed", "distributed_helpers"]

POSTGRES_URL = os.environ.get("PAGETRAIL_TEST_POSTGRES_URL")
REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files with the most `slow` tests first, the rest in their usual order (a stable sort:
    tests keep their order within a file). scripts/test.sh hands whole files to parallel
    workers in this order, so the long files start early and the short ones fill the end."""
    slow: Counter[str] = Counter(item.nodeid.partition("::")[0] for item in items
                                 if item.get_closest_marker("slow"))
    items.sort(key=lambda item: -slow[item.nodeid.partition("::")[0]])


# Files whose tests are each handed to a parallel worker on their own rather than with the
# rest of the file: long, and independent of each other (every test makes its own databases,
# its own Redis database and Celery workers; a module fixture, such as the fault tests' own
# PostgreSQL cluster, is then made once in each worker that runs one of them). Whole, one of
# these files alone would outlast the rest of the suite on the other workers.
SPREAD_FILES = frozenset({"test_faults_postgres.py", "test_workers.py",
                          "test_store_concurrency.py"})


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """`--dist loadfile` (scripts/test.sh), except for the tests of SPREAD_FILES."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SpreadingLoadFile(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            file = nodeid.partition("::")[0]
            return nodeid if Path(file).name in SPREAD_FILES else file

    return SpreadingLoadFile(config, log)


@pytest.fixture(autouse=True)
def _isolated_environment(tmp_path_factory, monkeypatch) -> None:
    """No test reads the developer's config or writes to the real data directory."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("PAGETRAIL_DATA_DIR", str(home / "data"))
    monkeypatch.setenv("PAGETRAIL_CONFIG", str(home / "config.toml"))
    for key in list(os.environ):
        if key.startswith("PAGETRAIL_") and key not in (
            "PAGETRAIL_DATA_DIR", "PAGETRAIL_CONFIG", "PAGETRAIL_TEST_POSTGRES_URL",
            "PAGETRAIL_TESTBED_INDEX_CACHE",
            "PAGETRAIL_PYWB_VENV",
        ):
            monkeypatch.delenv(key, raising=False)
    from pagetrail.tools.settings import get_settings

    get_settings.cache_clear()


def _postgres_database() -> Iterator[str]:
    """A fresh database on the test server, dropped afterwards."""
    from sqlalchemy import create_engine, text

    assert POSTGRES_URL
    name = f"pt_{uuid.uuid4().hex[:12]}"
    admin = create_engine(POSTGRES_URL.replace("postgresql://", "postgresql+psycopg://", 1),
                          isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    base, _, _ = POSTGRES_URL.rpartition("/")
    try:
        yield f"{base}/{name}"
    finally:
        from pagetrail.store import db as store_db

        for url in [u for u in store_db._opened if u.endswith(f"/{name}")]:
            store_db._opened.pop(url).dispose()
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


DB_BACKENDS = ["sqlite"] + (["postgresql"] if POSTGRES_URL else [])


@pytest.fixture(params=DB_BACKENDS)
def db_url(request, tmp_path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'pagetrail.db'}"
    else:
        yield from _postgres_database()


@pytest.fixture
def store(db_url, monkeypatch):
    from pagetrail.store import Store

    monkeypatch.setenv("PAGETRAIL_DATABASE_URL", db_url)
    from pagetrail.tools.settings import get_settings

    get_settings.cache_clear()
    s = Store(db_url)
    yield s
    s.dispose()

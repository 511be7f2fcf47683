"""Which optional extra brings which package (pyproject `[project.optional-dependencies]`).

`pip install pagetrail` is the core (the command line, `fix`, `check`, `recover`, `scan`, the
MCP server, the SQLite store). A face or feature that needs more imports its packages only
when it runs; when one is missing, `missing_extra` turns the ModuleNotFoundError into one
named line saying which extra to install, instead of a traceback.
"""

from __future__ import annotations

from pagetrail.tools.errors import ConfigError

# Top-level module → the extra that installs it. Kept beside pyproject's extras: the
# packaging test (tests/test_packaging.py) checks each extra here exists there.
EXTRA_OF_MODULE: dict[str, str] = {
    "slack_bolt": "slack",
    "slack_sdk": "slack",
    "aiohttp": "slack",
    "apscheduler": "slack",
    "celery": "workers",
    "kombu": "workers",
    "redis": "workers",
    "psycopg": "postgres",
    "matplotlib": "charts",
    "trustme": "testbed",
    "warcio": "testbed",
    "sklearn": "train",
    "scipy": "train",
}


class MissingExtra(ConfigError):
    """A feature whose packages are not installed (an extra of the distribution)."""

    code = "missing_extra"

    def __init__(self, module: str, extra: str, feature: str = "") -> None:
        self.module, self.extra = module, extra
        needs = f"{feature} needs {module}" if feature else f"{module} is not installed"
        super().__init__(f"{needs}: install pagetrail[{extra}] "
                         f"(pip install 'pagetrail[{extra}]')")


def missing_extra(exc: ModuleNotFoundError, feature: str = "") -> MissingExtra | None:
    """The extra that would have provided the module `exc` did not find, or None when the
    module is not one of an extra's (then it is a real bug, not an install choice)."""
    top = (exc.name or "").partition(".")[0]
    extra = EXTRA_OF_MODULE.get(top)
    return None if extra is None else MissingExtra(top, extra, feature)

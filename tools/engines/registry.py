"""Search engines are plugins: discovered through the `pagetrail.engines` entry-point group.

The built-ins (searxng, brave, google, ddgs, site, cdx, local) are registered in pagetrail's
own pyproject exactly as a third party registers one in theirs:

    [project.entry-points."pagetrail.engines"]
    myengine = "mypackage.engine:build"

An entry point names a factory `build(context: EngineContext) -> Engine` (tools.engines.base:
`name`, `rate_limited`, `uses_context`, `async search(...)`). The factory reads its engine's
own settings — a pydantic-settings class with its own env prefix, e.g. `BraveSettings` reads
`PAGETRAIL_BRAVE_API_KEY` — and raises `EngineSkipped` with a note when it cannot run here
(no key, no store). Secrets it hands to `context.secret()` are redacted from every message.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib.metadata import EntryPoint, entry_points

from pagetrail.store.db import Store
from pagetrail.tools.engines.base import Engine, EngineContext, EngineSkipped, HttpGetter
from pagetrail.tools.errors import ConfigError
from pagetrail.tools.settings import Settings

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "pagetrail.engines"


EngineFactory = Callable[[EngineContext], Engine]


@dataclass
class EngineSet:
    engines: list[Engine] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # why a configured engine was skipped
    secrets: list[str] = field(default_factory=list)  # values to redact from messages


@lru_cache(maxsize=1)
def _registered() -> dict[str, EntryPoint]:
    found: dict[str, EntryPoint] = {}
    for point in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda p: p.name):
        name = point.name.strip().lower()
        if name in found and found[name].value != point.value:
            log.warning("search engine %r registered twice (%s, %s): the first is used",
                        name, found[name].value, point.value)
            continue
        found.setdefault(name, point)
    return found


def engine_names() -> tuple[str, ...]:
    """Names of every registered engine (built-in or installed plugin), sorted."""
    return tuple(_registered())


def engine_factory(name: str) -> EngineFactory:
    """The factory registered as `name`; ConfigError for an unknown name or a plugin that
    fails to import (a broken plugin is named, not hidden)."""
    point = _registered().get(name)
    if point is None:
        raise ConfigError(f"unknown search engine: {name}; known: {', '.join(engine_names())}")
    try:
        factory = point.load()
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"search engine {name} ({point.value}) cannot be loaded: "
                          f"{exc}") from exc
    if not callable(factory):
        raise ConfigError(f"search engine {name} ({point.value}) is not a factory")
    return factory  # type: ignore[no-any-return]


def build_engine_set(settings: Settings, fetcher: HttpGetter, store: Store | None,
                     names: Sequence[str] | None = None) -> EngineSet:
    """Engines named in `names` (default settings.search_engines); unknown → ConfigError."""
    wanted = [n.strip().lower() for n in (names if names is not None
                                          else settings.search_engines) if n.strip()]
    known = _registered()
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise ConfigError(
            f"unknown search engine(s): {', '.join(unknown)}; "
            f"known: {', '.join(known)}"
        )
    result = EngineSet()
    for name in dict.fromkeys(wanted):
        context = EngineContext(settings, fetcher, store)
        try:
            result.engines.append(engine_factory(name)(context))
        except EngineSkipped as skipped:
            result.notes.append(f"{name} skipped: {skipped}")
        result.secrets.extend(context.secrets)
    for note in result.notes:
        log.warning("%s", note)
    return result


def build_engines(settings: Settings, fetcher: HttpGetter, store: Store | None,
                  names: Sequence[str] | None = None) -> list[Engine]:
    return build_engine_set(settings, fetcher, store, names).engines

"""Build the configured engines from settings.search_engines (names, in order)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from pagetrail.store.db import Store
from pagetrail.tools.engines.base import Engine, HttpGetter
from pagetrail.tools.errors import ConfigError
from pagetrail.tools.settings import Settings

log = logging.getLogger(__name__)

KNOWN_ENGINES = ("searxng", "brave", "google", "ddgs", "site", "cdx", "local")


@dataclass
class EngineSet:
    engines: list[Engine] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # why a configured engine was skipped
    secrets: list[str] = field(default_factory=list)  # values to redact from messages


def _secret(value: object) -> str:
    getter = getattr(value, "get_secret_value", None)
    return (getter() if getter else str(value or "")).strip()


def build_engine_set(settings: Settings, fetcher: HttpGetter, store: Store | None,
                     names: Sequence[str] | None = None) -> EngineSet:
    """Engines named in `names` (default settings.search_engines); unknown → ConfigError."""
    wanted = [n.strip().lower() for n in (names if names is not None
                                          else settings.search_engines) if n.strip()]
    unknown = [n for n in wanted if n not in KNOWN_ENGINES]
    if unknown:
        raise ConfigError(
            f"unknown search engine(s): {', '.join(unknown)}; "
            f"known: {', '.join(KNOWN_ENGINES)}"
        )
    result = EngineSet()
    for name in dict.fromkeys(wanted):
        engine = _build_one(name, settings, fetcher, store, result)
        if engine is not None:
            result.engines.append(engine)
    for note in result.notes:
        log.warning("%s", note)
    return result


def build_engines(settings: Settings, fetcher: HttpGetter, store: Store | None,
                  names: Sequence[str] | None = None) -> list[Engine]:
    return build_engine_set(settings, fetcher, store, names).engines


def _build_one(name: str, settings: Settings, fetcher: HttpGetter, store: Store | None,
               result: EngineSet) -> Engine | None:
    if name == "searxng":
        if not settings.searxng_url:
            result.notes.append("searxng skipped: set PAGETRAIL_SEARXNG_URL")
            return None
        from pagetrail.tools.engines.searxng import SearxngEngine

        engine = SearxngEngine(fetcher, settings.searxng_url)
        engine.rps = settings.searxng_rps  # self-hosted: its operator sets the pace
        return engine
    if name == "brave":
        key = _secret(settings.brave_api_key)
        if not key:
            result.notes.append("brave skipped: no API key (set PAGETRAIL_BRAVE_API_KEY)")
            return None
        from pagetrail.tools.engines.brave import BraveEngine

        result.secrets.append(key)
        assert settings.brave_api_key is not None
        return BraveEngine(fetcher, settings.brave_api_key)
    if name == "google":
        key = _secret(settings.google_api_key)
        if not key or not settings.google_cx:
            result.notes.append("google skipped: needs PAGETRAIL_GOOGLE_API_KEY and "
                                "PAGETRAIL_GOOGLE_CX")
            return None
        from pagetrail.tools.engines.google import GoogleEngine

        result.secrets.append(key)
        assert settings.google_api_key is not None
        return GoogleEngine(fetcher, settings.google_api_key, settings.google_cx)
    if name == "ddgs":
        from pagetrail.tools.engines.ddgs_engine import DdgsEngine

        return DdgsEngine(proxy=settings.proxy, verify=settings.ca_bundle or True,
                          timeout=settings.total_timeout)
    if name == "site":
        from pagetrail.tools.engines.site import SiteEngine

        return SiteEngine(fetcher)
    if name == "cdx":
        if not settings.archives:
            result.notes.append("cdx skipped: no archive configured (PAGETRAIL_ARCHIVES)")
            return None
        from pagetrail.tools.engines.cdx import CdxEngine

        return CdxEngine.from_archives(fetcher, settings.archives)
    if name == "local":
        if store is None:
            result.notes.append("local skipped: no store")
            return None
        from pagetrail.tools.engines.local import LocalEngine

        return LocalEngine(store)
    raise ConfigError(f"unknown search engine: {name}")  # guarded above; kept for safety

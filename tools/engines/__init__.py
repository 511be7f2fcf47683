"""Search engines behind one interface (`Engine`), and the service that runs them.

    engines = build_engines(settings, fetcher, store)
    outcome = await SearchService(engines, store=store, settings=settings).search(query)
"""

from pagetrail.tools.engines.base import (
    Engine,
    EngineTransient,
    SearchContext,
    SearchHit,
)
from pagetrail.tools.engines.registry import EngineSet, build_engine_set, build_engines
from pagetrail.tools.engines.service import SearchOutcome, SearchService

__all__ = [
    "Engine",
    "EngineSet",
    "EngineTransient",
    "SearchContext",
    "SearchHit",
    "SearchOutcome",
    "SearchService",
    "build_engine_set",
    "build_engines",
]

"""The engines through the loopback testbed: SearXNG-shaped search, the live site through the
proxy, pywb's real CDX API. Slow to start (pywb), hence marked."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from pagetrail.tools.engines.base import SearchContext
from pagetrail.tools.engines.registry import build_engine_set
from pagetrail.tools.engines.service import SearchService
from pagetrail.tools.net.fetch import Fetcher
from pagetrail.tools.net.urls import same_url

pytestmark = pytest.mark.testbed


async def test_engines_through_the_testbed(testbed_settings, tiny_world, store) -> None:
    settings = testbed_settings.model_copy(update={"search_rps": 20.0, "per_host_rps": 20.0})
    async with Fetcher(settings) as fetcher:
        built = build_engine_set(settings, fetcher, store, ["searxng", "site", "cdx", "local"])
        service = SearchService(built.engines, store=store, settings=settings)
        context = SearchContext(dead_url=tiny_world.moved_from,
                                after=datetime(2019, 6, 15, tzinfo=UTC))
        outcome = await service.search("Solar farms double in a year", context=context)
        assert outcome.failures == []
        searx = [h.url for h in outcome.hits["searxng"]]
        site = [h.url for h in outcome.hits["site"]]
        assert any(same_url(u, tiny_world.moved_to) for u in searx)
        assert any(same_url(u, tiny_world.moved_to) for u in site)  # linked from the root
        assert not any(same_url(u, tiny_world.moved_from) for u in site)
        assert outcome.hits["local"] == []  # nothing seen yet

        # pywb's CDX: captures of the host after the date, the dead URL itself excluded.
        cdx = await service.search("heat pump grants", context=context, engines=["cdx"])
        assert [h.url for h in cdx.hits["cdx"]] == [tiny_world.archived_only]
        later = SearchContext(dead_url=tiny_world.moved_from,
                              after=datetime(2019, 8, 1, tzinfo=UTC))
        none = await service.search("heat pump grants", context=later, engines=["cdx"])
        assert none.hits["cdx"] == []

        site_only = await service.search("wind turbines", site="www.news.example",
                                         engines=["searxng"])
        assert site_only.hits["searxng"]
        assert all("news.example" in h.url for h in site_only.hits["searxng"])

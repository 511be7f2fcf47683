"""The bot's view of the engine: pagetrail's API bound to one settings and store.

Thin on purpose (DESIGN.md: bot/ parses, calls the API, formats). Each method returns the
Block Kit payload of its answer, so the handlers only choose where to post it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pagetrail as api
from pagetrail import NoMemento, Recovery, Settings, Store
from pagetrail.bot import blocks
from pagetrail.bot.commands import FixlinkRequest

MAX_CANDIDATES = 9  # three pages of three: "Show more" pages through them


@dataclass
class BotEngine:
    settings: Settings
    store: Store

    async def recover(self, url: str, anchor: str = "") -> Recovery:
        return await api.recover_link(url, anchor=anchor or None, max_candidates=MAX_CANDIDATES,
                                      settings=self.settings, store=self.store)

    async def answer(self, request: FixlinkRequest) -> dict[str, Any]:
        """Run the request's primitive and format its answer (raises PagetrailError)."""
        handler = getattr(self, f"_{request.action}")
        return await handler(request)

    async def _recover(self, request: FixlinkRequest) -> dict[str, Any]:
        recovery = await self.recover(request.url, request.anchor)
        return blocks.recovery_blocks(recovery, anchor=request.anchor)

    async def _check(self, request: FixlinkRequest) -> dict[str, Any]:
        return blocks.check_blocks(await api.check_link(request.url, settings=self.settings))

    async def _memento(self, request: FixlinkRequest) -> dict[str, Any]:
        try:
            memento = await api.fetch_memento(request.url, at=request.at, settings=self.settings)
        except NoMemento:
            memento = None
        return blocks.memento_blocks(request.url, memento)

    async def _signature(self, request: FixlinkRequest) -> dict[str, Any]:
        signature = await api.extract_signature(request.url, settings=self.settings)
        return blocks.signature_blocks(signature)

    async def _tags(self, request: FixlinkRequest) -> dict[str, Any]:
        result = await api.get_tags(request.url, settings=self.settings)
        return blocks.tags_blocks(result.url, result.tags)

    async def _search(self, request: FixlinkRequest) -> dict[str, Any]:
        query = " ".join(request.words)
        result = await api.search_web(query, settings=self.settings, store=self.store)
        by_engine: dict[str, list[Any]] = {}
        for hit in result.hits:
            by_engine.setdefault(hit.engine or "search", []).append(hit)
        failures = [f"{f.engine}: {f.error}" for f in result.failures]
        return blocks.hits_blocks(result.query, by_engine, failures)

    async def _rank(self, request: FixlinkRequest) -> dict[str, Any]:
        result = await api.rank_candidates(list(request.candidates), reference_url=request.url,
                                           settings=self.settings)
        return blocks.rank_blocks(request.url, result.candidates)

    async def _related(self, request: FixlinkRequest) -> dict[str, Any]:
        # Without a classifier api raises ModelMissing ("run `pagetrail classify train`"),
        # which the handler shows privately to the person who asked.
        result = await api.recommend_archived(request.url, settings=self.settings,
                                              store=self.store)
        return blocks.related_blocks(result)

    async def _archive(self, request: FixlinkRequest) -> dict[str, Any]:
        result = await api.archive_links([request.url, *request.candidates], source="slack",
                                         settings=self.settings, store=self.store)
        return blocks.archive_blocks(result.captures)

    async def _help(self, _request: FixlinkRequest) -> dict[str, Any]:
        return blocks.help_blocks()

    async def record_pick(self, dead_url: str, chosen_url: str, *, by: str, where: str,
                          rejected: bool) -> None:
        await api.record_pick(dead_url, chosen_url, by=by, via="slack", where=where,
                              rejected=rejected, store=self.store)

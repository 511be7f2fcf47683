"""The one route into a recovery for every face — the CLI, the batch jobs, MCP, Slack, a
page scan, a digest, the demo: `recover_link` guards the user's URLs (the SSRF gate,
`netguard.ensure_fetchable`), runs `pipeline.recover` with the settings' budget (on the
caller's fetcher and store, when it has them), and slims the answer for callers.

It lives here, below the jobs and the scanner that call it, so that no stage of tools/ has
to call back up into `tools.api` (which re-exports it)."""

from __future__ import annotations

from datetime import datetime

from pagetrail.tools import policy
from pagetrail.tools.content.dates import as_utc
from pagetrail.tools.content.document import clip
from pagetrail.tools.models import Document, Memento, Recovery
from pagetrail.tools.net.fetch import Fetcher
from pagetrail.tools.net.netguard import ensure_fetchable
from pagetrail.tools.recovery import memory
from pagetrail.tools.recovery.context import Budget, ProgressFn
from pagetrail.tools.settings import Settings, get_settings

MAX_TEXT_CHARS = policy.CALLER_TEXT_CHARS  # the name tools.api re-exports


def clip_document(document: Document | None, max_text_chars: int = MAX_TEXT_CHARS,
                  ) -> Document | None:
    """A copy fit to hand out: text clipped, outgoing links dropped (they are many)."""
    if document is None:
        return None
    return document.model_copy(update={"text": clip(document.text, max_text_chars),
                                       "links": []})


def clip_memento(memento: Memento | None, max_text_chars: int = MAX_TEXT_CHARS,
                 ) -> Memento | None:
    if memento is None:
        return None
    return memento.model_copy(update={"document": clip_document(memento.document,
                                                                max_text_chars)})


async def recover_link(
    url: str,
    *,
    source_url: str | None = None,
    anchor: str | None = None,
    context: str | None = None,
    link_date: datetime | None = None,
    max_candidates: int = 5,
    include_queries: bool = False,
    fresh: bool = False,
    slim: bool = True,
    settings: Settings | None = None,
    store: memory.Store | None = None,
    fetcher: Fetcher | None = None,
    progress: ProgressFn | None = None,
) -> Recovery:
    """The full recovery, trimmed for callers: the top `max_candidates` live candidates plus
    the archived copy; queries only when asked (they are long). `slim=False` returns the
    whole answer (every candidate and query, the archived text unclipped: the CLI's).
    `fetcher`: the caller's open fetcher (a scan that checked the links with it), else the
    recovery opens its own; `store`: where answers are remembered and picks read."""
    from pagetrail.tools.recovery.pipeline import recover

    settings = settings or get_settings()
    url = await ensure_fetchable(url, settings)
    if source_url:
        source_url = await ensure_fetchable(source_url, settings)
    recovery = await recover(
        url, source_url=source_url, anchor=anchor, context=context,
        link_date=as_utc(link_date) if link_date else None, settings=settings, store=store,
        fetcher=fetcher, progress=progress, budget=Budget.from_settings(settings), use_cache=not fresh,
    )
    if not slim:
        return recovery
    return slim_recovery(recovery, max_candidates, include_queries=include_queries)


def slim_recovery(recovery: Recovery, max_candidates: int = 5, *,
                  include_queries: bool = False) -> Recovery:
    """The answer without its bulk: top live candidates plus the archived copy, the memento's
    text clipped, the queries dropped unless asked for."""
    live = [c for c in recovery.candidates if c.kind != "archived"][:max_candidates]
    archived = [c for c in recovery.candidates if c.kind == "archived"]
    return recovery.model_copy(update={
        "candidates": live + archived,
        "queries": recovery.queries if include_queries else [],
        "memento": clip_memento(recovery.memento),
    })

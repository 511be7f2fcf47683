"""Content drift: a link that works but now serves other content (Jones et al. 2016).

The live page's main text is compared with the main text of the archived copy from when the
link was made (or first seen). Main text is what tools/content/document.py extracts (trafilatura:
navigation, footers and other template parts left out), so a site's redesign does not count
as drift. Two measures of tools/content/similarity.py, the lower one counts: the cosine of the
content-term vectors (what FORMAT.md states drift in: other words, another page) and the
resemblance of 4-word shingles (word order: the old words still there but no longer the
old text — rewritten, shuffled, or interleaved with another article's paragraphs).

    drift = await detect_drift(url, since=link_date, fetcher=fetcher, settings=settings)

`None` means there is nothing to compare: no usable capture, or no live HTML page.

The title is a second witness: a page whose title shares no term with the linked page's
(site names set aside) is another page unless its text is all but the same — main-text
extraction can pick a sidebar or teaser block that still quotes the old article (seen on
dev2: 0.90 cosine, the live page another site's article).
"""

from __future__ import annotations

import logging
from datetime import datetime

from pagetrail.tools.archive.memento import fetch_memento
from pagetrail.tools.content.document import parse_document
from pagetrail.tools.content.similarity import cosine_text, shingle_resemblance, title_similarity
from pagetrail.tools.content.text import guess_language
from pagetrail.tools.errors import FetchFailed, RateLimited
from pagetrail.tools.models import Document, Drift, Memento
from pagetrail.tools.net.fetch import Fetcher
from pagetrail.tools.settings import Settings

log = logging.getLogger(__name__)

UNRELATED_TITLE = 0.2  # title similarity below which the titles name different pages
SAME_TEXT = 0.95  # content similarity from which the text alone settles it (not drifted)
MIN_SHINGLE_WORDS = 40  # shorter texts: too few shingles to say anything, cosine alone


def content_similarity(archived_text: str, live_text: str, lang: str = "") -> float:
    """How much the live main text is still the archived one, 0–1 (pure): the lower of
    the content-term cosine and the 4-word-shingle resemblance (cosine alone for short
    texts). Both texts empty: 1 (nothing changed that can be seen); one empty: 0."""
    if not archived_text.strip() and not live_text.strip():
        return 1.0
    lang = lang or guess_language(f"{archived_text[:5000]} {live_text[:5000]}", "en")
    similarity = cosine_text(archived_text, live_text, lang)
    if min(len(archived_text.split()), len(live_text.split())) >= MIN_SHINGLE_WORDS:
        similarity = min(similarity, shingle_resemblance(archived_text, live_text, lang))
    return round(similarity, 4)


def compare(url: str, archived: Document, live: Document, *, threshold: float,
            memento: Memento, final_url: str | None = None) -> Drift:
    """The Drift of two parsed pages (pure); `memento` is the capture `archived` came from.
    Drifted: the main texts' similarity is below `threshold`, or the titles are unrelated
    and the texts are not near-identical."""
    lang = archived.lang or live.lang
    similarity = content_similarity(archived.text, live.text, lang)
    titles = (title_similarity(archived.title, live.title, lang=lang or "en",
                               site_a=archived.site_name, url_a=archived.url,
                               site_b=live.site_name, url_b=live.url)
              if archived.title.strip() and live.title.strip() else None)
    drifted = similarity < threshold or (
        titles is not None and titles < UNRELATED_TITLE and similarity < SAME_TEXT)
    return Drift(url=url, drifted=drifted, similarity=similarity, threshold=threshold,
                 title_similarity=None if titles is None else round(titles, 4),
                 memento=memento, archived_title=archived.title, live_title=live.title,
                 final_url=final_url)


# A drift check reads one page of a host that has just answered the check: a host that
# fails now and then (5xx) gets this many rounds of the fetcher's retries before the
# comparison is given up (and named), not one (#27: a host failing 42 % of its requests hid
# a drifted page in dev2 on some runs).
LIVE_ROUNDS = 2


async def live_page(url: str, fetcher: Fetcher) -> Document | None:
    """The live page at `url`, parsed; None unless it answers 200 with HTML. A server error
    (5xx) or a 429 after LIVE_ROUNDS rounds of the fetcher's retries raises: the comparison
    could not be made, and the answer must say so rather than look like "not drifted"."""
    for round_ in range(1, LIVE_ROUNDS + 1):
        response = await fetcher.get(url)
        if response.status < 500 and response.status != 429:
            break
        if round_ == LIVE_ROUNDS:
            if response.status == 429:
                raise RateLimited("the live page answered 429 after retries: drift not "
                                  "checked", url=url)
            raise FetchFailed(f"the live page answered {response.status} after retries: "
                              "drift not checked", url=url)
    if response.status != 200 or not response.is_html:
        return None
    document = parse_document(response.content, response.final_url or url,
                              content_type=response.headers.get("content-type"), links=False)
    return document.model_copy(update={"url": response.final_url or url})


async def detect_drift(url: str, *, since: datetime | None, fetcher: Fetcher,
                       settings: Settings, live: Document | None = None) -> Drift | None:
    """Compare the live page at `url` with its capture closest to `since` (the link's date
    or first-seen; before it first, else just after), or the latest capture when `since`
    is None. `live`: the live page when the caller has it already. None when there is no
    usable capture or no live HTML page. Raises PagetrailError (FetchFailed,
    ArchiveUnavailable, …) when the page or every archive cannot be reached."""
    memento = await fetch_memento(url, fetcher, at=since, settings=settings)
    if memento is None or memento.document is None:
        return None
    if live is None:
        live = await live_page(url, fetcher)
        if live is None:
            return None
    drift = compare(url, memento.document, live, threshold=settings.drift_threshold,
                    memento=memento.model_copy(update={"document": None}),
                    final_url=live.url if live.url != url else None)
    log.info("drift %s: similarity %.3f to capture %s", url, drift.similarity,
             memento.datetime.isoformat())
    return drift


CHANGED = "the link works but the page changed"


def drift_sentence(drift: Drift) -> str:
    """One line for people: what changed, against which capture."""
    when = f"{drift.memento.datetime:%Y-%m-%d}"
    titles = ""
    if drift.archived_title or drift.live_title:
        titles = f" (was “{drift.archived_title}”, now “{drift.live_title}”)"
    return (f"{CHANGED}: {round(drift.similarity * 100)}% similar to the archived copy of "
            f"{when}{titles}; link to the archived copy {drift.memento.memento_url}")

"""`check_links_in_text`: the links of a text an assistant (or a person) wrote — verdicts,
the repaired text, and how well each page supports the sentence that cites it.

A link that resolves to a page that does not say what the sentence claims is, to its
reader, as broken as a 404: for each live or recovered page, the passage that best matches
the citing sentence and its score (tools.content.similarity.cosine_text over the page's
passages). "never-existed" is the hallmark of a fabricated citation: the host answers, no
archive ever captured the URL, and no similar page was found.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from pagetrail.tools.content.similarity import cosine_text
from pagetrail.tools.errors import InvalidArgument, PagetrailError
from pagetrail.tools.fix.escape import escaped
from pagetrail.tools.fix.extract import extract_links
from pagetrail.tools.fix.proof import prove
from pagetrail.tools.fix.rewrite import Edit
from pagetrail.tools.fix.run import REFUSED, dead_targets, verdict_of
from pagetrail.tools.fix.spans import LinkSpan, Unparsable
from pagetrail.tools.models import Recovery
from pagetrail.tools.recovery.context import ProgressFn
from pagetrail.tools.settings import Settings, get_settings

TextVerdict = Literal["alive", "moved", "replacement", "archived", "never-existed",
                      "unfixable", "skipped"]
MAX_TEXT_LINKS = 50  # distinct URLs recovered
MAX_TEXT_OCCURRENCES = 500  # links reported (the rest: skipped, "too many links")
CONCURRENCY = 4  # recoveries, and page fetches for the support check, at once
PAGE_CHARS = 50_000
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


class Support(BaseModel):
    """How well a page's text supports the sentence citing it (0–1) and where."""

    score: float
    passage: str


class TextLink(BaseModel):
    """One link of a text: its verdict, new address, and the page's support of its sentence."""

    url: str
    line: int
    sentence: str
    verdict: TextVerdict
    new_url: str | None = None
    memento_date: datetime | None = None
    confidence: float | None = None
    reason: str = ""
    support: Support | None = None


class TextCheck(BaseModel):
    """The links of a text checked, and the text with the answers written in."""

    links: list[TextLink] = Field(default_factory=list)
    repaired_text: str
    changed: bool = False


def citing_sentence(text: str, span: LinkSpan,
                    cache: dict[int, tuple[str, list[str]]] | None = None) -> str:
    """The sentence around a link (within its paragraph), the link's URL left out. `cache`
    keeps each paragraph's sentences (a paragraph citing many links is split once)."""
    start = max(text.rfind("\n\n", 0, span.start), 0)
    if cache is not None and start in cache:
        paragraph, sentences = cache[start]
    else:
        end = text.find("\n\n", span.end)
        paragraph = text[start:end if end != -1 else len(text)]
        sentences = _SENTENCE_END.split(paragraph)
        if cache is not None:
            cache[start] = (paragraph, sentences)
    offset = span.start - start
    position = 0
    for sentence in sentences:
        found = paragraph.find(sentence, position)
        if found <= offset < found + len(sentence) + 1:
            return " ".join(sentence.replace(span.url, " ").split())
        position = found + len(sentence)
    return " ".join(paragraph.replace(span.url, " ").split())


def passages(page_text: str, size: int = 3) -> list[str]:
    """The page's text as overlapping windows of `size` sentences."""
    sentences = [s.strip() for s in _SENTENCE_END.split(" ".join(page_text.split())) if s.strip()]
    if len(sentences) <= size:
        return [" ".join(sentences)] if sentences else []
    return [" ".join(sentences[i:i + size]) for i in range(0, len(sentences) - size + 1)]


def support(sentence: str, page_text: str, lang: str = "en") -> Support | None:
    """The passage of `page_text` closest to `sentence` (cosine of their terms)."""
    best: Support | None = None
    for passage in passages(page_text[:PAGE_CHARS]):
        score = cosine_text(sentence, passage, lang)
        if best is None or score > best.score:
            best = Support(score=round(score, 3), passage=passage[:500])
    return best


def never_existed(recovery: Recovery, dead: frozenset[str] = frozenset()) -> bool:
    """No capture in any archive, the host answers (a 404, 410 or soft 404: it is there),
    and no page that works was found for it: what a fabricated citation looks like."""
    check = recovery.check
    return (recovery.memento is None
            and not any(c.kind == "archived" for c in recovery.candidates)
            and check is not None and check.status is not None
            and check.verdict in ("dead", "soft404")
            and verdict_of(recovery, dead)[0] == "unfixable")


async def _page_text(url: str, verdict: str, at: datetime, settings: Settings) -> str:
    from pagetrail.tools.api import fetch_memento, live_document
    from pagetrail.tools.net.fetch import Fetcher

    if verdict == "archived":
        memento = await fetch_memento(url, at=at, settings=settings, max_text_chars=PAGE_CHARS)
        return memento.document.text if memento.document else ""
    async with Fetcher(settings) as fetcher:
        return (await live_document(url, fetcher)).text


async def check_links_in_text(text: str, *, at: datetime | None = None,
                              fmt: Literal["markdown", "text"] = "markdown",
                              settings: Settings | None = None, store: Any | None = None,
                              with_support: bool = True,
                              progress: ProgressFn | None = None) -> TextCheck:
    """Each URL's verdict (alive, moved, replacement, archived near `at`, never-existed,
    unfixable), the text with the confident answers written in, and each reachable page's
    support for the sentence citing it. At most MAX_TEXT_LINKS distinct URLs. `progress`
    hears ("recovering", done, total, url) as each URL's recovery ends."""
    from pagetrail.tools.api import recover_link
    from pagetrail.tools.settings import configured_store

    settings = settings or get_settings()
    store = store if store is not None else configured_store(settings.database_url)
    at = at or datetime.now(UTC)
    try:
        spans = extract_links(text, fmt)
    except Unparsable as exc:
        raise InvalidArgument(f"the text cannot be read as {fmt}: {exc}") from None
    extra = spans[MAX_TEXT_OCCURRENCES:]
    spans = spans[:MAX_TEXT_OCCURRENCES]
    distinct = list(dict.fromkeys(span.url for span in spans))[:MAX_TEXT_LINKS]
    gate = asyncio.Semaphore(CONCURRENCY)
    done = 0

    async def recover_one(url: str) -> Recovery | str:
        nonlocal done
        async with gate:
            try:
                answer: Recovery | str = await recover_link(url, link_date=at,
                                                            settings=settings, store=store)
            except PagetrailError as exc:
                answer = f"{exc.code}: {exc}"
        done += 1
        if progress is not None:
            reported = progress("recovering", done, len(distinct), url)
            if inspect.isawaitable(reported):
                await reported
        return answer

    answers = dict(zip(distinct, await asyncio.gather(*(recover_one(u) for u in distinct)),
                       strict=True))
    dead = await dead_targets(answers, settings, store)
    links: list[TextLink] = []
    edits: dict[Edit, TextLink] = {}
    paragraphs: dict[int, tuple[str, list[str]]] = {}
    for span in spans:
        sentence = citing_sentence(text, span, paragraphs)
        answer = answers.get(span.url)
        if answer is None or isinstance(answer, str):
            links.append(TextLink(url=span.url, line=span.line, sentence=sentence,
                                  verdict="skipped", reason=answer or "too many links"))
            continue
        kind, new_url, confidence, memento_date, reason = verdict_of(answer, dead)
        verdict: TextVerdict = "never-existed" if never_existed(answer, dead) else kind
        link = TextLink(url=span.url, line=span.line, sentence=sentence, verdict=verdict,
                        new_url=new_url, memento_date=memento_date, confidence=confidence,
                        reason=reason)
        if new_url and kind in ("moved", "replacement", "archived"):
            edits[Edit(span.start, span.end, escaped(new_url, fmt, span.form),
                       old=span.url, target=new_url)] = link
        links.append(link)
    for span in extra:
        links.append(TextLink(url=span.url, line=span.line, sentence="", verdict="skipped",
                              reason=f"too many links (over {MAX_TEXT_OCCURRENCES})"))
    if with_support:
        await _add_support(links, at, settings)
    # Only the edits the format's parser reads back as the same links with the new targets.
    repaired, _kept, refused = prove(text, fmt, list(edits))
    for refused_edit in refused:
        link = edits[refused_edit]
        link.reason = (f"{link.reason}; " if link.reason else "") + REFUSED
    return TextCheck(links=links, repaired_text=repaired, changed=repaired != text)


async def _add_support(links: list[TextLink], at: datetime, settings: Settings) -> None:
    """Each link's support, with each page fetched once (a URL cited 300 times is one fetch,
    not 300), CONCURRENCY fetches at a time; each distinct (page, sentence) scored once."""
    gate = asyncio.Semaphore(CONCURRENCY)
    pages: dict[tuple[str, str, datetime], asyncio.Task[str | PagetrailError]] = {}

    async def fetch(target: str, verdict: str, when: datetime) -> str | PagetrailError:
        async with gate:
            try:
                return await _page_text(target, verdict, when, settings)
            except PagetrailError as exc:
                return exc

    wanted: list[tuple[TextLink, tuple[str, str, datetime]]] = []
    for link in links:
        if link.verdict not in ("alive", "moved", "replacement", "archived") or not link.sentence:
            continue
        target = link.url if link.verdict in ("alive", "archived") else link.new_url or link.url
        kind = "archived" if link.verdict == "archived" else "live"
        when = (link.memento_date or at) if kind == "archived" else at
        key = (target, kind, when)
        if key not in pages:
            pages[key] = asyncio.ensure_future(fetch(target, link.verdict, when))
        wanted.append((link, key))
    scored: dict[tuple[tuple[str, str, datetime], str], Support | None] = {}
    for link, key in wanted:
        page = await pages[key]
        if isinstance(page, PagetrailError):
            link.reason = f"{link.reason}; page text unavailable ({page.code})".lstrip("; ")
            continue
        if (key, link.sentence) not in scored:
            scored[key, link.sentence] = support(link.sentence, page)
        link.support = scored[key, link.sentence]

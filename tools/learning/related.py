"""Related archived pages for a lost URL: same topic, archived, ranked (seed 004, §4.4).

For a URL that is neither live nor archived the paper recommends *other* archived pages:
classify the URL (tools.learning.classify), take the hosts of that category from the user's training
data, keep those an archive holds, and rank them by

    score = w_t·t + w_p·p + w_s·s + w_q·q          (Equation 1, weights summing to 1)

- t, temporal similarity: 1 − |requested − captured| / (now − 1996). The paper's Equation 2
  is the distance itself; we use its complement so that, like the other three, higher is
  better (its worked example ranks the closest capture first).
- p, popularity: log(1+n) / log(1+m), n the candidate's capture count, m a reference count
  (the paper's 538,300 captures of google.com). The paper's Alexa half is dropped (Alexa is
  gone); capture count alone remains.
- s, URI similarity: Jaccard of URI tokens (compound host names split into words).
- q, archival quality: share of the capture's embedded resources (images, scripts, styles,
  frames) that the archive also holds — a cheap stand-in for Memento-Damage's 1 − damage.

These are *related* pages on the same topic, never replacements: callers must present them
as such. Scoring is pure; archive I/O goes through two callables so tests can use a local
archive and `recommend_archived` wires the real memento primitive.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from pagetrail.tools.content.dates import as_utc
from pagetrail.tools.content.uritokens import TokenOptions, all_grams, similarity_tokens, uri_text
from pagetrail.tools.errors import ConfigError, PagetrailError
from pagetrail.tools.learning.classify import (
    MODEL_FILE,
    LinearUriModel,
    classify_url,
    load_candidates,
    load_model,
    model_dir,
)
from pagetrail.tools.models import Memento
from pagetrail.tools.net.urls import normalize_url, validate_url
from pagetrail.tools.settings import Settings, get_settings, mask_url

log = logging.getLogger(__name__)

MementoLookup = Callable[[str], Awaitable[list[Memento]]]
CaptureFetch = Callable[[Memento], Awaitable[bytes | None]]

EARLIEST = datetime(1996, 1, 1, tzinfo=UTC)  # when web archiving started (paper §4.4.1)
REFERENCE_CAPTURES = 538_300  # m: captures of the most-archived site (paper §4.4.2)
DEFAULT_WEIGHTS: dict[str, float] = {
    "temporal": 0.25, "popularity": 0.25, "uri_similarity": 0.25, "archival_quality": 0.25,
}
MAX_POOL = 40  # candidates looked up in the archive per request (cost bound)
MAX_RESOURCES = 8  # embedded resources checked per capture for archival quality
LOOKUP_CONCURRENCY = 4
RELATED_NOTE = ("related archived pages on the same topic as the lost URL — not replacements "
                "for it; none of them is the requested page")


# --------------------------------------------------------------------------- pure scoring


def temporal_similarity(requested: datetime, captured: datetime, *, now: datetime,
                        earliest: datetime = EARLIEST) -> float:
    """1 − |rd − cd| / (ud − ed), clipped to [0, 1]."""
    span = (as_utc(now) - as_utc(earliest)).total_seconds()
    if span <= 0:
        return 0.0
    gap = abs((as_utc(requested) - as_utc(captured)).total_seconds())
    return max(0.0, min(1.0, 1.0 - gap / span))


def popularity(captures: int, reference: int = REFERENCE_CAPTURES) -> float:
    """log(1+n) / log(1+m), clipped to [0, 1]."""
    if captures <= 0 or reference <= 0:
        return 0.0
    return min(1.0, math.log1p(captures) / math.log1p(reference))


def jaccard(a: frozenset[str] | set[str], b: frozenset[str] | set[str]) -> float:
    """|A ∩ B| / (|A| + |B| − |A ∩ B|) (Equation 4); 0 for two empty sets."""
    common = len(a & b)
    union = len(a) + len(b) - common
    return common / union if union else 0.0


def archival_quality(archived: int, total: int) -> float:
    """Share of embedded resources archived; a page with none is complete (1.0)."""
    if total <= 0:
        return 1.0
    return max(0.0, min(1.0, archived / total))


def normalise_weights(weights: dict[str, float] | None) -> dict[str, float]:
    """Weights for the four components, scaled to sum to 1 (missing ones are 0)."""
    merged = dict(DEFAULT_WEIGHTS) if weights is None else {k: 0.0 for k in DEFAULT_WEIGHTS}
    for name, value in (weights or {}).items():
        if name not in DEFAULT_WEIGHTS:
            raise ConfigError(f"unknown ranking component {name!r}")
        if not isinstance(value, int | float) or value < 0 or math.isnan(value):
            raise ConfigError(f"weight of {name} must be a non-negative number")
        merged[name] = float(value)
    total = sum(merged.values())
    if total <= 0:
        raise ConfigError("at least one ranking weight must be positive")
    return {k: v / total for k, v in merged.items()}


def rank_score(components: dict[str, float | None], weights: dict[str, float]) -> float:
    """Equation 1. An unknown component (None) contributes nothing: we cannot vouch for it."""
    return sum(weights[name] * (components.get(name) or 0.0) for name in weights)


def embedded_resources(html: bytes | str, base_url: str, *, limit: int = MAX_RESOURCES) -> list[str]:
    """Absolute http(s) URLs of resources a page embeds, in document order, deduplicated."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "lxml")
    found: list[str] = []
    seen: set[str] = set()
    for tag in soup.find_all(["img", "script", "link", "iframe", "embed", "source", "video",
                              "audio"]):
        if tag.name == "link":
            rels = {r.lower() for r in (tag.get("rel") or [])}
            if not rels & {"stylesheet", "icon", "shortcut"}:
                continue
            ref = tag.get("href")
        else:
            ref = tag.get("src")
        if not isinstance(ref, str) or not ref.strip() or ref.startswith("data:"):
            continue
        absolute = urljoin(base_url, ref.strip())
        if urlsplit(absolute).scheme not in ("http", "https") or absolute in seen:
            continue
        seen.add(absolute)
        found.append(absolute)
        if len(found) >= limit:
            break
    return found


def preselect(request_url: str, hosts: Sequence[str], pool: int) -> list[str]:
    """The `pool` hosts closest to the request by host-text 4-gram Jaccard (cheap, no
    archive I/O), ties broken by name, so that archive lookups go to the likeliest ones."""
    options = TokenOptions("allgrams_uri", drop_tld=True, drop_digits=False, use_path=False)
    wanted = frozenset(all_grams(_letters(uri_text(request_url, options)), 4, 4))
    scored = []
    for host in hosts:
        grams = frozenset(all_grams(_letters(uri_text(host, options)), 4, 4))
        scored.append((-jaccard(wanted, grams), host))
    scored.sort()
    return [host for _, host in scored[:pool]]


def _letters(text: str) -> str:
    return "".join(ch for ch in text if ch.isalnum())


# --------------------------------------------------------------------------- results


@dataclass
class RelatedPage:
    url: str  # the candidate's original URL (a host's home page)
    memento_url: str
    datetime: datetime
    captures: int
    score: float
    components: dict[str, float | None]
    resources_checked: int = 0
    memento: Memento | None = field(default=None, repr=False)  # for the quality probe

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": "related",
            "url": self.url,
            "memento_url": self.memento_url,
            "datetime": self.datetime.isoformat(),
            "captures": self.captures,
            "score": round(self.score, 4),
            "components": {k: (None if v is None else round(v, 4))
                           for k, v in self.components.items()},
        }


@dataclass
class Recommendations:
    url: str
    at: datetime | None
    category: str
    category_source: str  # "classifier" | "ontology"
    confidence: float
    items: list[RelatedPage]
    candidates_in_category: int
    looked_up: int
    archived: int
    weights: dict[str, float]
    failures: list[str] = field(default_factory=list)
    note: str = RELATED_NOTE

    def to_dict(self) -> dict[str, object]:
        return {
            "url": self.url,
            "at": self.at.isoformat() if self.at else None,
            "category": self.category,
            "category_source": self.category_source,
            "confidence": round(self.confidence, 4),
            "note": self.note,
            "weights": self.weights,
            "candidates_in_category": self.candidates_in_category,
            "looked_up": self.looked_up,
            "archived": self.archived,
            "failures": self.failures,
            "items": [item.to_dict() for item in self.items],
        }


# --------------------------------------------------------------------------- I/O


async def rank_archived(
    request_url: str,
    candidate_urls: Sequence[str],
    *,
    lookup: MementoLookup,
    fetch_capture: CaptureFetch | None,
    at: datetime | None = None,
    now: datetime | None = None,
    limit: int = 10,
    weights: dict[str, float] | None = None,
    reference_captures: int = REFERENCE_CAPTURES,
) -> tuple[list[RelatedPage], int, list[str]]:
    """Look each candidate up, keep the archived ones, score and rank them.

    Returns (top `limit` pages, how many were archived, failure notes). Archival quality
    costs a capture fetch plus one lookup per embedded resource, so it is measured only for
    the best `limit` + 5 by the other three components.
    """
    weights = normalise_weights(weights)
    now = as_utc(now or datetime.now(UTC))
    requested = as_utc(at) if at else now
    wanted_tokens = similarity_tokens(request_url)
    semaphore = asyncio.Semaphore(LOOKUP_CONCURRENCY)
    failures: list[str] = []

    async def captures_of(url: str) -> list[Memento]:
        async with semaphore:
            try:
                return await lookup(url)
            except PagetrailError as exc:
                failures.append(f"{url}: {exc.code}")
                return []

    found = await asyncio.gather(*(captures_of(u) for u in candidate_urls))
    pages: list[RelatedPage] = []
    for url, captures in zip(candidate_urls, found, strict=True):
        good = [c for c in captures if _is_good(c)]
        if not good:
            continue
        closest = min(good, key=lambda c: (abs((as_utc(c.datetime) - requested).total_seconds()),
                                           c.datetime))
        components: dict[str, float | None] = {
            "temporal": temporal_similarity(requested, closest.datetime, now=now),
            "popularity": popularity(len(good), reference_captures),
            "uri_similarity": jaccard(wanted_tokens, similarity_tokens(url)),
            "archival_quality": None,
        }
        pages.append(RelatedPage(
            url=url, memento_url=closest.memento_url, datetime=closest.datetime,
            captures=len(good), score=rank_score(components, weights), components=components,
            memento=closest,
        ))
    pages.sort(key=lambda p: (-p.score, p.url))
    if fetch_capture is not None and weights["archival_quality"] > 0:
        head = pages[: limit + 5]
        await asyncio.gather(*(_measure_quality(p, fetch_capture, captures_of) for p in head))
        for page in head:
            page.score = rank_score(page.components, weights)
        pages.sort(key=lambda p: (-p.score, p.url))
    return pages[:limit], len(pages), failures


def _is_good(capture: Memento) -> bool:
    if capture.status is not None and not 200 <= capture.status < 300:
        return False
    mime = capture.mimetype.split(";")[0].strip()
    return mime in ("", "text/html", "application/xhtml+xml", "unk", "warc/revisit")


async def _measure_quality(page: RelatedPage, fetch_capture: CaptureFetch,
                           captures_of: Callable[[str], Awaitable[list[Memento]]]) -> None:
    memento = page.memento
    if memento is None:
        return
    try:
        body = await fetch_capture(memento)
    except PagetrailError as exc:
        log.info("capture %s not fetched: %s", mask_url(memento.raw_url), exc)
        return
    if body is None:
        return
    resources = embedded_resources(body, memento.original_url)
    listed = await asyncio.gather(*(captures_of(r) for r in resources))
    archived = sum(1 for captures in listed if any(_is_good_resource(c) for c in captures))
    page.components["archival_quality"] = archival_quality(archived, len(resources))
    page.resources_checked = len(resources)


def _is_good_resource(capture: Memento) -> bool:
    return capture.status is None or 200 <= capture.status < 300


_loaded: dict[Path, tuple[int, LinearUriModel, dict[str, list[str]]]] = {}


def _classifier(directory: Path) -> tuple[LinearUriModel, dict[str, list[str]]]:
    """The model and candidate hosts of `directory`, reloaded when the model is retrained."""
    try:
        stamp = (directory / MODEL_FILE).stat().st_mtime_ns
    except OSError:
        stamp = -1  # load_model raises ModelMissing with the instructions
    cached = _loaded.get(directory)
    if cached is not None and cached[0] == stamp:
        return cached[1], cached[2]
    model, candidates = load_model(directory), load_candidates(directory)
    _loaded[directory] = (stamp, model, candidates)
    return model, candidates


async def recommend_archived(
    url: str,
    at: datetime | None = None,
    limit: int = 10,
    *,
    settings: Settings | None = None,
    lookup: MementoLookup | None = None,
    fetch_capture: CaptureFetch | None = None,
    weights: dict[str, float] | None = None,
    model_directory: Path | None = None,
    pool: int | None = None,
) -> Recommendations:
    """Archived pages related to `url` (same first-level topic), best first.

    Raises InvalidURL for a bad URL and ModelMissing when no classifier was trained
    (`pagetrail classify train --data PATH`). Without `lookup`/`fetch_capture` the configured
    archives are queried through the memento primitive.
    """
    url = validate_url(url)
    limit = max(1, min(100, int(limit)))
    # Loading reads megabytes of arrays: off the event loop, and once per trained model.
    model, candidates = await asyncio.to_thread(_classifier, model_directory or model_dir())
    prediction = classify_url(url, model=model, candidates=candidates)
    hosts = candidates.get(prediction.category, [])
    requested_key = normalize_url(url)
    chosen = [
        u for u in (f"http://{h}/" for h in preselect(url, hosts, pool or min(MAX_POOL, limit * 4)))
        if normalize_url(u) != requested_key
    ]
    settings = settings or get_settings()
    if lookup is None or fetch_capture is None:
        from pagetrail.tools.net.fetch import Fetcher

        async with Fetcher(settings) as fetcher:
            items, archived, failures = await rank_archived(
                url, chosen, at=at, limit=limit, weights=weights,
                lookup=lookup or _memento_lookup(fetcher, settings),
                fetch_capture=fetch_capture or _capture_fetch(fetcher),
            )
    else:
        items, archived, failures = await rank_archived(
            url, chosen, at=at, limit=limit, weights=weights, lookup=lookup,
            fetch_capture=fetch_capture,
        )
    return Recommendations(
        url=url, at=at, category=prediction.category, category_source=prediction.source,
        confidence=prediction.confidence, items=items, candidates_in_category=len(hosts),
        looked_up=len(chosen), archived=archived, weights=normalise_weights(weights),
        failures=failures,
    )


def _memento_lookup(fetcher, settings: Settings) -> MementoLookup:
    from pagetrail.tools.archive.memento import list_mementos

    async def lookup(candidate: str) -> list[Memento]:
        return await list_mementos(candidate, fetcher, settings)

    return lookup


def _capture_fetch(fetcher) -> CaptureFetch:
    async def fetch(memento: Memento) -> bytes | None:
        response = await fetcher.get(memento.raw_url, max_bytes=2 * 1024 * 1024,
                                     endpoint=True)  # the archive's replay URL
        return response.content if response.status == 200 and response.is_html else None

    return fetch

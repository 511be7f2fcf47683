"""Mementos (RFC 7089): find the right archived copy of a URL and fetch it raw.

For each configured archive (a wayback-style prefix: `https://web.archive.org/web`, or a
pywb collection `http://127.0.0.1:PORT/world`), in order:

1. list the captures — the CDX API first (it gives each capture's HTTP status and MIME
   type, so redirects and error captures are skipped without fetching them), else the
   TimeMap in link format (`{prefix}/timemap/link/{url}`), else the TimeGate
   (`{prefix}/{url}` with Accept-Datetime) for a single memento;
2. order them: closest *before* `at` first (default: the latest), then the ones after;
3. fetch the raw capture (`{prefix}/{timestamp}id_/{url}`, no replay banner, no rewriting),
   without following redirects: a captured 3xx or an error/soft-404 page is skipped.

Every answer is classified first (tools.archive.answers): one with `Memento-Datetime` is a
capture, whatever its status (a captured 429 or 503 page is skipped as a copy, never taken for
the archive throttling); one without it is the archive speaking. An archive that refuses the
URL ("Blocked Site Error", "This URL has been excluded from the Wayback Machine") is named
(ArchiveExcluded, `archive_excluded`, with its words) and never taken as a copy; one that
throttles or is down is skipped, and counts toward its circuit breaker (shared across workers
through Redis: tools.net.politeness.shared_breaker) — while open, it is not asked at all. If
every archive is down, ArchiveUnavailable is raised; if every archive that answered refused,
ArchiveExcluded; if the archives answered but hold nothing good, the result is None.

`archived_redirects` finds captures that are redirects to another URL: a redirect captured
before the page died often names its new home (FABLE's first method).

Other Memento archives and aggregators: a configured prefix whose path ends in `/timemap`,
`/timemap/link` or `/timemap/json` is a TimeMap endpoint — archive.today
(`https://archive.today/timemap`), perma.cc (`https://perma.cc/timemap/link`), a MemGator or
Time Travel aggregator (`http://localhost:1208/timemap/json`). Its TimeMap (link format or
JSON) is the listing; each memento is fetched from the archive that holds it (raw, `id_`,
where that archive is wayback-style; as replayed for archive.today, which has no raw mode);
an archive of the aggregate that throttles, fails or refuses is named in `unavailable` and
skipped, and the others' captures are still used. Wayback-style archives (arquivo.pt's
`https://arquivo.pt/wayback`, the Library of Congress's `https://webarchive.loc.gov/all`,
Archive-It's `https://wayback.archive-it.org/all`) are configured by their prefix as the
Internet Archive is.

Parsing is pure (`parse_timemap`, `parse_cdx`, `order_captures`); I/O goes through the
Fetcher. Everything an archive returns is untrusted: sizes are capped, bad rows skipped.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import format_datetime, parsedate_to_datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit

from pagetrail.tools.archive.answers import ArchiveAnswer, captured_wall, classify, refusal_message
from pagetrail.tools.content.dates import as_utc, parse_timestamp
from pagetrail.tools.content.document import looks_like_error_page, parse_document
from pagetrail.tools.errors import (
    ArchiveExcluded,
    ArchiveUnavailable,
    BodyTooLarge,
    DecompressionBomb,
    FetchFailed,
    InvalidURL,
    RateLimited,
    RefusedAddress,
    TooManyRedirects,
)
from pagetrail.tools.models import ArchivedRedirect, Memento
from pagetrail.tools.net.politeness import shared_breaker
from pagetrail.tools.net.urls import (
    endpoint_url,
    normalize_url,
    same_url,
    validate_url,
    without_userinfo,
)
from pagetrail.tools.offload import off_loop
from pagetrail.tools.settings import Settings, get_settings, mask_url

if TYPE_CHECKING:
    from pagetrail.tools.net.fetch import Fetcher, Response

log = logging.getLogger(__name__)

MAX_INDEX_BYTES = 4 * 1024 * 1024  # TimeMaps/CDX listings of busy URLs can be huge
MAX_CAPTURES = 20_000
MAX_CAPTURE_TRIES = 4  # raw captures fetched per archive before giving up on it
MAX_REDIRECT_PROBES = 6
_HTML_MIME = ("text/html", "application/xhtml+xml", "text/plain", "unk", "warc/revisit", "")
_ERROR_TARGET = re.compile(
    r"(?:^|[/_.-])(?:login|log-in|signin|sign-in|signon|auth|sso|error|errors|404|notfound|"
    r"not-found|not_found|pagenotfound|page-not-found|unavailable|session-expired|"
    r"account/login|wp-login\.php|authorize|oauth2?)(?:$|[/_.?=-])"
    r"|[?&](?:redirect_uri|returnto|return_to)=",
    re.I,
)


class _ArchiveDown(Exception):
    """The archive failed to answer (network error, 5xx, 429 without Memento-Datetime)."""


class _ArchiveRefused(Exception):
    """The archive itself refuses the URL (blocked site, excluded URL): its own answer."""

    def __init__(self, answer: ArchiveAnswer) -> None:
        super().__init__(answer.words)
        self.answer = answer


def _note_down(endpoint: ArchiveEndpoint, exc: Exception,
               unavailable: list[str] | None) -> None:
    """One archive of several did not answer (or refused): logged, and told to the caller
    that asked, named: `archive_unavailable: …` or `archive_excluded: …`."""
    prefix = mask_url(endpoint.prefix)
    if isinstance(exc, _ArchiveRefused):
        note = f"{prefix}: archive_excluded: {refusal_message('the archive', exc.answer)}"
    else:
        text = str(exc)
        note = f"{prefix}: {text if text.startswith('archive_') else 'archive_unavailable: ' + text}"
    log.warning("archive %s: %s", prefix, note)
    if unavailable is not None and note not in unavailable:
        unavailable.append(note)


def _refused_error(url: str, refusals: list[tuple[ArchiveEndpoint, _ArchiveRefused]],
                   down: int) -> ArchiveExcluded:
    words = "; ".join(refusal_message(mask_url(e.prefix), r.answer) for e, r in refusals)
    extra = f" ({down} other archive(s) did not answer)" if down else ""
    return ArchiveExcluded(words + extra, url=url)


# ---------------------------------------------------------------------------------------
# Endpoints and timestamps


_TIMEMAP_ENDPOINT = re.compile(r"/timemap(?:/(?:link|json))?$", re.I)
_WAYBACK_MEMENTO = re.compile(r"^(https?://[^?#]+?)/(\d{14})(?:[a-z]{2}_)?/((?:https?:/)?/?.+)$")
# Archives whose mementos have no raw (id_) mode: fetched as replayed.
_NO_RAW_MODE = re.compile(r"(?:^|\.)archive\.(?:today|is|ph|md|li|vn|fo)$", re.I)


@dataclass(frozen=True)
class ArchiveEndpoint:
    """URL layout of one wayback-style archive (Internet Archive, pywb), or of a TimeMap
    endpoint (an archive or aggregator listed only by its TimeMaps: `kind == "timemap"`)."""

    prefix: str

    @property
    def kind(self) -> str:
        return "timemap" if _TIMEMAP_ENDPOINT.search(urlsplit(self.prefix).path) else "wayback"

    @classmethod
    def of(cls, prefix: str) -> ArchiveEndpoint:
        # Without the archive's credentials: the URLs built here are handed out (memento
        # and raw URLs in answers, Slack messages); the fetcher authorises endpoint requests.
        return cls(without_userinfo(prefix.strip()).rstrip("/"))

    # Every URL of the archive is built by urls.endpoint_url: the looked-up URL (a user's, or
    # an original from the archive's own listing) is data in the path, never a path step.
    def timemap_url(self, url: str) -> str:
        if self.kind == "timemap":
            return endpoint_url(self.prefix, data_url=url)
        return endpoint_url(self.prefix, "timemap/link/", data_url=url)

    def timegate_url(self, url: str) -> str:
        return endpoint_url(self.prefix, data_url=url)

    def memento_url(self, timestamp: str, url: str) -> str:
        return endpoint_url(self.prefix, f"{_stamp(timestamp)}/", data_url=url)

    def raw_url(self, timestamp: str, url: str) -> str:
        return endpoint_url(self.prefix, f"{_stamp(timestamp)}id_/", data_url=url)

    def cdx_url(self, url: str) -> str:
        """Wayback layout `…/web` → `…/cdx/search/cdx`; pywb collections: `{prefix}/cdx`."""
        parts = urlsplit(self.prefix)
        params: dict[str, str | int] = {"url": url, "output": "json"}
        if parts.path.rstrip("/").endswith("/web"):
            root = self.prefix[: -len("/web")]
            # Only the fields used: a busy URL's listing stays within MAX_INDEX_BYTES longer.
            params["fl"] = "timestamp,original,mimetype,statuscode"
            return endpoint_url(root, "cdx/search/cdx", params=params)
        return endpoint_url(self.prefix, "cdx", params=params)

    def split_memento_url(self, memento_url: str) -> tuple[str, str] | None:
        """`{prefix}/{timestamp}{modifier}/{original}` → (timestamp, original)."""
        if not memento_url.startswith(self.prefix + "/"):
            return None
        rest = memento_url[len(self.prefix) + 1:]
        match = re.match(r"^(\d{4,14})(?:[a-z]{2}_)?/(.+)$", rest)
        if not match:
            return None
        original = match.group(2)
        # Some archives collapse "//" in the embedded URL ("http:/example.com/").
        original = re.sub(r"^(https?):/(?!/)", r"\1://", original)
        return match.group(1), original


def _stamp(timestamp: str) -> str:
    """An archive timestamp (digits; from an archive's listing, so checked)."""
    if not re.fullmatch(r"\d{1,14}", timestamp):
        raise InvalidURL(f"not an archive timestamp: {timestamp[:40]!r}")
    return timestamp


def timestamp_of(moment: datetime) -> str:
    return as_utc(moment).strftime("%Y%m%d%H%M%S")


def parse_http_date(text: str) -> datetime | None:
    try:
        moment = parsedate_to_datetime(text.strip())
    except (TypeError, ValueError, IndexError):
        return None
    return as_utc(moment) if moment else None


def _status(value: Any) -> int | None:
    try:
        status = int(str(value).strip())
    except (TypeError, ValueError):
        return None  # "-" in CDX: a revisit or unknown
    return status if 100 <= status <= 599 else None


# ---------------------------------------------------------------------------------------
# Link format (RFC 6690 / RFC 7089 TimeMaps)


@dataclass(frozen=True)
class LinkEntry:
    uri: str
    params: dict[str, str]

    @property
    def rels(self) -> set[str]:
        return set(self.params.get("rel", "").lower().split())


def parse_link_format(text: str, *, max_entries: int = MAX_CAPTURES) -> list[LinkEntry]:
    """Parse `<uri>; rel="…"; datetime="…", <uri>; …` tolerantly.

    Commas and semicolons inside quotes or <> do not split; malformed entries are skipped.
    """
    entries: list[LinkEntry] = []
    i, n = 0, len(text)
    while i < n and len(entries) < max_entries:
        start = text.find("<", i)
        if start < 0:
            break
        end = text.find(">", start + 1)
        if end < 0:
            break
        uri = text[start + 1:end].strip()
        i = end + 1
        params: dict[str, str] = {}
        # Parameters up to the next top-level comma.
        while i < n:
            while i < n and text[i] in " \t\r\n":
                i += 1
            if i >= n or text[i] == ",":
                i += 1
                break
            if text[i] == "<":  # a missing comma between entries
                break
            if text[i] != ";":
                # Junk: skip to the next separator.
                nxt = min((p for p in (text.find(";", i), text.find(",", i), text.find("<", i))
                           if p >= 0), default=n)
                i = nxt
                continue
            i += 1
            match = re.match(r'\s*([A-Za-z0-9_.*-]+)\s*(?:=\s*("(?:[^"\\]|\\.)*"|[^;,<\s]*))?',
                             text[i:i + 4096])
            if not match:
                continue
            key = match.group(1).lower()
            value = match.group(2) or ""
            if value.startswith('"'):
                value = value[1:-1].replace('\\"', '"')
            params.setdefault(key, value)
            i += match.end()
        if uri and len(uri) <= 8192:
            entries.append(LinkEntry(uri=uri, params=params))
    return entries


def parse_timemap(text: str, archive: str, original_url: str) -> list[Memento]:
    """Mementos of a link-format TimeMap (entries with rel containing "memento")."""
    endpoint = ArchiveEndpoint.of(archive)
    mementos: list[Memento] = []
    for entry in parse_link_format(text):
        if "memento" not in entry.rels:
            continue
        uri = urljoin(endpoint.prefix + "/", entry.uri)
        if urlsplit(uri).scheme not in ("http", "https"):
            continue
        memento = _memento_of(endpoint, uri, parse_http_date(entry.params.get("datetime", "")),
                              original_url)
        if memento is not None:
            mementos.append(memento)
    return mementos


def _memento_of(endpoint: ArchiveEndpoint, uri: str, moment: datetime | None,
                original_url: str) -> Memento | None:
    """A TimeMap's memento URL as a Memento: in the endpoint's own layout, else in another
    wayback-style archive's (`{prefix}/{14 digits}/{original}`: an aggregator's TimeMap lists
    many archives), else as it is (fetched as replayed)."""
    split = endpoint.split_memento_url(uri)
    archive = endpoint
    if split is None:
        match = _WAYBACK_MEMENTO.match(uri)
        if match:
            archive = ArchiveEndpoint.of(match.group(1))
            split = archive.split_memento_url(uri)
    if moment is None and split:
        moment = parse_timestamp(split[0])
    if moment is None:
        return None
    if split is None:
        return Memento(original_url=original_url, memento_url=uri, raw_url=uri,
                       datetime=moment, archive=endpoint.prefix if endpoint.kind == "wayback"
                       else _archive_of(uri))
    timestamp, original = split
    raw = uri if _NO_RAW_MODE.search(urlsplit(uri).hostname or "") \
        else archive.raw_url(timestamp, original)
    return Memento(original_url=original, memento_url=uri, raw_url=raw, datetime=moment,
                   archive=archive.prefix)


def _archive_of(uri: str) -> str:
    parts = urlsplit(uri)
    return f"{parts.scheme}://{parts.netloc}"


def parse_timemap_json(text: str, archive: str, original_url: str) -> list[Memento] | None:
    """Mementos of a JSON TimeMap (MemGator's and Time Travel's `timemap/json`: `mementos.list`
    of {datetime, uri}; Time Travel's `api/json` navigation entries, whose `uri` is a list).
    None when the text is not such a TimeMap."""
    try:
        payload = json.loads(text)
    except ValueError:
        return None
    if not isinstance(payload, dict) or not isinstance(payload.get("mementos"), dict):
        return None
    endpoint = ArchiveEndpoint.of(archive)
    original = str(payload.get("original_uri") or original_url)
    block = payload["mementos"]
    entries = block.get("list")
    if not isinstance(entries, list):  # api/json: first/prev/closest/next/last only
        entries = [v for v in block.values() if isinstance(v, dict)]
    mementos: list[Memento] = []
    seen: set[str] = set()
    for entry in entries[:MAX_CAPTURES]:
        if not isinstance(entry, dict):
            continue
        moment = _iso_moment(entry.get("datetime"))
        uris = entry.get("uri")
        for uri in uris if isinstance(uris, list) else [uris]:
            if not isinstance(uri, str) or uri in seen or \
                    urlsplit(uri).scheme not in ("http", "https"):
                continue
            seen.add(uri)
            memento = _memento_of(endpoint, uri, moment, original)
            if memento is not None:
                mementos.append(memento)
    return mementos


def _iso_moment(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return as_utc(datetime.fromisoformat(value.replace("Z", "+00:00")))
    except ValueError:
        return None


def parse_cdx(text: str, archive: str, original_url: str) -> list[Memento] | None:
    """CDX JSON in either shape: the Internet Archive's array of rows with a header row, or
    pywb's one JSON object per line. None when the text is neither (not a CDX answer)."""
    endpoint = ArchiveEndpoint.of(archive)
    rows: list[dict[str, Any]] = []
    stripped = text.strip()
    if not stripped:
        return []
    if stripped.startswith("["):
        try:
            table = json.loads(stripped)
        except ValueError:
            return None
        if not isinstance(table, list):
            return None
        if table and isinstance(table[0], list):
            header = [str(h) for h in table[0]]
            rows = [dict(zip(header, row, strict=False)) for row in table[1:MAX_CAPTURES + 1]
                    if isinstance(row, list)]
    else:
        for number, line in enumerate(stripped.splitlines()[:MAX_CAPTURES]):
            try:
                row = json.loads(line)
            except ValueError:
                if number == 0:
                    return None  # not CDX JSON at all (an HTML error page, say)
                continue
            if isinstance(row, dict):
                rows.append(row)
    return _cdx_rows(rows, endpoint, original_url)


def _cdx_rows(rows: list[dict[str, Any]], endpoint: ArchiveEndpoint,
              original_url: str) -> list[Memento]:
    mementos: list[Memento] = []
    for row in rows:
        timestamp = str(row.get("timestamp", ""))
        moment = parse_timestamp(timestamp)
        if moment is None or len(timestamp) != 14:
            continue
        original = str(row.get("original") or row.get("url") or original_url)
        if urlsplit(original).scheme not in ("http", "https"):
            original = original_url
        mementos.append(Memento(
            original_url=original,
            memento_url=endpoint.memento_url(timestamp, original),
            raw_url=endpoint.raw_url(timestamp, original),
            datetime=moment, archive=endpoint.prefix,
            status=_status(row.get("statuscode", row.get("status"))),
            mimetype=str(row.get("mimetype") or row.get("mime") or "")[:100].lower(),
        ))
    return mementos


# ---------------------------------------------------------------------------------------
# Choosing captures (pure)


def is_good_capture(capture: Memento) -> bool:
    """Not known to be a redirect or error, and HTML-ish (or of unknown type)."""
    if capture.status is not None and not 200 <= capture.status < 300:
        return False
    mime = capture.mimetype.split(";")[0].strip()
    return mime in _HTML_MIME


def order_captures(captures: list[Memento], at: datetime | None = None) -> list[Memento]:
    """Good captures in the order to try: closest before `at` first (latest first when no
    date), then those after `at`, closest first. Duplicate timestamps are kept once."""
    seen: set[tuple[str, datetime]] = set()
    good: list[Memento] = []
    for capture in captures:
        key = (capture.archive, capture.datetime)
        if key in seen or not is_good_capture(capture):
            continue
        seen.add(key)
        good.append(capture)
    if at is None:
        return sorted(good, key=lambda c: c.datetime, reverse=True)
    at = as_utc(at)
    before = sorted((c for c in good if c.datetime <= at), key=lambda c: c.datetime,
                    reverse=True)
    after = sorted((c for c in good if c.datetime > at), key=lambda c: c.datetime)
    return before + after


def choose_capture(captures: list[Memento], at: datetime | None = None) -> Memento | None:
    ordered = order_captures(captures, at)
    return ordered[0] if ordered else None


def redirect_target_ok(original_url: str, target_url: str) -> bool:
    """A captured redirect worth reporting: to a different URL, not the site root, not a
    login or error page (those redirects say the page died, not where it went)."""
    if not target_url or same_url(original_url, target_url):
        return False
    try:
        parts = urlsplit(target_url)
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return False
    if parts.path in ("", "/") and not parts.query:
        return False
    return not _ERROR_TARGET.search(parts.path + ("?" + parts.query if parts.query else ""))


def resolve_location(endpoint: ArchiveEndpoint, original_url: str,
                     location: str) -> tuple[str, str | None]:
    """A captured Location → (original target URL, archive timestamp or None).

    Archives rewrite captured Locations into their own URL space
    (`{prefix}/{ts}id_/{target}`); relative Locations resolve against the original URL.
    """
    absolute = urljoin(endpoint.prefix + "/", location) if location.startswith("/") else location
    split = endpoint.split_memento_url(absolute)
    if split:
        return split[1], split[0]
    return urljoin(original_url, location), None


# ---------------------------------------------------------------------------------------
# I/O


def _archives(settings: Settings) -> list[ArchiveEndpoint]:
    return [ArchiveEndpoint.of(prefix) for prefix in settings.archives if prefix.strip()]


def _answer(response: Response) -> ArchiveAnswer:
    return classify(response.status, response.headers, response.content)


def _is_down(response: Response) -> bool:
    """The archive throttling or failing (never a capture: that has Memento-Datetime)."""
    return _answer(response).unavailable


def _service(url: str) -> str:
    return urlsplit(url).netloc.rpartition("@")[2].lower()


async def _get(fetcher: Fetcher, url: str, **options: Any) -> Response:
    """GET of one of the archive's own URLs, through its circuit breaker: network failures
    and throttled/down answers count toward opening it (a Retry-After opens it at once);
    while it is open the archive is not asked (_ArchiveDown, `archive_unavailable`)."""
    breaker = shared_breaker(getattr(fetcher, "settings", None) or get_settings())
    service = _service(url)
    left = await breaker.open_for(service)
    if left > 0:
        raise _ArchiveDown(f"archive_unavailable: {service} throttled or down; not asked for "
                           f"another {left:.0f} s (circuit open)")
    try:
        response = await fetcher.get(url, endpoint=True, **options)  # the archive's own URLs
    except (FetchFailed, RateLimited) as exc:
        await breaker.failure(service, getattr(exc, "retry_after", None))
        raise _ArchiveDown(str(exc)) from exc
    answer = _answer(response)
    if answer.unavailable:
        opened = await breaker.failure(service, answer.retry_after)
        if opened:
            log.warning("archive %s %s (HTTP %s): left alone for %.0f s", service, answer.kind,
                        answer.status, opened)
    elif answer.kind != "other":
        await breaker.success(service)
    return response


async def _list_from(endpoint: ArchiveEndpoint, url: str,
                     fetcher: Fetcher) -> list[Memento] | None:
    """Captures of `url` in one archive: CDX, else TimeMap. None: neither index answered
    (try the TimeGate). Raises _ArchiveDown when the archive does not answer at all."""
    if endpoint.kind == "timemap":
        return await _list_timemap(endpoint, url, fetcher)
    down = 0
    try:
        response = await _get(fetcher, endpoint.cdx_url(url), max_bytes=MAX_INDEX_BYTES)
        if _answer(response).refused:
            raise _ArchiveRefused(_answer(response))
        if response.status == 200:
            parsed = parse_cdx(response.text(), endpoint.prefix, url)
            if parsed is not None:
                return parsed
        elif _is_down(response):
            down += 1
    except _ArchiveDown:
        down += 1
    except (BodyTooLarge, DecompressionBomb) as exc:
        log.info("CDX listing of %s too large: %s", url, exc)
    try:
        response = await _get(fetcher, endpoint.timemap_url(url), max_bytes=MAX_INDEX_BYTES)
    except _ArchiveDown:
        if down:
            raise
        return None
    except (BodyTooLarge, DecompressionBomb):
        return None
    if _answer(response).refused:
        raise _ArchiveRefused(_answer(response))
    if response.status == 200:
        return parse_timemap(response.text(), endpoint.prefix, url)
    if response.status in (404, 410):
        return []  # the archive has no captures of this URL
    if _is_down(response) and down:
        raise _ArchiveDown(f"archive answered {response.status}")
    return None


async def _list_timemap(endpoint: ArchiveEndpoint, url: str,
                        fetcher: Fetcher) -> list[Memento]:
    """A TimeMap endpoint's listing (link format or JSON); its refusals, throttling and
    answers that are no TimeMap (a challenge page) are named."""
    try:
        response = await _get(fetcher, endpoint.timemap_url(url), max_bytes=MAX_INDEX_BYTES)
    except (BodyTooLarge, DecompressionBomb) as exc:
        raise _ArchiveDown(f"archive_unavailable: TimeMap too large ({exc})") from exc
    answer = _answer(response)
    if answer.refused:
        raise _ArchiveRefused(answer)
    if answer.unavailable:
        raise _ArchiveDown(f"archive_unavailable: TimeMap answered HTTP {response.status}")
    if response.status in (404, 410):
        return []  # no captures (MemGator and Time Travel answer 404 for none)
    if response.status != 200:
        raise _ArchiveDown(f"archive_unavailable: TimeMap answered HTTP {response.status}")
    text = response.text()
    parsed = parse_timemap_json(text, endpoint.prefix, url) \
        if text.lstrip().startswith("{") else None
    if parsed is not None:
        return parsed
    if "<" not in text[:2048] or (response.is_html and "rel=" not in text[:65536]):
        raise _ArchiveDown("archive_unavailable: the TimeMap endpoint answered a page, not a "
                           "TimeMap (a challenge or an error page)")
    return parse_timemap(text, endpoint.prefix, url)


class CaptureListings:
    """One capture listing per archive and URL, shared by the callers of one recovery: the
    archived copy and the archived redirects are read from the same CDX answer instead of
    asking the archive twice (the archive is the slowest and most rate-limited party)."""

    def __init__(self) -> None:
        self._listings: dict[tuple[str, str], asyncio.Future[list[Memento] | None]] = {}

    async def get(self, endpoint: ArchiveEndpoint, url: str,
                  fetcher: Fetcher) -> list[Memento] | None:
        key = (endpoint.prefix, url)
        listing = self._listings.get(key)
        if listing is None:
            listing = asyncio.ensure_future(_list_from(endpoint, url, fetcher))
            self._listings[key] = listing
        # Shielded: one caller giving up must not cancel the listing the other awaits.
        return await asyncio.shield(listing)


async def _listing(endpoint: ArchiveEndpoint, url: str, fetcher: Fetcher,
                   listings: CaptureListings | None) -> list[Memento] | None:
    if listings is None:
        return await _list_from(endpoint, url, fetcher)
    return await listings.get(endpoint, url, fetcher)


async def _timegate(endpoint: ArchiveEndpoint, url: str, fetcher: Fetcher,
                    at: datetime | None) -> list[Memento]:
    """The single memento a TimeGate picks for `at` (RFC 7089 pattern 2.1 or 2.2)."""
    moment = as_utc(at or datetime.now(UTC))
    response = await _get(fetcher, endpoint.timegate_url(url), follow_redirects=False,
                          headers={"Accept-Datetime": format_datetime(moment, usegmt=True)})
    answer = _answer(response)
    if answer.refused:
        raise _ArchiveRefused(answer)
    if answer.unavailable:
        raise _ArchiveDown(f"TimeGate answered {response.status}")
    location = response.headers.get("location") if 300 <= response.status < 400 else None
    memento_url = location or response.headers.get("content-location") or ""
    if memento_url:
        memento_url = urljoin(endpoint.prefix + "/", memento_url)
    split = endpoint.split_memento_url(memento_url) if memento_url else None
    if not split:
        return []
    timestamp, original = split
    stamp = parse_http_date(response.headers.get("memento-datetime", "")) if not location else None
    when = stamp or parse_timestamp(timestamp)
    if when is None:
        return []
    return [Memento(original_url=original, memento_url=endpoint.memento_url(timestamp, original),
                    raw_url=endpoint.raw_url(timestamp, original), datetime=when,
                    archive=endpoint.prefix)]


async def _fetch_raw(endpoint: ArchiveEndpoint, capture: Memento,
                     fetcher: Fetcher) -> tuple[Response | None, str | None]:
    """Fetch a capture in id_ mode. Returns (response, captured Location).

    An archive-internal redirect to another timestamp of the same URL is followed once;
    any other 3xx is a captured redirect and comes back as its Location.
    """
    url = capture.raw_url
    for _ in range(2):
        try:
            response = await _get(fetcher, url, follow_redirects=False)
        except (BodyTooLarge, DecompressionBomb, TooManyRedirects, RefusedAddress) as exc:
            log.info("capture %s unusable: %s", url, exc)
            return None, None
        if not 300 <= response.status < 400:
            return response, None
        location = response.headers.get("location", "")
        target, timestamp = resolve_location(endpoint, capture.original_url, location)
        if timestamp and same_url(target, capture.original_url):
            url = endpoint.raw_url(timestamp, target)
            continue
        return response, target
    return None, None


async def list_mementos(url: str, fetcher: Fetcher,
                        settings: Settings | None = None, *,
                        unavailable: list[str] | None = None) -> list[Memento]:
    """Every capture of `url` in the configured archives (status/MIME where the CDX has
    them), oldest first. Raises ArchiveUnavailable (ArchiveExcluded) if no archive
    answered; each archive that did not answer while others did is added to `unavailable`
    ("<prefix>: archive_unavailable: …", "<prefix>: archive_excluded: …")."""
    url = validate_url(url)
    settings = settings or get_settings()
    captures: list[Memento] = []
    answered = down = 0
    refusals: list[tuple[ArchiveEndpoint, _ArchiveRefused]] = []
    for endpoint in _archives(settings):
        try:
            listed = await _list_from(endpoint, url, fetcher)
        except _ArchiveDown as exc:
            _note_down(endpoint, exc, unavailable)
            down += 1
            continue
        except _ArchiveRefused as exc:
            _note_down(endpoint, exc, unavailable)
            refusals.append((endpoint, exc))
            continue
        answered += 1
        captures.extend(listed or [])
    _raise_when_none_answered(url, settings, answered, down, refusals)
    return sorted(captures, key=lambda c: c.datetime)


def _raise_when_none_answered(url: str, settings: Settings, answered: int, down: int,
                              refusals: list[tuple[ArchiveEndpoint, _ArchiveRefused]]) -> None:
    """No archive answered: ArchiveExcluded when one refused the URL (its words), else
    ArchiveUnavailable."""
    if answered or not settings.archives:
        return
    if refusals:
        raise _refused_error(url, refusals, down)
    raise ArchiveUnavailable("archive_unavailable: no archive answered", url=url)


async def fetch_memento(url: str, fetcher: Fetcher, *, at: datetime | None = None,
                        settings: Settings | None = None,
                        listings: CaptureListings | None = None,
                        unavailable: list[str] | None = None) -> Memento | None:
    """The best raw archived copy of `url` (closest before `at`), parsed; None if none.
    `listings` shares capture listings with other lookups of the same recovery; each
    archive that did not answer is added to `unavailable` ("<prefix>: <why>")."""
    url = validate_url(url)
    settings = settings or get_settings()
    answered = down = 0
    refusals: list[tuple[ArchiveEndpoint, _ArchiveRefused]] = []
    for endpoint in _archives(settings):
        try:
            memento = await _memento_from(endpoint, url, fetcher, at, listings, unavailable)
        except _ArchiveDown as exc:
            _note_down(endpoint, exc, unavailable)
            down += 1
            continue
        except _ArchiveRefused as exc:
            refusals.append((endpoint, exc))
            continue
        answered += 1
        if memento is not None:
            return memento
    _raise_when_none_answered(url, settings, answered, down, refusals)
    for endpoint, refusal in refusals:  # others answered: the refusal is a note
        _note_down(endpoint, refusal, unavailable)
    return None


async def _memento_from(endpoint: ArchiveEndpoint, url: str, fetcher: Fetcher,
                        at: datetime | None,
                        listings: CaptureListings | None = None,
                        notes: list[str] | None = None) -> Memento | None:
    captures = await _listing(endpoint, url, fetcher, listings)
    if captures is None:
        captures = await _timegate(endpoint, url, fetcher, at)
    aggregate = endpoint.kind == "timemap"
    failures: dict[str, int] = {}
    skipped: set[str] = set()  # an aggregate's archives that failed or refused
    tries = 0
    for capture in order_captures(captures, at):
        if tries >= MAX_CAPTURE_TRIES * (2 if aggregate else 1):
            break
        archive = ArchiveEndpoint.of(capture.archive) if aggregate else endpoint
        if archive.prefix in skipped:
            continue
        tries += 1
        try:
            response, location = await _fetch_raw(archive, capture, fetcher)
        except (_ArchiveDown, _ArchiveRefused) as exc:
            if not aggregate:
                raise
            skipped.add(archive.prefix)
            _note_down(archive, exc, notes)
            continue
        if response is None or location is not None:
            continue
        answer = _answer(response)
        if answer.refused:  # the archive's page about the URL, in place of a capture
            if not aggregate:
                raise _ArchiveRefused(answer)
            skipped.add(archive.prefix)
            _note_down(archive, _ArchiveRefused(answer), notes)
            continue
        if answer.unavailable:
            failures[archive.prefix] = failures.get(archive.prefix, 0) + 1
            if failures[archive.prefix] >= 2 or aggregate:
                down = _ArchiveDown(f"archive_unavailable: captures answered {response.status}")
                if not aggregate:
                    raise down
                skipped.add(archive.prefix)
                _note_down(archive, down, notes)
            continue
        if response.status != 200:
            # A capture of an error (a captured 404, 429 or 503): not a copy of the page.
            log.info("capture %s is an archived HTTP %s", mask_url(capture.raw_url),
                     response.status)
            continue
        if response.content_type and not response.is_html and \
                not response.content_type.startswith("text/"):
            continue
        document = await off_loop(parse_document, response.content, capture.original_url,
                                  content_type=response.headers.get("content-type"))
        if looks_like_error_page(document) or captured_wall(document.title, document.text):
            log.info("capture %s is an error, parking or challenge page",
                     mask_url(capture.raw_url))
            continue
        return capture.model_copy(update={
            "status": 200,
            "document": document,
            "datetime": parse_http_date(response.headers.get("memento-datetime", ""))
            or capture.datetime,
        })
    return None


async def archived_redirects(url: str, fetcher: Fetcher,
                             settings: Settings | None = None,
                             listings: CaptureListings | None = None,
                             unavailable: list[str] | None = None,
                             ) -> list[ArchivedRedirect]:
    """Captures of `url` that redirect elsewhere, newest first, one per target (archives
    that did not answer are added to `unavailable`, as by fetch_memento)."""
    url = validate_url(url)
    settings = settings or get_settings()
    found: dict[str, ArchivedRedirect] = {}
    answered = down = 0
    refusals: list[tuple[ArchiveEndpoint, _ArchiveRefused]] = []
    for endpoint in _archives(settings):
        try:
            captures = await _listing(endpoint, url, fetcher, listings) or []
        except _ArchiveDown as exc:
            _note_down(endpoint, exc, unavailable)
            down += 1
            continue
        except _ArchiveRefused as exc:
            refusals.append((endpoint, exc))
            continue
        answered += 1
        # A TimeMap says nothing of statuses: then look at the newest few captures.
        statuses_known = any(c.status is not None for c in captures)
        probes = [c for c in captures if 300 <= (c.status or 0) < 400] if statuses_known \
            else captures
        probes = sorted(probes, key=lambda c: c.datetime, reverse=True)[:MAX_REDIRECT_PROBES]
        for capture in probes:
            archive = ArchiveEndpoint.of(capture.archive) if endpoint.kind == "timemap" \
                else endpoint
            try:
                response, target = await _fetch_raw(archive, capture, fetcher)
            except (_ArchiveDown, _ArchiveRefused):
                break
            if response is None or not target or not redirect_target_ok(url, target):
                continue
            key = normalize_url(target)
            if key not in found:
                found[key] = ArchivedRedirect(
                    original_url=url, target_url=target, datetime=capture.datetime,
                    status=response.status, memento_url=capture.memento_url)
    _raise_when_none_answered(url, settings, answered, down, refusals)
    for endpoint, refusal in refusals:
        _note_down(endpoint, refusal, unavailable)
    return sorted(found.values(), key=lambda r: r.datetime, reverse=True)


__all__ = [
    "ArchiveEndpoint", "CaptureListings", "LinkEntry", "archived_redirects", "choose_capture",
    "fetch_memento", "is_good_capture", "list_mementos", "order_captures", "parse_cdx",
    "parse_link_format", "parse_timemap", "parse_timemap_json", "redirect_target_ok", "resolve_location",
]

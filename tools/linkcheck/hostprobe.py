"""Soft-404 probing once per URL shape per run, and a one-request check for scans.

`check_link` probes a random sibling of every live HTML page: one extra request per link.
A scan of thousands of links on a few hosts asks the same question over and over — how does
this site answer a URL that cannot exist? — so `SiblingProber` asks it once per host and
path shape (directory + extension + query keys; Bar-Yossef's sibling test compares against
a random URL *of the same shape*) and shares the answer, with concurrent askers waiting on
the same probe. `scan_check` is the scanner's check: one GET (a scan's targets are mostly
HTML, for which `check_link`'s HEAD would be followed by a GET anyway; with the scan's
client, `tools.net.bulkfetch`, a non-HTML answer's body is not read, so the GET costs what a
HEAD would), judged by `tools.linkcheck.check.classify` with the shared sibling answer.

Any client with Fetcher's `get` will do (`Getter`): the scan passes its `BulkFetcher`.
"""

from __future__ import annotations

import asyncio
import posixpath
from typing import Protocol
from urllib.parse import parse_qsl, urlsplit

from pagetrail.tools.content.document import extract_links
from pagetrail.tools.errors import (
    BodyTooLarge,
    DecompressionBomb,
    FetchFailed,
    RefusedAddress,
    TooManyRedirects,
    UnsupportedContent,
)
from pagetrail.tools.linkcheck.check import (
    Observation,
    Observations,
    classify,
    observe_error,
    observe_response,
    page_parking,
    redirected_to_root,
    sibling_url,
)
from pagetrail.tools.linkcheck.walls import nonstandard_status
from pagetrail.tools.models import CheckResult, Link
from pagetrail.tools.net.fetch import Response
from pagetrail.tools.net.urls import validate_url

HTML_TYPES = ("text/html", "application/xhtml+xml")
MAX_SHAPES_PER_HOST = 16  # beyond this, a host's probes are shared by all its URLs
FETCH_ERRORS = (FetchFailed, RefusedAddress, TooManyRedirects, BodyTooLarge, DecompressionBomb,
                UnsupportedContent)


class Getter(Protocol):
    """What a check needs of a client: Fetcher.get (BulkFetcher has it too)."""

    async def get(self, url: str, *, polite: bool = ...) -> Response: ...


async def observe_get(client: Getter, url: str, polite: bool) -> Observation:
    """One GET (redirects followed) as an Observation; fetch failures are observations."""
    try:
        response = await client.get(url, polite=polite)
    except FETCH_ERRORS as exc:
        return observe_error(url, "GET", exc)
    return observe_response(response, "GET")


def shape_of(url: str) -> tuple[str, str, str, str]:
    """(scheme+host, directory, extension, sorted query keys): URLs a site treats alike."""
    parts = urlsplit(url)
    directory, last = posixpath.split(parts.path or "/")
    ext = posixpath.splitext(last)[1].lower()
    keys = ",".join(sorted({k for k, _ in parse_qsl(parts.query, keep_blank_values=True)}))
    return f"{parts.scheme}://{parts.netloc.lower()}", directory, ext, keys


def needs_sibling(url: str, page: Observation) -> bool:
    """The conditions under which check_link probes a sibling: a live HTML page, not root
    (a soft 404, or the same challenge page to every path), or a 4xx no specification
    defines (the same refusal to every path: walls.same_refusal)."""
    if (not page.error and page.wall is None and not page.squid_error
            and nonstandard_status(page.status)):
        return True
    return (not page.error and page.status is not None and 200 <= page.status < 300
            and not page.squid_error and page.content_type in HTML_TYPES
            and not redirected_to_root(url, page.final_url, page.chain)
            and not page_parking(page)["parked"])


class SiblingProber:
    """One soft-404 probe per URL shape per run, shared by every URL of that shape."""

    def __init__(self, client: Getter, *, polite: bool = True) -> None:
        self.client = client
        self.polite = polite
        self.probes = 0
        self._answers: dict[tuple[str, str, str, str], asyncio.Future[Sibling]] = {}
        self._shapes_per_host: dict[str, int] = {}

    def _key(self, url: str) -> tuple[str, str, str, str]:
        key = shape_of(url)
        if key in self._answers:
            return key
        if self._shapes_per_host.get(key[0], 0) >= MAX_SHAPES_PER_HOST:
            return key[0], "*", "", ""
        self._shapes_per_host[key[0]] = self._shapes_per_host.get(key[0], 0) + 1
        return key

    async def sibling_for(self, url: str) -> Sibling:
        """(probe URL, what the site answered to it), fetched once per shape."""
        key = self._key(url)
        future = self._answers.get(key)
        if future is None:
            future = self._answers[key] = asyncio.get_running_loop().create_future()
            try:
                probe = sibling_url(url)
                observed = None
                if probe:
                    self.probes += 1
                    observed = await observe_get(self.client, probe, self.polite)
                future.set_result((probe, observed))
            except BaseException as exc:
                # Let waiters see the failure, and let a later URL of the shape try again.
                self._answers.pop(key, None)
                future.set_exception(exc)
                future.exception()  # mark retrieved: waiters re-raise it themselves
                raise
        return await asyncio.shield(future)


Sibling = tuple[str | None, Observation | None]


def may_need_sibling(url: str, response: Response) -> bool:
    """What `needs_sibling` asks, short of the parked-page test (which needs the parsed
    text): a superset, decidable before parsing, so the probe can be fetched first."""
    if response.squid_error is None and nonstandard_status(response.status):
        return True
    return (200 <= response.status < 300 and response.squid_error is None
            and response.content_type in HTML_TYPES
            and not redirected_to_root(url, response.final_url, response.chain))


def assess(url: str, response: Response, sibling: Sibling | None, *, want_links: bool
           ) -> tuple[CheckResult, list[Link]]:
    """The verdict of a fetched page and, if wanted and the page is alive, its links.

    Pure CPU work (parsing, classification) — a scan runs it in worker processes. `sibling`
    is the shape's probe answer when `may_need_sibling` held; it is used exactly when
    `needs_sibling` holds, as in `scan_check`.
    """
    page = observe_response(response, "GET")
    result = judge(url, page, sibling if needs_sibling(url, page) else None)
    links: list[Link] = []
    if want_links and result.verdict in ("ok", "redirected") and response.is_html:
        links = extract_links(response.content, response.final_url,
                              content_type=response.headers.get("content-type"))
    return result, links


def judge(url: str, page: Observation, sibling: Sibling | None) -> CheckResult:
    """The verdict for a page already fetched (a crawled page or a checked link)."""
    obs = Observations(url=url, page=page)
    if sibling is not None:
        obs.sibling_url, obs.sibling = sibling
    return classify(obs)


async def scan_check(url: str, client: Getter, prober: SiblingProber, *,
                     polite: bool = True) -> CheckResult:
    """Check one URL with one GET plus the shared sibling probe of its shape."""
    url = validate_url(url)
    page = await observe_get(client, url, polite)
    sibling = await prober.sibling_for(url) if needs_sibling(url, page) else None
    return judge(url, page, sibling)

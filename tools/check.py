"""Is the link really dead? `check_link` observes, `classify` decides.

The decision (`classify`) is a pure function over `Observation`s so that it can be tested
without a network; `check_link` is the thin async layer that gathers them:

1. HEAD (cheap), following redirects with every hop recorded. Trusted when it settles the
   question: 404/410, a proxy's "cannot reach" answer, or a 2xx that is not HTML (soft 404s
   are HTML pages). Anything else — 405/501/403 from servers that mishandle HEAD, or a 2xx
   HTML page whose body must be read — is followed by a GET.
2. On a 2xx HTML page that is not the site root: a soft-404 probe (Bar-Yossef et al. 2004):
   GET a random sibling URL of the same shape; a site that answers nonsense the same way as
   our URL (same final URL — Lee et al.'s redirect test — or near-identical text) serves
   soft 404s, and our page is one of them.

Soft-404 evidence, strongest first: sibling answered the same way; a deep URL redirected to
the site's root; a parked-domain page; not-found wording in the title or a short page.
False positives are costly (a live link reported dead), so wording alone decides only when
it is strong and the sibling probe did not show that the site tells pages apart.
"""

from __future__ import annotations

import math
import re
import secrets
import string
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pagetrail.tools.errors import (
    BodyTooLarge,
    DecompressionBomb,
    FetchFailed,
    PagetrailError,
    RefusedAddress,
    TooManyRedirects,
    UnsupportedContent,
)
from pagetrail.tools.fetch import Fetcher, Response
from pagetrail.tools.models import CheckResult, Hop
from pagetrail.tools.settings import Settings
from pagetrail.tools.text import tokenize
from pagetrail.tools.urls import normalize_url, validate_url

SIMILAR = 0.9  # Bar-Yossef / design: ≥ 0.9 similarity of the two answers ⇒ same answer
SHORT_PAGE_TOKENS = 400  # wording in longer pages is likely content, not an error page
MAX_TEXT = 200_000
PERMANENT = frozenset({301, 308})

# Squid's X-Squid-Error codes: the origin cannot be reached (DNS, refused, TLS) vs. a fault
# that may pass. ERR_CONNECT_FAIL carries errno: 110 (timed out) is transient.
SQUID_UNREACHABLE = ("ERR_DNS_FAIL", "ERR_CONNECT_FAIL", "ERR_SECURE_CONNECT_FAIL",
                     "ERR_CANNOT_FORWARD", "ERR_INVALID_DOMAIN", "ERR_INVALID_URL",
                     "ERR_ZERO_SIZE_OBJECT")
SQUID_TRANSIENT_ERRNO = frozenset({"110", "4"})  # ETIMEDOUT, EINTR
SQUID_BLOCKED = ("ERR_ACCESS_DENIED", "ERR_FORWARDING_DENIED")

# Not-found wording in several languages (lower-case; matched on word boundaries).
NOT_FOUND_PHRASES = (
    "page not found", "not found", "404", "410", "file not found", "no longer available",
    "does not exist", "doesn't exist", "could not be found", "couldn't find",
    "can't be found", "cannot be found", "page missing", "no such page",
    "seite nicht gefunden", "nicht gefunden", "existiert nicht",
    "page introuvable", "introuvable", "n'existe pas", "page non trouvée",
    "página no encontrada", "no encontrada", "no encontrado", "no existe",
    "pagina non trovata", "non trovata", "niet gevonden", "pagina niet gevonden",
    "página não encontrada", "não encontrada", "nie znaleziono", "страница не найдена",
)
# Title forms that on their own are strong (titles of real pages rarely say this).
STRONG_TITLE = re.compile(
    r"^\W*(error\W*)?(404|410)\b|\b(page|file|document|resource|seite|página|pagina)\b.{0,20}"
    r"\b(not found|nicht gefunden|introuvable|no encontrada|non trovata|niet gevonden|"
    r"não encontrada)\b|^\W*not found\W*$",
    re.IGNORECASE,
)
# Parking pages: a documented small list. Phrases are strong on their own; services and
# registrar names count only with a second cue (pages about registrars exist).
PARKING_PHRASES = (
    "this domain is for sale", "domain is for sale", "this domain may be for sale",
    "buy this domain", "domain is parked", "this domain is parked", "parked free",
    "parked domain", "domain parking", "the domain name is for sale",
    "inquire about this domain", "make an offer on this domain", "this web page is parked",
    "diese domain steht zum verkauf", "ce domaine est à vendre", "este dominio está a la venta",
)
PARKING_SERVICES = (
    "sedo", "sedoparking", "bodis", "parkingcrew", "above.com", "dan.com", "afternic",
    "hugedomains", "undeveloped", "godaddy", "namecheap", "domainmarket", "parklogic",
    "voodoo.com", "uniregistry", "porkbun",
)
_WORD_RE_CACHE: dict[str, re.Pattern[str]] = {}


# --- observations ---------------------------------------------------------------------------

@dataclass
class Observation:
    """What one request (with its redirects) showed."""

    url: str
    method: str = "GET"
    status: int | None = None
    final_url: str | None = None
    chain: list[Hop] = field(default_factory=list)
    content_type: str = ""
    squid_error: str | None = None
    title: str = ""
    text: str = ""
    body_read: bool = False
    error: str | None = None  # PagetrailError code (fetch_failed, body_too_large, ...)
    error_kind: str | None = None  # FetchFailed.kind
    message: str = ""


@dataclass
class Observations:
    url: str
    page: Observation
    head: Observation | None = None
    sibling: Observation | None = None
    sibling_url: str | None = None


def observe_response(response: Response, method: str) -> Observation:
    title, text = "", ""
    if method == "GET" and response.is_html and response.content:
        title, text = visible_text(response.text())
    return Observation(
        url=response.url, method=method, status=response.status,
        final_url=response.final_url, chain=list(response.chain),
        content_type=response.content_type, squid_error=response.squid_error,
        title=title, text=text, body_read=method == "GET",
    )


def observe_error(url: str, method: str, error: PagetrailError) -> Observation:
    return Observation(url=url, method=method, error=error.code,
                       error_kind=getattr(error, "kind", None), message=str(error))


# --- pure helpers ---------------------------------------------------------------------------

def visible_text(html: str) -> tuple[str, str]:
    """Title and visible text of an HTML page (scripts, styles, comments dropped)."""
    import lxml.html
    from lxml import etree

    html = html[:MAX_TEXT * 5]
    try:
        root = lxml.html.document_fromstring(html)
    except (etree.ParserError, ValueError):
        return "", ""
    title_el = root.find(".//title")
    title = " ".join((title_el.text_content() if title_el is not None else "").split())
    for bad in root.xpath("//script|//style|//noscript|//template|//head"):
        bad.drop_tree()
    text = " ".join(root.text_content().split())
    return title[:500], text[:MAX_TEXT]


def _pattern(phrase: str) -> re.Pattern[str]:
    pat = _WORD_RE_CACHE.get(phrase)
    if pat is None:
        pat = _WORD_RE_CACHE[phrase] = re.compile(
            r"(?<!\w)" + re.escape(phrase) + r"(?!\w)", re.IGNORECASE)
    return pat


_ANY_RE_CACHE: dict[tuple[str, ...], re.Pattern[str]] = {}


def _any_pattern(phrases: tuple[str, ...]) -> re.Pattern[str]:
    pat = _ANY_RE_CACHE.get(phrases)
    if pat is None:
        alternatives = "|".join(re.escape(p) for p in sorted(phrases, key=len, reverse=True))
        pat = _ANY_RE_CACHE[phrases] = re.compile(
            r"(?<!\w)(?:" + alternatives + r")(?!\w)", re.IGNORECASE)
    return pat


def find_phrases(text: str, phrases: tuple[str, ...]) -> list[str]:
    # One combined search first: most pages hold none of the phrases (the scanner's hot path).
    if not _any_pattern(phrases).search(text):
        return []
    return [p for p in phrases if _pattern(p).search(text)]


def not_found_evidence(title: str, text: str) -> dict[str, object]:
    """Not-found wording: in the title, and in the text when the page is short."""
    n_tokens = len(tokenize(text[:20000]))
    short = n_tokens <= SHORT_PAGE_TOKENS
    in_title = find_phrases(title, NOT_FOUND_PHRASES)
    in_text = find_phrases(text[:5000], NOT_FOUND_PHRASES) if short else []
    strong_title = bool(STRONG_TITLE.search(title))
    score = (2 if strong_title else 1 if in_title else 0) + (1 if in_text else 0)
    return {"title_phrases": in_title, "text_phrases": in_text, "strong_title": strong_title,
            "short_page": short, "tokens": n_tokens, "score": score}


def parking_evidence(title: str, text: str, final_url: str | None) -> dict[str, object]:
    sample = f"{title} {text[:5000]}"
    phrases = find_phrases(sample, PARKING_PHRASES)
    services = find_phrases(sample, PARKING_SERVICES)
    n_tokens = len(tokenize(text[:20000]))
    # Structure cue: parking pages are short (a sentence, a price, a few "related" links).
    short = n_tokens <= 250
    parked = (bool(phrases) and (short or len(phrases) >= 2)) or (
        short and len(services) >= 1 and ("domain" in sample.lower()) and (
            "sale" in sample.lower() or "parked" in sample.lower()))
    return {"parked": parked, "phrases": phrases, "services": services, "tokens": n_tokens}


def shingles(tokens: list[str], k: int = 3) -> set[tuple[str, ...]]:
    if len(tokens) < k:
        return {tuple(tokens)} if tokens else set()
    return {tuple(tokens[i:i + k]) for i in range(len(tokens) - k + 1)}


def resemblance(a: str, b: str) -> float | None:
    """Jaccard of word 3-shingles (Broder); None when either text is empty."""
    sa, sb = shingles(tokenize(a[:50000])), shingles(tokenize(b[:50000]))
    if not sa or not sb:
        return None
    return len(sa & sb) / len(sa | sb)


def cosine(a: str, b: str) -> float | None:
    ca, cb = Counter(tokenize(a[:50000])), Counter(tokenize(b[:50000]))
    if not ca or not cb:
        return None
    dot = sum(v * cb[t] for t, v in ca.items())
    return dot / (math.sqrt(sum(v * v for v in ca.values()))
                  * math.sqrt(sum(v * v for v in cb.values())))


def _path_is_root(path: str) -> bool:
    stripped = path.strip("/")
    return stripped == "" or re.fullmatch(r"(index|default|home)(\.\w+)?", stripped, re.I) is not None


def redirected_to_root(url: str, final_url: str | None, chain: list[Hop]) -> bool:
    """A deep URL that ended on a site's root page after redirects (the 'home redirect')."""
    if not chain or not final_url:
        return False
    start, end = urlsplit(url), urlsplit(final_url)
    return not _path_is_root(start.path) and _path_is_root(end.path) and not end.query


def _random_like(segment: str) -> str:
    """A random token shaped like `segment`: digits stay digits, slugs keep hyphens."""
    if segment.isdigit():
        return str(secrets.randbelow(9 * 10 ** (len(segment) + 3)) + 10 ** (len(segment) + 3))
    alphabet = string.ascii_lowercase + string.digits
    token = "".join(secrets.choice(alphabet) for _ in range(max(12, min(len(segment), 32))))
    if "-" in segment:
        token = "-".join(token[i:i + 6] for i in range(0, len(token), 6))
    elif "_" in segment:
        token = "_".join(token[i:i + 6] for i in range(0, len(token), 6))
    return "pt" + token


def sibling_url(url: str) -> str | None:
    """A random URL of the same shape as `url` on the same site (None for a site root).

    Same path depth with the last segment replaced by a random token, extension kept; for a
    URL whose identity is in the query (`item.php?id=123`), the query values are randomised.
    """
    parts = urlsplit(url)
    if parts.query:
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        if pairs:
            query = urlencode([(k, _random_like(v) if v else v) for k, v in pairs])
            return urlunsplit((parts.scheme, parts.netloc, parts.path or "/", query, ""))
    if _path_is_root(parts.path):
        return None
    trailing = parts.path.endswith("/")
    segments = parts.path.strip("/").split("/")
    last = segments[-1]
    stem, dot, ext = last.rpartition(".")
    if dot and stem and 1 <= len(ext) <= 5 and ext.isalnum():
        segments[-1] = f"{_random_like(stem)}.{ext}"
    else:
        segments[-1] = _random_like(last)
    path = "/" + "/".join(segments) + ("/" if trailing else "")
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


# --- the decision ---------------------------------------------------------------------------

def _squid_verdict(code: str) -> tuple[str, str]:
    name, _, errno = code.strip().partition(" ")
    if name.startswith(SQUID_BLOCKED):
        return "blocked", f"proxy refused: {code}"
    if name in SQUID_UNREACHABLE and errno.strip() not in SQUID_TRANSIENT_ERRNO:
        return "unreachable", f"proxy could not reach the host: {code}"
    return "transient", f"proxy error: {code}"


def _error_verdict(obs: Observation) -> tuple[str, str]:
    if obs.error == "refused_address":
        return "refused", obs.message
    if obs.error == "fetch_failed":
        if obs.error_kind in ("dns", "refused", "tls", "proxy"):
            return "unreachable", obs.message
        return "transient", obs.message
    if obs.error in ("redirect_loop", "too_many_redirects"):
        return "unreachable", obs.message
    if obs.error == "decompression_bomb":
        return "blocked", f"refused to read: {obs.message}"
    return "transient", obs.message


def _status_verdict(status: int) -> tuple[str, str] | None:
    """Verdicts that the final status settles on its own (None: 2xx, look closer)."""
    if 200 <= status < 300:
        return None
    if status in (404, 410):
        return "dead", f"HTTP {status}"
    if status in (401, 403, 407, 451):
        return "blocked", f"HTTP {status}"
    if status in (408, 425, 429) or status >= 500:
        return "transient", f"HTTP {status}"
    if 400 <= status < 500:
        return "dead", f"HTTP {status}"
    if 300 <= status < 400:
        return "unreachable", f"HTTP {status} without a followable Location"
    return "transient", f"HTTP {status}"


def sibling_evidence(page: Observation, sibling: Observation | None) -> dict[str, object]:
    """How the site answered a random URL of the same shape, compared with our page."""
    if sibling is None:
        return {"probed": False}
    info: dict[str, object] = {"probed": True, "status": sibling.status,
                               "final_url": sibling.final_url, "error": sibling.error}
    if sibling.error or sibling.status is None:
        info["answer"] = "inconclusive"
        return info
    if not 200 <= sibling.status < 300:
        # The site tells pages apart: nonsense gets an error, our page got a 2xx.
        info["answer"] = "distinguishes"
        return info
    same_final = bool(page.chain and sibling.chain and page.final_url and sibling.final_url
                      and normalize_url(page.final_url) == normalize_url(sibling.final_url))
    res = resemblance(page.title + " " + page.text, sibling.title + " " + sibling.text)
    cos = cosine(page.title + " " + page.text, sibling.title + " " + sibling.text)
    info.update(same_final_url=same_final, resemblance=_round(res), cosine=_round(cos))
    info["answer"] = "same" if same_final or (res is not None and res >= SIMILAR) else "different"
    return info


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def classify(obs: Observations) -> CheckResult:
    """The verdict and its evidence, from what was observed (pure)."""
    page = obs.page
    evidence: dict[str, object] = {}
    if obs.head is not None:
        evidence["head"] = {"status": obs.head.status, "error": obs.head.error,
                            "content_type": obs.head.content_type}
    evidence["method"] = page.method

    def result(verdict: str, reason: str) -> CheckResult:
        return CheckResult(url=obs.url, verdict=verdict, status=page.status,  # type: ignore[arg-type]
                           final_url=page.final_url, chain=page.chain, reason=reason,
                           evidence=evidence, checked_at=datetime.now(UTC))

    if page.error and page.error != "body_too_large":
        evidence["error"] = {"code": page.error, "kind": page.error_kind}
        return result(*_error_verdict(page))
    if page.error == "body_too_large":
        # The server is sending a large body: it is there. Status came from HEAD if any.
        evidence["error"] = {"code": page.error}
        head = obs.head
        if head is not None and head.status is not None:
            page.status, page.final_url, page.chain = head.status, head.final_url, head.chain
        decided = _status_verdict(page.status) if page.status else None
        return result(*(decided or ("ok", "alive (body too large to inspect)")))
    assert page.status is not None
    evidence["status"] = page.status
    if page.chain:
        evidence["chain"] = [f"{h.status} {h.url}" for h in page.chain]
    if page.squid_error:
        evidence["squid_error"] = page.squid_error
        return result(*_squid_verdict(page.squid_error))
    decided = _status_verdict(page.status)
    if decided:
        return result(*decided)

    # 2xx: alive, unless the page is a soft 404.
    if page.body_read and page.content_type in ("text/html", "application/xhtml+xml"):
        soft, why = _soft404(obs, evidence)
        if soft:
            return result("soft404", why)
    permanent = bool(page.chain) and all(h.status in PERMANENT for h in page.chain)
    if page.chain and page.final_url and normalize_url(page.final_url) == normalize_url(obs.url):
        return result("ok", "alive (canonical redirect)")
    if permanent:
        return result("redirected", f"moved permanently to {page.final_url}")
    if page.chain:
        return result("ok", f"alive after temporary redirect to {page.final_url}")
    return result("ok", f"HTTP {page.status}")


def _soft404(obs: Observations, evidence: dict[str, object]) -> tuple[bool, str]:
    page = obs.page
    if redirected_to_root(obs.url, page.final_url, page.chain):
        evidence["home_redirect"] = True
        return True, f"deep URL redirected to the site root {page.final_url}"
    parking = parking_evidence(page.title, page.text, page.final_url)
    if parking["phrases"] or parking["services"]:
        evidence["parking"] = parking
    if parking["parked"]:
        return True, "parked domain page"
    wording = not_found_evidence(page.title, page.text)
    if wording["title_phrases"] or wording["text_phrases"]:
        evidence["not_found_wording"] = wording
    sibling = sibling_evidence(page, obs.sibling)
    if obs.sibling_url:
        sibling["url"] = obs.sibling_url
    evidence["sibling"] = sibling
    answer = sibling.get("answer")
    score = int(wording["score"])  # type: ignore[call-overload]
    if answer == "same":
        return True, "the site answers a random URL of the same shape the same way"
    cos = sibling.get("cosine")
    if answer == "different" and score >= 1 and isinstance(cos, float) and cos >= SIMILAR:
        return True, "not-found wording, and a random sibling URL gets a near-identical page"
    if score >= 3:  # strong title and not-found text in a short page
        return True, "the page says it was not found"
    if score >= 2 and answer in (None, "inconclusive", "different") and wording["short_page"]:
        return True, "the page's title says it was not found"
    return False, ""


# --- the I/O layer --------------------------------------------------------------------------

def _head_settles(head: Observation) -> bool:
    if head.error:
        # DNS, refused, TLS and the guard will not change with GET. Neither, almost always,
        # will a timeout (HEAD that hangs while GET answers is rare; waiting twice is costly).
        return head.error in ("refused_address", "redirect_loop", "too_many_redirects") or (
            head.error == "fetch_failed"
            and head.error_kind in ("dns", "refused", "tls", "timeout"))
    if head.squid_error:
        return True
    if head.status in (404, 410):
        return True
    return head.status is not None and 200 <= head.status < 300 and bool(head.content_type) \
        and head.content_type not in ("text/html", "application/xhtml+xml") \
        and head.content_type != "application/octet-stream"


async def _observe(fetcher: Fetcher, method: str, url: str, polite: bool) -> Observation:
    try:
        response = await (fetcher.head(url, polite=polite) if method == "HEAD"
                          else fetcher.get(url, polite=polite))
    except (FetchFailed, RefusedAddress, TooManyRedirects, BodyTooLarge, DecompressionBomb,
            UnsupportedContent) as exc:
        return observe_error(url, method, exc)
    return observe_response(response, method)


async def check_link(url: str, fetcher: Fetcher, *, settings: Settings | None = None,
                     probe_sibling: bool = True, polite: bool = False) -> CheckResult:
    """Check one URL. Raises InvalidURL for a malformed URL; everything else is a verdict.

    `settings` is accepted for symmetry with the other unit jobs; the fetcher carries the
    effective configuration. `probe_sibling=False` skips the soft-404 probe (one request less);
    `polite=True` applies the per-host rate limit (the scanner's crawling).
    """
    url = validate_url(url)
    head = await _observe(fetcher, "HEAD", url, polite)
    if _head_settles(head):
        return classify(Observations(url=url, page=head))
    page = await _observe(fetcher, "GET", url, polite)
    obs = Observations(url=url, page=page, head=head)
    if (probe_sibling and not page.error and page.status is not None
            and 200 <= page.status < 300 and not page.squid_error
            and page.content_type in ("text/html", "application/xhtml+xml")
            and not redirected_to_root(url, page.final_url, page.chain)
            and not parking_evidence(page.title, page.text, page.final_url)["parked"]):
        obs.sibling_url = sibling_url(url)
        if obs.sibling_url:
            obs.sibling = await _observe(fetcher, "GET", obs.sibling_url, polite)
    result = classify(obs)
    result.evidence["requests"] = fetcher.requests
    return result


def summary_line(result: CheckResult) -> str:
    """One line for people: verdict, status, URL, reason."""
    status = str(result.status) if result.status is not None else "-"
    line = f"{result.verdict:<11} {status:>3}  {result.url}"
    if result.final_url and result.final_url != result.url:
        line += f" -> {result.final_url}"
    if result.reason:
        line += f"  ({result.reason})"
    return line

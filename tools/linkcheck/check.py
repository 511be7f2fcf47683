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

import re
import secrets
import string
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any
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
from pagetrail.tools.linkcheck.redirects import redirect_kind
from pagetrail.tools.linkcheck.walls import (
    Wall,
    challenge_markers,
    detect_wall,
    nonstandard_status,
    same_challenge,
    same_refusal,
)
from pagetrail.tools.models import Blocked, CheckResult, Hop
from pagetrail.tools.net.fetch import Fetcher, Response
from pagetrail.tools.net.netcheck import NetworkDown, local_fault, network_down
from pagetrail.tools.net.urls import normalize_url, validate_url
from pagetrail.tools.settings import Settings

SIMILAR = 0.9  # Bar-Yossef / design: ≥ 0.9 similarity of the two answers ⇒ same answer
SHORT_PAGE_TOKENS = 400  # wording in longer pages is likely content, not an error page
MAX_TEXT = 200_000
PERMANENT = frozenset({301, 308})
# Redirects that are not moves and hide the page (tools/linkcheck/redirects.py): blocked.
NOT_A_MOVE = {"login": "sign-in page", "sso": "single sign-on (OAuth/SAML) endpoint",
              "consent": "consent wall", "interstitial": "link shortener's warning page"}

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
# Parts of `visible_text`'s tree that never reach the reader (compiled once: hot path).
_HIDDEN_XPATH = "//script|//style|//noscript|//template|//head"


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
    # parking_evidence of this page's words, once computed (`page_parking`).
    parking: dict[str, object] | None = field(default=None, repr=False, compare=False)
    wall: Wall | None = None  # a bot wall, challenge or refusal answered instead (walls.py)
    # A small 2xx page's JavaScript-challenge markers (walls.challenge_markers): a wall when
    # a random sibling gets the same page (`same_challenge`), else nothing.
    challenge: tuple[str, ...] = ()


@dataclass
class Observations:
    url: str
    page: Observation
    head: Observation | None = None
    sibling: Observation | None = None
    sibling_url: str | None = None


def observe_response(response: Response, method: str) -> Observation:
    title, text = "", ""
    # Only a 2xx page's words are ever judged (soft 404s, parking, the sibling comparison):
    # the status settles every other answer, so an error page is not parsed.
    if method == "GET" and response.is_html and response.content \
            and 200 <= response.status < 300:
        title, text = visible_text(response.text())
    wall = None if response.squid_error else detect_wall(
        response.status, response.headers, response.content, url=response.final_url)
    if wall is not None:
        title, text = "", ""  # a challenge page's words are nobody's content
    challenge = challenge_markers(response.content, text) if (
        wall is None and method == "GET" and response.is_html
        and 200 <= response.status < 300) else ()
    return Observation(
        url=response.url, method=method, status=response.status,
        final_url=response.final_url, chain=list(response.chain),
        content_type=response.content_type, squid_error=response.squid_error,
        title=title, text=text, body_read=method == "GET", wall=wall, challenge=challenge,
    )


def observe_error(url: str, method: str, error: PagetrailError) -> Observation:
    return Observation(url=url, method=method, error=error.code,
                       error_kind=getattr(error, "kind", None), message=str(error))


# --- pure helpers ---------------------------------------------------------------------------

def visible_text(html: str) -> tuple[str, str]:
    """Title and visible text of an HTML page (scripts, styles, comments dropped)."""
    html = html[:MAX_TEXT * 5]
    root = _parse_html(html)
    if root is None:
        return "", ""
    string_value = _lxml_paths()["string_value"]
    title_el = root.find(".//title")
    title = " ".join((string_value(title_el) if title_el is not None else "").split())
    for hidden in _lxml_paths()["hidden"](root):
        _drop_tree(hidden)
    text = " ".join(string_value(root).split())
    return title[:500], text[:MAX_TEXT]


@lru_cache(maxsize=1)
def _lxml_paths() -> dict[str, Callable[[Any], Any]]:
    """Compiled XPaths, made on first use (lxml is imported only when a page is judged)."""
    from lxml import etree

    return {"hidden": etree.XPath(_HIDDEN_XPATH),
            "string_value": etree.XPath("string()")}  # what lxml.html's text_content() is


_html_parsers = threading.local()


def _parse_html(html: str) -> Any:
    """lxml.html.document_fromstring(html) with plain lxml elements (the same parser
    options, so the same tree): lxml.html's element classes cost a Python call for every
    element touched. None for an empty or unparseable document. One parser per thread."""
    from lxml import etree

    parser = getattr(_html_parsers, "parser", None)
    if parser is None:
        parser = _html_parsers.parser = etree.HTMLParser()  # lxml.html's defaults
    try:
        return etree.fromstring(html, parser)
    except (etree.ParserError, ValueError):
        return None


def _drop_tree(element: Any) -> None:
    """lxml.html's drop_tree(): remove the element and its children, keep its tail text."""
    parent = element.getparent()
    if element.tail:
        previous = element.getprevious()
        if previous is None:
            parent.text = (parent.text or "") + element.tail
        else:
            previous.tail = (previous.tail or "") + element.tail
    parent.remove(element)


def tokenize(text: str) -> list[str]:
    """tools.content.text.tokenize, imported on first use: wordfreq and jusText take ~0.3 s to
    import, and most pages a scan judges are never tokenized (see `not_found_evidence`)."""
    from pagetrail.tools.content.text import tokenize as text_tokenize

    return text_tokenize(text)


def fold_case(text: str) -> str:
    """Lower-case `text` so that comparing it with lower-case phrases agrees exactly with
    `re.IGNORECASE` matching, character for character (same length, same \\w characters).

    str.lower() alone differs from re's case-insensitive equality on a handful of code points
    (`_RE_CASE_EQUIVALENTS`); tests/test_check.py checks the agreement for every code point
    and every character of the phrase lists."""
    if text.isascii():
        return text.lower()
    return text.translate(_RE_CASE_EQUIVALENTS).lower()


# Characters that re.IGNORECASE treats as equal to another lower-case letter while
# str.lower() does not (CPython's re._casefix), plus U+0130, whose str.lower() is two
# characters: each mapped to the letter re equates it with. Not U+0345 (a combining mark,
# not \w, unlike the iota re equates it with): no phrase has an iota.
_RE_CASE_EQUIVALENTS = str.maketrans({
    "\u0130": "i", "\u0131": "i", "\u017f": "s", "\u00b5": "\u03bc", "\u1fbe": "\u03b9",
    "\u1fd3": "\u0390", "\u1fe3": "\u03b0", "\u03d0": "\u03b2",
    "\u03f5": "\u03b5", "\u03d1": "\u03b8", "\u03f0": "\u03ba", "\u03d6": "\u03c0",
    "\u03f1": "\u03c1", "\u03c2": "\u03c3", "\u03d5": "\u03c6", "\u1c80": "\u0432",
    "\u1c81": "\u0434", "\u1c82": "\u043e", "\u1c83": "\u0441", "\u1c84": "\u0442",
    "\u1c85": "\u0442", "\u1c86": "\u044a", "\u1c87": "\u0463", "\u1c88": "\ua64b",
    "\u1e9b": "\u1e61", "\ufb05": "\ufb06",
})


def _is_word_char(char: str) -> bool:
    """re's \\w for str patterns: str.isalnum() or the underscore."""
    return char.isalnum() or char == "_"


def contains_phrase(folded: str, phrase: str) -> bool:
    """`phrase` (folded) in `folded` as whole words: what the regex
    `(?<!\\w)phrase(?!\\w)` finds, with str.find (tens of times faster than re's
    case-insensitive search on a page of text)."""
    start = folded.find(phrase)
    while start >= 0:
        end = start + len(phrase)
        if (start == 0 or not _is_word_char(folded[start - 1])) and (
                end == len(folded) or not _is_word_char(folded[end])):
            return True
        start = folded.find(phrase, start + 1)
    return False


@lru_cache(maxsize=32)
def _folded_phrases(phrases: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    return tuple((p, fold_case(p)) for p in phrases)


def find_phrases(text: str, phrases: tuple[str, ...]) -> list[str]:
    """The phrases found in `text` as whole words, ignoring case (re.IGNORECASE's sense)."""
    folded = fold_case(text)
    # `in` first: most phrases are not in the text at all, and it costs a fraction of a call.
    return [p for p, f in _folded_phrases(phrases) if f in folded and contains_phrase(folded, f)]


def not_found_evidence(title: str, text: str) -> dict[str, object]:
    """Not-found wording: in the title, and in the text when the page is short.

    The page's length (a wordfreq token count, the costly part) is measured only when some
    wording was found: without any, the score is 0 whatever the length, and `short_page` and
    `tokens` are None (not measured)."""
    in_title = find_phrases(title, NOT_FOUND_PHRASES)
    strong_title = bool(STRONG_TITLE.search(title))
    text_phrases = find_phrases(text[:5000], NOT_FOUND_PHRASES)
    if not (in_title or strong_title or text_phrases):
        return {"title_phrases": [], "text_phrases": [], "strong_title": False,
                "short_page": None, "tokens": None, "score": 0}
    n_tokens = len(tokenize(text[:20000]))
    short = n_tokens <= SHORT_PAGE_TOKENS
    in_text = text_phrases if short else []
    score = (2 if strong_title else 1 if in_title else 0) + (1 if in_text else 0)
    return {"title_phrases": in_title, "text_phrases": in_text, "strong_title": strong_title,
            "short_page": short, "tokens": n_tokens, "score": score}


def parking_evidence(title: str, text: str, final_url: str | None) -> dict[str, object]:
    """Parked-domain cues. Without any phrase or service name the page is not parked
    whatever its length, so the token count is then skipped (`tokens` None)."""
    sample = f"{title} {text[:5000]}"
    phrases = find_phrases(sample, PARKING_PHRASES)
    services = find_phrases(sample, PARKING_SERVICES)
    if not phrases and not services:
        return {"parked": False, "phrases": [], "services": [], "tokens": None}
    n_tokens = len(tokenize(text[:20000]))
    # Structure cue: parking pages are short (a sentence, a price, a few "related" links).
    short = n_tokens <= 250
    parked = (bool(phrases) and (short or len(phrases) >= 2)) or (
        short and len(services) >= 1 and ("domain" in sample.lower()) and (
            "sale" in sample.lower() or "parked" in sample.lower()))
    return {"parked": parked, "phrases": phrases, "services": services, "tokens": n_tokens}


def page_parking(page: Observation) -> dict[str, object]:
    """parking_evidence of an observed page, computed once: a page is asked twice (whether
    to probe a sibling — hostprobe.needs_sibling, check_link — and then in `classify`)."""
    if page.parking is None:
        page.parking = parking_evidence(page.title, page.text, page.final_url)
    return page.parking


def shingles(tokens: list[str], k: int = 3) -> frozenset[tuple[str, ...]]:
    """Word k-shingles (tools.content.similarity.shingle_set; 3 words here: a sibling probe compares
    short error pages, where 4-word shingles are too few)."""
    from pagetrail.tools.content.similarity import shingle_set

    return shingle_set(tokens, k)


def resemblance(a: str, b: str) -> float | None:
    """Jaccard of word 3-shingles (Broder); None when either text is empty."""
    from pagetrail.tools.content.similarity import jaccard

    sa, sb = shingles(tokenize(a[:50000])), shingles(tokenize(b[:50000]))
    if not sa or not sb:
        return None
    return jaccard(sa, sb)


def cosine(a: str, b: str) -> float | None:
    """Cosine of the two texts' raw word counts (every word: error pages are mostly stop
    words); None when either text is empty."""
    from pagetrail.tools.content.similarity import cosine as vector_cosine

    ca, cb = Counter(tokenize(a[:50000])), Counter(tokenize(b[:50000]))
    if not ca or not cb:
        return None
    return vector_cosine(ca, cb)


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
        if obs.error_kind == "protocol":
            # The answer broke HTTP/1.1 or framed its body ambiguously, and was refused rather
            # than guessed at: it will break the same way again (not transient), yet a lenient
            # browser may read the page (not dead). Inconclusive: no observation over time.
            return "blocked", f"the server's answer breaks HTTP (refused, not guessed at): " \
                              f"{obs.message}"
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
    if status in (401, 403, 407, 429, 451, 999):
        return "blocked", f"HTTP {status}"
    if status in (408, 425) or status >= 500:
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
    if sibling.error or sibling.status is None or sibling.wall is not None:
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
    kind = redirect_kind(obs.url, page.final_url, page.chain) if not page.error else None
    if kind is not None:
        evidence["redirect_kind"] = kind

    def result(verdict: str, reason: str) -> CheckResult:
        blocked = None
        if verdict == "blocked" and page.wall is not None:
            blocked = Blocked(**page.wall.as_dict())
        elif verdict == "blocked" and kind in NOT_A_MOVE:
            blocked = Blocked(by=kind, evidence=f"redirected to {page.final_url}")
        elif verdict == "blocked" and page.error_kind == "protocol":
            blocked = Blocked(by="protocol", evidence=page.message[:300])
        elif verdict == "blocked" and page.squid_error:
            blocked = Blocked(by="proxy", evidence=f"x-squid-error: {page.squid_error}")
        elif verdict == "blocked":
            blocked = Blocked(by=page.error or "refusal", evidence=reason)
        return CheckResult(url=obs.url, verdict=verdict, status=page.status,  # type: ignore[arg-type]
                           final_url=page.final_url, chain=page.chain, reason=reason,
                           evidence=evidence, checked_at=datetime.now(UTC), blocked=blocked,
                           redirect_kind=kind)

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
    if page.wall is not None:
        # A wall, a challenge or a client-dependent refusal: the page may well be there.
        evidence["blocked"] = page.wall.as_dict()
        return result("blocked", page.wall.reason)
    sibling = obs.sibling
    refusal = same_refusal(page.status, sibling.status if sibling is not None
                           and not sibling.error else None)
    if refusal is not None:  # a non-standard 4xx to every path: the site refuses us
        page.wall = refusal
        evidence["blocked"] = refusal.as_dict()
        evidence["sibling"] = {"probed": True, "url": obs.sibling_url,
                               "status": sibling.status if sibling else None}
        return result("blocked", refusal.reason)
    decided = _status_verdict(page.status)
    if decided:
        return result(*decided)
    if kind in NOT_A_MOVE:
        # The page is behind a sign-in, a consent wall or a shortener's warning: not a move.
        return result("blocked", f"redirected to a {NOT_A_MOVE[kind]} ({page.final_url}), "
                                 "not to the page")

    # 2xx: alive, unless the page is a soft 404.
    if page.body_read and page.content_type in ("text/html", "application/xhtml+xml"):
        soft, why = _soft404(obs, evidence)
        challenge = _same_challenge(obs, evidence) if soft else None
        if challenge is not None:  # the same challenge page everywhere: a wall
            page.wall = challenge
            evidence["blocked"] = challenge.as_dict()
            return result("blocked", challenge.reason)
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


def _same_challenge(obs: Observations, evidence: dict[str, object]) -> Wall | None:
    """A page found the same as a random sibling's that is a JavaScript challenge, both of
    them, and says nothing of not-found: a wall in front of every path (Sina's visitor
    system), not a soft 404. A real soft 404 (its wording, a parked page, a home redirect)
    stays one."""
    sibling = obs.sibling
    answer = evidence.get("sibling")
    if sibling is None or not isinstance(answer, dict) or answer.get("answer") != "same":
        return None
    if evidence.get("not_found_wording") or evidence.get("parking") or \
            evidence.get("home_redirect"):
        return None
    return same_challenge(obs.page.challenge, sibling.challenge)


def _soft404(obs: Observations, evidence: dict[str, object]) -> tuple[bool, str]:
    page = obs.page
    if redirected_to_root(obs.url, page.final_url, page.chain):
        evidence["home_redirect"] = True
        return True, f"deep URL redirected to the site root {page.final_url}"
    if evidence.get("redirect_kind") == "locale_home":
        evidence["home_redirect"] = True
        return True, f"deep URL redirected to a locale's root page {page.final_url}"
    parking = page_parking(page)
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
    """Check one URL. Raises InvalidURL for a malformed URL and NetworkDown when nothing at
    all can be reached from here (tools/net/netcheck.py); everything else is a verdict.

    `settings` is accepted for symmetry with the other unit jobs; the fetcher carries the
    effective configuration. `probe_sibling=False` skips the soft-404 probe (one request less);
    `polite=True` applies the per-host rate limit (the scanner's crawling).
    """
    url = validate_url(url)
    head = await _observe(fetcher, "HEAD", url, polite)
    if _head_settles(head):
        await ensure_network(fetcher, head)
        return classify(Observations(url=url, page=head))
    page = await _observe(fetcher, "GET", url, polite)
    await ensure_network(fetcher, page)
    obs = Observations(url=url, page=page, head=head)
    if (probe_sibling and not page.error and page.status is not None
            and 200 <= page.status < 300 and not page.squid_error
            and page.content_type in ("text/html", "application/xhtml+xml")
            and not redirected_to_root(url, page.final_url, page.chain)
            and not page_parking(page)["parked"]):
        obs.sibling_url = sibling_url(url)
        if obs.sibling_url:
            obs.sibling = await _observe(fetcher, "GET", obs.sibling_url, polite)
    elif (probe_sibling and not page.error and page.wall is None and not page.squid_error
          and nonstandard_status(page.status)):
        # A status no specification defines: the site's own refusal when a random sibling
        # gets it too (walls.same_refusal), else what it says.
        obs.sibling_url = sibling_url(url)
        if obs.sibling_url:
            obs.sibling = await _observe(fetcher, "GET", obs.sibling_url, polite)
    result = classify(obs)
    result.evidence["requests"] = fetcher.requests
    return result


async def ensure_network(fetcher: Fetcher, obs: Observation) -> None:
    """Raise NetworkDown when `obs` failed the way a machine without network fails and the
    probe (tools/net/netcheck.py) fails too: no verdict on the link, nothing recorded."""
    if obs.error != "fetch_failed":
        return
    fault = local_fault(obs.error_kind, obs.message)
    if fault is None:
        return
    down = await network_down(fetcher, fault)
    if down is not None:
        raise NetworkDown(down, url=obs.url)


def summary_line(result: CheckResult) -> str:
    """One line for people: verdict, status, URL, reason."""
    status = str(result.status) if result.status is not None else "-"
    line = f"{result.verdict:<11} {status:>3}  {result.url}"
    if result.final_url and result.final_url != result.url:
        line += f" -> {result.final_url}"
    if result.reason:
        line += f"  ({result.reason})"
    return line

"""URL parsing, validation and normalisation (pure functions)."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

from pagetrail.tools.errors import InvalidURL

MAX_URL_LENGTH = 8192
DEFAULT_PORTS = {"http": 80, "https": 443}
# Space and every C0/C1 control character (and DEL): never part of a URL, and some reach a
# host name through urlsplit ("http://x\x0b.com/").
_CONTROL_OR_SPACE = re.compile("[\x00-\x20\x7f-\x9f]")
_TRACKING = re.compile(r"^(utm_[a-z]+|fbclid|gclid|mc_cid|mc_eid|ref_src)$", re.I)


def validate_url(text: str) -> str:
    """Return `text` stripped if it is an absolute http(s) URL with a host, else InvalidURL."""
    if not isinstance(text, str):
        raise InvalidURL("URL must be text")
    url = text.strip()
    if not url:
        raise InvalidURL("empty URL")
    if len(url) > MAX_URL_LENGTH:
        raise InvalidURL(f"URL longer than {MAX_URL_LENGTH} characters", url=url[:200])
    if _CONTROL_OR_SPACE.search(url):
        raise InvalidURL("URL contains whitespace or control characters", url=url[:200])
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise InvalidURL(f"malformed URL: {exc}", url=url[:200]) from exc
    if parts.scheme.lower() not in ("http", "https"):
        scheme = parts.scheme or "(none)"
        raise InvalidURL(f"unsupported scheme {scheme!r}: only http and https", url=url[:200])
    if not parts.hostname:
        raise InvalidURL("URL has no host", url=url[:200])
    if port == 0:
        raise InvalidURL("URL has port 0", url=url[:200])
    try:
        parts.hostname.encode("idna")
    except UnicodeError as exc:
        raise InvalidURL(f"invalid host name: {exc}", url=url[:200]) from exc
    return url


def host_of(url: str) -> str:
    return (urlsplit(url).hostname or "").lower()


def site_of(url: str) -> str:
    """Host without a leading www. (the 'same site' test)."""
    host = host_of(url)
    return host[4:] if host.startswith("www.") else host


def normalize_url(url: str) -> str:
    """Canonical form used to compare URLs (scoring, caches, dedup).

    Lower-case scheme and host, no default port, no fragment, no tracking parameters,
    percent-encoding normalised, empty path = "/", trailing "index.html" kept (it matters
    to some servers), trailing slash dropped except for the root, www. dropped, http≡https.
    """
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return url.strip()
    host = (parts.hostname or "").lower().rstrip(".")
    if host.startswith("www."):
        host = host[4:]
    port = parts.port
    netloc = host if port in (None, DEFAULT_PORTS.get(parts.scheme.lower())) else f"{host}:{port}"
    path = quote(unquote(parts.path or "/"), safe="/:@!$&'()*+,;=-._~%")
    if len(path) > 1 and path.endswith("/"):
        path = path.rstrip("/") or "/"
    query = urlencode(
        sorted((k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)
               if not _TRACKING.match(k))
    )
    return urlunsplit(("http", netloc, path, query, ""))


def same_url(a: str, b: str) -> bool:
    return normalize_url(a) == normalize_url(b)


# Where a site that lost its address often went: the same name with or without "www.",
# under a new subdomain, or under another top-level domain.
MOVED_SITE_PREFIXES = ("www", "new", "archive", "blog", "news", "old", "www2")
MOVED_SITE_TLDS = ("com", "org", "net", "de", "info", "io")


def host_variants(host: str, limit: int = 16) -> list[str]:
    """Hosts a site at `host` may have moved to (pure), most likely first: the www. twin,
    new subdomains of its name, then its name under other top-level domains."""
    host = host.lower().rstrip(".")
    bare = host[4:] if host.startswith("www.") else host
    labels = bare.split(".")
    found: list[str] = []

    def add(candidate: str) -> None:
        if candidate != host and candidate not in found:
            found.append(candidate)

    add(bare if host.startswith("www.") else f"www.{bare}")
    if len(labels) == 2:  # name.tld: subdomains of the name, the name elsewhere
        for prefix in MOVED_SITE_PREFIXES[1:]:
            add(f"{prefix}.{bare}")
        for tld in MOVED_SITE_TLDS:
            if tld != labels[1]:
                add(f"{labels[0]}.{tld}")
                add(f"www.{labels[0]}.{tld}")
    return found[:limit]

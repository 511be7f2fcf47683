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


def canonical_host(host: str) -> str:
    """A host name in the one form that goes on the wire: lower case, no trailing dot,
    internationalised labels in IDNA ASCII (`münchen.de` → `xn--mnchen-3ya.de`), so that
    a URL written either way names the same host. A name IDNA refuses is kept as it is."""
    host = host.lower().rstrip(".")
    if host.isascii():
        return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return host


def host_of(url: str) -> str:
    return canonical_host(urlsplit(url).hostname or "")


def site_of(url: str) -> str:
    """Host without a leading www. (the 'same site' test)."""
    host = host_of(url)
    return host[4:] if host.startswith("www.") else host


def normalize_url(url: str) -> str:
    """Canonical form used to compare URLs (scoring, caches, dedup).

    Lower-case scheme and host (IDNA ASCII: `canonical_host`), no default port, no
    fragment, no tracking parameters, percent-encoding normalised, empty path = "/",
    trailing "index.html" kept (it matters to some servers), trailing slash dropped except
    for the root, www. dropped, http≡https.
    """
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return url.strip()
    host = canonical_host(parts.hostname or "")
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
    """Do two URLs name the same page once normalised (normalize_url)?"""
    return normalize_url(a) == normalize_url(b)


def without_userinfo(url: str) -> str:
    """`url` without `user:password@` (what may be shown: in answers, messages, logs)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, parts.query,
                       parts.fragment))


def userinfo_authorization(url: str) -> str | None:
    """The `Authorization: Basic …` value for the URL's `user:password@`, or None."""
    import base64

    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return None
    user, _, password = parts.netloc.rpartition("@")[0].partition(":")
    token = f"{unquote(user)}:{unquote(password)}".encode()
    return "Basic " + base64.b64encode(token).decode()


# --- a user's URL as data under a configured endpoint ---------------------------------------

_ENCODED_DOT = re.compile("%2e", re.IGNORECASE)


def is_dot_segment(segment: str) -> bool:
    """`.` or `..`, also percent-encoded (`%2e%2E`) or with path parameters (`..;x`): what
    some client or server on the way resolves as a step up or a no-op."""
    name = _ENCODED_DOT.sub(".", segment.split(";", 1)[0])
    return name in (".", "..")


def remove_dot_segments(path: str) -> str:
    """RFC 3986 §5.2.4 on a path, counting encoded and parameterised dots as dots (pure)."""
    out: list[str] = []
    segments = path.split("/")
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if is_dot_segment(segment):
            if _ENCODED_DOT.sub(".", segment.split(";", 1)[0]) == ".." and len(out) > 1:
                out.pop()
            if last:
                out.append("")
            continue
        out.append(segment)
    joined = "/".join(out)
    return joined if joined.startswith("/") or not path.startswith("/") else "/" + joined


def url_as_path_data(url: str) -> str:
    """`url` fit to travel in an endpoint's path (`{prefix}/{url}`, wayback style): the
    same resource, with nothing a client or server would resolve against the endpoint's own
    path — dot segments resolved within the URL's own path (as a browser would), backslashes
    (a separator to some servers) encoded, the fragment (never sent) dropped."""
    parts = urlsplit(url.replace("\\", "%5C"))
    path = remove_dot_segments(parts.path) if parts.path else ""
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def endpoint_url(base: str, path: str = "", *, data_url: str | None = None,
                 params: dict[str, str | int] | None = None) -> str:
    """A request URL under the configured endpoint `base` — the one way any part of pagetrail
    puts a user's URL or query into a configured archive, search or HN URL.

    `path` is pagetrail's own sub-path (`"timemap/link/"`, `"search"`); `data_url` a URL
    carried in the path (url_as_path_data); `params` the query, encoded. The base's own
    query (an instance token) is kept. InvalidURL when the result would leave the base's
    path: a user's text never chooses which path of an endpoint is requested."""
    parts = urlsplit(base.strip())
    prefix = parts.path.rstrip("/")
    tail = path.lstrip("/")
    query = ""
    if data_url is not None:
        data = urlsplit(url_as_path_data(data_url))
        tail += urlunsplit((data.scheme, data.netloc, data.path, "", ""))
        query = data.query
    extra = [parts.query] if parts.query else []
    if params:
        extra.append(urlencode(params))
    query = "&".join(q for q in [query, *extra] if q)
    full_path = f"{prefix}/{tail}" if tail else (prefix or "/")
    below = full_path[len(prefix):]
    if any(is_dot_segment(segment) for segment in below.split("/")):
        raise InvalidURL("this URL cannot be looked up: its path would leave the endpoint's",
                         url=(data_url or path)[:200])
    return urlunsplit((parts.scheme, parts.netloc, full_path, query, ""))
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

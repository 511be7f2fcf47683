"""Redirects that are not moves (pure; no I/O).

A deep link that ends on a login form, an SSO/OAuth authorisation endpoint, a consent wall,
the site's root or a locale root, or a link shortener's warning page has not moved there:
the page is behind the redirect (login, sso, consent, interstitial) or gone (home,
locale_home). `redirect_kind` names it; only a redirect to the page itself is a move.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlsplit

from pagetrail.tools.models import Hop

# Path segments of sign-in and single-sign-on endpoints (lower-case, whole segments).
SSO_SEGMENTS = frozenset({"authorize", "oauth", "oauth2", "saml", "saml2", "sso", "openid",
                          "openid-connect", "adfs", "idp", "cas"})
LOGIN_SEGMENTS = frozenset({"login", "signin", "sign-in", "sign_in", "logon", "log-in",
                            "auth", "authenticate", "accounts-login"})
# Query parameters that carry the address to come back to after signing in.
RETURN_PARAMS = frozenset({"redirect_uri", "returnto", "return_to", "returnurl", "return_url",
                           "redirect_url", "redirect", "next", "continue", "service", "goto",
                           "samlrequest", "relaystate", "from", "dest", "destination",
                           "back", "backurl", "target"})
SSO_PARAMS = frozenset({"redirect_uri", "samlrequest", "relaystate", "client_id",
                        "response_type"})
LOGIN_HOSTS = ("login.", "signin.", "sso.", "idp.", "auth.", "accounts.", "account.",
               "secure.", "id.")
CONSENT_HOSTS = ("consent.", "guce.", "privacy.", "cmp.")
CONSENT_SEGMENTS = frozenset({"consent", "cookie-consent", "cookies", "gdpr", "privacy-gate",
                              "collectconsent", "consent-wall", "cookiewall"})
# Pages a link shortener or a mail/social site shows before the target.
INTERSTITIAL_PATHS = ("/a/warning", "/safety/go", "/interstitial", "/linkwarning",
                      "/warning", "/leaving", "/redirect-warning", "/url")
SHORTENERS = frozenset({"bit.ly", "t.co", "lnkd.in", "goo.gl", "tinyurl.com", "ow.ly",
                        "buff.ly", "is.gd", "rebrand.ly", "t.ly", "cutt.ly", "shorturl.at",
                        "linkedin.com", "www.linkedin.com", "www.google.com", "google.com",
                        "l.facebook.com", "lm.facebook.com", "out.reddit.com",
                        "safelinks.protection.outlook.com"})
LOCALE = re.compile(r"^[a-z]{2}([-_][a-z]{2,4})?$", re.IGNORECASE)
ROOT_NAMES = re.compile(r"^(index|default|home|start)(\.\w+)?$", re.IGNORECASE)

KINDS = ("login", "sso", "consent", "home", "locale_home", "interstitial")


def _segments(path: str) -> list[str]:
    return [s.lower() for s in path.split("/") if s]


def _is_root(path: str) -> bool:
    segments = _segments(path)
    return not segments or (len(segments) == 1 and bool(ROOT_NAMES.match(segments[0])))


def _is_locale_root(path: str) -> bool:
    segments = _segments(path)
    if not segments or len(segments) > 2 or not LOCALE.match(segments[0]):
        return False
    return len(segments) == 1 or bool(ROOT_NAMES.match(segments[1]))


def _host(url: str) -> str:
    return (urlsplit(url).hostname or "").lower()


def auth_kind(url: str) -> str | None:
    """"sso" or "login" when `url` is a sign-in endpoint, else None."""
    parts = urlsplit(url)
    segments = set(_segments(parts.path))
    params = {k.lower() for k, _v in parse_qsl(parts.query, keep_blank_values=True)}
    host = (parts.hostname or "").lower()
    if segments & SSO_SEGMENTS or params & SSO_PARAMS:
        return "sso"
    if segments & LOGIN_SEGMENTS:
        return "login"
    if host.startswith(LOGIN_HOSTS) and params & RETURN_PARAMS:
        return "login"
    joined = parts.path.lower()
    if any(w in joined for w in ("/signin", "/sign-in", "/login", "/logon")):
        return "login"
    return None


def consent_kind(url: str) -> str | None:
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    segments = set(_segments(parts.path))
    if host.startswith(CONSENT_HOSTS) or segments & CONSENT_SEGMENTS:
        return "consent"
    return None


def interstitial_kind(start: str, final: str) -> str | None:
    """A shortener's (or a social site's) warning page before the target."""
    parts = urlsplit(final)
    host = (parts.hostname or "").lower()
    path = parts.path.lower().rstrip("/")
    if host not in SHORTENERS and _host(start) not in SHORTENERS:
        return None
    if any(path == p or path.startswith(p + "/") for p in INTERSTITIAL_PATHS):
        return "interstitial"
    return None


def redirect_kind(url: str, final_url: str | None, chain: list[Hop]) -> str | None:
    """What a redirect of `url` to `final_url` is when it is not a move, or None (no
    redirect, or a redirect to a page that may be the page itself)."""
    if not chain or not final_url or final_url == url:
        return None
    for kind in (auth_kind(final_url), consent_kind(final_url),
                 interstitial_kind(url, final_url)):
        if kind is not None:
            return kind
    # The sign-in may be a hop on the way (…/authorize?redirect_uri=… → back to a home page).
    for hop in chain[1:]:
        kind = auth_kind(hop.url) or consent_kind(hop.url)
        if kind is not None:
            return kind
    start, end = urlsplit(url), urlsplit(final_url)
    if _is_root(start.path) and not start.query:
        return None  # a site root moving to another root is the site's own move
    if _is_root(end.path) and not end.query:
        return "home"
    if _is_locale_root(end.path) and not end.query and not _is_locale_root(start.path):
        return "locale_home"
    return None

"""Parsing of the slash commands (pure): /fixlink and /linkrot text → a typed request.

Slack sends the text after the command as typed; with "escape" enabled in the manifest it
wraps links as ``<https://x|label>``. Both forms are accepted. Mistakes raise
`CommandUsageError` (no URL, unknown subcommand…), `InvalidURL` (not an http(s) URL) or
`RefusedAddress` (a literal private address or a local name), each with a message fit for
the person who typed it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pagetrail import InvalidDate, InvalidURL, PagetrailError, Settings, refuse_local_url
from pagetrail import parse_date as parse_any_date

MAX_WORDS = 30  # anchor words / query words kept (longer text is pasted prose, not a query)
MAX_RANK_CANDIDATES = 10

FixlinkAction = Literal[
    "recover", "check", "memento", "signature", "tags", "search", "rank", "related", "archive",
    "help"
]
LinkrotAction = Literal["watch", "unwatch", "list", "digest", "help"]
SUBCOMMANDS: tuple[str, ...] = (
    "check", "memento", "signature", "tags", "search", "rank", "related", "archive", "help",
)
MAX_ARCHIVE_URLS = 5  # a person's captures at a time from Slack


class CommandUsageError(PagetrailError):
    """The command text does not say what to do (missing URL, unknown subcommand…)."""

    code = "usage"


@dataclass(frozen=True)
class FixlinkRequest:
    action: FixlinkAction
    url: str = ""
    words: tuple[str, ...] = ()  # anchor words (recover) or the query (search)
    candidates: tuple[str, ...] = ()  # rank; the URLs after the first (archive)
    at: datetime | None = None  # memento

    @property
    def anchor(self) -> str:
        return " ".join(self.words)


@dataclass(frozen=True)
class LinkrotRequest:
    action: LinkrotAction
    target: str = ""


_SLACK_LINK = re.compile(r"^<([^<>|]+)(?:\|[^<>]*)?>$")


def unwrap_token(token: str) -> str:
    """`<https://x|label>` or `<https://x>` → `https://x`; other text unchanged."""
    match = _SLACK_LINK.match(token)
    return match.group(1) if match else token


# A link (a scheme, then no space): not `<!channel>` or `<@U1>`, which are kept as typed.
_SLACK_MARKUP = re.compile(r"<([A-Za-z][A-Za-z0-9+.-]*:[^<>|\s]*)(?:\|[^<>]*)?>")
_SLACK_ESCAPES = (("&lt;", "<"), ("&gt;", ">"), ("&amp;", "&"))


def unwrap_links(text: str) -> str:
    """Slack's link markup replaced by its link, before the text is split into words: a
    label may hold spaces (`<https://x|the old page>`). Then Slack's escapes of &, < and >
    are undone (it escapes them in every command's text)."""
    text = _SLACK_MARKUP.sub(lambda m: m.group(1), text or "")
    for escaped, plain in _SLACK_ESCAPES:
        text = text.replace(escaped, plain)
    return text


def tokens_of(text: str) -> list[str]:
    return unwrap_links(text).split()


def public_url(token: str, settings: Settings | None = None) -> str:
    """`token` as a URL, refused at once (before any network I/O) when its host is a literal
    private address or a local name; names that *resolve* to private addresses are refused
    by the fetcher."""
    return refuse_local_url(token, settings)


def parse_date(text: str) -> datetime:
    """pagetrail.parse_date (the CLI's too), its refusal as a usage error."""
    try:
        return parse_any_date(text)
    except InvalidDate as exc:
        raise CommandUsageError(str(exc)) from exc


def _need_url(tokens: list[str], usage: str, settings: Settings | None) -> str:
    if not tokens:
        raise CommandUsageError(f"a URL is missing. Usage: {usage}")
    return public_url(tokens[0], settings)


def parse_fixlink(text: str, settings: Settings | None = None) -> FixlinkRequest:
    tokens = tokens_of(text)
    if not tokens or tokens[0].lower() == "help":
        if not tokens:
            raise CommandUsageError("a URL is missing. Usage: /fixlink URL [anchor words…] "
                                    "(or /fixlink help)")
        return FixlinkRequest("help")
    head = tokens[0].lower()
    rest = tokens[1:]
    if head == "search":
        if not rest:
            raise CommandUsageError("the query is missing. Usage: /fixlink search QUERY")
        return FixlinkRequest("search", words=tuple(rest[:MAX_WORDS]))
    if head == "rank":
        url = _need_url(rest, "/fixlink rank URL CANDIDATE…", settings)
        if len(rest) < 2:
            raise CommandUsageError("no candidates. Usage: /fixlink rank URL CANDIDATE…")
        if len(rest) - 1 > MAX_RANK_CANDIDATES:
            raise CommandUsageError(f"at most {MAX_RANK_CANDIDATES} candidates at a time")
        candidates = tuple(public_url(t, settings) for t in rest[1:])
        return FixlinkRequest("rank", url=url, candidates=candidates)
    if head == "archive":
        url = _need_url(rest, "/fixlink archive URL…", settings)
        if len(rest) > MAX_ARCHIVE_URLS:
            raise CommandUsageError(f"at most {MAX_ARCHIVE_URLS} URLs at a time")
        return FixlinkRequest("archive", url=url,
                              candidates=tuple(public_url(t, settings) for t in rest[1:]))
    if head == "memento":
        url = _need_url(rest, "/fixlink memento URL [YYYY-MM-DD]", settings)
        at = parse_date(rest[1]) if len(rest) > 1 else None
        return FixlinkRequest("memento", url=url, at=at)
    if head in ("check", "signature", "tags", "related"):
        url = _need_url(rest, f"/fixlink {head} URL", settings)
        return FixlinkRequest(head, url=url)  # type: ignore[arg-type]
    if "://" not in head and "." not in head and ":" not in head:
        raise CommandUsageError(f"unknown subcommand {tokens[0]!r}; try /fixlink help")
    if ":" not in head:
        raise InvalidURL(f"{tokens[0]!r} is not a URL: start it with https://", url=tokens[0])
    url = public_url(tokens[0], settings)
    return FixlinkRequest("recover", url=url, words=tuple(rest[:MAX_WORDS]))


def watch_target(token: str, settings: Settings | None = None) -> str:
    """A page URL, or a bare site name (`example.org`) as its home page."""
    text = unwrap_token(token)
    if "://" not in text:
        if "/" in text or "." not in text:
            raise InvalidURL(f"{text!r} is neither a URL nor a site name", url=text[:200])
        text = f"https://{text.lower().rstrip('.')}/"
    return public_url(text, settings)


def parse_linkrot(text: str, settings: Settings | None = None) -> LinkrotRequest:
    tokens = tokens_of(text)
    if not tokens:
        raise CommandUsageError("Usage: /linkrot watch URL|SITE, /linkrot unwatch URL|SITE, "
                                "/linkrot list, /linkrot digest now")
    head = tokens[0].lower()
    if head in ("watch", "unwatch"):
        if len(tokens) < 2:
            raise CommandUsageError(f"what to {head}? Usage: /linkrot {head} URL|SITE")
        return LinkrotRequest(head, watch_target(tokens[1], settings))  # type: ignore[arg-type]
    if head == "list":
        return LinkrotRequest("list")
    if head == "digest":
        if len(tokens) < 2 or tokens[1].lower() != "now":
            raise CommandUsageError("Usage: /linkrot digest now")
        return LinkrotRequest("digest")
    if head == "help":
        return LinkrotRequest("help")
    raise CommandUsageError(f"unknown subcommand {tokens[0]!r}; try /linkrot help")

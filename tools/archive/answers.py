"""What an archive's answer is: the archive speaking, or a capture (pure).

RFC 7089: a memento carries `Memento-Datetime`. So an answer *with* that header is archived
content — a capture — whatever its status: a captured 429 or 503 page is a copy of a busy
site on that day, never the archive throttling pagetrail (it is skipped as a copy, never
retried). An answer *without* it is the archive's own: its listing, its refusal, its
throttling or its outage.

The archive's refusals, as the Internet Archive words them (recorded answers in
tests/fixtures/archives/):
- "Blocked Site Error" (`AdministrativeAccessControlException`), 403 on CDX, TimeMap and
  TimeGate: the site's owner asked for it to be withheld → `blocked`;
- "Sorry. This URL has been excluded from the Wayback Machine." served with 200 and no
  `Memento-Datetime` in place of a capture → `excluded` (robots.txt exclusions, answered as
  `RobotAccessControlException` / "Blocked By Robots", are the same class).

OpenWayback also names its errors in `X-Archive-Wayback-Runtime-Error`
(`RobotAccessControlException: Blocked By Robots`, `ResourceNotInArchiveException`).

Throttling and outages (no `Memento-Datetime`): 429, 503 (with or without Retry-After), 502,
504, and Cloudflare's 520–524 (the origin did not answer) → `throttled` / `down`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from pagetrail.tools.net.fetch import retry_after_seconds

AnswerKind = Literal["capture", "listing", "excluded", "blocked", "throttled", "down",
                     "not_found", "other"]

# Phrases the archive uses for its own refusals; looked for in the first bytes only.
_BLOCKED = re.compile(r"Blocked Site Error|AdministrativeAccessControlException", re.I)
_EXCLUDED = re.compile(
    r"has been excluded from the Wayback Machine|RobotAccessControlException|"
    r"Blocked By Robots|excluded from (?:the )?(?:archive|wayback)", re.I)
_SNIFF_BYTES = 64 * 1024
_THROTTLE = frozenset({429})
_DOWN = frozenset({500, 502, 503, 504, 520, 521, 522, 523, 524, 525, 526, 530})


@dataclass(frozen=True)
class ArchiveAnswer:
    """One archive answer, classified. `words`: the archive's own words (for refusals)."""

    kind: AnswerKind
    status: int
    words: str = ""
    retry_after: float | None = None

    @property
    def refused(self) -> bool:
        return self.kind in ("excluded", "blocked")

    @property
    def unavailable(self) -> bool:
        return self.kind in ("throttled", "down")


def is_capture(headers: Mapping[str, str]) -> bool:
    """Archived content: the answer names the moment it was captured."""
    return any(key.lower() == "memento-datetime" for key in headers)


def _header(headers: Mapping[str, str], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name:
            return value
    return None


def refusal_words(body: bytes) -> tuple[AnswerKind, str] | None:
    """("blocked" | "excluded", the archive's sentence) when the body is the archive refusing."""
    text = body[:_SNIFF_BYTES].decode("utf-8", "replace")
    for kind, pattern in (("blocked", _BLOCKED), ("excluded", _EXCLUDED)):
        match = pattern.search(text)
        if match:
            return kind, _sentence(text, match.start(), match.end())  # type: ignore[return-value]
    return None


def _sentence(text: str, start: int, end: int) -> str:
    """The archive's sentence around a match, tags and spaces removed, at most 200 chars."""
    left = max(text.rfind(">", 0, start), text.rfind("\n", 0, start), text.rfind(":", 0, start))
    right_candidates = [p for p in (text.find("<", end), text.find("\n", end)) if p >= 0]
    right = min(right_candidates) if right_candidates else len(text)
    words = re.sub(r"\s+", " ", text[left + 1:right]).strip()
    return words[:200] or text[start:end]


def classify(status: int, headers: Mapping[str, str], body: bytes = b"", *,
             now: float | None = None) -> ArchiveAnswer:
    """The class of one answer from an archive (see the module's docstring)."""
    if is_capture(headers):
        return ArchiveAnswer("capture", status)
    # OpenWayback names its own errors in a header (the body may be anything, or nothing).
    runtime = _header(headers, "x-archive-wayback-runtime-error") or ""
    refusal = refusal_words(runtime.encode()) if runtime else None
    if refusal is None and "ResourceNotInArchiveException" in runtime:
        return ArchiveAnswer("not_found", status, words=runtime[:200])
    if refusal is None and (status in (200, 403, 451) or status >= 500):
        refusal = refusal_words(body)
    if refusal is not None:
        return ArchiveAnswer(refusal[0], status, words=refusal[1])
    retry_after = retry_after_seconds(_header(headers, "retry-after"), now)
    if status in _THROTTLE or (status == 503 and retry_after is not None):
        return ArchiveAnswer("throttled", status, words=f"HTTP {status}",
                             retry_after=retry_after)
    if status in _DOWN:
        return ArchiveAnswer("down", status, words=f"HTTP {status}", retry_after=retry_after)
    if status in (404, 410):
        return ArchiveAnswer("not_found", status)
    if 200 <= status < 400:
        return ArchiveAnswer("listing", status)
    return ArchiveAnswer("other", status, words=f"HTTP {status}")


# Captured walls: a capture whose content is a challenge, a throttling page or a parked
# domain, not the page (a capture made while the site was behind Cloudflare, say).
_WALL_TITLE = re.compile(
    r"^\s*(?:just a moment\.*|attention required!? \| cloudflare|access denied|"
    r"too many requests|please wait\.*|checking your browser.*|ddos-guard|"
    r"403 forbidden|429 too many requests|503 service (?:temporarily )?unavailable|"
    r"(?:this )?domain (?:name )?(?:is )?for sale.*|.*\bis for sale\b.*|parked domain.*)\s*$",
    re.I)
_WALL_TEXT = re.compile(
    r"checking (?:if the site connection is secure|your browser before accessing)|"
    r"enable javascript and cookies to continue|cf-browser-verification|"
    r"this domain (?:name )?(?:is|may be) for sale|domain is parked|buy this domain", re.I)


def captured_wall(title: str, text: str) -> bool:
    """A capture of a challenge, throttling or parking page, not of the page itself."""
    if _WALL_TITLE.match(title or ""):
        return True
    return len((text or "").split()) < 300 and bool(_WALL_TEXT.search((text or "")[:5000]))


def refusal_message(prefix: str, answer: ArchiveAnswer) -> str:
    """How a refusal is said: `archive_excluded` with the archive's words."""
    reason = "blocked the site" if answer.kind == "blocked" else "excluded the URL"
    return f"{prefix} {reason} (HTTP {answer.status}): {answer.words}"


__all__ = ["AnswerKind", "ArchiveAnswer", "captured_wall", "classify", "is_capture", "refusal_message",
           "refusal_words"]

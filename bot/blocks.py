"""Block Kit formatting of pagetrail's answers (pure) and a validator of Slack's limits.

Every formatter clips what it writes so that its output always validates; `validate_blocks`
is the independent check (tests, and a last guard before posting). Text from archives and
candidate pages is untrusted: it is escaped (& < >) so it cannot mention @channel, forge
links or break the markup, and links are built only from http(s) URLs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

from pagetrail import (
    Candidate,
    CheckResult,
    Drift,
    Hit,
    Memento,
    Recovery,
    Signature,
    Tag,
    digest_captures_text,
)

if TYPE_CHECKING:
    from pagetrail import CaptureResult, RelatedResult

Block = dict[str, Any]

# Slack's documented limits (Block Kit reference, chat.postMessage).
MAX_BLOCKS = 50
SECTION_TEXT = 3000
HEADER_TEXT = 150
FIELD_TEXT = 2000
MAX_FIELDS = 10
CONTEXT_ELEMENTS = 10
CONTEXT_TEXT = 2000
ACTIONS_ELEMENTS = 25
BUTTON_TEXT = 75
BUTTON_VALUE = 2000
BUTTON_URL = 3000
ID_LENGTH = 255
MESSAGE_TEXT = 4000  # fallback `text`; Slack truncates far later, but notifications clip it

CANDIDATES_PER_PAGE = 3
TITLE_CHARS = 150
EVIDENCE_CHARS = 300

# action_ids the app listens to
ACTION_PICK = "pagetrail_pick"
ACTION_REJECT = "pagetrail_reject"
ACTION_MORE = "pagetrail_more"

VERDICT_WORDS = {
    "ok": "alive", "redirected": "redirected", "dead": "dead", "soft404": "soft 404",
    "unreachable": "unreachable", "transient": "temporarily failing", "blocked": "blocked",
    "refused": "refused",
}
ANSWER_HEADERS = {
    "alive": "This link works",
    "redirected": "This link redirects",
    "moved": "Found where it moved",
    "replacement": "Found a replacement",
    "archived": "Only an archived copy",
    "unverified": "Possible replacements (unverified)",
    "none": "No replacement found",
}


class BlockLimitError(ValueError):
    """A message breaks one of Slack's Block Kit limits (programming error)."""


# ------------------------------------------------------------------------- text helpers


def clip(text: str, limit: int) -> str:
    text = " ".join(str(text).split()) if "\n" not in str(text) else str(text)
    return text if len(text) <= limit else text[: max(0, limit - 1)].rstrip() + "…"


WORD_JOINER = "\u2060"
_BROADCAST = re.compile(r"@(?=(?:channel|here|everyone)\b)", re.IGNORECASE)


def escape(text: str) -> str:
    """Slack's mrkdwn escaping: nothing the text says becomes markup, links or mentions.

    `&`, `<`, `>` are escaped (no `<!channel>`, `<@U…>`, `<url|label>`), and a plain
    `@channel` / `@here` / `@everyone` gets an invisible WORD JOINER after its `@`, so
    Slack's auto-parsing (of fallback `text`, which has no `verbatim`) never broadcasts."""
    text = str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _BROADCAST.sub("@" + WORD_JOINER, text)


def safe_url(url: str) -> str | None:
    """The URL fit to sit inside `<…|…>`: http(s) only, with the delimiters encoded."""
    url = str(url).strip()
    if not url.lower().startswith(("http://", "https://")):
        return None
    return quote(url, safe=":/?#[]@!$&'()*+,;=%~-._")


def link(url: str, label: str | None = None, limit: int = TITLE_CHARS) -> str:
    target = safe_url(url)
    text = escape(clip(label or url, limit)).replace("|", "¦")
    if target is None or len(target) > BUTTON_URL:
        return f"`{escape(clip(url, limit))}`"
    return f"<{target}|{text}>"


def mrkdwn(text: str, limit: int = SECTION_TEXT) -> dict[str, Any]:
    # verbatim: Slack does not auto-parse plain @channel/@here, #channels or bare URLs in
    # the (partly untrusted) text; the explicit `<url|label>` links we build still work.
    return {"type": "mrkdwn", "text": clip_markup(text, limit), "verbatim": True}


def plain(text: str, limit: int) -> dict[str, Any]:
    return {"type": "plain_text", "text": clip(text, limit) or " ", "emoji": True}


def clip_markup(text: str, limit: int) -> str:
    """Clip already-formatted mrkdwn at a line break where possible, so no link is cut."""
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit - 2)
    if cut < limit // 2:
        cut = limit - 2
    return text[:cut].rstrip() + "\n…"


def section(text: str, *, accessory: Block | None = None, block_id: str | None = None) -> Block:
    block: Block = {"type": "section", "text": mrkdwn(text)}
    if accessory:
        block["accessory"] = accessory
    if block_id:
        block["block_id"] = block_id[:ID_LENGTH]
    return block


def header(text: str) -> Block:
    return {"type": "header", "text": plain(text, HEADER_TEXT)}


def context(*texts: str) -> Block:
    return {"type": "context",
            "elements": [mrkdwn(t, CONTEXT_TEXT) for t in texts if t][:CONTEXT_ELEMENTS]}


def divider() -> Block:
    return {"type": "divider"}


def button(text: str, action_id: str, value: dict[str, Any] | str, *,
           style: str | None = None) -> Block | None:
    """A button, or None when its value would not fit (then the caller leaves it out)."""
    encoded = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    if len(encoded) > BUTTON_VALUE:
        return None
    element: Block = {"type": "button", "text": plain(text, BUTTON_TEXT),
                      "action_id": action_id[:ID_LENGTH], "value": encoded}
    if style:
        element["style"] = style
    return element


def actions(elements: Iterable[Block | None], block_id: str | None = None) -> Block | None:
    kept = [e for e in elements if e][:ACTIONS_ELEMENTS]
    if not kept:
        return None
    block: Block = {"type": "actions", "elements": kept}
    if block_id:
        block["block_id"] = block_id[:ID_LENGTH]
    return block


def message(blocks: Sequence[Block | None], text: str) -> dict[str, Any]:
    """A message payload: the blocks (at most 50) and the notification fallback text."""
    kept = [b for b in blocks if b]
    if len(kept) > MAX_BLOCKS:
        kept = [*kept[: MAX_BLOCKS - 1], context("_(answer shortened)_")]
    # The fallback text shows in notifications and is parsed as mrkdwn: it is escaped like
    # the blocks' untrusted text (it names URLs and titles from search results and errors).
    # Escaping lengthens the text: clip shorter until the escaped text fits (never cutting
    # an entity in two). A character escapes to at most 5 ("&amp;"), so dropping a fifth of
    # the excess never clips more than needed.
    limit = MESSAGE_TEXT
    fallback = escape(clip(text, limit))
    while len(fallback) > MESSAGE_TEXT:
        limit -= -(-(len(fallback) - MESSAGE_TEXT) // 5)
        fallback = escape(clip(text, limit))
    return {"blocks": kept, "text": fallback}


def percent(value: float) -> str:
    return f"{round(100 * max(0.0, min(1.0, value)))}%"


# ------------------------------------------------------------------------- recovery


def verdict_line(check: CheckResult | None) -> str:
    if check is None:
        return ""
    words = VERDICT_WORDS.get(check.verdict, check.verdict)
    status = f" ({check.status})" if check.status else ""
    line = f"Check: *{words}*{status}"
    if check.reason:
        line += f" — {escape(clip(check.reason, 200))}"
    if check.is_dead and not check.confirmed:
        line += "\n_One check only: a link is confirmed dead after repeated failures over days._"
    return line


def pick_value(dead_url: str, candidate_url: str) -> dict[str, str]:
    return {"u": dead_url, "c": candidate_url}


def candidate_blocks(dead_url: str, candidate: Candidate, number: int) -> list[Block | None]:
    title = candidate.title or candidate.url
    lines = [
        f"*{number}. {link(candidate.url, title)}*",
        f"{candidate.kind} · confidence {percent(candidate.confidence)} · "
        f"{escape(clip(candidate.url, 300))}",
    ]
    if candidate.evidence:
        lines.append(f"_{escape(clip(candidate.evidence, EVIDENCE_CHARS))}_")
    value = pick_value(dead_url, candidate.url)
    return [
        section("\n".join(lines), block_id=f"candidate-{number}"),
        actions([
            button("Use this", ACTION_PICK, value, style="primary"),
            button("Not it", ACTION_REJECT, value),
        ], block_id=f"candidate-actions-{number}"),
    ]


def memento_line(memento: Memento | None) -> str:
    if memento is None:
        return "Archived copy: none found."
    date = memento.datetime.strftime("%Y-%m-%d")
    title = memento.document.title if memento.document and memento.document.title else ""
    label = f"{date}" + (f" — {clip(title, 100)}" if title else "")
    return f"Archived copy: {link(memento.memento_url, label)} ({escape(memento.archive)})"


def recovery_blocks(recovery: Recovery, *, offset: int = 0, anchor: str = "",
                    per_page: int = CANDIDATES_PER_PAGE) -> dict[str, Any]:
    """The answer to `/fixlink URL`: verdict, top candidates with buttons, archived copy."""
    url = recovery.url
    blocks: list[Block | None] = []
    if offset == 0:
        title = ANSWER_HEADERS.get(recovery.answer, recovery.answer)
        if recovery.drifted:
            title = "The link works but the page changed"
        blocks.append(header(title))
        lines = [f"*{link(url, url, 300)}*"]
        verdict = verdict_line(recovery.check)
        if verdict:
            lines.append(verdict)
        if recovery.reason:
            lines.append(escape(clip(recovery.reason, 500)))
        blocks.append(section("\n".join(lines), block_id="verdict"))
    if recovery.answer in ("alive", "redirected"):
        final = recovery.check.final_url if recovery.check else None
        if recovery.answer == "redirected" and final:
            blocks.append(section(f"It now lives at {link(final, final, 300)}"))
            blocks.append(actions([button("Use this", ACTION_PICK, pick_value(url, final),
                                          style="primary")], block_id="redirect-actions"))
        if recovery.drift is not None and recovery.drift.drifted:
            drift = recovery.drift
            archived = button("Use archived copy", ACTION_PICK,
                              pick_value(url, drift.memento.memento_url))
            blocks.append(section(drift_item_text(drift_view(drift)), accessory=archived,
                                  block_id="drift"))
            return message(blocks, f"{url}: the link works but the page changed → "
                                   f"{drift.memento.memento_url}")
        return message(blocks, f"{url}: {recovery.answer}")

    # The archived copy has its own line (and button); the list is of live pages.
    live = [c for c in recovery.candidates if c.kind != "archived"]
    page = live[offset: offset + per_page]
    if offset and not page:
        blocks.append(section("No more candidates."))
    for number, candidate in enumerate(page, start=offset + 1):
        blocks.extend(candidate_blocks(url, candidate, number))
    if offset == 0:
        if not live:
            blocks.append(section("No live candidate found."))
        archived_pick = None
        if recovery.memento is not None:
            archived_pick = button("Use archived copy", ACTION_PICK,
                                   pick_value(url, recovery.memento.memento_url))
        blocks.append(section(memento_line(recovery.memento), accessory=archived_pick,
                              block_id="archived"))
        blocks.append(related_in_recovery(recovery))
    remaining = len(live) - (offset + len(page))
    if remaining > 0:
        blocks.append(actions([button(f"Show more ({remaining})", ACTION_MORE,
                                      {"u": url, "o": offset + per_page, "a": anchor[:500]})],
                              block_id="more"))
    blocks.append(context(footer(recovery)))
    top = page[0].url if page else (recovery.memento.memento_url if recovery.memento else "")
    return message(blocks, f"{url}: {recovery.answer}" + (f" → {top}" if top else ""))


def drift_view(drift: Drift) -> DriftView:
    return DriftView(url=drift.url, similarity=drift.similarity,
                     archived_title=drift.archived_title, live_title=drift.live_title,
                     memento_url=drift.memento.memento_url,
                     memento_date=f"{drift.memento.datetime:%Y-%m-%d}")


def footer(recovery: Recovery) -> str:
    parts = [f"{recovery.requests} requests", f"{recovery.seconds:.1f} s"]
    if recovery.cached:
        parts.append("from memory")
    if recovery.failures:
        failed = ", ".join(sorted({f.engine for f in recovery.failures}))
        parts.append(f"unavailable: {escape(clip(failed, 200))}")
    return "pagetrail · " + " · ".join(parts)


# ------------------------------------------------------------------------- primitives


def check_blocks(result: CheckResult) -> dict[str, Any]:
    lines = [f"*{link(result.url, result.url, 300)}*", verdict_line(result)]
    if result.final_url and result.final_url != result.url:
        lines.append(f"Ends at {link(result.final_url, result.final_url, 300)}")
    hops = [f"{h.status} {escape(clip(h.url, 200))}" for h in result.chain[:10]]
    blocks: list[Block | None] = [header("Link check"), section("\n".join(lines))]
    if hops:
        blocks.append(context("Redirects: " + " → ".join(hops)))
    return message(blocks, f"{result.url}: {result.verdict}")


def memento_blocks(url: str, memento: Memento | None) -> dict[str, Any]:
    blocks: list[Block | None] = [header("Archived copy"), section(f"*{link(url, url, 300)}*"),
                                  section(memento_line(memento))]
    if memento is not None and memento.document is not None and memento.document.text:
        blocks.append(context(escape(clip(memento.document.text, 280))))
    return message(blocks, f"{url}: " + (memento.memento_url if memento else "no archived copy"))


def signature_blocks(signature: Signature) -> dict[str, Any]:
    def words(items: Sequence[str]) -> str:
        return escape(clip(" ".join(items), FIELD_TEXT - 20)) or "—"

    fields = [
        mrkdwn(f"*Title*\n{escape(clip(signature.title, 300)) or '—'}", FIELD_TEXT),
        mrkdwn(f"*LS5*\n{words(signature.ls5)}", FIELD_TEXT),
        mrkdwn(f"*LS7*\n{words(signature.ls7)}", FIELD_TEXT),
        mrkdwn(f"*KLD terms*\n{words([t.term for t in signature.kld_terms[:10]])}", FIELD_TEXT),
        mrkdwn(f"*URL terms*\n{words(signature.url_terms)}", FIELD_TEXT),
    ]
    blocks: list[Block | None] = [
        header("Signature of the archived copy"),
        section(f"*{link(signature.url, signature.url, 300)}*"),
        {"type": "section", "fields": fields[:MAX_FIELDS]},
    ]
    return message(blocks, f"{signature.url}: {' '.join(signature.ls5)}")


def tags_blocks(url: str, tags: Sequence[Tag]) -> dict[str, Any]:
    if tags:
        shown = [f"`{escape(clip(t.tag, 60))}` ({escape(t.source)}{', ghost' if t.ghost else ''})"
                 for t in tags[:60]]
        body = " · ".join(shown)
    else:
        body = "No tags found."
    blocks = [header("Tags"), section(f"*{link(url, url, 300)}*\n{body}"),
              context("_ghost_: no longer on the live page — still good evidence")]
    return message(blocks, f"{url}: {len(tags)} tags")


def hits_blocks(query: str, hits_by_engine: dict[str, list[Hit]],
                failures: Sequence[str] = ()) -> dict[str, Any]:
    blocks: list[Block | None] = [header("Search"), section(f"Query: *{escape(clip(query, 300))}*")]
    for engine, hits in list(hits_by_engine.items())[:10]:
        lines = [f"*{escape(engine)}* — {len(hits)} hits"]
        lines += [f"{h.rank or i}. {link(h.url, h.title or h.url)}"
                  for i, h in enumerate(hits[:10], start=1)]
        blocks.append(section("\n".join(lines)))
    if not hits_by_engine:
        blocks.append(section("No hits."))
    if failures:
        blocks.append(context("Failed: " + escape(clip(", ".join(failures), 500))))
    total = sum(len(h) for h in hits_by_engine.values())
    return message(blocks, f"search {query!r}: {total} hits")


def rank_blocks(url: str, candidates: Sequence[Candidate]) -> dict[str, Any]:
    blocks: list[Block | None] = [header("Ranked candidates"), section(f"*{link(url, url, 300)}*")]
    for number, candidate in enumerate(candidates[:10], start=1):
        blocks.extend(candidate_blocks(url, candidate, number))
    if not candidates:
        blocks.append(section("No candidate could be ranked (none answered with a page)."))
    return message(blocks, f"{url}: {len(candidates)} ranked")


RELATED_ITEMS = 10
RELATED_IN_RECOVERY = 5


def related_item_lines(items: Sequence[dict[str, Any]], limit: int = RELATED_ITEMS) -> list[str]:
    """One line per related archived page (tools.recovery.related's `to_dict` shape): a link to the
    capture labelled with the site, its date, capture count and relatedness."""
    lines = []
    for number, item in enumerate(items[:limit], start=1):
        url = str(item.get("url") or "")
        site = urlsplit(url).hostname or url
        date = str(item.get("datetime") or "")[:10]
        score = item.get("score")
        details = [f"archived {escape(date)}" if date else "archived",
                   f"{escape(str(item.get('captures', '?')))} captures"]
        if isinstance(score, int | float):
            details.append(f"relatedness {percent(float(score))}")
        lines.append(f"{number}. {link(str(item.get('memento_url') or url), site)} — "
                     + " · ".join(details))
    return lines


def related_in_recovery(recovery: Recovery) -> Block | None:
    """Related archived pages a recovery found for a lost, never-archived link: shown apart
    from the candidates, marked as related, with no buttons."""
    lines = related_item_lines(recovery.related_archived, RELATED_IN_RECOVERY)
    if not lines:
        return None
    return section("*Related archived pages* (same topic — not replacements):\n"
                   + "\n".join(lines), block_id="related")


def related_blocks(result: RelatedResult) -> dict[str, Any]:
    """The answer to `/fixlink related URL`: archived pages on the same topic, each with its
    capture date. They are related reading, never replacements: the header and a note say
    so, and there is deliberately no "Use this" button (that would record a replacement)."""
    url = result.url
    # The SVM's confidence is only a monotone indication, so it is not shown as a percentage.
    how = ("its site is in the training data" if result.category_source == "ontology"
           else "guessed from its address")
    note = result.note[:1].upper() + result.note[1:]
    blocks: list[Block | None] = [
        header("Related archived pages — not replacements"),
        section(f"*{link(url, url, 300)}*\nTopic: *{escape(clip(result.category, 80))}* ({how})",
                block_id="related-request"),
        context(f":information_source: _{escape(clip(note, 500))}_"),
    ]
    lines = related_item_lines([item.model_dump(mode="json") for item in result.items])
    if lines:
        blocks.append(section("\n".join(lines), block_id="related-items"))
    else:
        blocks.append(section("No archived page on this topic was found."))
    footer_parts = [f"{result.looked_up} of {result.candidates_in_category} sites of this "
                    f"topic looked up", f"{result.archived} archived"]
    if result.failures:
        footer_parts.append(f"{len(result.failures)} lookups failed")
    blocks.append(context("pagetrail · " + " · ".join(footer_parts)))
    return message(blocks, f"{url}: {len(result.items)} related archived pages "
                           "(not replacements)")


HELP_TEXT = """*/fixlink URL [anchor words…]* — find where a dead link went
*/fixlink check URL* — is it really dead?
*/fixlink memento URL [YYYY-MM-DD]* — the archived copy closest before the date
*/fixlink signature URL* — title and lexical signature of the archived copy
*/fixlink tags URL* — tags (meta keywords, social), ghost tags marked
*/fixlink search QUERY* — run a query on the configured engines
*/fixlink rank URL CANDIDATE…* — rank your candidates against the archived copy
*/fixlink related URL* — archived pages on the same topic (related, not replacements)
*/fixlink archive URL…* — ask the Internet Archive to capture pages now (Save Page Now)
*/linkrot watch URL|SITE*, *unwatch*, *list*, *digest now* — weekly link-rot digest"""


CAPTURE_WORDS = {
    "success": ":white_check_mark: archived",
    "skipped": ":ballot_box_with_check: already archived",
    "pending": ":hourglass: still capturing",
    "error": ":x: not archived",
    "refused": ":no_entry: not asked (limits)",
    "no_keys": ":no_entry: not asked (no Internet Archive keys configured)",
}


def archive_blocks(captures: Sequence[CaptureResult]) -> dict[str, Any]:
    lines = []
    for capture in captures:
        line = f"{CAPTURE_WORDS.get(capture.status, escape(capture.status))} " \
               f"{link(capture.url, capture.url, 200)}"
        if capture.memento_url:
            when = f"{capture.captured_at:%Y-%m-%d %H:%M} UTC" if capture.captured_at \
                else "archived copy"
            line += f" — {link(capture.memento_url, when, 200)}"
        elif capture.message and capture.status not in ("success", "no_keys"):
            line += f" — {escape(clip(capture.message, 200))}"
        lines.append(line)
    done = sum(c.status in ("success", "skipped") for c in captures)
    return message([header("Save Page Now"), section("\n".join(lines))],
                   f"{done} of {len(captures)} archived")


def help_blocks() -> dict[str, Any]:
    return message([header("pagetrail"), section(HELP_TEXT)], "pagetrail help")


def error_blocks(message_text: str, code: str = "") -> dict[str, Any]:
    label = f" ({escape(code)})" if code else ""
    return message([section(f":warning: {escape(clip(message_text, 1000))}{label}")],
                   clip(message_text, 300))


def pick_confirmation(user: str, dead_url: str, chosen_url: str, rejected: bool) -> dict[str, Any]:
    who = f"<@{user}>" if user.isalnum() else escape(user)
    if rejected:
        text = f"{who} says {link(chosen_url, chosen_url)} is not the page {link(dead_url, dead_url)} was."
    else:
        text = f"{who} picked {link(chosen_url, chosen_url)} for {link(dead_url, dead_url)}."
    return message([context(text)], "pick recorded")


def watches_blocks(targets: Sequence[str]) -> dict[str, Any]:
    if not targets:
        return message([section("This channel watches nothing yet. Try `/linkrot watch SITE`.")],
                       "no watches")
    lines = [f"• {link(t, t, 300)}" for t in targets[:200]]
    return message([header("Watched in this channel"), section("\n".join(lines))],
                   f"{len(targets)} watches")


# ------------------------------------------------------------------------- digest


@dataclass
class DeadLinkView:
    """One dead link of a digest, with the best suggestion when there is one."""

    url: str
    verdict: str = "dead"
    confirmed: bool = False
    pages: list[str] = field(default_factory=list)  # where it is linked from
    suggestion: str | None = None
    suggestion_title: str = ""
    confidence: float = 0.0
    kind: str = ""


@dataclass
class DriftView:
    """A watched link that works but whose page changed."""

    url: str
    similarity: float
    archived_title: str
    live_title: str
    memento_url: str
    memento_date: str  # YYYY-MM-DD


@dataclass
class DigestView:
    channel: str
    period: str
    targets: list[str] = field(default_factory=list)
    checked: int = 0
    suspect: int = 0  # failing, not yet confirmed dead (IABot: repeated failures over days)
    confirmed_dead: int = 0
    fixed: int = 0
    flapping: int = 0
    dead: list[DeadLinkView] = field(default_factory=list)
    drifted: list[DriftView] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # watches whose scan failed
    # Save Page Now's answers to the scans' capture requests, per status and named outcome
    # (summed over the watches; ScanDigest.captures), as the Markdown and JSON digests have.
    captures: dict[str, int] = field(default_factory=dict)


DIGEST_TOP = 5  # dead links shown in the main message; the thread has them all
THREAD_LINKS_PER_MESSAGE = 20


def digest_counts_line(view: DigestView) -> str:
    return (f"*{view.checked}* links checked · *{view.suspect}* suspect · "
            f"*{view.confirmed_dead}* confirmed dead · *{view.fixed}* fixed · "
            f"*{view.flapping}* flapping · *{len(view.drifted)}* content changed")


def drift_item_text(item: DriftView) -> str:
    lines = [f"{link(item.url, item.url, 200)} — works, but only {percent(item.similarity)} "
             "like the page that was linked"]
    if item.archived_title or item.live_title:
        lines.append(f"was “{escape(clip(item.archived_title, 100))}”, now "
                     f"“{escape(clip(item.live_title, 100))}”")
    lines.append(f"→ link the {link(item.memento_url, 'copy archived ' + item.memento_date)} "
                 "instead")
    return "\n".join(lines)


def dead_link_text(item: DeadLinkView) -> str:
    state = "confirmed dead" if item.confirmed else VERDICT_WORDS.get(item.verdict, item.verdict)
    lines = [f"{link(item.url, item.url, 200)} — {escape(state)}"]
    if item.pages:
        lines.append("on " + ", ".join(link(p, p, 100) for p in item.pages[:3]))
    if item.suggestion:
        kind = f"{escape(item.kind)}, " if item.kind else ""
        lines.append(f"→ {link(item.suggestion, item.suggestion_title or item.suggestion)} "
                     f"({kind}{percent(item.confidence)})")
    else:
        lines.append("→ no suggestion yet")
    return "\n".join(lines)


def dead_link_blocks(item: DeadLinkView, number: int) -> list[Block | None]:
    accessory = None
    if item.suggestion:
        accessory = button("Use this", ACTION_PICK, pick_value(item.url, item.suggestion),
                           style="primary")
    return [section(dead_link_text(item), accessory=accessory, block_id=f"dead-{number}")]


def digest_blocks(view: DigestView) -> dict[str, Any]:
    """The one digest message: counts, the top dead links with Use-this buttons."""
    watched = ", ".join(link(t, t, 80) for t in view.targets[:5])
    if len(view.targets) > 5:
        watched += f" and {len(view.targets) - 5} more"
    blocks: list[Block | None] = [
        header(f"Link-rot digest — {view.period}"),
        section(digest_counts_line(view)),
    ]
    if watched:
        blocks.append(context(f"Watching {watched}"))
    if view.dead:
        blocks.append(divider())
        for number, item in enumerate(view.dead[:DIGEST_TOP], start=1):
            blocks.extend(dead_link_blocks(item, number))
        blocks.append(context(f"Full list of {len(view.dead)} dead links in the thread."))
    else:
        blocks.append(section("No dead links this week. :tada:"))
    if view.drifted:
        blocks.append(divider())
        blocks.append(section("*Content changed* — these links work, but the page is no "
                              "longer what was linked:"))
        for number, item in enumerate(view.drifted[:DIGEST_TOP], start=1):
            blocks.append(section(drift_item_text(item), block_id=f"drift-{number}"))
        if len(view.drifted) > DIGEST_TOP:
            blocks.append(context(f"All {len(view.drifted)} changed pages in the thread."))
    if view.captures:
        blocks.append(context("Save Page Now: "
                              + escape(clip(digest_captures_text(view.captures), 1500)) + "."))
    if view.errors:
        blocks.append(context("Scan failed: " + escape(clip("; ".join(view.errors), 1500))))
    text = (f"Link-rot digest {view.period}: {view.checked} checked, {view.suspect} "
            f"suspect, {view.confirmed_dead} confirmed dead, {view.fixed} fixed")
    return message(blocks, text)


def digest_thread_pages(view: DigestView,
                        per_message: int = THREAD_LINKS_PER_MESSAGE) -> list[dict[str, Any]]:
    """The full list for the thread, split into messages well inside Slack's limits."""
    pages: list[dict[str, Any]] = []
    total = len(view.dead)
    for start in range(0, total, per_message):
        chunk = view.dead[start: start + per_message]
        blocks: list[Block | None] = [
            context(f"Dead links {start + 1}–{start + len(chunk)} of {total}")]
        for number, item in enumerate(chunk, start=start + 1):
            blocks.extend(dead_link_blocks(item, number))
        pages.append(message(blocks, f"Dead links {start + 1}–{start + len(chunk)} of {total}"))
    total = len(view.drifted)
    for start in range(0, total if total > DIGEST_TOP else 0, per_message):
        chunk = view.drifted[start: start + per_message]
        label = f"Changed pages {start + 1}–{start + len(chunk)} of {total}"
        blocks = [context(label)]
        blocks += [section(drift_item_text(item)) for item in chunk]
        pages.append(message(blocks, label))
    return pages


# ------------------------------------------------------------------------- validation


def _text_problems(where: str, obj: Any, limit: int, kinds: tuple[str, ...]) -> list[str]:
    if not isinstance(obj, dict) or obj.get("type") not in kinds:
        return [f"{where}: text object of type {kinds} expected"]
    text = obj.get("text")
    if not isinstance(text, str) or not text:
        return [f"{where}: empty text"]
    return [f"{where}: text of {len(text)} chars > {limit}"] if len(text) > limit else []


def _element_problems(where: str, element: Any) -> list[str]:
    if not isinstance(element, dict):
        return [f"{where}: not an object"]
    problems: list[str] = []
    if element.get("type") == "button":
        problems += _text_problems(f"{where}.text", element.get("text"), BUTTON_TEXT,
                                   ("plain_text",))
        if len(str(element.get("value", ""))) > BUTTON_VALUE:
            problems.append(f"{where}: value > {BUTTON_VALUE} chars")
        if len(str(element.get("url", ""))) > BUTTON_URL:
            problems.append(f"{where}: url > {BUTTON_URL} chars")
        action_id = str(element.get("action_id", ""))
        if not action_id or len(action_id) > ID_LENGTH:
            problems.append(f"{where}: action_id missing or > {ID_LENGTH} chars")
    return problems


def validate_blocks(blocks: Any) -> list[str]:
    """Every Block Kit limit these blocks break (empty when they are fine)."""
    if not isinstance(blocks, list):
        return ["blocks: not a list"]
    problems: list[str] = []
    if len(blocks) > MAX_BLOCKS:
        problems.append(f"{len(blocks)} blocks > {MAX_BLOCKS}")
    block_ids: set[str] = set()
    for i, block in enumerate(blocks):
        where = f"blocks[{i}]"
        if not isinstance(block, dict):
            problems.append(f"{where}: not an object")
            continue
        block_id = block.get("block_id")
        if block_id is not None:
            if len(block_id) > ID_LENGTH:
                problems.append(f"{where}: block_id > {ID_LENGTH}")
            if block_id in block_ids:
                problems.append(f"{where}: duplicate block_id {block_id!r}")
            block_ids.add(block_id)
        kind = block.get("type")
        if kind == "header":
            problems += _text_problems(where, block.get("text"), HEADER_TEXT, ("plain_text",))
        elif kind == "section":
            if "text" not in block and "fields" not in block:
                problems.append(f"{where}: section without text or fields")
            if "text" in block:
                problems += _text_problems(where, block["text"], SECTION_TEXT,
                                           ("mrkdwn", "plain_text"))
            fields = block.get("fields", [])
            if len(fields) > MAX_FIELDS:
                problems.append(f"{where}: {len(fields)} fields > {MAX_FIELDS}")
            for j, f in enumerate(fields):
                problems += _text_problems(f"{where}.fields[{j}]", f, FIELD_TEXT,
                                           ("mrkdwn", "plain_text"))
            if "accessory" in block:
                problems += _element_problems(f"{where}.accessory", block["accessory"])
        elif kind == "context":
            elements = block.get("elements", [])
            if not elements or len(elements) > CONTEXT_ELEMENTS:
                problems.append(f"{where}: {len(elements)} context elements (1–{CONTEXT_ELEMENTS})")
            for j, e in enumerate(elements):
                problems += _text_problems(f"{where}.elements[{j}]", e, CONTEXT_TEXT,
                                           ("mrkdwn", "plain_text"))
        elif kind == "actions":
            elements = block.get("elements", [])
            if not elements or len(elements) > ACTIONS_ELEMENTS:
                problems.append(f"{where}: {len(elements)} action elements (1–{ACTIONS_ELEMENTS})")
            ids = [e.get("action_id") for e in elements if isinstance(e, dict)]
            if len(ids) != len(set(ids)):
                problems.append(f"{where}: duplicate action_id in one block")
            for j, e in enumerate(elements):
                problems += _element_problems(f"{where}.elements[{j}]", e)
        elif kind != "divider":
            problems.append(f"{where}: unexpected block type {kind!r}")
    return problems


def validate_message(payload: dict[str, Any]) -> None:
    """Raise BlockLimitError naming every problem of a message payload."""
    problems = validate_blocks(payload.get("blocks", []))
    text = payload.get("text", "")
    if len(text) > MESSAGE_TEXT:
        problems.append(f"text of {len(text)} chars > {MESSAGE_TEXT}")
    if problems:
        raise BlockLimitError("; ".join(problems[:20]))

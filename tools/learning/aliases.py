"""Site-level alias inference (design step 7 "Learn"; FABLE, IMC 2023).

When a site reorganises, its dead URLs move by a pattern. From known moves on the same site
(old URL → new URL, with the archived title of the old page when known) we learn *templates*
that rebuild the new URL from parts of the old one — path segments by position (from the
start or the end), a variable-length tail of the path, query values, the title — each part
optionally restyled (extension kept/dropped/changed, leading number dropped, separators
mapped, lower-cased, zero-padded), the rest constant. Every consistent explanation of every
move is a candidate rule; a rule's *support* is the number of known moves it reproduces
exactly, its *applicable* count the number it produces any URL for (the difference are
counter-examples). A dead URL gets the outputs of the rules as proposals, ranked by rule
quality; we abstain when the best rule is weak or a competing proposal is nearly as good.
The new query may also be built from old path segments (/list/2009/02 → ?month=2009-02).

Rules are judged against the moves of the dead URL's own folder first (date and numeric
folders count as one name), then wider. As in FABLE, the folder is the unit: a simple rule
that one move of the same folder supports and none contradicts is trusted — also at cost two
when it is *structural* (renamed folders, a new host with a folder prefix: one layout decision
of the site's) or when two of the folder's moves reproduce it; elsewhere a rule needs more
support. The thresholds keep precision ≥ 0.9 on FABLE's 4,680 real-world aliases
(leave-one-out; the dev set — the 500 ground-truth URLs are the test set); see
`alias_eval.sweep_thresholds`.

Pure functions, except `verify_proposals`, which fetches the proposals.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import parse_qsl, urlsplit

from pagetrail.tools.net.urls import normalize_url, site_of

if TYPE_CHECKING:  # pragma: no cover
    from pagetrail.tools.net.fetch import Fetcher, Response

# Explanations per move are enumerated as a product of per-position alternatives; these caps
# keep a long path from exploding while keeping the preferred alternatives.
MAX_ALTERNATIVES_PER_SEGMENT = 6
MAX_TEMPLATES_PER_MOVE = 96

DEFAULT_MIN_SUPPORT = 1
DEFAULT_MIN_QUALITY = 0.67
DEFAULT_MARGIN = 0.1
DEFAULT_FOLDER_MIN_QUALITY = 0.5
DEFAULT_FOLDER_MAX_COMPLEXITY = 1
DEFAULT_STRUCTURAL_MAX_COMPLEXITY = 2
DEFAULT_REPEATED_MIN_SUPPORT = 2

_EXT = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,4}$")
_LEAD_NUMBER = re.compile(r"^\d+[-_]+")
_APOSTROPHES = re.compile(r"['\u2019]")
_NON_WORD = re.compile(r"[\W_]+")
_TITLE_SEPARATORS = (" | ", " - ", " \u2013 ", " \u2014 ", " :: ", " \u00bb ", ": ")


# ---------------------------------------------------------------------------------------------
# URL parts

@dataclass(frozen=True)
class KnownMove:
    """Evidence that `old_url` now lives at `new_url` (title: the old page's archived title)."""

    old_url: str
    new_url: str
    title: str | None = None
    source: str = ""


@dataclass(frozen=True)
class UrlParts:
    scheme: str
    host: str
    segments: tuple[str, ...]
    query: str
    query_values: tuple[tuple[str, str], ...]
    slash: bool
    titles: tuple[str, ...]


def title_variants(title: str | None) -> tuple[str, ...]:
    """The title, and the title with a trailing " | Site name"-style part cut off."""
    if not title or not title.strip():
        return ()
    full = " ".join(title.split())
    variants = [full]
    for sep in _TITLE_SEPARATORS:
        if sep in full:
            head = full.split(sep, 1)[0].strip()
            if head and head not in variants:
                variants.append(head)
            break
    return tuple(variants)


def parse_parts(url: str, title: str | None = None) -> UrlParts:
    parts = urlsplit(url.strip())
    path = parts.path or "/"
    segments = tuple(s for s in path.split("/") if s)
    return UrlParts(
        scheme=(parts.scheme or "http").lower(),
        host=(parts.hostname or "").lower(),
        segments=segments,
        query=parts.query,
        query_values=tuple(parse_qsl(parts.query, keep_blank_values=False)),
        slash=path.endswith("/") and bool(segments),
        titles=title_variants(title),
    )


# ---------------------------------------------------------------------------------------------
# Styles: how a part of the old URL is rewritten

class Style(NamedTuple):
    ext: str = "keep"        # "keep" | "strip" | a replacement extension such as ".html"
    strip_lead_number: bool = False
    sep: str | None = None   # None: keep separators; else every run of non-word chars → sep
    lower: bool = False
    zpad: int = 0            # numbers zero-padded to this width

    def ops(self) -> int:
        return ((self.ext != "keep") + self.strip_lead_number + (self.sep is not None)
                + self.lower + (self.zpad > 0))

    def describe(self) -> str:
        bits = []
        if self.ext == "strip":
            bits.append("no-ext")
        elif self.ext != "keep":
            bits.append(f"ext={self.ext}")
        if self.strip_lead_number:
            bits.append("no-lead-number")
        if self.sep is not None:
            bits.append(f"sep={self.sep!r}")
        if self.lower:
            bits.append("lower")
        if self.zpad:
            bits.append(f"zpad={self.zpad}")
        return ",".join(bits)


IDENTITY = Style()


def render(text: str, style: Style, *, is_title: bool = False) -> str:
    if style.zpad:
        return text.zfill(style.zpad) if text.isdigit() else ""
    if is_title:
        base, ext = text, ""
    else:
        match = _EXT.search(text)
        base, ext = (text[: match.start()], match.group()) if match else (text, "")
    if style.ext == "strip":
        ext = ""
    elif style.ext != "keep":
        ext = style.ext
    if style.strip_lead_number:
        base = _LEAD_NUMBER.sub("", base, count=1)
    if style.sep is not None:
        base = _NON_WORD.sub(style.sep, _APOSTROPHES.sub("", base)).strip(style.sep)
    if style.lower:
        base = base.lower()
    return base + ext


def render_tail(segments: Sequence[str], style: Style) -> list[str]:
    """A tail of the path restyled: an extension change concerns the last segment only
    (/2012/05/09/slug → /2012/05/09/slug.html), the other restylings every segment."""
    folders = style._replace(ext="keep")
    return [render(s, style if i == len(segments) - 1 else folders)
            for i, s in enumerate(segments)]


def _style_grid(target: str) -> list[Style]:
    match = _EXT.search(target)
    exts = ["keep", "strip"] + ([match.group().lower()] if match else [])
    base = target[: match.start()] if match else target
    seps: list[str | None] = [None, "-"]
    seps += sorted({c for c in base if not c.isalnum() and c not in "-%"})
    return [Style(e, n, s, lo) for e in exts for n in (False, True) for s in seps
            for lo in (False, True)]


def matching_styles(sources: Sequence[str], targets: Sequence[str], *,
                    is_title: bool = False, tail: bool = False) -> list[Style]:
    """The simplest and the most normalising style that map each source to its target
    (`tail`: the sources are consecutive path segments, restyled by `render_tail`)."""
    if len(sources) == len(targets) == 1 and sources[0].isdigit() and targets[0].isdigit():
        s, t = sources[0], targets[0]
        if s != t and int(s) == int(t) and len(t) > len(s):
            return [Style(zpad=len(t))]
    if tail:
        found = [st for st in _style_grid(targets[-1])
                 if render_tail(sources, st) == list(targets)]
    else:
        found = [st for st in _style_grid(targets[-1])
                 if all(render(s, st, is_title=is_title) == t
                        for s, t in zip(sources, targets, strict=True))]
    if not found:
        return []
    simplest = min(found, key=Style.ops)
    widest = max(found, key=Style.ops)
    return [simplest] if simplest == widest else [simplest, widest]


# ---------------------------------------------------------------------------------------------
# Templates

class Piece(NamedTuple):
    kind: str          # const | seg | tail | query | title | map | wrap
    # text, segment index (negative: from the end), query key, title variant, or for "map"
    # (index, old value, new value): this old segment value becomes that new one, or for
    # "wrap" (index, before, after): the old segment, restyled, inside constant text
    # (/a/my-story → /a/view;id=my-story)
    ref: str | int | tuple[int, str, str]
    style: Style = IDENTITY


class Template(NamedTuple):
    scheme: str
    host: tuple[str | int, ...]    # ("same",) | ("const", host) | ("seg", index, suffix)
    path: tuple[Piece, ...]
    # ("same",) | ("const", query) | ("path", ((key, start, end, joiner, style), ...)): each
    # value the old path segments [start:end] (negative: from the end) joined and restyled —
    # /2009/02 → ?ym=2009-02, /news/my-story.html → ?p=my-story
    query: tuple[object, ...]
    slash: bool

    def describe(self) -> str:
        if self.host[0] == "same":
            host = "host"
        elif self.host[0] == "const":
            host = str(self.host[1])
        else:
            host = f"seg[{self.host[1]}]{self.host[2]}"
        pieces = []
        for p in self.path:
            label = p.ref if p.kind == "const" else f"{p.kind}[{p.ref}]"
            if p.kind == "map":
                index, old_value, new_value = p.ref  # type: ignore[misc]
                label = f"seg[{index}]:{old_value}->{new_value}"
            if p.kind == "tail":
                label = f"seg[{p.ref}:]"
            if p.kind == "wrap":
                index, before, after = p.ref  # type: ignore[misc]
                label = f"{before}{{seg[{index}]}}{after}"
            style = p.style.describe()
            pieces.append(f"{label}{'{' + style + '}' if style else ''}")
        if self.query[0] == "same":
            query = "?query"
        elif self.query[0] == "path":
            query = "?" + "&".join(
                f"{key}=seg[{a}:{b or ''}]{{join={joiner!r}{',' + st.describe() if st.ops() else ''}}}"
                for key, a, b, joiner, st in self.query[1])  # type: ignore[union-attr]
        else:
            query = f"?{self.query[1]}" if self.query[1] else ""
        return f"{host}/{'/'.join(map(str, pieces))}{'/' if self.slash else ''}{query}"


class Applied(NamedTuple):
    url: str
    uses_identity: bool   # built from the old URL's own last segment, query or title


def _resolve_index(index: int, length: int) -> int | None:
    resolved = index if index >= 0 else length + index
    return resolved if 0 <= resolved < length else None


def apply_template(t: Template, old: UrlParts) -> Applied | None:
    """Rebuild a URL from `old` by `t`; None when `old` lacks a part `t` needs."""
    segs = old.segments
    if t.host[0] == "same":
        host = old.host
    elif t.host[0] == "const":
        host = str(t.host[1])
    else:
        at = _resolve_index(int(t.host[1]), len(segs))
        if at is None:
            return None
        host = segs[at].lower() + str(t.host[2])
    last = len(segs) - 1
    identity = False
    out: list[str] = []
    for piece in t.path:
        if piece.kind == "const":
            out.append(str(piece.ref))
            continue
        if piece.kind == "map":
            index, old_value, new_value = piece.ref  # type: ignore[misc]
            at = _resolve_index(index, len(segs))
            if at is None or segs[at] != old_value:
                return None
            out.append(new_value)
            continue
        if piece.kind == "wrap":
            index, before, after = piece.ref  # type: ignore[misc]
            at = _resolve_index(index, len(segs))
            inner = render(segs[at], piece.style) if at is not None else ""
            if not inner:
                return None
            out.append(f"{before}{inner}{after}")
            identity = identity or at == last
            continue
        if piece.kind == "seg":
            at = _resolve_index(int(piece.ref), len(segs))
            if at is None:
                return None
            value = render(segs[at], piece.style)
            identity = identity or at == last
            values = [value]
        elif piece.kind == "tail":
            start = int(piece.ref)
            if start > last:
                return None
            values = render_tail(segs[start:], piece.style)
            identity = True
        elif piece.kind == "query":
            raw = dict(old.query_values).get(str(piece.ref))
            if not raw:
                return None
            values = [render(raw, piece.style, is_title=True)]
            identity = True
        else:  # title
            variant = int(piece.ref)
            if variant >= len(old.titles):
                return None
            values = [render(old.titles[variant], piece.style, is_title=True)]
            identity = True
        if any(not v for v in values):
            return None
        out.extend(values)
    if t.query[0] == "same":
        query = old.query
        identity = identity or bool(old.query)
    elif t.query[0] == "path":
        pairs = []
        for key, start, end, joiner, style in t.query[1]:  # type: ignore[union-attr]
            values = _segment_run(segs, start, end)
            if values is None:
                return None
            value = render(joiner.join(values), style)
            if not value:
                return None
            pairs.append(f"{key}={value}")
            identity = True
        query = "&".join(pairs)
    else:
        query = str(t.query[1])
    path = "/" + "/".join(out) + ("/" if t.slash and out else "")
    return Applied(f"{t.scheme}://{host}{path}{'?' + query if query else ''}", identity)


def _segment_run(segments: Sequence[str], start: int, end: int) -> list[str] | None:
    """segments[start:end] (end 0: to the last), None when the path is too short for it."""
    n = len(segments)
    lo = start if start >= 0 else n + start
    hi = n if end == 0 else (end if end > 0 else n + end)
    return list(segments[lo:hi]) if 0 <= lo < hi <= n else None


MAX_QUERY_RUN = 3
_QUERY_JOINERS = ("-", "/", "_", "")
_QUERY_STYLES = (IDENTITY, Style(ext="strip"))


def _query_from_path(new: UrlParts, old: UrlParts) -> list[tuple[object, ...]]:
    """Ways to build the whole new query from runs of old path segments (path → query):
    /archive/list/2009/02 → ?publish_at_year_month=2009-02, /0521772893/ → ?isbn=0521772893."""
    if not new.query_values or not old.segments:
        return []
    n = len(old.segments)
    per_key: list[list[tuple[str, int, int, str, Style]]] = []
    for key, value in new.query_values:
        found = []
        for length in range(1, min(MAX_QUERY_RUN, n) + 1):
            for lo in range(n - length + 1):
                run = old.segments[lo:lo + length]
                for joiner in _QUERY_JOINERS[: 1 if length == 1 else None]:
                    # the run as it is, or without its file extension (a page's name
                    # moved into a query: /news/my-story.html → article.php?p=my-story)
                    style = next((st for st in _QUERY_STYLES
                                  if render(joiner.join(run), st) == value), None)
                    if style is not None:
                        hi = lo + length
                        # Anchored at the end when the run ends the path, else at the start.
                        found.append((key, lo - n, 0, joiner, style) if hi == n
                                     else (key, lo, hi, joiner, style))
        if not found:
            return []
        per_key.append(found[:2])
    return [("path", combo) for combo in itertools.islice(itertools.product(*per_key), 4)]


def _segment_alternatives(target: str, position: int, new_length: int,
                          old: UrlParts) -> list[Piece]:
    """Ways to produce one new path segment from the old URL, preferred first."""
    exact: list[Piece] = []
    styled: list[Piece] = []
    n = len(old.segments)
    for i, seg in enumerate(old.segments):
        for style in matching_styles([seg], [target]):
            bucket = exact if style == IDENTITY else styled
            bucket.extend([Piece("seg", i - n, style), Piece("seg", i, style)])
    for key, value in old.query_values:
        for style in matching_styles([value], [target], is_title=True):
            styled.append(Piece("query", key, style))
    for variant, title in enumerate(old.titles):
        for style in matching_styles([title], [target], is_title=True):
            styled.append(Piece("title", variant, style))
    # A renamed folder: the old segment at the same place (from the start or the end) maps
    # to this value — learned as a dictionary entry, applied only where the old value recurs.
    mapped = []
    for index in (position, position - new_length):
        at = _resolve_index(index, n)
        if at is not None and old.segments[at] != target:
            mapped.append(Piece("map", (at if index >= 0 else at - n, old.segments[at], target)))
    refs = list(dict.fromkeys(exact + styled))[: MAX_ALTERNATIVES_PER_SEGMENT - 1]
    return [*refs, *_wrapped(target, old)[:2], Piece("const", target), *dict.fromkeys(mapped)]


MIN_WRAPPED_CHARS = 4  # an old segment shorter than this inside a new one is a coincidence


def _wrapped(target: str, old: UrlParts) -> list[Piece]:
    """The old last segments (as they are, or without their extension) inside constant text
    of a new segment: /a/my-story.html → /a/view;id=my-story or /a/read-my-story. The shape
    is not named: whatever surrounds the old name is learned as constants, and a rule holds
    only where the site's other moves reproduce it."""
    n = len(old.segments)
    out: list[Piece] = []
    for i in range(n - 1, -1, -1):
        for style in (IDENTITY, Style(ext="strip")):
            inner = render(old.segments[i], style)
            if len(inner) < MIN_WRAPPED_CHARS or inner == target or inner not in target:
                continue
            before, _, after = target.partition(inner)
            out.append(Piece("wrap", (i - n, before, after), style))
    return list(dict.fromkeys(out))


def _tail_alternatives(targets: Sequence[str], old: UrlParts) -> list[Piece]:
    """Ways to produce the rest of the new path (≥ 2 segments) as a tail of the old path."""
    start = len(old.segments) - len(targets)
    if len(targets) < 2 or start < 0:
        return []
    styles = matching_styles(old.segments[start:], targets, tail=True)
    return [Piece("tail", start, style) for style in styles]


def _path_explanations(new: Sequence[str], old: UrlParts) -> list[tuple[Piece, ...]]:
    per_segment = [_segment_alternatives(s, k, len(new), old) for k, s in enumerate(new)]
    found: list[tuple[Piece, ...]] = []
    for k in range(len(new)):  # a fixed prefix then a variable tail
        for tail in _tail_alternatives(new[k:], old):
            for prefix in itertools.islice(itertools.product(*per_segment[:k]), 8):
                found.append((*prefix, tail))
    budget = max(MAX_TEMPLATES_PER_MOVE - len(found), 1)
    found.extend(itertools.islice(itertools.product(*per_segment), budget))
    return list(dict.fromkeys(found))


def _host_alternatives(new_host: str, old: UrlParts) -> list[tuple[str | int, ...]]:
    options: list[tuple[str | int, ...]] = []
    if site_of("http://" + new_host) == site_of("http://" + old.host):
        options.append(("same",))
    for i, seg in enumerate(old.segments):
        if new_host.startswith(seg.lower() + ".") and len(seg) > 1:
            options.append(("seg", i, new_host[len(seg):]))
    options.append(("const", new_host))
    return options


def explain_move(move: KnownMove) -> list[Template]:
    """Every template (up to the caps) that rebuilds `move.new_url` from `move.old_url`."""
    old = parse_parts(move.old_url, move.title)
    new = parse_parts(move.new_url)
    if not old.host or not new.host:
        return []
    queries: list[tuple[object, ...]] = [("const", new.query), *_query_from_path(new, old)]
    if old.query and old.query == new.query:
        queries.insert(0, ("same",))
    templates = [
        Template(new.scheme, host, path, query, new.slash)
        for path in _path_explanations(new.segments, old)
        for host in _host_alternatives(new.host, old)
        for query in queries
    ]
    return list(dict.fromkeys(templates))


# ---------------------------------------------------------------------------------------------
# Learning and proposing

@dataclass
class Rule:
    template: Template
    generators: set[int] = field(default_factory=set)   # moves it was learned from
    reproduced: set[int] = field(default_factory=set)   # moves it rebuilds exactly
    applicable: set[int] = field(default_factory=set)   # moves it produces any URL for


@dataclass
class RuleBook:
    """Rules learned from a list of moves, with per-move bookkeeping for leave-one-out."""

    moves: list[KnownMove]
    rules: list[Rule]


def learn_rules(moves: Sequence[KnownMove]) -> RuleBook:
    """Explain every move, then test every rule against every move."""
    by_template: dict[Template, Rule] = {}
    for index, move in enumerate(moves):
        for template in explain_move(move):
            by_template.setdefault(template, Rule(template)).generators.add(index)
    olds = [parse_parts(m.old_url, m.title) for m in moves]
    targets = [normalize_url(m.new_url) for m in moves]
    for rule in by_template.values():
        for index, old in enumerate(olds):
            applied = apply_template(rule.template, old)
            if applied is None:
                continue
            rule.applicable.add(index)
            if normalize_url(applied.url) == targets[index]:
                rule.reproduced.add(index)
    return RuleBook(list(moves), list(by_template.values()))


@dataclass(frozen=True)
class Proposal:
    url: str
    rule: str
    support: int          # known moves (in scope) the best rule behind this URL reproduces
    applicable: int       # known moves (in scope) that rule applies to: support + counter-examples
    quality: float        # support / (applicable + 1): a Laplace-smoothed precision
    complexity: int       # constants and restylings in that rule (lower: more general)
    scope: int            # leading path segments the scope's moves share with the dead URL
    confident: bool = False
    method: str = "INFER"
    votes: int = 0        # known moves (in scope) reproduced by *any* rule giving this URL
    structural: bool = False  # the rule only renames folders or rewrites a prefix (see
    #                           `structural`): no restyling, no constant inside the path


@dataclass(frozen=True)
class Thresholds:
    """When the top proposal is trusted without fetching it."""

    min_support: int = DEFAULT_MIN_SUPPORT
    min_quality: float = DEFAULT_MIN_QUALITY
    margin: float = DEFAULT_MARGIN
    # FABLE's unit of inference is the directory: an unrefuted, simple rule learned from
    # moves in the dead URL's own folder is trusted with less support than a site-wide one.
    folder_min_quality: float = DEFAULT_FOLDER_MIN_QUALITY
    folder_max_complexity: int = DEFAULT_FOLDER_MAX_COMPLEXITY
    # ...and up to this complexity when the rule is structural (a renamed folder, a new host
    # with a folder prefix: one decision of the site's, not a per-page restyling), or when
    # at least `repeated_min_support` moves of the folder reproduce it and none contradicts.
    structural_max_complexity: int = DEFAULT_STRUCTURAL_MAX_COMPLEXITY
    repeated_min_support: int = DEFAULT_REPEATED_MIN_SUPPORT


DEFAULT_THRESHOLDS = Thresholds()


@dataclass(frozen=True)
class Inference:
    url: str
    proposals: list[Proposal]
    reason: str

    @property
    def best(self) -> Proposal | None:
        return self.proposals[0] if self.proposals and self.proposals[0].confident else None


def complexity(t: Template) -> int:
    """Occam: a constant costs 2, a learned folder rename 1, each restyling 1."""
    cost = sum(p.style.ops() for p in t.path)
    cost += sum(2 if p.kind in ("const", "wrap") else 1 if p.kind == "map" else 0 for p in t.path)
    if t.query[0] == "path":
        cost += sum(style.ops() for *_run, style in t.query[1])  # type: ignore[union-attr]
    return cost + (t.query[0] == "const" and bool(t.query[1]))


def depth_free(t: Template) -> bool:
    """True when `t` means the same on paths of any depth: it replaces a leading part of the
    path (constants, renamed leading folders) and keeps the whole rest — a prefix rewrite,
    which a move one folder deeper tests as well. (Keeping only the last segment is not:
    /2016/07/slug/amp is not /2016/07/slug.)"""
    if any(p.kind == "map" and p.ref[0] < 0 for p in t.path):  # type: ignore[index]
        return False
    variable = [p for p in t.path if p.kind not in ("const", "map")]
    return len(variable) == 1 and variable[0] is t.path[-1] and variable[0].kind == "tail"


def structural(t: Template) -> bool:
    """True when `t` changes the site's layout only: it renames folders (learned dictionary
    entries, applied only where the old name recurs) and/or puts a constant prefix before the
    kept rest of the path (/2009/12/x.html → /blog/2009/12/x.html), keeping every other part
    unchanged — no restyling, no constant inside the path, no constant or rebuilt query.
    Such a rule is one decision of the site's, so one or two unrefuted moves of the folder
    vouch for it even when it costs two (two renamed folders, host + prefix)."""
    if t.query[0] == "path" or (t.query[0] == "const" and t.query[1]):
        return False
    if any(p.style != IDENTITY or p.kind in ("query", "title", "wrap") for p in t.path):
        return False
    return depth_free(t) if any(p.kind == "const" for p in t.path) else True


def _shape(parts: UrlParts) -> tuple[int, tuple[str, ...]]:
    return len(parts.segments), tuple(sorted({k for k, _ in parts.query_values}))


def _same_folder_name(a: str, b: str) -> bool:
    # Date folders (2014/06/12) and numeric ids (article/1381193055/slug) vary from page to
    # page: for "the same folder" they count as one name.
    return a == b or (a.isdigit() and b.isdigit())


def _shared_prefix(a: Sequence[str], b: Sequence[str]) -> int:
    n = 0
    while n < min(len(a), len(b)) and _same_folder_name(a[n], b[n]):
        n += 1
    return n


Ranking = list[list[Proposal]]  # one ranked list per scope, the most specific scope first


def rank_proposals(book: RuleBook, dead_url: str, *, title: str | None = None,
                   exclude: Iterable[int] = ()) -> Ranking:
    """Apply the learned rules to `dead_url`; moves in `exclude` are ignored (leave-one-out).

    Rules are judged within scopes, as FABLE judges within a directory: first against the
    moves sharing the most leading path segments with `dead_url`, then wider, up to the site.
    Each scope gives one proposal per distinct URL (its best rule), best first.
    """
    excluded = set(exclude)
    old = parse_parts(dead_url, title)
    dead_norm = normalize_url(dead_url)
    # Only moves of the same shape (path depth, query keys) vouch for a rule here: a rule
    # seen to work on /y/m/slug says nothing about /y/m/slug/amp or /page?id=3.
    # A depth-free rule (see `depth_free`) is also vouched for by moves of other depths.
    shape = _shape(old)
    shared = []
    shared_any_depth = []
    for move in book.moves:
        parts = parse_parts(move.old_url)
        prefix = _shared_prefix(old.segments, parts.segments)
        shared.append(prefix if _shape(parts) == shape else -1)
        shared_any_depth.append(prefix if _shape(parts)[1] == shape[1] else -1)
    outputs: list[tuple[Rule, str, str]] = []
    for rule in book.rules:
        if not rule.generators - excluded or not rule.reproduced - excluded:
            continue
        applied = apply_template(rule.template, old)
        if applied is None or not applied.uses_identity:
            continue
        key = normalize_url(applied.url)
        if key != dead_norm:
            outputs.append((rule, applied.url, key))
    levels = sorted({k for i, k in enumerate(shared_any_depth) if i not in excluded and k >= 0},
                    reverse=True)
    ranking: Ranking = []
    for level in levels:
        same_depth = {i for i, k in enumerate(shared) if k >= level} - excluded
        # ...but only inside a shared folder: site-wide, a prefix rewrite seen in one folder
        # says little about another (yale.edu/<any dept>/… is not all teachersinstitute).
        any_depth = ({i for i, k in enumerate(shared_any_depth) if k >= level} - excluded
                     if level > 0 else same_depth)
        best: dict[str, tuple[tuple[float, int, int], Rule, str, int]] = {}
        agreeing: dict[str, set[int]] = {}
        for rule, url, key in outputs:
            scope = any_depth if depth_free(rule.template) else same_depth
            support = len(rule.reproduced & scope)
            if not support:
                continue
            agreeing.setdefault(key, set()).update(rule.reproduced & scope)
            applicable = len(rule.applicable & scope)
            rank = (support / (applicable + 1), -complexity(rule.template), support)
            if key not in best or rank > best[key][0]:
                best[key] = (rank, rule, url, applicable)
        ordered = sorted(best.values(), key=lambda v: (-v[0][0], -v[0][1], -v[0][2], v[2]))
        if ordered:
            ranking.append([
                Proposal(url, rule.template.describe(), support, applicable, round(quality, 4),
                         -neg_cost, level, votes=len(agreeing[normalize_url(url)]),
                         structural=structural(rule.template))
                for (quality, neg_cost, support), rule, url, applicable in ordered[:10]
            ])
    return ranking


def _min_quality(top: Proposal, folder_depth: int, thresholds: Thresholds) -> float:
    """The quality bar for `top`: lower when its evidence lies in the dead URL's own folder,
    no move there contradicts it, and it is simple (few constants or restylings) — or a
    little less simple but structural, or reproduced by several of the folder's moves."""
    if top.scope < folder_depth or top.applicable != top.support:
        return thresholds.min_quality
    if (top.complexity <= thresholds.folder_max_complexity
            or (top.complexity <= thresholds.structural_max_complexity
                and (top.structural or top.support >= thresholds.repeated_min_support))):
        return min(thresholds.min_quality, thresholds.folder_min_quality)
    return thresholds.min_quality


def _decide_scope(ranked: list[Proposal], thresholds: Thresholds, folder_depth: int) -> str:
    top = ranked[0]
    # A rival counts only if it is at least as general: a more complex rule that does about
    # as well is an over-fit explanation, not a disagreement.
    rivals = [p.quality for p in ranked[1:] if p.complexity <= top.complexity]
    runner_up = max(rivals, default=0.0)
    if top.support < thresholds.min_support:
        return f"best rule reproduces {top.support} move(s) < {thresholds.min_support}"
    min_quality = _min_quality(top, folder_depth, thresholds)
    if top.quality < min_quality:
        return f"best rule quality {top.quality:.2f} < {min_quality}"
    if top.quality - runner_up < thresholds.margin:
        return f"rules disagree ({top.quality:.2f} vs {runner_up:.2f})"
    return "confident"


def decide(dead_url: str, ranking: Ranking, thresholds: Thresholds = DEFAULT_THRESHOLDS,
           limit: int = 5) -> Inference:
    """Walk the scopes from the most specific: the first confident top proposal wins, unless
    a more specific scope preferred another URL (then we abstain: the site disagrees)."""
    merged: dict[str, Proposal] = {}
    for ranked in ranking:
        for p in ranked:
            merged.setdefault(normalize_url(p.url), p)
    others = list(merged.values())
    preferred: str | None = None
    reason = "no rule applies"
    folder_depth = len(parse_parts(dead_url).segments) - 1
    for ranked in ranking:
        top = ranked[0]
        key = normalize_url(top.url)
        if preferred is not None and key != preferred:
            reason = "the dead URL's folder and the wider site disagree"
            break
        preferred = key
        reason = _decide_scope(ranked, thresholds, folder_depth)
        if reason == "confident":
            rest = [p for p in others if normalize_url(p.url) != key]
            return Inference(dead_url, [replace(top, confident=True), *rest[: limit - 1]],
                             reason)
    return Inference(dead_url, others[:limit], reason)


def propose(book: RuleBook, dead_url: str, *, title: str | None = None,
            exclude: Iterable[int] = (), thresholds: Thresholds = DEFAULT_THRESHOLDS,
            limit: int = 5) -> Inference:
    return decide(dead_url, rank_proposals(book, dead_url, title=title, exclude=exclude),
                  thresholds, limit)


def infer_aliases(moves: Sequence[KnownMove], dead_url: str, *, title: str | None = None,
                  thresholds: Thresholds = DEFAULT_THRESHOLDS) -> Inference:
    """Learn from `moves` (same site) and propose for `dead_url` — the one-shot entry point."""
    site = site_of(dead_url)
    same_site = [m for m in moves if site_of(m.old_url) == site
                 and normalize_url(m.old_url) != normalize_url(dead_url)]
    return propose(learn_rules(same_site), dead_url, title=title, thresholds=thresholds)


# ---------------------------------------------------------------------------------------------
# Verification (I/O at the edge)

@dataclass(frozen=True)
class Verified:
    proposal: Proposal
    status: int | None
    final_url: str | None
    similarity: float | None   # cosine to the memento's text, when one was given
    ok: bool
    error: str = ""


async def verify_proposals(
    proposals: Sequence[Proposal],
    fetcher: Fetcher,
    memento_doc: object | None = None,
    *,
    min_similarity: float = 0.5,
) -> list[Verified]:
    """Fetch each proposal; alive (2xx, not bounced to the site root) and, with a memento,
    similar enough in content. Candidate pages are untrusted: only their text is compared."""
    from pagetrail.tools.errors import PagetrailError

    memento_text = _document_text(memento_doc)
    results: list[Verified] = []
    for proposal in proposals:
        try:
            response = await fetcher.get(proposal.url)
        except PagetrailError as exc:
            results.append(Verified(proposal, None, None, None, False, exc.code))
            continue
        final_path = urlsplit(response.final_url).path.strip("/")
        alive = 200 <= response.status < 300 and (
            bool(final_path) or not urlsplit(proposal.url).path.strip("/"))
        similarity = None
        if memento_text and alive and response.is_html:
            similarity = _page_similarity(memento_text, response)
        ok = alive and (similarity is None or similarity >= min_similarity)
        results.append(Verified(proposal, response.status, response.final_url, similarity, ok))
    return results


def _document_text(doc: object | None) -> str:
    if doc is None:
        return ""
    if isinstance(doc, str):
        return doc
    return " ".join(str(getattr(doc, name, "") or "") for name in ("title", "text"))


def _page_similarity(memento_text: str, response: Response) -> float:
    """Cosine of the content terms (tools.content.similarity.cosine_text) of the archived
    text and the page's (tools.content.document.parse_document: title and main text)."""
    from pagetrail.tools.content.document import parse_document
    from pagetrail.tools.content.similarity import cosine_text

    page = parse_document(response.content, response.final_url,
                          content_type=response.headers.get("content-type"), links=False)
    return cosine_text(memento_text, f"{page.title} {page.text}", page.lang or "en")

"""A world nobody has looked at: a training world whose moved pages moved differently.

    python bench/mutate_world.py WORLD OUT --seed 7 [--drop-archive 0.3] [--drop-source 0.3]

Writes OUT, a world of WORLD's format (testbed/FORMAT.md, version 1 or 2) with the same cases,
in which every *moved* page lives at a new address made from its dead address by a URL
migration composed at random (seeded) from primitives — path segments inserted, dropped,
renamed, merged or split; slugs re-worded (from the page's title), shortened or extended;
ids, hashes and dates added, removed or re-formatted; separators, case, extensions, a
trailing slash; path ↔ query; host ↔ folder. One migration per site (the host a moved page
lives on now: the same primitives, parameters and places in the path for all its pages), so
a site's moved pages and its *decoys* (the other pages of the moved page's folder, which the
training world made to look like it) follow the same composition.

Everything that names a moved address is rewritten to the new one: the page itself in
live.jsonl (its body, hence its content, kept), links, canonical URLs and sitemap entries in
every live body (absolute or relative), Location headers of live redirects and of archived
redirects, social annotations, the cases' answers (and their category, when a migration
crossed hosts). A site split off a folder gets its host in world.json, whose root redirects
to the site it came from. Then `--drop-archive` of the moved and replaced cases lose every
capture of their URL (``expect.archived`` false) and `--drop-source` of the dead cases lose
their linking page (``source`` null): only the URL is known. Blobs not rewritten are linked
to WORLD's (absolute symbolic links), so OUT is small.

OUT is checked against FORMAT.md (tools/testbed/validate.py) before the command succeeds;
MUTATION.json records the seed, the shares and each site's migration. Judge methods on such
worlds made *after* the method was written, never fit anything on them.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import html
import io
import json
import random
import re
import sys
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from pagetrail.tools.errors import WorldError
from pagetrail.tools.net.urls import canonical_host, normalize_url
from pagetrail.tools.testbed.validate import validate_world
from pagetrail.tools.testbed.world import World, load_world

MOVED_KINDS = ("moved",)
ARCHIVE_DROP_KINDS = ("moved", "replacement")  # an archived/none case keeps its kind
KEPT_PATHS = frozenset({"/", "/robots.txt", "/sitemap.xml"})
# Generic words for inserted or renamed folders: what CMSs name their sections.
FOLDER_WORDS = ("articles", "posts", "content", "archive", "stories", "p", "read", "item",
                "news", "blog", "a", "view", "entry", "pages", "en")
EXTRA_WORDS = ("update", "full", "story", "details", "report", "online", "new")
EXTENSIONS = (".html", ".php", ".htm", ".aspx", "")
QUERY_PARAMS = ("p", "id", "article", "slug", "page")
_EXTENSION = re.compile(r"\.(?:html?|php\d?|aspx?|jsp|shtml|cfm)$", re.I)
_ID_TOKEN = re.compile(r"^(?:\d{3,}|[0-9a-f]{8,}|[0-9a-z]{10,}\d[0-9a-z]*)$", re.I)
_YEAR, _MONTH = re.compile(r"^(?:19|20)\d\d$"), re.compile(r"^(?:0?[1-9]|1[0-2])$")
_DATE_TOKEN = re.compile(r"^(?:19|20)\d\d-?[01]\d(?:-?[0-3]\d)?$")
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.I | re.S)
_ATTR = re.compile(r"""(\b(?:href|src|action|content)\s*=\s*)(["'])(.*?)\2""", re.I | re.S)
_LOC = re.compile(r"(<loc>\s*)(.*?)(\s*</loc>)", re.S)
_BARE = re.compile(r"""https?://[^\s"'<>]+""")
_TEXT_TYPES = ("html", "xml", "text")


# --- URLs as parts ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Parts:
    scheme: str
    host: str
    folders: tuple[str, ...]  # path segments before the slug
    slug: str  # last segment without its extension ("" for a folder URL or the root)
    extension: str
    slash: bool  # the path ends with "/"
    query: str

    @classmethod
    def of(cls, url: str) -> Parts:
        parts = urlsplit(url)
        segments = [s for s in parts.path.split("/") if s]
        slash = parts.path.endswith("/") and bool(segments)
        slug = segments.pop() if segments else ""
        match = _EXTENSION.search(slug)
        extension = match.group(0) if match else ""
        return cls(parts.scheme, parts.netloc, tuple(segments), slug[: len(slug) - len(extension)],
                   extension, slash, parts.query)

    def url(self) -> str:
        segments = [*self.folders, *([self.slug + self.extension] if self.slug else [])]
        path = "/" + "/".join(segments) + ("/" if self.slash and segments else "")
        return urlunsplit((self.scheme, self.host, path, self.query, ""))


@dataclass
class Context:
    """What a primitive may read: the page's title words, a date, the world's hosts (those
    that are up), hosts made so far, and a random source seeded by the world seed and URL."""

    title_words: list[str]
    date: datetime
    up_hosts: set[str]
    rng: random.Random
    known_hosts: set[str] = field(default_factory=set)  # every host world.json lists
    # Where a site's migration inserts, drops, renames or merges a folder: drawn once a site
    # (a share of the folders' positions), so that all its pages move alike.
    place: float = 0.0
    new_hosts: dict[str, str] = field(default_factory=dict)  # new host → the site it came from


def words_of(text: str) -> list[str]:
    """Slug words of a text: lower case, German letters spelled out, accents dropped."""
    text = text.lower()
    for letter, spelled in (("ä", "ae"), ("ö", "oe"), ("ü", "ue"), ("ß", "ss")):
        text = text.replace(letter, spelled)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return re.findall(r"[a-z0-9]+", text)


def _split_slug(slug: str) -> tuple[list[str], str]:
    separator = "_" if slug.count("_") > slug.count("-") else "-"
    return [w for w in slug.split(separator) if w], separator


def _join(words: Sequence[str], separator: str) -> str:
    return separator.join(words)


# --- the primitives: (parts, context, parameter) → parts --------------------------------------

Primitive = Callable[[Parts, Context, Any], Parts]


def _at(ctx: Context, slots: int) -> int:
    """The site's position among `slots` places (the same share of the path on every page)."""
    return min(slots - 1, int(ctx.place * slots))


def segment_insert(p: Parts, ctx: Context, word: str) -> Parts:
    at = _at(ctx, len(p.folders) + 1)
    return replace(p, folders=(*p.folders[:at], word, *p.folders[at:]))


def segment_drop(p: Parts, ctx: Context, _: Any) -> Parts:
    if not p.folders:
        return p
    at = _at(ctx, len(p.folders))
    return replace(p, folders=p.folders[:at] + p.folders[at + 1:])


def segment_rename(p: Parts, ctx: Context, word: str) -> Parts:
    if not p.folders:
        return p
    at = _at(ctx, len(p.folders))
    new = word if word != p.folders[at] else word + "s"
    return replace(p, folders=(*p.folders[:at], new, *p.folders[at + 1:]))


def segment_merge(p: Parts, ctx: Context, _: Any) -> Parts:
    if len(p.folders) < 2:
        return p
    at = _at(ctx, len(p.folders) - 1)
    merged = f"{p.folders[at]}-{p.folders[at + 1]}"
    return replace(p, folders=(*p.folders[:at], merged, *p.folders[at + 2:]))


def segment_split(p: Parts, ctx: Context, _: Any) -> Parts:
    splittable = [i for i, f in enumerate(p.folders) if re.search(r"[-_]", f.strip("-_"))]
    if splittable:
        at = splittable[_at(ctx, len(splittable))]
        head, tail = re.split(r"[-_]", p.folders[at].strip("-_"), maxsplit=1)
        return replace(p, folders=(*p.folders[:at], head, tail, *p.folders[at + 1:]))
    words, separator = _split_slug(p.slug)
    if len(words) < 4:
        return p
    # the slug's first word becomes a folder of its own
    return replace(p, folders=(*p.folders, words[0]), slug=_join(words[1:], separator))


def slug_reword(p: Parts, ctx: Context, _: Any) -> Parts:
    """The slug made again from the page's title (as a CMS does when the title changed)."""
    words, separator = _split_slug(p.slug)
    ids = [w for w in words if _ID_TOKEN.match(w)]
    title = ctx.title_words[:8]
    if len(title) < 2:
        return p
    return replace(p, slug=_join([*title, *ids], separator))


def slug_shorten(p: Parts, ctx: Context, keep: int) -> Parts:
    words, separator = _split_slug(p.slug)
    plain = [w for w in words if not _ID_TOKEN.match(w)]
    if len(plain) <= keep:
        return p
    ids = [w for w in words if _ID_TOKEN.match(w)]
    return replace(p, slug=_join([*plain[:keep], *ids], separator))


def slug_extend(p: Parts, ctx: Context, word: str) -> Parts:
    words, separator = _split_slug(p.slug)
    if not words:
        return p
    fresh = [w for w in ctx.title_words if w not in words and len(w) > 3]
    extra = fresh[0] if fresh and ctx.place < 0.5 else word  # a title word, or the site's word
    ids = [w for w in words if _ID_TOKEN.match(w)]
    plain = [w for w in words if not _ID_TOKEN.match(w)]
    return replace(p, slug=_join([*plain, extra, *ids], separator))


def id_add(p: Parts, ctx: Context, where: str) -> Parts:
    number = str(ctx.rng.randint(10_000, 99_999_999))
    if not p.slug:
        return replace(p, slug=number)
    if where == "folder":
        return replace(p, folders=(*p.folders, number))
    words, separator = _split_slug(p.slug)
    return replace(p, slug=_join([number, *words] if where == "prefix" else [*words, number],
                                 separator))


def id_remove(p: Parts, ctx: Context, _: Any) -> Parts:
    folders = tuple(f for f in p.folders if not _ID_TOKEN.match(f) or _YEAR.match(f))
    words, separator = _split_slug(p.slug)
    kept = [w for w in words if not _ID_TOKEN.match(w)]
    slug = _join(kept, separator) if kept else p.slug
    return replace(p, folders=folders, slug=slug)


def hash_add(p: Parts, ctx: Context, length: int) -> Parts:
    digest = hashlib.sha1(p.url().encode()).hexdigest()[:length]
    words, separator = _split_slug(p.slug)
    return replace(p, slug=_join([*words, digest], separator) if words else digest)


def _date_strings(date: datetime, form: str) -> list[str]:
    return {"y/m": [f"{date:%Y}", f"{date:%m}"], "y/m/d": [f"{date:%Y}", f"{date:%m}", f"{date:%d}"],
            "y-m-d": [f"{date:%Y-%m-%d}"], "ymd": [f"{date:%Y%m%d}"], "y": [f"{date:%Y}"]}[form]


def _without_dates(folders: Sequence[str]) -> tuple[tuple[str, ...], int]:
    """The folders without date parts, and where the first one was (-1: none)."""
    out, first = [], -1
    for index, folder in enumerate(folders):
        is_date = bool(_YEAR.match(folder) or _DATE_TOKEN.match(folder)) or (
            bool(_MONTH.match(folder)) and index > 0 and bool(_YEAR.match(folders[index - 1])))
        is_day = (re.fullmatch(r"[0-3]?\d", folder) is not None and index > 1
                  and _MONTH.match(folders[index - 1]) is not None
                  and _YEAR.match(folders[index - 2]) is not None)
        if is_date or is_day:
            first = index if first < 0 else first
        else:
            out.append(folder)
    return tuple(out), first


def date_add(p: Parts, ctx: Context, form: str) -> Parts:
    folders, first = _without_dates(p.folders)
    if first >= 0:
        return p  # it has a date already (date_reformat changes it)
    at = _at(ctx, len(folders) + 1)
    return replace(p, folders=(*folders[:at], *_date_strings(ctx.date, form), *folders[at:]))


def date_remove(p: Parts, ctx: Context, _: Any) -> Parts:
    folders, _first = _without_dates(p.folders)
    words, separator = _split_slug(p.slug)
    kept = [w for w in words if not (_YEAR.match(w) and len(words) > 2)]
    return replace(p, folders=folders, slug=_join(kept, separator) if kept else p.slug)


def date_reformat(p: Parts, ctx: Context, form: str) -> Parts:
    folders, first = _without_dates(p.folders)
    if first < 0:
        return p
    return replace(p, folders=(*folders[:first], *_date_strings(ctx.date, form), *folders[first:]))


def separators(p: Parts, ctx: Context, separator: str) -> Parts:
    words, old = _split_slug(p.slug)
    new = separator if separator != old else ("_" if old == "-" else "-")
    return replace(p, slug=_join(words, new))


def letter_case(p: Parts, ctx: Context, mode: str) -> Parts:
    words, separator = _split_slug(p.slug)
    if mode == "title":
        words = [w[:1].upper() + w[1:] for w in words]
    elif mode == "lower":
        words = [w.lower() for w in words]
        if _join(words, separator) == p.slug:  # already lower: capitalise the first word
            words = [words[0][:1].upper() + words[0][1:], *words[1:]] if words else words
    return replace(p, slug=_join(words, separator))


def extension(p: Parts, ctx: Context, ext: str) -> Parts:
    if not p.slug:
        return p
    new = ext if ext != p.extension else (".html" if p.extension != ".html" else "")
    return replace(p, extension=new, slash=False if new else p.slash)


def trailing_slash(p: Parts, ctx: Context, _: Any) -> Parts:
    if p.extension:
        return p
    return replace(p, slash=not p.slash)


def path_to_query(p: Parts, ctx: Context, param: str) -> Parts:
    if not p.slug or p.query:
        return p
    query = urlencode([(param, p.slug)])
    script = ctx.place < 0.5  # the site's choice: index.php?p=… or …/?p=…
    return replace(p, slug="index" if script else "", extension=".php" if script else "",
                   slash=not script, query=query)


def query_to_path(p: Parts, ctx: Context, _: Any) -> Parts:
    pairs = parse_qsl(p.query, keep_blank_values=True)
    values = [v for _k, v in pairs if re.fullmatch(r"[\w.-]+", v)]
    if not values:
        return p
    folders = (*p.folders, *([p.slug + p.extension] if p.slug else []))
    return replace(p, folders=folders, slug=values[0], extension="", slash=False, query="")


def _bare(host: str) -> str:
    return host[4:] if host.startswith("www.") else host


def host_to_folder(p: Parts, ctx: Context, _: Any) -> Parts:
    """sub.site.example/x → site.example/sub/x, when that site is a host of the world."""
    labels = _bare(p.host).split(".")
    if len(labels) < 3:
        return p
    parent = ".".join(labels[1:])
    for candidate in (parent, f"www.{parent}"):
        if candidate in ctx.up_hosts:
            return replace(p, host=candidate, folders=(labels[0], *p.folders))
    return p


def folder_to_host(p: Parts, ctx: Context, _: Any) -> Parts:
    """site.example/sub/x → sub.site.example/x (a host made for it)."""
    if not p.folders or not re.fullmatch(r"[a-z][a-z0-9-]{0,30}", p.folders[0]):
        return p
    host = f"{p.folders[0]}.{_bare(p.host)}"
    if host in ctx.known_hosts and host not in ctx.up_hosts:
        return p  # a host of the world that is down: never brought up
    if host not in ctx.up_hosts:
        ctx.new_hosts.setdefault(host, p.host)
    return replace(p, host=host, folders=p.folders[1:])


# name → (function, parameter choices); one parameter is drawn per site.
PRIMITIVES: dict[str, tuple[Primitive, Sequence[Any]]] = {
    "segment_insert": (segment_insert, FOLDER_WORDS),
    "segment_drop": (segment_drop, (None,)),
    "segment_rename": (segment_rename, FOLDER_WORDS),
    "segment_merge": (segment_merge, (None,)),
    "segment_split": (segment_split, (None,)),
    "slug_reword": (slug_reword, (None,)),
    "slug_shorten": (slug_shorten, (3, 4, 5)),
    "slug_extend": (slug_extend, EXTRA_WORDS),
    "id_add": (id_add, ("suffix", "prefix", "folder")),
    "id_remove": (id_remove, (None,)),
    "hash_add": (hash_add, (6, 8, 10)),
    "date_add": (date_add, ("y/m", "y/m/d", "y-m-d", "ymd", "y")),
    "date_remove": (date_remove, (None,)),
    "date_reformat": (date_reformat, ("y/m", "y/m/d", "y-m-d", "ymd", "y")),
    "separators": (separators, ("-", "_")),
    "letter_case": (letter_case, ("lower", "title")),
    "extension": (extension, EXTENSIONS),
    "trailing_slash": (trailing_slash, (None,)),
    "path_to_query": (path_to_query, QUERY_PARAMS),
    "query_to_path": (query_to_path, (None,)),
    "host_to_folder": (host_to_folder, (None,)),
    "folder_to_host": (folder_to_host, (None,)),
}
_HOST_MOVES = frozenset({"host_to_folder", "folder_to_host"})


def compose(rng: random.Random, steps: tuple[int, int] = (2, 4)) -> list[tuple[str, Any]]:
    """A migration: 2–4 distinct primitives in random order, each with its parameter, at
    most one of them moving between host and folder."""
    names = rng.sample(sorted(PRIMITIVES), rng.randint(*steps))
    host_moves = [n for n in names if n in _HOST_MOVES]
    names = [n for n in names if n not in _HOST_MOVES] + host_moves[:1]
    rng.shuffle(names)
    return [(name, rng.choice(list(PRIMITIVES[name][1]))) for name in names]


def migrate(url: str, migration: Sequence[tuple[str, Any]], ctx: Context) -> str:
    parts = Parts.of(url)
    for name, parameter in migration:
        parts = PRIMITIVES[name][0](parts, ctx, parameter)
    return parts.url()


# --- rewriting what names a moved address ----------------------------------------------------


def _resolve(base: str, value: str) -> str:
    try:
        return urljoin(base, value)
    except ValueError:  # not a URL ("[x]" as a host): names nothing that moved
        return value


def _lookup(mapping: Mapping[str, str], url: str) -> str | None:
    try:
        return mapping.get(url) or mapping.get(normalize_url(url))
    except ValueError:  # not a URL (a bad port, text in an attribute): names nothing
        return None


def rewrite_links(text: str, page_url: str, mapping: Mapping[str, str]) -> str:
    """Every link, canonical URL or sitemap entry of `text` (a page at `page_url`) naming a
    moved address names its new one; relative links are resolved against the page."""
    def attribute(match: re.Match[str]) -> str:
        value = html.unescape(match.group(3))
        if value.startswith(("#", "mailto:", "javascript:", "data:")) or not value.strip():
            return match.group(0)
        if match.group(1).lower().startswith("content") and not value.startswith("http"):
            return match.group(0)  # a meta tag's text, not a link
        new = _lookup(mapping, _resolve(page_url, value.strip()))
        if new is None:
            return match.group(0)
        return f"{match.group(1)}{match.group(2)}{html.escape(new)}{match.group(2)}"

    def loc(match: re.Match[str]) -> str:
        new = _lookup(mapping, html.unescape(match.group(2)))
        return match.group(0) if new is None else match.group(1) + html.escape(new) + match.group(3)

    def bare(match: re.Match[str]) -> str:
        found = match.group(0)
        url = found.rstrip(".,;:)]}!?")
        new = _lookup(mapping, html.unescape(url))
        if new is None:
            return found
        written = html.escape(new, quote=False) if "&amp;" in url else new
        return written + found[len(url):]

    return _BARE.sub(bare, _LOC.sub(loc, _ATTR.sub(attribute, text)))


# --- the world ------------------------------------------------------------------------------


@dataclass
class Summary:
    out: Path
    moved: int
    decoys: int
    archives_removed: list[str]
    sources_removed: list[str]
    bodies_rewritten: int
    new_hosts: list[str]
    migrations: dict[str, list[tuple[str, Any]]]


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _write_jsonl(path: Path, items: Sequence[Mapping[str, Any]]) -> None:
    path.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in items),
                    encoding="utf-8")


def _title_words(world: World, url: str) -> list[str]:
    resource = world.lookup(url)
    if resource is None or not resource.blob:
        return []
    match = _TITLE.search(world.read_blob(resource.blob).decode("utf-8", errors="replace"))
    return words_of(html.unescape(match.group(1)))[:12] if match else []


def _date(value: str | None, fallback: str) -> datetime:
    for text in (value, fallback, "2020-01-01T00:00:00Z"):
        if text:
            try:
                return datetime.fromisoformat(text.replace("Z", "+00:00"))
            except ValueError:
                continue
    return datetime(2020, 1, 1, tzinfo=UTC)


def _folder(url: str) -> tuple[str, str]:
    """(host, folder) of a page: its path without the last segment (`/a/b/` is in `/a`)."""
    parts = urlsplit(url)
    return canonical_host(parts.hostname or ""), parts.path.rstrip("/").rsplit("/", 1)[0]


def _is_html(item: Mapping[str, Any]) -> bool:
    return "html" in str((item.get("headers") or {}).get("Content-Type", "")).lower()


class _Planner:
    """Which live page moves where: the cases' moved pages (from their dead address), then
    their decoys (from their own), one migration per site; new addresses never collide with
    a live page, a case's address or each other."""

    def __init__(self, world: World, live: list[dict[str, Any]], seed: int) -> None:
        self.world, self.live, self.seed = world, live, seed
        # Hosts that serve their pages: a parked host answers every path with its parking
        # page, so a page moved onto it would be lost (an answer no recovery can find).
        self.up_hosts = {name for name, spec in world.hosts.items() if spec.serves_pages}
        self.migrations: dict[str, list[tuple[str, Any]]] = {}
        self.mapping: dict[str, str] = {}  # live URL → its new URL
        self.new_hosts: dict[str, str] = {}
        case_urls = {normalize_url(c.url) for c in world.cases}
        self.taken = case_urls | {normalize_url(str(i["url"])) for i in live}
        self.protected = case_urls | {normalize_url(u) for c in world.cases
                                      if c.expect_kind not in MOVED_KINDS for u in c.expect_urls}
        self.protected |= {normalize_url(str((c.raw.get("source") or {}).get("url") or ""))
                           for c in world.cases}

    def migration(self, host: str) -> list[tuple[str, Any]]:
        if host not in self.migrations:
            self.migrations[host] = compose(random.Random(f"{self.seed}:site:{host}"))
        return self.migrations[host]

    def _context(self, url: str, title_url: str, date: datetime) -> Context:
        host = canonical_host(urlsplit(url).hostname or "")
        return Context(title_words=_title_words(self.world, title_url), date=date,
                       up_hosts=self.up_hosts, rng=random.Random(f"{self.seed}:url:{url}"),
                       known_hosts=set(self.world.hosts), new_hosts=self.new_hosts,
                       place=random.Random(f"{self.seed}:place:{host}").random())

    def _unique(self, new: str, original: str) -> str:
        candidate, attempt = new, 0
        while normalize_url(candidate) in self.taken or candidate == original:
            attempt += 1
            parts = Parts.of(new)
            digest = hashlib.sha1(f"{self.seed}:{original}:{attempt}".encode()).hexdigest()[:6]
            words, separator = _split_slug(parts.slug)
            candidate = replace(parts, slug=_join([*words, digest], separator)).url()
        self.taken.add(normalize_url(candidate))
        return candidate

    def move(self, original: str, start: str, title_url: str, date: datetime) -> None:
        host = canonical_host(urlsplit(original).hostname or "")
        ctx = self._context(original, title_url, date)
        new = migrate(start, self.migration(host), ctx)
        if normalize_url(new) == normalize_url(start):  # nothing applied: an id at least
            new = migrate(new, [("id_add", "suffix")], ctx)
        self.mapping[original] = self._unique(new, original)

    def plan(self) -> None:
        resources = {str(i["url"]): i for i in self.live}
        then = self.world.then
        for case in self.world.cases:
            if case.expect_kind not in MOVED_KINDS:
                continue
            for answer in case.expect_urls:
                item = resources.get(answer)
                if item is None or item.get("status") != 200 or answer in self.mapping:
                    continue
                # the dead address, on the site where the page lives now, migrated
                now = urlsplit(answer)
                dead = urlsplit(case.url)
                start = urlunsplit((now.scheme, now.netloc, dead.path or "/", dead.query, ""))
                self.move(answer, start, answer, _date(case.raw.get("link_date"), then))
        folders = {_folder(url) for url in self.mapping}
        rng = random.Random(f"{self.seed}:decoy-dates")
        for url, item in resources.items():
            key = normalize_url(url)
            if (url in self.mapping or key in self.protected or item.get("status") != 200
                    or not _is_html(item) or urlsplit(url).path in KEPT_PATHS
                    or _folder(url) not in folders):
                continue
            date = datetime(rng.randint(2012, 2023), rng.randint(1, 12), rng.randint(1, 28),
                            tzinfo=UTC)
            self.move(url, url, url, date)


def _link_blob(src: World, out: Path, blob: str) -> None:
    target = out / "blobs" / blob
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        target.symlink_to(src.blob_path(blob).resolve())


def _write_blob(out: Path, body: bytes, suffix: str) -> str:
    digest = hashlib.sha256(body).hexdigest()
    name = f"{digest[:2]}/{digest}{suffix}"
    target = out / "blobs" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink():
        target.unlink()
    target.write_bytes(gzip.compress(body, mtime=0))  # mtime 0: the same seed, the same bytes
    return name


def _suffix(blob: str) -> str:
    name = blob.rsplit("/", 1)[-1]
    return name[name.find("."):] if "." in name else ".gz"


def _rewrite_live(src: World, out: Path, live: list[dict[str, Any]],
                  mapping: Mapping[str, str]) -> tuple[list[dict[str, Any]], int]:
    lookup = {**mapping, **{normalize_url(k): v for k, v in mapping.items()}}
    moved_keys = {normalize_url(k) for k in mapping}
    written: list[dict[str, Any]] = []
    rewritten = 0
    for item in live:
        url = str(item["url"])
        if url not in mapping and normalize_url(url) in moved_keys:
            continue  # a twin (http/www) redirect of a moved page's old address: gone with it
        new_url = mapping.get(url, url)
        item = {**item, "url": new_url, "headers": dict(item.get("headers") or {})}
        for name, value in item["headers"].items():
            if name.lower() == "location":
                target = _lookup(lookup, _resolve(url, value))
                if target is not None:
                    item["headers"][name] = target
        blob = item.get("blob")
        if blob:
            content_type = str(item["headers"].get("Content-Type", "")).lower()
            body = src.read_blob(blob)
            if any(t in content_type for t in _TEXT_TYPES) or blob.endswith((".xml.gz", ".txt.gz")):
                text = body.decode("utf-8", errors="surrogateescape")
                new_text = rewrite_links(text, url, lookup)
                if new_text != text:
                    item["blob"] = _write_blob(
                        out, new_text.encode("utf-8", errors="surrogateescape"), _suffix(blob))
                    rewritten += 1
                    written.append(item)
                    continue
            _link_blob(src, out, blob)
        written.append(item)
    return written, rewritten


def _rewrite_archive(src: World, out: Path, removed: set[str],
                     mapping: Mapping[str, str]) -> None:
    """Every WARC record copied byte for byte, except those of the removed URLs (left out) and
    captured redirects to a moved address (written again with the new Location)."""
    lookup = {**mapping, **{normalize_url(k): v for k, v in mapping.items()}}
    folder = out / "archive"
    folder.mkdir()
    for warc in src.warcs:
        buffer = io.BytesIO()
        writer = WARCWriter(buffer, gzip=True)
        with warc.open("rb") as handle:
            raw = handle.read()
        iterator = ArchiveIterator(io.BytesIO(raw))
        for record in iterator:
            target = record.rec_headers.get_header("WARC-Target-URI") or ""
            location = (record.http_headers.get_header("Location")
                        if record.rec_type == "response" and record.http_headers else None)
            new_location = _lookup(lookup, _resolve(target, location)) if location else None
            payload = record.content_stream().read() if new_location else b""
            iterator.read_to_end(record)
            if target and normalize_url(target) in removed:
                continue
            if new_location is None:
                offset, length = iterator.get_record_offset(), iterator.get_record_length()
                buffer.write(raw[offset:offset + length])
                continue
            headers = [(k, new_location if k.lower() == "location" else v)
                       for k, v in record.http_headers.headers
                       if k.lower() not in ("content-length", "transfer-encoding")]
            headers.append(("Content-Length", str(len(payload))))
            writer.write_record(writer.create_warc_record(
                target, "response", payload=io.BytesIO(payload),
                http_headers=StatusAndHeaders(record.http_headers.statusline, headers,
                                              protocol=record.http_headers.protocol),
                warc_headers_dict={"WARC-Date": record.rec_headers.get_header("WARC-Date")}))
        (folder / warc.name).write_bytes(buffer.getvalue())


def _choose(ids: Sequence[str], share: float, rng: random.Random) -> list[str]:
    count = round(share * len(ids))
    return sorted(rng.sample(list(ids), count))


def mutate_world(src_dir: str | Path, out_dir: str | Path, *, seed: int,
                 drop_archive: float = 0.0, drop_source: float = 0.0,
                 name: str | None = None) -> Summary:
    """Write the mutated world (module docstring) and check it; raise WorldError when the
    source does not load, OUT is not empty, or what was written breaks FORMAT.md."""
    for label, share in (("--drop-archive", drop_archive), ("--drop-source", drop_source)):
        if not 0 <= share <= 1:
            raise WorldError(f"{label} must be a share in [0, 1], got {share}")
    src_path, out = Path(src_dir), Path(out_dir)
    world = load_world(src_path)
    if out.exists() and any(out.iterdir()):
        raise WorldError(f"{out}: output directory exists and is not empty")
    meta = json.loads((src_path / "world.json").read_text(encoding="utf-8"))
    live = _read_jsonl(src_path / "live.jsonl")

    planner = _Planner(world, live, seed)
    planner.plan()
    mapping = planner.mapping
    moved_answers = {u for c in world.cases if c.expect_kind in MOVED_KINDS for u in c.expect_urls}

    rng = random.Random(f"{seed}:shares")
    archived_ids = [c.id for c in world.cases
                    if c.expect_kind in ARCHIVE_DROP_KINDS and c.raw["expect"].get("archived")]
    sourced_ids = [c.id for c in world.cases if c.category != "alive" and c.raw.get("source")]
    no_archive = set(_choose(archived_ids, drop_archive, rng))
    no_source = set(_choose(sourced_ids, drop_source, rng))

    out.mkdir(parents=True, exist_ok=True)
    (out / "blobs").mkdir()
    live_out, rewritten = _rewrite_live(world, out, live, mapping)
    hosts = dict(meta["hosts"])
    for host, origin in sorted(planner.new_hosts.items()):
        # the mapping's URLs name hosts in IDNA ASCII, a host made from a folder may be in
        # Unicode (a site of an internationalised name): compare both in the wire form
        if any(canonical_host(urlsplit(v).hostname or "") == canonical_host(host)
               for v in mapping.values()):
            hosts[host] = {"state": "up", "not_found": "404"}
            live_out.append({"url": f"https://{host}/", "status": 301,
                             "headers": {"Location": f"https://{origin}/"}})
    for spec in hosts.values():
        if spec.get("not_found_blob"):
            _link_blob(world, out, spec["not_found_blob"])
    removed = {normalize_url(c.url) for c in world.cases if c.id in no_archive}
    _rewrite_archive(world, out, removed, mapping)

    cases_out = []
    for case in world.cases:
        raw = json.loads(json.dumps(case.raw))
        expect = raw["expect"]
        expect["urls"] = [mapping.get(u, u) for u in expect.get("urls") or []]
        if case.expect_kind in MOVED_KINDS and expect["urls"]:
            same = all(canonical_host(urlsplit(u).hostname or "")
                       == canonical_host(urlsplit(case.url).hostname or "") for u in expect["urls"])
            raw["category"] = "moved_same_host" if same else "moved_new_host"
        if case.id in no_archive:
            expect["archived"] = False
        if case.id in no_source:
            raw["source"] = None
        elif raw.get("source") and raw["source"].get("url") in mapping:
            raw["source"]["url"] = mapping[raw["source"]["url"]]
        cases_out.append(raw)
    social = [{**post, "url": mapping.get(post.get("url"), post.get("url"))}
              for post in _read_jsonl(src_path / "social.jsonl")]

    meta_out = {**meta, "name": name or f"{world.name}-m{seed}", "hosts": hosts}
    (out / "world.json").write_text(json.dumps(meta_out, ensure_ascii=False, indent=1) + "\n",
                                    encoding="utf-8")
    _write_jsonl(out / "live.jsonl", live_out)
    _write_jsonl(out / "cases.jsonl", cases_out)
    if social:
        _write_jsonl(out / "social.jsonl", social)
    summary = Summary(out=out, moved=sum(1 for u in mapping if u in moved_answers),
                      decoys=sum(1 for u in mapping if u not in moved_answers),
                      archives_removed=sorted(no_archive), sources_removed=sorted(no_source),
                      bodies_rewritten=rewritten, new_hosts=sorted(
                          h for h in planner.new_hosts if h in hosts),
                      migrations=planner.migrations)
    _write_provenance(src_path, out, world.name, seed, drop_archive, drop_source, summary)
    problems = validate_world(out)
    if problems:
        raise WorldError(f"{out}: the mutated world breaks FORMAT.md: " + "; ".join(problems[:5])
                         + (f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""))
    return summary


def _write_provenance(src: Path, out: Path, source_name: str, seed: int, drop_archive: float,
                      drop_source: float, summary: Summary) -> None:
    record = {"source": source_name, "seed": seed, "drop_archive": drop_archive,
              "drop_source": drop_source, "moved": summary.moved, "decoys": summary.decoys,
              "bodies_rewritten": summary.bodies_rewritten, "new_hosts": summary.new_hosts,
              "archives_removed": summary.archives_removed,
              "sources_removed": summary.sources_removed,
              "migrations": {host: [[n, p] for n, p in steps]
                             for host, steps in sorted(summary.migrations.items())}}
    (out / "MUTATION.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    original = (src / "SOURCES.md").read_text(encoding="utf-8") if (src / "SOURCES.md").is_file() else ""
    note = (f"\n\n## This mutated world\n\nMade from `{source_name}` by `bench/mutate_world.py "
            f"--seed {seed} --drop-archive {drop_archive} --drop-source {drop_source}`: the moved "
            f"pages and their decoys at addresses from URL migrations composed at random (one "
            f"per site, MUTATION.json), every reference rewritten; page texts and their licences "
            f"as described above.\n")
    (out / "SOURCES.md").write_text(original.rstrip("\n") + note, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("world", type=Path, help="the training world (format 1 or 2)")
    parser.add_argument("out", type=Path, help="the new world's directory (new or empty)")
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--drop-archive", type=float, default=0.0, metavar="SHARE",
                        help="share of moved and replaced cases whose archived copies are removed")
    parser.add_argument("--drop-source", type=float, default=0.0, metavar="SHARE",
                        help="share of dead cases whose linking page is removed (URL only)")
    parser.add_argument("--name", default=None, help="the world's name (default WORLD-mSEED)")
    args = parser.parse_args(argv)
    try:
        summary = mutate_world(args.world, args.out, seed=args.seed,
                               drop_archive=args.drop_archive, drop_source=args.drop_source,
                               name=args.name)
    except WorldError as exc:
        print(f"mutate_world: error: {exc}", file=sys.stderr)
        return 2
    print(f"{summary.out}: {summary.moved} moved pages and {summary.decoys} decoys at new "
          f"addresses ({len(summary.migrations)} sites), {summary.bodies_rewritten} bodies "
          f"rewritten, {len(summary.new_hosts)} new hosts; archived copies removed for "
          f"{len(summary.archives_removed)} cases, linking pages for "
          f"{len(summary.sources_removed)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

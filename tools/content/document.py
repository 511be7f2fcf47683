"""HTML → Document: title (site name split off), main text, meta data, links with context.

Pure functions over untrusted bytes. Nothing is executed or fetched: lxml parses with
network access off, scripts/styles are skipped, the input is capped (`MAX_HTML_BYTES`) and
libxml2 caps nesting depth, so huge or deeply nested pages cost bounded time.
Main text comes from trafilatura (boilerplate removal); when it finds nothing, the visible
text of the page outside nav/header/footer/aside is used instead.
"""

from __future__ import annotations

import logging
import re
import threading
from dataclasses import dataclass, field
from typing import ClassVar
from urllib.parse import urljoin, urlsplit

import lxml.etree as etree
import lxml.html

from pagetrail.tools.content.text import guess_language
from pagetrail.tools.models import Document, Link
from pagetrail.tools.net.fetch import detect_charset
from pagetrail.tools.net.urls import same_url, site_of

log = logging.getLogger(__name__)

MAX_HTML_BYTES = 2_000_000  # larger pages are cut: the head and the article come first
MAX_LINKS = 2000
MAX_ANCHOR_CHARS = 300
MAX_FIELD_CHARS = 2000
MAX_TEXT_CHARS = 200_000
MAX_KEYWORDS = 50
CONTEXT_WORDS = 25

# Elements whose text never reaches the reader.
_SKIP = frozenset({"script", "style", "noscript", "template", "svg", "math", "iframe", "object",
                   "head", "select", "option", "textarea", "button"})
# Page chrome, excluded from the fallback main text (links inside still count as links).
_CHROME = frozenset({"nav", "header", "footer", "aside", "form", "menu"})
# Block elements: a link's context is the text of its nearest block ancestor.
_BLOCKS = frozenset({
    "p", "li", "dd", "dt", "td", "th", "div", "section", "article", "blockquote", "pre",
    "h1", "h2", "h3", "h4", "h5", "h6", "figcaption", "caption", "body", "main", "ul", "ol",
    "dl", "table", "tr", "nav", "header", "footer", "aside", "form", "address", "center",
    "details", "summary", "figure", "fieldset", "legend", "br", "hr",
})
# " | ", " – ", " — ", " - ", " · ", " » ", " :: " with spaces around; ":" handled separately.
_TITLE_SEPARATORS = re.compile(r"\s+(?:\||–|—|-|·|»|«|::|/|•)\s+")
_COLON = re.compile(r":\s+")
_SPACES = re.compile(r"\s+")
_LANG = re.compile(r"^[a-zA-Z]{2,3}(?:[-_][a-zA-Z0-9]{1,8})*$")

# Words in titles and short pages that mark an error page (soft 404), several languages.
_NOT_FOUND = re.compile(
    r"\b(?:not\s+found|page\s+(?:does\s+not|doesn'?t)\s+exist|no\s+longer\s+(?:available|exists)"
    r"|page\s+(?:cannot|could\s+not|can'?t)\s+be\s+found|nicht\s+gefunden|existiert\s+nicht"
    r"|nicht\s+(?:mehr\s+)?verfügbar|seite\s+nicht|page\s+introuvable|n'existe\s+pas"
    r"|página\s+no\s+encontrada|no\s+se\s+encuentra|pagina\s+non\s+trovata|niet\s+gevonden"
    r"|nie\s+znaleziono|error\s+404|fehler\s+404|erreur\s+404|file\s+not\s+found)\b",
    re.I,
)


def collapse(text: str) -> str:
    return _SPACES.sub(" ", text or "").strip()


def clip(text: str, limit: int = MAX_FIELD_CHARS) -> str:
    text = collapse(text)
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0]


# ---------------------------------------------------------------------------------------
# Decoding


def decode_html(html: bytes | str, content_type: str | None = None) -> str:
    """Bytes → text, with the fetch layer's charset decision (`fetch.detect_charset`: BOM,
    HTTP charset, <meta> charset, then a guess). Invalid sequences are replaced, never fatal.
    The input is capped at MAX_HTML_BYTES.
    """
    if isinstance(html, str):
        return html[:MAX_HTML_BYTES]
    data = html[:MAX_HTML_BYTES]
    codec = detect_charset(content_type, data, "text/html") or "utf-8"
    return data.decode(codec, errors="replace").removeprefix("\ufeff")


def _parse_tree(text: str) -> lxml.html.HtmlElement | None:
    # Control characters (other than whitespace) make libxml2 stop early; drop them.
    text = re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f]", " ", text)
    if not text.strip():
        return None
    parser = lxml.html.HTMLParser(remove_comments=True, remove_pis=True, no_network=True,
                                  recover=True, huge_tree=False)
    try:
        return lxml.html.document_fromstring(text, parser=parser)
    except (etree.ParserError, ValueError) as exc:
        log.debug("unparseable HTML: %s", exc)
        return None


# ---------------------------------------------------------------------------------------
# Title and site name


def _compact(text: str) -> str:
    return re.sub(r"[^\w]", "", text.lower())


def _host_names(url: str) -> list[str]:
    """Distinctive labels of the host ('anarc.at' → ['anarcat', 'anarc']), for title matching."""
    site = site_of(url)
    labels = [label for label in site.split(".") if label]
    names = []
    if len(labels) >= 2:
        names.append(_compact("".join(labels)))
        names.append(_compact(labels[-2]))
        names.append(_compact("".join(labels[:-1])))
    elif labels:
        names.append(_compact(labels[0]))
    return [n for n in dict.fromkeys(names) if len(n) >= 3]


def _names_site(segment: str, site_name: str, url: str) -> bool:
    seg = _compact(segment)
    if not seg:
        return False
    if site_name and (seg == _compact(site_name)):
        return True
    for name in _host_names(url):
        if seg == name or (len(name) >= 4 and (seg.startswith(name) or name.startswith(seg))):
            return True
        if len(seg) >= 3 and seg in name and len(seg) * 2 >= len(name):
            return True
        # "EFC Bayrische Bembel Regensburg" names bayrische-bembel.de: a short segment
        # that contains the host's distinctive name.
        if len(name) >= 6 and name in seg and len(segment.split()) <= 5:
            return True
    return False


def split_title(title: str, *, site_name: str = "", url: str = "") -> tuple[str, str]:
    """"Article – Site Name" → ("Article", "Site Name").

    A segment at either end of the title is taken as the site name only when it names the
    site: it equals og:site_name, or it matches the host name ('anarcat' for anarc.at,
    'Four Years Remaining' for fouryears.eu). Without such evidence the title is kept whole:
    a wrong split loses query terms, a missed one only adds the site's name.
    """
    title = collapse(title)
    if not title:
        return "", site_name
    for pattern in (_TITLE_SEPARATORS, _COLON):
        parts = [p.strip() for p in pattern.split(title) if p.strip()]
        if len(parts) < 2:
            continue
        found = ""
        # Site name at the end ("Article - Site") is the common form; then at the start.
        while len(parts) >= 2 and _names_site(parts[-1], site_name, url):
            found = found or parts[-1]
            parts = parts[:-1]
        while len(parts) >= 2 and _names_site(parts[0], site_name, url):
            found = found or parts[0]
            parts = parts[1:]
        if found:
            # Drop generic section crumbs left between the site name and the article
            # ("Four Years Remaining » Blog Archive » Article").
            while len(parts) >= 2 and _is_crumb(parts[0]):
                parts = parts[1:]
            sep_match = pattern.search(title)
            joiner = sep_match.group(0) if sep_match else " - "
            return joiner.join(parts), site_name or found
    return title, site_name


_CRUMBS = frozenset({"blog", "blog archive", "archive", "archives", "home", "news", "articles",
                     "article", "posts", "startseite", "aktuelles", "nachrichten"})


def _is_crumb(segment: str) -> bool:
    return segment.lower().strip() in _CRUMBS


# ---------------------------------------------------------------------------------------
# Links and visible text (one linear walk over the tree)


@dataclass
class _Walk:
    words: list[str] = field(default_factory=list)
    word_block: list[int] = field(default_factory=list)
    chrome_flags: list[bool] = field(default_factory=list)
    anchors: list[tuple[str, int, int, int, str]] = field(default_factory=list)
    # (href, block id, first word index, end word index, img alt)


def _walk(root: etree._Element, *, chrome: bool = True) -> _Walk:
    """Visit the tree once in document order, tagging each word with its block element
    (and, with `chrome`, whether it stands in navigation/header/footer chrome: only the
    main-text fallback needs that, so the links-only crawl skips it, ~20 % of the walk).

    Iterative (no recursion), so nesting depth cannot blow the stack.
    """
    chrome_tags = _CHROME if chrome else frozenset()
    out = _Walk()
    block_ids: list[int] = [0]
    next_block = 1
    chrome_depth = 0
    open_anchor: list[tuple[str, int, int, str]] = []  # href, block, start word, alt

    def add(text: str | None) -> None:
        if text and len(out.words) <= 400_000:
            parts = text.split()  # a text's words in one step: this is a crawler's hot path
            out.words.extend(parts)
            out.word_block.extend([block_ids[-1]] * len(parts))
            if chrome:
                out.chrome_flags.extend([chrome_depth > 0] * len(parts))

    walker = etree.iterwalk(root, events=("start", "end"))
    for event, element in walker:
        tag = element.tag
        tag = tag.lower() if isinstance(tag, str) else ""
        if event == "start":
            if tag in _SKIP or not tag:
                walker.skip_subtree()
                continue
            if tag in _BLOCKS:
                block_ids.append(next_block)
                next_block += 1
            if tag in chrome_tags:
                chrome_depth += 1
            if tag == "a" and element.get("href") is not None and not open_anchor:
                alt = " ".join(img.get("alt", "") for img in element.iter("img"))
                open_anchor.append((element.get("href", ""), block_ids[-1], len(out.words), alt))
            add(element.text)
        else:
            if tag and tag not in _SKIP:
                if tag == "a" and open_anchor and element.get("href") is not None:
                    href, block, start, alt = open_anchor.pop()
                    if len(out.anchors) < MAX_LINKS:
                        out.anchors.append((href, block, start, len(out.words), alt))
                if tag in chrome_tags:
                    chrome_depth -= 1
                if tag in _BLOCKS and len(block_ids) > 1:
                    block_ids.pop()
            add(element.tail)
    return out


def _resolve(href: str, base: str) -> str | None:
    href = href.strip()
    if not href or href.startswith("#"):
        return None
    try:
        url = urljoin(base, href)
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return url.split("#", 1)[0] if len(url) <= 4096 else None


def _links(walk: _Walk, base: str, window: int) -> list[Link]:
    links: list[Link] = []
    for href, block, start, end, alt in walk.anchors:
        url = _resolve(href, base)
        if not url:
            continue
        anchor = clip(" ".join(walk.words[start:end]) or alt, MAX_ANCHOR_CHARS)
        context = clip(" ".join(_context_words(walk, block, start, end, window)), 1000)
        links.append(Link(url=url, anchor=anchor, context=context))
    return links


# ---------------------------------------------------------------------------------------
# Meta data


def _meta(root: lxml.html.HtmlElement) -> dict[str, str]:
    """name/property → content of <meta> tags (first one wins), names lower-cased."""
    meta: dict[str, str] = {}
    for element in root.iter("meta"):
        key = (element.get("property") or element.get("name") or element.get("itemprop")
               or element.get("http-equiv") or "").strip().lower()
        content = element.get("content")
        if key and content is not None and key not in meta and len(meta) < 500:
            meta[key] = clip(content)
    return meta


def _keywords(meta: dict[str, str], root: lxml.html.HtmlElement) -> list[str]:
    raw: list[str] = []
    for key in ("keywords", "news_keywords"):
        if meta.get(key):
            raw.extend(re.split(r"[,;]", meta[key]))
    for element in root.iter("meta"):
        key = (element.get("property") or element.get("name") or "").lower()
        if key in ("article:tag", "og:article:tag") and element.get("content"):
            raw.append(element.get("content", ""))
    seen: dict[str, str] = {}
    for word in raw:
        word = clip(word, 100)
        if word and word.lower() not in seen:
            seen[word.lower()] = word
    return list(seen.values())[:MAX_KEYWORDS]


def _canonical(root: lxml.html.HtmlElement, base: str) -> str | None:
    for element in root.iter("link"):
        rel = (element.get("rel") or "").lower().split()
        if "canonical" in rel and element.get("href"):
            return _resolve(element.get("href", ""), base)
    return None


def _html_lang(root: lxml.html.HtmlElement, meta: dict[str, str]) -> str:
    for value in (root.get("lang"), root.get("{http://www.w3.org/XML/1998/namespace}lang"),
                  meta.get("content-language"), meta.get("og:locale")):
        if value and _LANG.match(value.strip()):
            return value.strip().replace("_", "-").split("-")[0].lower()
    return ""


def _base_url(root: lxml.html.HtmlElement, url: str) -> str:
    for element in root.iter("base"):
        href = element.get("href")
        if href:
            resolved = _resolve(href, url)
            if resolved:
                return resolved
        break
    return url


# ---------------------------------------------------------------------------------------
# Public API


# What trafilatura raises on junk input (lxml's parser errors, and its own code tripping over
# trees it did not foresee). An ImportError (a missing dependency) is not among them: it
# must fail the recovery out loud, not pass as a page without text.
_EXTRACTION_ERRORS = (etree.LxmlError, ValueError, TypeError, AttributeError, LookupError,
                      RecursionError)


def main_text(html_text: str, url: str = "") -> str:
    """Boilerplate-free text of the page (trafilatura), '' when it finds nothing."""
    import trafilatura  # here: ~0.15 s to import, and crawlers (extract_links) never need it

    # deduplicate=False: trafilatura's deduplication counts paragraphs in a process-wide
    # cache, so a page's text vanished on its third extraction in the same process (an
    # article quoted by several candidates lost its text: order-dependent similarities).
    try:
        text = trafilatura.extract(html_text, url=url or None, include_comments=False,
                                   include_tables=True, favor_recall=True, deduplicate=False)
    except _EXTRACTION_ERRORS as exc:
        log.debug("trafilatura failed on %s: %s", url, exc)
        return ""
    return (text or "")[:MAX_TEXT_CHARS]


def parse_document(html: bytes | str, url: str, *, content_type: str | None = None,
                   context_words: int = CONTEXT_WORDS, links: bool = True) -> Document:
    """Parse an HTML page into a Document. Never raises on bad HTML: returns what it can.
    `links=False` leaves `links` empty and skips the word walk that finds them (a quarter
    of the parse) unless the main-text extractor finds nothing: for pages only compared."""
    text = decode_html(html, content_type)
    root = _parse_tree(text)
    if root is None:
        return Document(url=url)
    meta = _meta(root)
    raw_title = ""
    for element in root.iter("title"):
        raw_title = clip(element.text_content(), 500)
        break
    og_title = meta.get("og:title", "")
    site_name = clip(meta.get("og:site_name", "") or meta.get("application-name", ""), 200)
    title, site_name = split_title(raw_title or og_title, site_name=site_name, url=url)

    base = _base_url(root, url)
    walk = _walk(root) if links else None
    body = main_text(text, url)
    if not body.strip():
        walk = walk or _walk(root)
        body = clip(" ".join(w for w, chrome in zip(walk.words, walk.chrome_flags, strict=True)
                             if not chrome), MAX_TEXT_CHARS)
    description = clip(meta.get("description", "") or meta.get("og:description", ""))
    lang_hint = _html_lang(root, meta)
    lang = guess_language(" ".join([title, description, body[:20000]]), hint=lang_hint)
    og = {k: v for k, v in meta.items() if k.startswith(("og:", "article:"))}
    return Document(
        url=url,
        title=title,
        raw_title=raw_title or og_title,
        site_name=site_name,
        text=body,
        description=description,
        keywords=_keywords(meta, root),
        canonical=_canonical(root, base),
        lang=lang,
        links=_links(walk, base, context_words) if links and walk is not None else [],
        og=og,
    )


def extract_links(html: bytes | str, url: str, *, content_type: str | None = None,
                  context_words: int = CONTEXT_WORDS) -> list[Link]:
    """The links of a page with anchor text and context, as parse_document finds them,
    without its main-text extraction (trafilatura: ~50 ms a page; this: ~0.1 ms).

    For crawlers that need only the link graph. Never raises on bad HTML. The same walk and
    context rules as parse_document (`_walk`, `_context_words`), on plain lxml elements and
    with root-relative links resolved once per site: a crawl calls this for every page."""
    root = _parse_plain_tree(decode_html(html, content_type))
    if root is None:
        return []
    base = _base_url(root, url)  # type: ignore[arg-type]
    walk = _walk(root, chrome=False)
    resolve = _RootedResolver(base)
    links: list[Link] = []
    for href, block, start, end, alt in walk.anchors:
        target = resolve(href)
        if target:
            anchor = _clip_words(walk.words[start:end], MAX_ANCHOR_CHARS) or clip(
                alt, MAX_ANCHOR_CHARS)
            context = _clip_words(_context_words(walk, block, start, end, context_words), 1000)
            links.append(Link(url=target, anchor=anchor, context=context))
    return links


def _clip_words(words: list[str], limit: int) -> str:
    """clip(" ".join(words), limit) for words from str.split(): joined, they hold no other
    whitespace than single inner spaces, so there is nothing to collapse."""
    text = " ".join(words)
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0]


_plain_parsers = threading.local()


def _parse_plain_tree(text: str) -> etree._Element | None:
    """`_parse_tree`'s tree (same cleaning, same libxml2 options) with plain lxml elements:
    lxml.html's element classes cost a Python call per element visited, and a links-only
    walk uses nothing of them. One parser per thread (a parser is not thread-safe)."""
    text = re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f]", " ", text)
    if not text.strip():
        return None
    parser = getattr(_plain_parsers, "parser", None)
    if parser is None:
        parser = _plain_parsers.parser = etree.HTMLParser(
            remove_comments=True, remove_pis=True, no_network=True, recover=True,
            huge_tree=False)
    try:
        return etree.fromstring(text, parser)  # None for an empty document, as lxml.html
    except (etree.ParserError, ValueError) as exc:
        log.debug("unparseable HTML: %s", exc)
        return None


def _context_words(walk: _Walk, block: int, start: int, end: int, window: int) -> list[str]:
    """Context of a link: ±window words around words[start:end], within its block element."""
    lo = start
    while lo > 0 and start - lo < window and walk.word_block[lo - 1] == block:
        lo -= 1
    hi = end
    while hi < len(walk.words) and hi - end < window and walk.word_block[hi] == block:
        hi += 1
    return walk.words[lo:hi]


class _RootedResolver:
    """`_resolve(href, base)`, remembered across pages for root-relative hrefs ("/a/b").

    urljoin of a reference whose path starts with one "/" uses only the base's scheme and
    host, so its answer on one page of a site is its answer on every page; a site's pages
    link to the same few thousand paths over and over. Other hrefs are resolved each time."""

    _known: ClassVar[dict[tuple[str, str], str | None]] = {}
    _MAX_KNOWN: ClassVar[int] = 50_000

    def __init__(self, base: str) -> None:
        self.base = base
        try:
            parts = urlsplit(base)
            self.origin: str | None = f"{parts.scheme}://{parts.netloc}/"
        except ValueError:
            self.origin = None

    def __call__(self, href: str) -> str | None:
        stripped = href.strip()
        if self.origin is None or not stripped.startswith("/") or stripped.startswith("//"):
            return _resolve(href, self.base)
        key = (self.origin, stripped)
        known = self._known
        if key not in known:
            if len(known) >= self._MAX_KNOWN:
                known.clear()
            known[key] = _resolve(stripped, self.origin)
        return known[key]


def link_context(doc_html: bytes | str, target_url: str, *, page_url: str = "",
                 context_words: int = CONTEXT_WORDS) -> Link | None:
    """The link to `target_url` in a linking page: anchor text and words around it.

    When the page links to the target several times, the link with the most informative
    anchor (the longest) is returned. `page_url` resolves relative links.
    """
    text = decode_html(doc_html)
    root = _parse_tree(text)
    if root is None:
        return None
    base = _base_url(root, page_url or target_url)
    links = [link for link in _links(_walk(root), base, context_words)
             if same_url(link.url, target_url)]
    if not links:
        return None
    return max(links, key=lambda link: (len(link.anchor), len(link.context)))


# An error status code (in a short page), and one that is a whole title segment ("404",
# "Page 404", "HTTP 410 error").
_ERROR_STATUS = re.compile(r"\b(?:404|410)\b")
_ERROR_SEGMENT = re.compile(
    r"(?:(?:page|error|http|status|code|fehler|erreur)\s*)?(?:404|410)(?:\s*error)?", re.I)
# What separates a title's segments ("404 | Example News", "Example – 404").
_TITLE_SEGMENTS = re.compile(r"\s+[|\-–—:·•»]\s+|\s*[|–—·•»]\s*")


def title_says_error(title: str) -> bool:
    """Not-found wording in a title, or an error code that is a whole segment of it ("404",
    "404 | Example News", "Oops – 410"). A code inside a name is not one: "PEP 404 – Python
    2.8 Un-release Schedule", "Peugeot 404 for sale" are pages (#27: a moved PEP was taken
    for a not-found page by its number)."""
    if _NOT_FOUND.search(title):
        return True
    return any(_ERROR_SEGMENT.fullmatch(segment.strip(" .!"))
               for segment in _TITLE_SEGMENTS.split(title))


def looks_like_error_page(document: Document) -> bool:
    """Soft-404 evidence in content: not-found wording (or a lone error code) in the title,
    or not-found wording or an error code in a short page."""
    if title_says_error(document.title) or title_says_error(document.raw_title):
        return True
    words = document.text.split()
    start = " ".join(words[:120])
    return len(words) < 120 and bool(_NOT_FOUND.search(start) or _ERROR_STATUS.search(start))


# A listing item's link text is a headline: a few words at least (menu items are shorter).
LISTING_ANCHOR_WORDS = 3


@dataclass(frozen=True)
class LinkShare:
    """How much of a page's main text is the text of its own links: `share` (0–1) of the
    main text's words stand in the `items` distinct link texts (of LISTING_ANCHOR_WORDS words
    or more) that the main text repeats."""

    share: float
    items: int


def link_share(text: str, links: list[Link]) -> LinkShare:
    """The share of a page's main text (`Document.text`) made of its links' texts (`links`
    as extract_links finds them). A tag, section or category page, a roundup of links, is
    mostly headlines that link elsewhere; an article is mostly running text. Structure
    only: no word lists, no URL shapes."""
    words = len(text.split())
    if not words:
        return LinkShare(0.0, 0)
    seen: set[str] = set()
    linked = 0
    for link in links:
        anchor = " ".join(link.anchor.split())
        size = len(anchor.split())
        if size >= LISTING_ANCHOR_WORDS and anchor not in seen and anchor in text:
            seen.add(anchor)
            linked += size
    return LinkShare(min(1.0, linked / words), len(seen))


def is_content_page(document: Document, min_words: int = 50) -> bool:
    """Enough text for a lexical signature (Klein & Nelson dismissed pages under 50 words)."""
    return len(document.text.split()) >= min_words


__all__ = [
    "CONTEXT_WORDS", "MAX_HTML_BYTES", "LinkShare", "decode_html", "extract_links",
    "is_content_page", "link_context", "link_share", "looks_like_error_page", "main_text",
    "parse_document", "split_title",
]

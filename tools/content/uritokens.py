"""The one URL tokeniser (pure functions).

Two families, one splitter of words underneath (`word_tokens`, `split_concatenated`):

- **word tokens of a URL's path and query** (`path_tokens`, `slug_words`), for everything
  that compares or searches by URL words: URL similarity in ranking (tools.content.similarity), the
  site/CDX engines' overlap ranking (tools.engines.overlap), and the URL terms of the
  evidence (tools.content.terms.url_words);
- **the paper's features** for classifying a page by its address alone (below).

The paper's three methods are Baykan et al.'s, as used by the "lost URI" recommender (seed 004,
§4.2.1, Table 5):

- **tokens** — lower-case, split on every non-letter, drop ``http``/``https`` and every token
  of two characters or fewer;
- **all-grams from tokens** — the tokens above, each turned into its 4…8-grams (a token
  shorter than 4 characters is kept whole, as the paper's Table 5 keeps ``odu`` and ``edu``);
- **all-grams from the URI** — punctuation (and, optionally, digits) removed from the whole
  URI, then the 4…8-grams of what remains, grams crossing word boundaries included.

Options follow the paper's Table 6: drop the top-level domain (public suffix, so ``co.uk``
goes whole), drop digits, drop English stop words. Our addition: compound host labels
(``mickeymantlebaseballcards``) can be split into words with wordninja, which the paper
used for its dictionary analysis (§6).

Canonicalisation before tokenising, as SURT does for the paper's data: scheme, a leading
``www`` label, user-info, port and fragment are dropped; punycode labels are decoded to
Unicode. Input is bounded (``MAX_URI_CHARS``) so a 4 KB URL costs no more than a long one.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import re
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Literal
from urllib.parse import unquote, urlsplit

from pagetrail.tools.errors import InvalidURL

log = logging.getLogger(__name__)
Method = Literal["tokens", "allgrams_tokens", "allgrams_uri"]
METHODS: tuple[Method, ...] = ("tokens", "allgrams_tokens", "allgrams_uri")

MIN_GRAM = 4
MAX_GRAM = 8
# Features come from at most this many characters of host + path + query: beyond that a URL is
# noise (session ids, tracking blobs) and only costs time.
MAX_URI_CHARS = 1024

_LETTER_RUN = re.compile(r"[^\W\d_]+")  # Unicode letters only
_LETTER_OR_DIGIT_RUN = re.compile(r"[^\W_]+")
_SCHEME_TOKENS = frozenset({"http", "https"})

# NLTK's English stop-word list (the paper's choice, §4.2.1), words of 3+ letters only since
# shorter tokens are dropped anyway.
_STOP_WORDS_TEXT = """
    about above after again against ain all and any are aren arent because been before being
    below between both but can couldn couldnt did didn didnt does doesn doesnt doing don dont
    down during each few for from further had hadn hadnt has hasn hasnt have haven havent having
    her here hers herself him himself his how into isn isnt its itself just mightn mightnt more
    most mustn mustnt myself needn neednt nor not now off once only other our ours ourselves
    out over own same shan shant she shes should shouldn shouldnt shouldve some such than that
    thatll the their theirs them themselves then there these they this those through too under
    until very was wasn wasnt were weren werent what when where which while who whom why will
    with won wont wouldn wouldnt you youd youll your youre yours yourself yourselves youve
    """
STOP_WORDS: frozenset[str] = frozenset(_STOP_WORDS_TEXT.split())


@dataclass(frozen=True)
class TokenOptions:
    """One tokenisation variant (a row of the paper's Table 6)."""

    method: Method = "allgrams_uri"
    drop_tld: bool = True
    drop_digits: bool = True
    drop_stopwords: bool = False
    split_compounds: bool = False
    use_path: bool = True  # False: the host alone (see classify: training data paths)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> TokenOptions:
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        options = cls(**known)  # type: ignore[arg-type]
        if options.method not in METHODS:
            raise ValueError(f"unknown tokenisation method {options.method!r}")
        return options


# The paper's twelve variants (Table 6) plus compound splitting on the token methods.
VARIANTS: dict[str, TokenOptions] = {}
for _method in METHODS:
    VARIANTS[f"{_method}"] = TokenOptions(_method, drop_tld=False, drop_digits=False)
    VARIANTS[f"{_method}-tld"] = TokenOptions(_method, drop_tld=True, drop_digits=False)
    VARIANTS[f"{_method}-tld-digits"] = TokenOptions(_method, drop_tld=True, drop_digits=True)
    VARIANTS[f"{_method}-tld-stop"] = TokenOptions(
        _method, drop_tld=True, drop_digits=False, drop_stopwords=True
    )
VARIANTS["tokens-tld-digits+split"] = TokenOptions(
    "tokens", drop_tld=True, drop_digits=True, split_compounds=True
)
VARIANTS["allgrams_tokens-tld-digits+split"] = TokenOptions(
    "allgrams_tokens", drop_tld=True, drop_digits=True, split_compounds=True
)
# The paper's best (all-grams from the URI without TLD and digits, F1 0.59).
PAPER_VARIANT = "allgrams_uri-tld-digits"


@dataclass(frozen=True)
class UriParts:
    """A URI cut where tokenisation needs it. `host_labels` excludes the public suffix."""

    host_labels: tuple[str, ...]
    suffix: str  # public suffix ("edu", "co.uk"), "" for IP addresses and bare names
    rest: str  # path + query, percent-decoded, bounded
    is_ip: bool


def split_uri(uri: str) -> UriParts:
    """Canonicalise and cut a URI; a bare ``host/path`` is read as ``http://host/path``."""
    if not isinstance(uri, str) or not uri.strip():
        raise InvalidURL("empty URL")
    text = uri.strip()[: MAX_URI_CHARS * 4]
    if "://" not in text[:12]:
        text = "http://" + text.lstrip("/")
    try:
        parts = urlsplit(text)
        host = (parts.hostname or "").rstrip(".")
    except ValueError as exc:
        raise InvalidURL(f"malformed URL: {exc}", url=uri[:200]) from exc
    if not host:
        raise InvalidURL("URL has no host", url=uri[:200])
    rest = unquote(parts.path + ("?" + parts.query if parts.query else ""))[:MAX_URI_CHARS]
    if _is_ip(host):
        return UriParts((), "", rest, True)
    host = _decode_punycode(host.lower())
    labels = [label for label in host.split(".") if label]
    if labels and labels[0] == "www":
        labels = labels[1:]
    suffix = public_suffix(".".join(labels))
    n_suffix = suffix.count(".") + 1 if suffix else 0
    if n_suffix >= len(labels):  # the host is a suffix itself ("localhost", "co.uk"): keep it
        return UriParts(tuple(labels), "", rest, False)
    return UriParts(tuple(labels[: len(labels) - n_suffix]), suffix, rest, False)


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def _decode_punycode(host: str) -> str:
    if "xn--" not in host:
        return host
    labels = []
    for label in host.split("."):
        if label.startswith("xn--"):
            # Undecodable punycode keeps its ASCII form: it still tokenises.
            with contextlib.suppress(UnicodeError):
                label = label.encode("ascii").decode("idna")
        labels.append(label)
    return ".".join(labels)


def site_name(host: str) -> str:
    """The label a site is named by (`www.spiegel.de` → `spiegel`, `www.bbc.co.uk` → `bbc`):
    the one before the public suffix."""
    suffix = public_suffix(host)
    stem = host.removesuffix(f".{suffix}") if suffix else host
    return stem.rsplit(".", 1)[-1]


def registered_domain(host: str) -> str:
    """The name under which a site's hosts are registered (`health.wmn.de` → `wmn.de`,
    `news.bbc.co.uk` → `bbc.co.uk`): its site name and public suffix; the host itself when
    no suffix is known (an IP address, a bare name)."""
    host = host.lower().rstrip(".")
    suffix = public_suffix(host)
    return f"{site_name(host)}.{suffix}" if suffix else host


def carries_site_name(dead_host: str, host: str, min_chars: int) -> bool:
    """`host` is named after the dead one's site (`spiegel.de` → `spiegelhq.de`): a home the
    site may have moved to that no variant rule guesses. Names shorter than `min_chars` are
    too common to tell."""
    name = site_name(dead_host)
    return len(name) >= min_chars and name in site_name(host)


@lru_cache(maxsize=65536)
def public_suffix(host: str) -> str:
    """The ICANN public suffix of `host` ("edu", "co.uk"); "" if none is known."""
    from tld import get_tld
    from tld.exceptions import TldImproperlyConfigured, TldIOError

    try:
        found = get_tld(host, fix_protocol=True, as_object=True, fail_silently=True,
                        search_private=False)
    except (TldIOError, TldImproperlyConfigured):  # its suffix list unreadable
        log.warning("public suffix list unreadable; using the last label of %s", host)
        found = None
    if found is not None:
        return str(found.tld)
    labels = host.split(".")
    return labels[-1] if len(labels) > 1 and labels[-1].isalpha() else ""


def uri_text(uri: str, options: TokenOptions) -> str:
    """The URI as tokenisation sees it: host (without suffix if asked), suffix, path."""
    parts = split_uri(uri)
    pieces = list(parts.host_labels)
    if parts.suffix and not options.drop_tld:
        pieces.append(parts.suffix)
    text = ".".join(pieces)
    if options.use_path and parts.rest:
        text += parts.rest
    return text.lower()


@lru_cache(maxsize=131072)
def split_compound(word: str) -> tuple[str, ...]:
    """Words of a compound (``baseballcards`` → baseball, cards); () if it is not one."""
    parts = split_concatenated(word)
    return parts if len(parts) >= 2 else ()


# ---------------------------------------------------------------- word tokens of URLs

# A lower-case letter then an upper-case one (ASCII and Latin-1 letters: camelCase is a
# programmers' habit, rare in other scripts).
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-zß-öø-ÿ])(?=[A-ZÀ-ÖØ-Þ])")
_WORD_RUN = re.compile(r"[^\W_]+")  # letters and digits of any script
_LETTERS_OR_DIGITS = re.compile(r"[^\W\d_]+|\d+")
# A page's file extension names its server software, not its subject.
FILE_EXTENSION = re.compile(
    r"\.(?:s?html?|xhtml|php\d?|aspx?|jsp|cgi|cfm|pl|do|action)$", re.IGNORECASE)
_QUERY_SPLIT = re.compile(r"[&=;]")
QueryPart = Literal["all", "values"]


@lru_cache(maxsize=100_000)
def _zipf(word: str, lang: str) -> float:
    import wordfreq

    return wordfreq.zipf_frequency(word, lang)


@lru_cache(maxsize=1)
def _wordfreq_languages() -> frozenset[str]:
    import wordfreq

    return frozenset(wordfreq.available_languages())


@lru_cache(maxsize=65_536)
def split_concatenated(token: str, lang: str = "en") -> tuple[str, ...]:
    """'solarfarms' → ('solar', 'farms') (wordninja), only when the token is not a word;
    else (token,). The one splitter of concatenated words in URLs and queries.

    Accepted only if every part is at least three letters long (or a very common two-letter
    word) and a known word, so that unknown names ('stunnel' → 's', 'tunnel') stay whole.
    """
    if len(token) < 6 or not token.isalpha() or not token.isascii():
        return (token,)
    if _zipf(token, "en") >= 2.5:
        return (token,)
    if lang != "en" and lang in _wordfreq_languages() and _zipf(token, lang) >= 2.5:
        return (token,)  # a word of the page's language ('bunten'), not two English ones
    import wordninja

    parts = [p.lower() for p in wordninja.split(token)]
    if len(parts) < 2:
        return (token,)
    if all(len(p) >= 3 or (len(p) == 2 and _zipf(p, "en") >= 5.0) for p in parts) \
            and all(_zipf(p, "en") >= 2.5 for p in parts):
        return tuple(parts)
    return (token,)


def word_tokens(text: str, *, split_digits: bool = False, split_compounds: bool = False,
                lang: str = "en") -> list[str]:
    """Lower-case word tokens of free text or a URL part, in order.

    Split at every non-alphanumeric character (any script) and at camelCase boundaries;
    with `split_digits` also between letters and digits ('mp3' → mp, 3); with
    `split_compounds` a concatenated word is followed by its parts ('solarfarms',
    'solar', 'farms')."""
    out: list[str] = []
    for word in _WORD_RUN.findall(_CAMEL_BOUNDARY.sub(" ", text).lower()):
        for piece in (_LETTERS_OR_DIGITS.findall(word) if split_digits else (word,)):
            out.append(piece)
            if split_compounds:
                parts = split_concatenated(piece, lang)
                if len(parts) > 1:
                    out.extend(parts)
    return out


def url_chunks(url: str, *, query: QueryPart = "all") -> list[str]:
    """A URL's path (its file extension dropped) and query, percent-decoded: the parts that
    name a page. The host is left out: it is the same for all of a site's pages."""
    try:
        parts = urlsplit(url[: MAX_URI_CHARS * 4])
    except ValueError:
        return []
    chunks = [FILE_EXTENSION.sub("", unquote(parts.path))]
    if parts.query:
        if query == "values":
            chunks.extend(unquote(v) for v in _QUERY_SPLIT.split(parts.query)[1::2])
        else:
            chunks.append(unquote(parts.query))
    return chunks


def path_tokens(url: str, *, query: QueryPart = "all", split_digits: bool = False,
                split_compounds: bool = False, lang: str = "en") -> list[str]:
    """Word tokens (`word_tokens`) of a URL's path and query, in order."""
    return [token for chunk in url_chunks(url, query=query)
            for token in word_tokens(chunk, split_digits=split_digits,
                                     split_compounds=split_compounds, lang=lang)]


def slug_words(url: str, stop: frozenset[str] = frozenset()) -> list[str]:
    """Letter tokens (two letters or more, not in `stop`) of the last path segment that has
    any (a page's slug), file extension dropped: 'a/solar-farms.html' → solar, farms."""
    try:
        path = unquote(urlsplit(url[: MAX_URI_CHARS * 4]).path)
    except ValueError:
        return []
    for segment in reversed([s for s in path.split("/") if s]):
        words = [t for t in word_tokens(FILE_EXTENSION.sub("", segment), split_digits=True)
                 if not t.isdigit() and len(t) >= 2 and t not in stop]
        if words:
            return words
    return []


# ---------------------------------------------------------------- the paper's features


def uri_tokens(uri: str, options: TokenOptions | None = None) -> list[str]:
    """The paper's "tokens": split on non-letters, no http(s), nothing of ≤ 2 characters."""
    options = options or TokenOptions("tokens", drop_tld=False, drop_digits=False)
    text = uri_text(uri, options)
    if options.drop_digits:
        # Removing numbers *before* splitting joins the letters around them (mp3player →
        # mpplayer); without this option digits are delimiters like any non-letter.
        text = re.sub(r"\d+", "", text)
    tokens: list[str] = []
    for token in _LETTER_RUN.findall(text):
        if len(token) <= 2 or token in _SCHEME_TOKENS:
            continue
        if options.drop_stopwords and token in STOP_WORDS:
            continue
        tokens.append(token)
        if options.split_compounds:
            tokens.extend(split_compound(token))
    return tokens


def all_grams(text: str, lo: int = MIN_GRAM, hi: int = MAX_GRAM) -> list[str]:
    """Every n-gram of `text` for lo ≤ n ≤ hi, shortest first."""
    return [text[i : i + n] for n in range(lo, hi + 1) for i in range(len(text) - n + 1)]


def allgrams_from_tokens(tokens: list[str]) -> list[str]:
    """4…8-grams of each token; a token shorter than 4 stays whole (Table 5)."""
    grams: list[str] = []
    for token in tokens:
        grams.extend(all_grams(token) if len(token) >= MIN_GRAM else [token])
    return grams


def allgrams_from_uri(uri: str, options: TokenOptions | None = None) -> list[str]:
    """4…8-grams of the URI with punctuation (and, as asked, digits and stop words) removed."""
    options = options or TokenOptions("allgrams_uri", drop_tld=False, drop_digits=True)
    text = uri_text(uri, options)
    runs = (_LETTER_RUN if options.drop_digits else _LETTER_OR_DIGIT_RUN).findall(text)
    if options.drop_stopwords:
        runs = [run for run in runs if run not in STOP_WORDS]
    joined = "".join(run for run in runs if run not in _SCHEME_TOKENS)
    return all_grams(joined)


def features(uri: str, options: TokenOptions) -> list[str]:
    """The classifier's features of `uri` under one variant."""
    if options.method == "allgrams_uri":
        return allgrams_from_uri(uri, options)
    tokens = uri_tokens(uri, options)
    if options.method == "allgrams_tokens":
        return allgrams_from_tokens(tokens)
    return tokens


def similarity_tokens(uri: str) -> frozenset[str]:
    """Tokens for URI similarity (ranking): paper tokens with the TLD, compounds split."""
    return frozenset(
        uri_tokens(uri, TokenOptions("tokens", drop_tld=False, drop_digits=False,
                                     split_compounds=True))
    )

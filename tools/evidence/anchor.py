"""Anchor-text quality (Martinez-Romo & Araujo): terms, stop anchors, named entities.

Named entities by the papers' inverse heuristic: rather than recognising entities, discard
the words found in a common-word dictionary and numbers; what is left is a (pseudo) named
entity. Our dictionary is wordfreq: a word is common when its Zipf frequency reaches
`COMMON_ZIPF` in the page language or in English. An acronym (2–6 capitals) or a word with
inner capitals or digits mixed in ('iPhone', 'CDPATH', 'MP3') counts as a name too.
An anchor of a single common word and no named entity is not enough to search on alone
(the papers recovered almost none of those).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import wordfreq

from pagetrail.tools.content.terms import _wordfreq_languages
from pagetrail.tools.content.text import stopwords, tokenize

COMMON_ZIPF = 3.5  # ~3 per million words; "minions" (3.3) is rare, "python" (3.8) common

# Anchors that say nothing about their target, several languages (compared lower-case,
# punctuation and surrounding whitespace stripped).
STOP_ANCHORS = frozenset({
    # en
    "click here", "here", "click", "link", "this link", "this", "this article", "this page",
    "this post", "read more", "more", "more info", "more information", "see more", "details",
    "learn more", "continue reading", "continue", "source", "website", "web site", "homepage",
    "home", "page", "article", "post", "url", "download", "pdf", "view", "go", "visit",
    "via", "next", "previous", "prev", "back", "top", "permalink", "full story", "full article",
    "the article", "the link", "this site", "site", "see here", "go here", "follow this link",
    "read the article", "read here", "read", "more here", "original", "source link",
    # de
    "hier", "mehr", "weiter", "weiterlesen", "mehr lesen", "hier klicken", "klicken sie hier",
    "quelle", "dieser artikel", "diesen artikel", "artikel", "seite", "diese seite",
    "mehr dazu", "mehr infos", "mehr informationen", "zum artikel", "weiter lesen",
    "hier lesen", "zur seite", "webseite", "zurück",
    # fr
    "ici", "cliquez ici", "lien", "ce lien", "plus", "lire la suite", "en savoir plus",
    "suite", "cet article", "voir", "la suite",
    # es / it / pt / nl
    "aquí", "aqui", "haga clic aquí", "clic aquí", "enlace", "leer más", "más", "ver más",
    "este artículo", "qui", "clicca qui", "leggi tutto", "di più", "continua", "questo articolo",
    "clique aqui", "leia mais", "saiba mais", "este artigo", "hier klikken", "klik hier",
    "lees meer", "meer", "dit artikel",
})
_PUNCT_EDGES = re.compile(r"^[\W_]+|[\W_]+$", re.UNICODE)
_URLISH = re.compile(r"^(?:https?://|www\.)\S+$|^[\w-]+(?:\.[\w-]+)+(?:/\S*)?$", re.I)
_NUMBER = re.compile(r"^[\d.,:/%+-]+$")
_ACRONYM = re.compile(r"^[A-Z][A-Z0-9&]{1,5}$")
_MIXED = re.compile(r"^(?=.*[a-zA-Z])(?:[a-z]+[A-Z]|.*\d)")


@dataclass(frozen=True)
class AnchorInfo:
    terms: list[str] = field(default_factory=list)  # lower-case, stop words removed
    is_stop_anchor: bool = False
    named_entities: list[str] = field(default_factory=list)  # as written in the anchor
    usable_alone: bool = False  # worth a query on its own (without a memento to verify)


def normalize_anchor(anchor: str) -> str:
    return _PUNCT_EDGES.sub("", " ".join((anchor or "").split()).lower())


def is_stop_anchor(anchor: str) -> bool:
    """Anchors that describe nothing: 'click here', 'mehr', a bare URL, a number, …"""
    text = " ".join((anchor or "").split())
    norm = normalize_anchor(text)
    if not norm or norm in STOP_ANCHORS:
        return True
    if _URLISH.match(text) or _NUMBER.match(norm):
        return True
    return len(norm) < 2


def zipf(word: str, lang: str) -> float:
    lang = lang if lang in _wordfreq_languages() else "en"
    return wordfreq.zipf_frequency(word, lang)


def is_common_word(word: str, lang: str = "en") -> bool:
    lower = word.lower()
    return zipf(lower, lang) >= COMMON_ZIPF or zipf(lower, "en") >= COMMON_ZIPF


def is_named_entity(word: str, lang: str = "en") -> bool:
    """Pseudo named entity: not a number and not a common word (or an acronym/mixed token)."""
    word = _PUNCT_EDGES.sub("", word)
    if len(word) < 2 or _NUMBER.match(word):
        return False
    if word.lower() in stopwords(lang) or word.lower() in stopwords("en"):
        return False
    if _ACRONYM.match(word) or _MIXED.match(word):
        return True
    return not is_common_word(word, lang)


def anchor_terms(anchor: str, lang: str = "en") -> list[str]:
    stop = stopwords(lang) | stopwords("en")
    return [t for t in tokenize(anchor, lang) if t not in stop]


def anchor_info(anchor: str, lang: str = "en") -> AnchorInfo:
    lang = (lang or "en").split("-")[0].lower()
    stop_anchor = is_stop_anchor(anchor)
    terms = [] if stop_anchor else anchor_terms(anchor, lang)
    entities: list[str] = []
    if not stop_anchor:
        for raw in (anchor or "").split():
            word = _PUNCT_EDGES.sub("", raw)
            if word and is_named_entity(word, lang) and word not in entities:
                entities.append(word)
    usable = not stop_anchor and bool(terms) and (len(terms) > 1 or bool(entities))
    return AnchorInfo(terms=terms, is_stop_anchor=stop_anchor, named_entities=entities,
                      usable_alone=usable)

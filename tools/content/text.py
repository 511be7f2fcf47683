"""Tokens, stop words and cheap language guessing (pure functions, shared by every stage).

Stop-word lists come from jusText (100 languages, a trafilatura dependency); tokenisation
from wordfreq (Unicode-aware, handles CJK). No stemming, as in Klein & Nelson.

Both are imported on first use (≈ 0.3 s with ftfy, langcodes and lxml.html): many importers
of this module (document parsing, a link scan) often never tokenize. Importing wordfreq
from a function rather than at module level also keeps it out of deep import chains: it
locates its data with `inspect.stack()`, which reads the source of every frame on the stack
(at the bottom of a long chain of imports that cost ~0.3 s; from a function, ~0.2 s).
"""

from __future__ import annotations

import re
from functools import lru_cache
from types import ModuleType

# ISO 639-1 → jusText stop-list name, for the languages we guess between.
LANGUAGES = {
    "en": "English", "de": "German", "fr": "French", "es": "Spanish", "it": "Italian",
    "pt": "Portuguese", "nl": "Dutch", "pl": "Polish", "ru": "Russian", "sv": "Swedish",
    "da": "Danish", "no": "Norwegian_Bokmal", "fi": "Finnish", "cs": "Czech",
    "tr": "Turkish", "hu": "Hungarian", "ro": "Romanian", "uk": "Ukrainian",
}
_WORD = re.compile(r"\w", re.UNICODE)


@lru_cache(maxsize=1)
def _wordfreq() -> ModuleType:
    import wordfreq

    return wordfreq


@lru_cache(maxsize=64)
def stopwords(lang: str) -> frozenset[str]:
    name = LANGUAGES.get(lang)
    words: set[str] = set()
    if name:
        import justext

        try:
            words = {w.lower() for w in justext.get_stoplist(name)}
        except (ValueError, KeyError):
            words = set()
    return frozenset(words)


@lru_cache(maxsize=1)
def all_stopwords() -> frozenset[str]:
    merged: set[str] = set()
    for lang in LANGUAGES:
        merged |= stopwords(lang)
    return frozenset(merged)


def guess_language(text: str, hint: str = "") -> str:
    """Language with the most stop words in `text` (ties: the hint, then English)."""
    hint = (hint or "").split("-")[0].lower()
    tokens = _wordfreq().tokenize(text[:20000], "en")
    if not tokens:
        return hint or "en"
    best, best_count = hint or "en", 0
    for lang in LANGUAGES:
        sw = stopwords(lang)
        count = sum(1 for t in tokens if t in sw)
        if count > best_count or (count == best_count and lang == hint):
            best, best_count = lang, count
    if best_count < 3 and hint:
        return hint
    return best


def tokenize(text: str, lang: str = "en") -> list[str]:
    """Lower-cased word tokens (wordfreq's Unicode tokenizer), punctuation dropped."""
    return [t for t in _wordfreq().tokenize(text, lang or "en") if _WORD.search(t)]


def content_terms(text: str, lang: str = "en", *, min_len: int = 2) -> list[str]:
    """Tokens with stop words, numbers and very short tokens removed (signature terms)."""
    sw = stopwords(lang) | stopwords("en")
    return [
        t for t in tokenize(text, lang)
        if len(t) >= min_len and t not in sw and not t.replace(".", "").replace(",", "").isdigit()
    ]

"""Lexical signatures of a document (Klein & Nelson) and its KLD terms (Martinez-Romo & Araujo).

Pure: a Document and a Background in, a Signature out. TF-IDF with TF smoothed as
0.4 + 0.6·tf/tf_max, IDF from the background, no stemming, stop words removed; LS5 and LS7
are the top 5 and 7 terms. KLD terms rank the same tokens against the background's
language model. The title is included in the text: it is part of the page's words.
"""

from __future__ import annotations

from pagetrail.tools.content.terms import (
    Background,
    WordfreqBackground,
    kld_terms,
    text_terms,
    tfidf_terms,
    url_terms,
)
from pagetrail.tools.models import Document, Signature

TERMS_KEPT = 20
MIN_WORDS = 50  # below this a signature is weak (Klein & Nelson skipped such pages)


def document_tokens(document: Document) -> list[str]:
    """Signature tokens of a document: title, main text, and the description when the text
    is short (a page of a few words has little else to describe it)."""
    parts = [document.title, document.text]
    if len(document.text.split()) < MIN_WORDS:
        parts.append(document.description)
    return text_terms("\n".join(p for p in parts if p), document.lang or "en")


def extract_signature(document: Document, background: Background | None = None, *,
                      k: int = TERMS_KEPT) -> Signature:
    """TF-IDF lexical signature (LS5, LS7), KLD terms and URL terms of `document`."""
    background = background or WordfreqBackground(document.lang or "en")
    tokens = document_tokens(document)
    ranked = tfidf_terms(tokens, background, k)
    words = [t.term for t in ranked]
    return Signature(
        url=document.url,
        title=document.title,
        ls5=words[:5],
        ls7=words[:7],
        terms=ranked,
        kld_terms=kld_terms(tokens, background, k),
        url_terms=[t.term for t in url_terms(document.url, lang=document.lang or "en")],
        lang=document.lang,
    )

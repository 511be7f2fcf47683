"""A page's text, and the pure measures over it.

Owns HTML → `Document` (title, main text, links with context), tokens and stop words, the
date parser every face uses, similarity measures (cosine, shingles, KLD, Dice), term
extraction (TF-IDF, KLD, URL terms), lexical signatures and URI tokens. Pure functions but
for decoding a fetched body; imports net/ and the tools/ top level.

Modules: dates, document, signature, similarity, terms, text, uritokens.
"""

from __future__ import annotations

from pagetrail._lazy import lazy_getattr

# name → defining module, imported on first use: the stages import each other's
# modules, and eager re-exports here would turn that into import cycles.
_EXPORTS: dict[str, str] = {
    "FILE_EXTENSION": "pagetrail.tools.content.uritokens",
    "ReferenceModel": "pagetrail.tools.content.similarity",
    "Smoothing": "pagetrail.tools.content.similarity",
    "TermProbability": "pagetrail.tools.content.similarity",
    "TextProfile": "pagetrail.tools.content.similarity",
    "TokenOptions": "pagetrail.tools.content.uritokens",
    "UrlFeatures": "pagetrail.tools.content.similarity",
    "VARIANTS": "pagetrail.tools.content.uritokens",
    "WordfreqBackground": "pagetrail.tools.content.terms",
    "all_grams": "pagetrail.tools.content.uritokens",
    "as_utc": "pagetrail.tools.content.dates",
    "clean_title": "pagetrail.tools.content.similarity",
    "clip": "pagetrail.tools.content.document",
    "compare_titles": "pagetrail.tools.content.similarity",
    "compare_urls": "pagetrail.tools.content.similarity",
    "content_filter": "pagetrail.tools.content.similarity",
    "content_terms": "pagetrail.tools.content.text",
    "cosine": "pagetrail.tools.content.similarity",
    "cosine_text": "pagetrail.tools.content.similarity",
    "dice": "pagetrail.tools.content.similarity",
    "extract_links": "pagetrail.tools.content.document",
    "extract_signature": "pagetrail.tools.content.signature",
    "fast_tokens": "pagetrail.tools.content.similarity",
    "features": "pagetrail.tools.content.uritokens",
    "frequency_terms": "pagetrail.tools.content.terms",
    "guess_language": "pagetrail.tools.content.text",
    "jaccard": "pagetrail.tools.content.similarity",
    "kld_terms": "pagetrail.tools.content.terms",
    "link_context": "pagetrail.tools.content.document",
    "looks_like_error_page": "pagetrail.tools.content.document",
    "norm": "pagetrail.tools.content.similarity",
    "parse_date": "pagetrail.tools.content.dates",
    "parse_document": "pagetrail.tools.content.document",
    "parse_timestamp": "pagetrail.tools.content.dates",
    "path_tokens": "pagetrail.tools.content.uritokens",
    "profile_text": "pagetrail.tools.content.similarity",
    "resemblance": "pagetrail.tools.content.similarity",
    "shingle_resemblance": "pagetrail.tools.content.similarity",
    "shingle_set": "pagetrail.tools.content.similarity",
    "similarity_tokens": "pagetrail.tools.content.uritokens",
    "slug_tokens": "pagetrail.tools.content.similarity",
    "slug_words": "pagetrail.tools.content.uritokens",
    "split_uri": "pagetrail.tools.content.uritokens",
    "stopwords": "pagetrail.tools.content.text",
    "text_terms": "pagetrail.tools.content.terms",
    "tf_vector": "pagetrail.tools.content.similarity",
    "title_similarity": "pagetrail.tools.content.similarity",
    "title_terms": "pagetrail.tools.content.similarity",
    "tokenize": "pagetrail.tools.content.text",
    "uri_text": "pagetrail.tools.content.uritokens",
    "url_terms": "pagetrail.tools.content.terms",
    "word_tokens": "pagetrail.tools.content.uritokens",
    "wordfreq_background": "pagetrail.tools.content.similarity",
}
__all__ = [*_EXPORTS]  # each public name is listed once, in _EXPORTS


__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

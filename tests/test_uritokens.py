"""URI tokenisation against the paper's own example (seed 004, Table 5) and bad input."""

from __future__ import annotations

import pytest

from pagetrail.tools.content.uritokens import (
    PAPER_VARIANT,
    VARIANTS,
    TokenOptions,
    all_grams,
    allgrams_from_tokens,
    allgrams_from_uri,
    features,
    path_tokens,
    registered_domain,
    similarity_tokens,
    slug_words,
    split_compound,
    split_concatenated,
    split_uri,
    uri_tokens,
    word_tokens,
)
from pagetrail.tools.errors import InvalidURL

# Table 5 of the paper, verbatim.
TABLE5_ALLGRAMS_TOKENS = ["odu", "edu", "comp", "omps", "mpsc", "psci", "comps", "ompsc", "mpsci", "compsc", "ompsci", "compsci"]
TABLE5_ALLGRAMS_URI = """odue, dued, uedu, educ, duco, ucom, comp, omps, mpsc, psci,
 odued, duedu, ueduc, educo, ducom, ucomp, comps, ompsc, mpsci, oduedu, dueduc, ueduco,
 educom, ducomp, ucomps, compsc, ompsci, odueduc, dueduco, ueducom, educomp, ducomps,
 ucompsc, compsci, odueduco, dueducom, ueducomp, educomps, ducompsc, ucompsci""".replace(
    "\n", "").split(", ")


def test_tokens_of_the_paper_example():
    assert uri_tokens("https://odu.edu/compsci") == ["odu", "edu", "compsci"]


def test_allgrams_from_tokens_match_table5():
    assert allgrams_from_tokens(uri_tokens("https://odu.edu/compsci")) == TABLE5_ALLGRAMS_TOKENS


def test_allgrams_from_uri_match_table5():
    grams = allgrams_from_uri("http://odu.edu/compsci")
    assert [g.strip() for g in TABLE5_ALLGRAMS_URI] == grams
    assert len(grams) == 40


def test_all_grams_lengths():
    grams = all_grams("abcdefghi")
    assert {len(g) for g in grams} == {4, 5, 6, 7, 8}
    assert len(grams) == 6 + 5 + 4 + 3 + 2
    assert all_grams("abc") == []


def test_scheme_short_tokens_and_www_dropped():
    tokens = uri_tokens("http://www.cs.odu.edu/a/http/xy/news")
    assert tokens == ["odu", "edu", "news"]


def test_drop_tld_removes_the_whole_public_suffix():
    options = TokenOptions("tokens", drop_tld=True, drop_digits=False)
    assert uri_tokens("http://timesonline.co.uk/tol/sport/", options) == [
        "timesonline", "tol", "sport"]
    keep = TokenOptions("allgrams_uri", drop_tld=False, drop_digits=False)
    drop = TokenOptions("allgrams_uri", drop_tld=True, drop_digits=False)
    assert "ineco" in allgrams_from_uri("http://timesonline.co.uk/tol/", keep)
    assert "inetol" in allgrams_from_uri("http://timesonline.co.uk/tol/", drop)
    assert not any("co" in g and "uk" in g for g in allgrams_from_uri(
        "http://timesonline.co.uk/tol/", drop))


def test_drop_digits_joins_letters_around_numbers():
    split_on_digits = TokenOptions("tokens", drop_tld=False, drop_digits=False)
    joined = TokenOptions("tokens", drop_tld=False, drop_digits=True)
    assert uri_tokens("http://mp3player.com/", split_on_digits) == ["player", "com"]
    assert uri_tokens("http://mp3player.com/", joined) == ["mpplayer", "com"]
    assert "9" not in "".join(allgrams_from_uri("http://go911help.com/", VARIANTS[PAPER_VARIANT]))
    assert any("9" in g for g in allgrams_from_uri("http://go911help.com/", VARIANTS["allgrams_uri"]))


def test_stop_words_removed_on_request():
    options = TokenOptions("tokens", drop_tld=True, drop_digits=False, drop_stopwords=True)
    assert uri_tokens("http://theworld.org/about/the/history", options) == ["theworld", "history"]


def test_compound_host_split_into_words():
    # The paper's own example (§6): mickeymantlebaseballcards.net.
    options = TokenOptions("tokens", drop_tld=True, drop_digits=True, split_compounds=True)
    tokens = uri_tokens("http://mickeymantlebaseballcards.net", options)
    assert tokens[0] == "mickeymantlebaseballcards"
    assert {"mickey", "mantle", "baseball", "cards"} <= set(tokens)
    assert {"mickey", "baseball"} <= similarity_tokens("http://mickeymantlebaseballcards.net/")


def test_paper_variant_is_allgrams_without_tld_and_digits():
    options = VARIANTS[PAPER_VARIANT]
    assert (options.method, options.drop_tld, options.drop_digits) == ("allgrams_uri", True, True)
    grams = features("http://odu.edu/compsci", options)
    assert "odue" not in grams  # ".edu" went with the TLD
    assert grams[:3] == ["oduc", "duco", "ucom"]


def test_host_only_option_ignores_the_path():
    options = TokenOptions("tokens", drop_tld=False, drop_digits=False, use_path=False)
    assert uri_tokens("http://odu.edu/compsci?q=physics", options) == ["odu", "edu"]


# --- bad input ---------------------------------------------------------------------------


def test_ip_address_host_contributes_no_host_tokens():
    parts = split_uri("http://63.135.118.69/garden/roses")
    assert parts.is_ip and parts.host_labels == ()
    assert uri_tokens("http://63.135.118.69/garden/roses") == ["garden", "roses"]
    assert uri_tokens("http://[2001:db8::1]/") == []


def test_punycode_host_is_decoded():
    assert uri_tokens("http://xn--mnchen-3ya.de/stadtplan") == ["münchen", "stadtplan"]
    # broken punycode stays as it is instead of failing
    assert "mnchen" in uri_tokens("http://xn--mnchen-zzzzzzzz.de/")


def test_4kb_url_is_bounded():
    url = "http://example.org/" + "abcdefghij" * 410
    assert len(url) > 4096
    for options in VARIANTS.values():
        grams = features(url, options)
        assert len(grams) <= 5 * 1024 + 1024  # bounded by MAX_URI_CHARS, not by the input


@pytest.mark.parametrize("bad", ["", "   ", "http://", "http:///path-only"])
def test_no_host_is_invalid(bad):
    with pytest.raises(InvalidURL):
        uri_tokens(bad)


def test_bare_host_and_path_is_read_as_http():
    assert uri_tokens("odu.edu/compsci") == ["odu", "edu", "compsci"]


def test_options_round_trip_and_reject_unknown_method():
    options = VARIANTS["allgrams_tokens-tld-stop"]
    assert TokenOptions.from_dict(options.to_dict()) == options
    with pytest.raises(ValueError):
        TokenOptions.from_dict({"method": "bigrams"})


# ---------------------------------------------------------------- the one URL tokeniser


def test_word_tokens_split_punctuation_camel_case_and_digits_on_request():
    assert word_tokens("SolarFarms/pep-0008") == ["solar", "farms", "pep", "0008"]
    assert word_tokens("mp3player", split_digits=True) == ["mp", "3", "player"]
    assert word_tokens("Café_au-lait") == ["café", "au", "lait"]  # letters of any script


def test_path_tokens_drop_extension_and_host_and_read_query_values():
    url = "http://www.solar.example/News/solarfarms.html?id=12&q=greenEnergy"
    assert path_tokens(url) == ["news", "solarfarms", "id", "12", "q", "green", "energy"]
    assert path_tokens(url, query="values") == ["news", "solarfarms", "12", "green", "energy"]
    assert path_tokens(url, split_compounds=True)[:4] == ["news", "solarfarms", "solar", "farms"]
    assert slug_words("http://a.example/solar-farms/index.html", frozenset({"index"})) == \
        ["solar", "farms"]


def test_every_url_consumer_reads_the_same_words():
    """Ranking, the site/CDX engines and the URL terms see one tokenisation: a word that
    one of them finds in a URL (non-ASCII letters, camelCase) the others find too."""
    from pagetrail.tools.content.similarity import url_tokens as similarity_tokens_of_path
    from pagetrail.tools.content.terms import url_words
    from pagetrail.tools.engines.overlap import url_tokens as overlap_tokens

    url = "http://a.example/wiki/CaféCulture-Zürich"
    for tokens in (overlap_tokens(url), similarity_tokens_of_path(url), url_words(url)):
        assert {"café", "culture", "zürich"} <= set(tokens)


def test_split_compound_is_the_one_concatenation_splitter():
    assert split_compound("solarfarms") == split_concatenated("solarfarms") == ("solar", "farms")
    assert split_compound("baseball") == ()  # a word is not split into base + ball


def test_the_registered_domain_of_a_host():
    assert registered_domain("health.wmn.de") == registered_domain("www.wmn.de") == "wmn.de"
    assert registered_domain("news.bbc.co.uk") == "bbc.co.uk"
    assert registered_domain("bbc.co.uk") == "bbc.co.uk"
    assert registered_domain("www.bbc-online.co.uk") == "bbc-online.co.uk"
    assert registered_domain("127.0.0.1") == "127.0.0.1"  # no suffix: the host itself

"""PhraseFinder answers what one whole-word regular expression per phrase answers, in one pass."""

import re

from hypothesis import given, settings
from hypothesis import strategies as st
from zep_core.providers.phrase_finder import PhraseFinder


def by_regex(phrases, text):
    return any(re.search(rf"(?<!\w){re.escape(p)}(?!\w)", text) for p in phrases if p)


def test_a_phrase_counts_only_as_whole_words():
    finder = PhraseFinder(["berlin", "new york", "c++", "acme"])
    assert finder.in_text("i moved to berlin")
    assert finder.in_text("new york, then berlin.")
    assert finder.in_text("i write c++ at work")
    assert not finder.in_text("berliner weisse in newark")
    assert not finder.in_text("acmes and new yorker")
    assert not finder.in_text("")


def test_a_phrase_inside_a_longer_one_is_found_where_the_longer_one_fails():
    # "thing1" ends where "thing10" might go on: both are tried at every place they end
    finder = PhraseFinder(["thing10", "thing1", "ing1 x"])
    assert finder.in_text("i like thing1.")
    assert finder.in_text("i like thing10")
    assert not finder.in_text("i like thing100 and thing11")
    assert not finder.in_text("sing1 x")  # "ing1 x" starts inside a word


def test_no_phrases_finds_nothing():
    assert not PhraseFinder([]).in_text("anything at all")
    assert not PhraseFinder([""]).in_text("anything at all")


alphabet = st.sampled_from(list("ab1 .-'é_"))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.text(alphabet, min_size=1, max_size=5), max_size=6), st.text(alphabet, max_size=30))
def test_it_agrees_with_the_regular_expressions(phrases, text):
    assert PhraseFinder(phrases).in_text(text) == by_regex(phrases, text)


def test_a_long_text_and_many_phrases_are_read_in_one_pass():
    # 9,000 values and 9,000 clauses: a regex per value and clause was 81 million searches
    phrases = [f"thing{i}" for i in range(9000)]
    finder = PhraseFinder(phrases)
    clauses = [f"i like item{i}" for i in range(9000)] + ["i like thing8999"]
    assert [finder.in_text(c) for c in clauses].count(True) == 1

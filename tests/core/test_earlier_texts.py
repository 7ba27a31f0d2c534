"""Earlier: a correction finds the latest text it is about through indexes, as asking every text would."""

from hypothesis import given, settings
from hypothesis import strategies as st
from zep_core.providers.earlier import Earlier, mentions
from zep_core.providers.talk import same_kind_values


def latest_mentioning(texts, value):
    return next((i for i in range(len(texts) - 1, -1, -1) if mentions(texts[i], value)), None)


def latest_with_value(texts, right, mentioned):
    for i in range(len(texts) - 1, -1, -1):
        found = same_kind_values(texts[i], right)
        if found and (not mentioned or mentions(texts[i], found[-1])):
            return i, found[-1]
    return None


#: Words whose case folds in the ways the word index must agree with (the Kelvin sign, the long s, dotted İ, dotless ı).
words = st.sampled_from(["Rome", "rome", "ROME", "Milan", "new", "York", "New York", "I", "like", "tea", "7", "three",
                         "cat", "dog", "nurse", "Rome-ish", "Rome's", "’Rome", "ſtuff", "stuff", "Kelvin",
                         "\u212aelvin", "ıstanbul", "Istanbul", "İzmir", "izmir", "June", ",", ".", "and"])
texts = st.lists(st.lists(words, min_size=1, max_size=6).map(" ".join), min_size=0, max_size=8)
values = st.sampled_from(["Rome", "rome", "New York", "new", "7", "three", "cat", "nurse", "Milan", "stuff", "kelvin",
                          "Izmir", "İzmir", "Rome's", "istanbul"])


@settings(max_examples=300, deadline=None)
@given(texts, st.lists(st.tuples(st.integers(0, 7), st.lists(words, min_size=1, max_size=6).map(" ".join)),
                       max_size=3), values, st.booleans())
def test_the_indexes_answer_as_asking_every_text_would(added, replaced, value, mentioned):
    earlier, plain = Earlier(), []
    for text in added:
        earlier.add(text)
        plain.append(text)
        earlier.latest_with_value(value)  # index the kinds early, so that replacing must keep them right
    for i, text in replaced:
        if i < len(plain):
            earlier.replace(i, text)
            plain[i] = text
    assert earlier.latest_mentioning(value) == latest_mentioning(plain, value)
    assert earlier.latest_with_value(value, mentioned=mentioned) == latest_with_value(plain, value, mentioned)


def test_a_replaced_text_is_found_by_its_new_words_and_no_longer_by_its_old_ones():
    earlier = Earlier()
    for text in ("I live in Rome.", "I like tea.", "I have 2 cats."):
        earlier.add(text)
    earlier.replace(0, "I live in Milan.")
    assert earlier.latest_mentioning("Rome") is None
    assert earlier.latest_mentioning("milan") == 0
    assert earlier.latest_with_value("Oslo") == (0, "Milan")
    assert earlier.latest_with_value("3") == (2, "2")

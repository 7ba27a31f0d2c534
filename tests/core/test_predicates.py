"""The predicate and attribute registries: one entry each, read by every place that needs one, walked here.

Each predicate's examples state it through the offline extractor, its non-examples do not; its
synonyms name it; its template reads; the config's one-value predicates are the registry's. Each
attribute's non-examples are not read as claims about it.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from zep_core.attributes import attribute, attribute_of
from zep_core.config import DEFAULT_SINGLE_VALUED
from zep_core.models import Message
from zep_core.predicates import PREDICATES, predicate, single_valued
from zep_core.providers.base import ExtractionContext
from zep_core.providers.claims import ClaimReader
from zep_core.providers.extractive import predicate_phrase
from zep_core.providers.patterns import RULES
from zep_core.providers.rules import RuleExtractor
from zep_core.resolve import canonical_predicate

CTX = ExtractionContext("u", "s", now=datetime(2024, 5, 1, tzinfo=timezone.utc))


def said(text: str) -> set[tuple[str, str, str]]:
    facts = RuleExtractor().extract([Message(text, name="Ann")], CTX).facts
    return {(f.subject, f.predicate, f.object) for f in facts}


def test_every_rule_states_a_registered_predicate_and_the_config_reads_the_registry():
    assert {r.predicate for r in RULES} <= {p.name for p in PREDICATES}
    assert DEFAULT_SINGLE_VALUED == single_valued()
    assert all(attribute(p.attribute) is not None for p in PREDICATES if p.attribute)
    assert attribute_of("lives_in") == "home" and attribute_of("likes") is None


@pytest.mark.parametrize("entry", PREDICATES, ids=lambda p: p.name)
def test_each_predicate_reads_as_its_registry_says(entry):
    for synonym in entry.synonyms:
        assert canonical_predicate(synonym) == entry.name
        assert predicate(canonical_predicate(synonym.replace("_", " "))) is entry
    if entry.template is not None:
        assert "{" not in predicate_phrase(entry.name, "Oslo")
    for sentence, obj in entry.examples:
        assert ("Ann", entry.name, obj) in said(sentence), sentence
    for sentence in entry.non_examples:
        assert not [f for f in said(sentence) if f[:2] == ("Ann", entry.name)], sentence


@pytest.fixture(scope="module")
def reader():
    from zep_core.providers.local import LocalEmbedder

    return ClaimReader(LocalEmbedder())


#: Sentences the registry does not hold: claims that must read as their attribute, and near-topic talk that must not.
CLAIMS = {
    "home": ["we just signed a lease on a place in the old town", "finally unpacked in our new flat across the bay"],
    "work": ["I got a job as a line cook at a diner", "I've been a paralegal at a law firm for three years"],
    "study": ["I'm a sophomore studying chemistry at state", "I just finished my nursing degree"],
    "relationship": ["my boyfriend and I just moved in together and got engaged", "we split up last spring"],
    "vehicle": ["I drive a beat-up pickup truck", "I finally bought a used hatchback"],
}
NOT_CLAIMS = {
    "home": ["what neighborhoods are safe for walking at night?", "my cousin lives two hours away"],
    "work": ["can you help me write a cover letter?", "my sister works at a hospital"],
    "relationship": ["any tips for a first date?", "my parents just celebrated their anniversary"],
}


def test_claims_said_in_other_words_read_as_their_attribute_nine_times_in_ten(reader):
    # reading by meaning is a judgement, not a rule: it may miss ("we split up last spring" reads as nothing),
    # and a miss only leaves an old claim current; what it must not do is name the wrong attribute
    read = {(name, r.attribute) for name, sentences in CLAIMS.items() for r in reader.read(sentences)}
    got = [(name, a) for name, sentences in CLAIMS.items() for a in (r.attribute for r in reader.read(sentences))]
    assert sum(a == name for name, a in got) >= 0.9 * len(got), got
    assert not [(name, a) for name, a in read if a not in (name, None)], got


@pytest.mark.parametrize("name", sorted(NOT_CLAIMS))
def test_questions_and_what_others_do_are_not_claims_about_the_speaker(reader, name):
    assert name not in [r.attribute for r in reader.read(NOT_CLAIMS[name])]


def counting_reader() -> tuple[ClaimReader, list[str]]:
    """A reader on the real embedder, and the texts it embeds from now on (the examples' vectors are made first)."""
    from zep_core.providers.local import LocalEmbedder

    embedded: list[str] = []

    class Counting(LocalEmbedder):
        def embed(self, texts):
            embedded.extend(texts)
            return super().embed(texts)

    reader = ClaimReader(Counting())
    reader.read(["I live in Oslo"])  # the examples' vectors, embedded once per embedder
    embedded.clear()
    return reader, embedded


def test_only_claims_are_weighed_by_meaning_a_question_costs_no_embedding():
    reader, embedded = counting_reader()
    readings = reader.read(["any tips for a first marathon?", "what shoes should I get?", "I run 20 miles a week"])
    assert [r.act for r in readings] == ["ask", "ask", "claim"]
    assert embedded == ["I run 20 miles a week"]


def test_a_long_sentence_of_no_ones_own_is_passed_on_text_read_by_the_rules_alone():
    reader, embedded = counting_reader()
    pasted = "Make sure to always swing your arms from the shoulders as you walk, as this helps dissipate force."
    own = "I've been taking Pilates classes twice a week to improve my flexibility and my balance."
    short = "the weather was lovely all day"  # short: small talk is weighed by meaning, whoever it is of
    readings = reader.read([pasted, own, short])
    assert readings[0].act == "claim" and readings[0].attribute is None  # quoted as said, retiring nothing
    assert embedded == [own, short]

"""The canonical predicates, one entry each: what every reader of a fact's predicate reads.

An entry says what one predicate means — the kind of its value, whether it holds one value
at a time, how a fact of it reads ("lives in Paris"), the attribute of the speaker it states
(:mod:`zep_core.attributes`), the words that state it (a quote that says only those words and
the fact's own says nothing more), the names an extractor may give it ("moved_to" is
``lives_in``), whether a past mention still states it ("when I moved to Rome, …"), and example
sentences with the fact they state, and sentences that state no such fact. The config's
one-value predicates, the synonyms, the templates, the rule table's predicates and the
attributes all read it; ``tests/core/test_predicates.py`` walks it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PREDICATES", "Predicate", "predicate", "predicate_aliases", "single_valued", "stating_words", "templates"]


@dataclass(frozen=True)
class Predicate:
    """One canonical predicate.

    Attributes:
        name: the snake_case name facts carry (``lives_in``).
        value: the kind of its object (``place``, ``organization``, ``role``, ``person``,
            ``number``, ``thing``, ``activity``, ``year``, ``text``).
        one_value: a new value supersedes the old (config ``single_valued_predicates``).
        template: how a fact of it reads without its subject (``{o}`` the object, ``{a}`` its
            article, ``{v}`` an activity's verb); None reads it as its name ("job title Nurse").
        attribute: the speaker's attribute it states (:mod:`zep_core.attributes`), if any.
        words: the words that state it, which a quote may hold beside the fact's own words
            and still say nothing more.
        synonyms: other names an extractor may give it.
        narrative: a past mention ("when I moved to Rome, …") still states it.
        examples: ``(sentence said by Ann, the object the rules read)``.
        non_examples: sentences that state no fact of it.

    """

    name: str
    value: str
    one_value: bool
    template: str | None
    attribute: str | None = None
    words: tuple[str, ...] = ()
    synonyms: tuple[str, ...] = ()
    narrative: bool = False
    examples: tuple[tuple[str, str], ...] = ()
    non_examples: tuple[str, ...] = ()


PREDICATES: tuple[Predicate, ...] = (
    Predicate("lives_in", "place", True, "lives in {o}", "home",
              ("live", "lives", "lived", "living", "moved", "move", "moving", "relocated", "home", "based"),
              ("moved_to", "relocated_to", "resides_in", "lives_at", "based_in", "home_is_in"), narrative=True,
              examples=(("I live in Berlin.", "Berlin"), ("I moved to Lisbon last year.", "Lisbon")),
              non_examples=("If I moved to Rome I'd learn Italian.", "I don't live in Paris.")),
    Predicate("works_at", "organization", True, "works at {o}", "work",
              ("work", "works", "worked", "working", "job", "employed", "joined", "started", "starting", "left",
               "quit", "switched"),
              ("works_for", "employed_at", "employed_by"), narrative=True,
              examples=(("I work at Acme.", "Acme"), ("I just joined Initech.", "Initech")),
              non_examples=("Where should I work?",)),
    Predicate("works_as", "role", True, "works as {a}{o}", "work", ("work", "works", "worked", "working"),
              ("job", "occupation", "profession"),
              examples=(("I work as a nurse.", "nurse"),), non_examples=("I want to work as a pilot someday.",)),
    Predicate("job_title", "role", True, None, "work"),
    Predicate("studies_at", "organization", True, "studies at {o}", "study",
              ("study", "studies", "studied", "studying"), ("studies", "attends"),
              examples=(("I study at MIT.", "MIT"),)),
    Predicate("born_in", "place", True, "was born in {o}", None, ("born",), ("born_at",),
              examples=(("I was born in Oslo.", "Oslo"),)),
    Predicate("birth_year", "year", False, "was born in {o}", None, ("born",)),
    Predicate("is_from", "place", False, "is from {o}", None, examples=(("I'm from Kenya.", "Kenya"),)),
    Predicate("married_to", "person", True, "is married to {o}", "relationship", ("married",), ("spouse",),
              examples=(("I'm married to Tom.", "Tom"),)),
    Predicate("relationship_status", "text", True, None, "relationship"),
    Predicate("likes", "thing", False, "likes {o}", None,
              ("like", "likes", "liked", "love", "loves", "loved", "enjoy", "enjoys", "enjoyed"), ("loves", "enjoys"),
              examples=(("I love jazz.", "jazz"),), non_examples=("Do you like jazz?",)),
    Predicate("dislikes", "thing", False, "dislikes {o}", None, (), ("hates",),
              examples=(("I hate mushrooms.", "mushrooms"),)),
    Predicate("has", "thing", False, "has {a}{o}", None, ("got", "get", "own", "owns", "adopted", "bought"),
              ("owns", "has_a"), examples=(("I have a dog.", "dog"),)),
    Predicate("is_named", "text", True, "goes by the name {o}", None, ("named", "called", "name"),
              ("name", "named"), examples=(("Call me Ann.", "Ann"),)),
    Predicate("age", "number", True, "is {o} years old", "age", examples=(("I'm 34.", "34"),),
              non_examples=("My son is 5.",)),
    Predicate("does", "activity", False, "{v} {o}", None,
              ("play", "plays", "played", "playing", "practice", "doing", "go", "going", "goes", "quit", "stopped",
               "switched", "gave", "given", "up"), examples=(("I play tennis.", "tennis"),)),
    Predicate("size", "number", True, "has {o}", None,
              ("grew", "grown", "shrank", "shrunk", "dropped", "fell", "doubled", "tripled", "expanded", "increased",
               "decreased", "reached", "hit", "consists", "made", "people", "members")),
    Predicate("statement", "text", False, 'said "{o}"'),
)

_BY_NAME = {p.name: p for p in PREDICATES}


def predicate(name: str) -> Predicate | None:
    """The registry's entry for ``name``, or None."""
    return _BY_NAME.get(name)


def single_valued() -> frozenset[str]:
    """The predicates that hold one value at a time (the config's default ``single_valued_predicates``)."""
    return frozenset(p.name for p in PREDICATES if p.one_value)


def templates() -> dict[str, str]:
    """Each predicate's template, in the registry's order (the order facts of an entity are told in)."""
    return {p.name: p.template for p in PREDICATES if p.template is not None}


def predicate_aliases() -> dict[str, str]:
    """Each synonym an extractor may use -> the canonical predicate."""
    return {s: p.name for p in PREDICATES for s in p.synonyms}


def stating_words() -> frozenset[str]:
    """Every word that states a predicate: a quote that holds only these beside its facts says nothing more."""
    return frozenset(w for p in PREDICATES for w in p.words)

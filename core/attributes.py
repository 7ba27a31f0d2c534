"""What people say about themselves: the attributes a claim is about, one registry for every reader.

An attribute is what a first-person statement is a claim about — where one lives, one's work,
one's studies, a relationship, a vehicle, a diet, one's age… Each entry says whether it holds
**one value at a time** (a newer claim on it retires the older ones: "we're in Leeds now"
retires "I live in Manchester"), or many (a pet, a hobby, a thing one owns: only a claim that
ends or replaces one *by name* retires it: "we had to put Biscuit down"), and gives example
claims, which the offline extractor reads sentences against by meaning
(:class:`zep_core.providers.claims.ClaimReader`), and non-examples: sentences that touch the
topic without being a claim about it.

Nothing here reads a clock, a store or a model: the registry is data, and one test walks it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .predicates import PREDICATES

__all__ = ["ATTRIBUTES", "ONE_VALUE", "Attribute", "attribute", "attribute_of"]


@dataclass(frozen=True)
class Attribute:
    """One attribute of a speaker that claims are about.

    Attributes:
        name: the key stored with a fact (``Fact.attribute``).
        one_value: a newer claim on it retires the older ones (else only one that names them).
        examples: claims about it, as people say them (read by meaning).
        non_examples: sentences near it that are not a claim about it.

    """

    name: str
    one_value: bool
    examples: tuple[str, ...]
    non_examples: tuple[str, ...] = ()


ATTRIBUTES: tuple[Attribute, ...] = (
    Attribute("home", True, (
        "I live in a small town by the coast", "we moved to a new city last month",
        "our apartment is downtown near the river", "I just relocated for work", "we bought a house in the suburbs",
        "I'm based in the capital these days", "we rent a two-bedroom flat", "I moved back in with my parents",
        "we finally closed on our first house", "I'm living with two roommates now", "we're settled in the new place",
        "my place is a tiny studio above a bakery"), (
        "any good restaurants in the city?", "my parents live in another state", "I'm visiting a friend's house",
        "our office is downtown", "I have enough points for a free night at a hotel",
        "we stayed at a beach resort for the weekend")),
    Attribute("work", True, (
        "I work as a nurse at the hospital", "I'm a software engineer at a bank", "I got a new job as a designer",
        "I start at a new company on Monday", "I quit my job last week", "I got promoted to team lead",
        "I'm between jobs right now", "I do IT support for a school district", "I work the night shift",
        "I was laid off in the spring", "I switched careers and now I teach", "I retired last year",
        "I run my own small business"), (
        "work was busy today", "my coworker is annoying", "I need a resume template", "the office party is friday",
        "Tuesday afternoon could work well for me", "I want a morning routine that works for me",
        "I finally retired my old running shoes", "I go for a walk before work")),
    Attribute("study", True, (
        "I'm studying biology at university", "I switched my major to economics", "I graduated last spring",
        "I'm in my second year of college", "I'm taking night classes for a degree", "I dropped out of my program",
        "I'm in nursing school", "I started a master's program", "I'm a high school senior",
        "I finished my apprenticeship"), (
        "can you explain this math problem", "my exam is hard")),
    Attribute("relationship", True, (
        "my girlfriend and I broke up", "we got engaged last month", "I'm married now", "I've been seeing someone new",
        "my divorce was finalized", "I'm single again", "we've been together five years", "my husband and I separated",
        "we just got married", "we're officially a couple"), (
        "my friend is getting married", "gift ideas for my partner?")),
    Attribute("vehicle", True, (
        "I drive an old hatchback", "I traded in my car for a new one", "I sold my truck", "I bought a used minivan",
        "my car is a twelve-year-old sedan", "I lease an electric car", "I don't have a car anymore",
        "I got my driver's license", "I only have a learner's permit"), (
        "how do I change a tire", "traffic was terrible")),
    Attribute("diet", True, (
        "I'm vegetarian", "I went vegan this year", "I stopped eating meat", "I'm doing keto now",
        "I can't eat gluten", "I eat pescatarian", "I gave up sugar"), (
        "what should I cook tonight", "I had pizza for lunch")),
    Attribute("age", True, (
        "I'm 34 years old", "I just turned forty", "I'll be 30 next month", "I'm in my late twenties"), (
        "my son is five", "the house is 100 years old")),
    Attribute("pet", False, (
        "I have a cat named Luna", "we adopted a puppy", "my dog died last week", "we had to rehome our cat",
        "our hamster passed away", "I'm fostering a rescue dog", "my parrot is twenty years old"), (
        "what dog breeds are good with kids?", "my neighbor's cat")),
    Attribute("family", False, (
        "my son started school this year", "my daughter is turning ten", "my sister had a baby",
        "my mom moved in with us", "our kids are in middle school", "my grandson was born last week",
        "my brother lives abroad", "we're expecting our first child"), (
        "family dinners are fun", "ideas for a family trip")),
    Attribute("health", False, (
        "I take medication for my blood pressure", "I switched to a different antidepressant",
        "I was diagnosed with diabetes", "I'm recovering from surgery", "I broke my ankle", "I'm allergic to peanuts",
        "I'm pregnant", "I have the flu", "I got laser eye surgery", "I quit smoking"), (
        "what are healthy snacks", "how much sleep do adults need")),
    Attribute("activity", False, (
        "I go climbing twice a week", "I started running again", "I quit playing tennis", "I take guitar lessons",
        "I'm learning to paint", "I play in a soccer league", "I'm training for a marathon", "I gave up knitting"), (
        "what's a good workout", "I watched a tennis match")),
    Attribute("possession", False, (
        "I bought a new laptop", "I have an old phone with a cracked screen", "I sold my camera",
        "my bike got stolen", "I own a piano", "I got a new phone", "my old laptop went to my niece",
        "I got rid of my old couch and bought a new one"), (
        "which laptop should I buy?", "phones are expensive")),
    Attribute("money", False, (
        "my rent is 1500 a month", "I make about 60k a year", "my budget is 500 dollars", "I have 10k in savings",
        "my landlord raised the rent", "I paid off my student loans", "my credit score is 720"), (
        "how does compound interest work", "stocks are down")),
    Attribute("plan", False, (
        "I'm flying to Spain in June", "our trip is next month", "the wedding is in September",
        "my interview is on Friday", "we postponed the trip", "the event got cancelled", "I booked a cruise"), (
        "where should I travel someday", "planes are loud")),
    Attribute("preference", False, (
        "I love spicy food", "I hate running", "my favorite band is a local indie group",
        "I prefer tea over coffee", "I'm really into jazz lately", "I can't stand horror movies"), (
        "what music is popular", "recommend a movie")),
)

_BY_NAME = {a.name: a for a in ATTRIBUTES}


_BY_PREDICATE = {p.name: p.attribute for p in PREDICATES if p.attribute}
#: The attributes that hold one value at a time.
ONE_VALUE = frozenset(a.name for a in ATTRIBUTES if a.one_value)


def attribute(name: str | None) -> Attribute | None:
    """The registry's entry named ``name`` (None for None or an unknown name)."""
    return _BY_NAME.get(name) if name else None


def attribute_of(predicate: str) -> str | None:
    """The attribute a canonical predicate states (``lives_in`` → ``home``: :mod:`zep_core.predicates`), or None."""
    return _BY_PREDICATE.get(predicate)

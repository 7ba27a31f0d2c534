"""What is true now, from real chat: a corpus of chat cases and what the memory must answer.

``python -m bench.chat [--out DIR]`` runs every case on the offline defaults and prints
how many hold, by class; ``bench/results/chat.json`` keeps the figure and each failure.

Each case is one user's conversations (user and assistant turns, one or several
sessions, days apart) and checks on what the memory returns afterwards:

- ``Ask(question, has=..., lacks=...)``: the facts ``get_context`` returns for the
  question must mention every ``has`` text and none of the ``lacks`` texts (case-blind).
  A small user's whole current memory fits in the 10 facts returned, so ``lacks`` is
  "this is no longer current", and ``has`` is "this is current and found".
- ``TakenBack(text)``: every fact that mentions ``text`` is kept in history as taken
  back (``valid_until == valid_from``): a correction, never a past truth.
- ``Nothing()``: the user's memory holds no fact at all (small talk only).

The classes are those of :mod:`zep_core.providers.talk`: small talk, the assistant's
words, its echo of memory, corrections in the same and in a later conversation, ended
activities, changed numbers, quotes beside their facts, and plain changes of state as a
control. The cases are written for this corpus (not from ``../shared``); several
phrasings per class, so that a rule fitted to one sentence does not pass.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from .common import RESULTS_DIR, write_result

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Ask:
    """The facts returned for ``question`` mention each of ``has`` and none of ``lacks``."""

    question: str
    has: tuple[str, ...] = ()
    lacks: tuple[str, ...] = ()


@dataclass(frozen=True)
class TakenBack:
    """Every fact mentioning ``text`` is in history as taken back, and at least one is."""

    text: str


@dataclass(frozen=True)
class Nothing:
    """The user's memory holds no fact."""


Check = Ask | TakenBack | Nothing


@dataclass(frozen=True)
class Case:
    """One user's conversations (lists of ``(role, text)``, ``"u"`` or ``"a"``) and the checks."""

    name: str
    kind: str
    conversations: tuple[tuple[tuple[str, str], ...], ...]
    checks: tuple[Check, ...]
    user: str = "Maya"
    days_apart: int = 7


def case(name: str, kind: str, *conversations: Sequence[tuple[str, str]], checks: Sequence[Check],
         user: str = "Maya", days_apart: int = 7) -> Case:
    """A :class:`Case`, its turns written as tuples."""
    return Case(name, kind, tuple(tuple(c) for c in conversations), tuple(checks), user, days_apart)


def A(question: str, has: Sequence[str] | str = (), lacks: Sequence[str] | str = ()) -> Ask:  # noqa: N802
    """An :class:`Ask`; a single string stands for a one-item list."""
    return Ask(question, (has,) if isinstance(has, str) else tuple(has), (lacks,) if isinstance(lacks, str)
               else tuple(lacks))


CASES: tuple[Case, ...] = (
    # --- 1. small talk carries no fact --------------------------------------------------------
    case("greeting only", "small talk",
         [("u", "Hi! Nice to meet you."), ("a", "Nice to meet you too, Maya!")],
         checks=[Nothing()]),
    case("thanks and bye", "small talk",
         [("u", "Thanks so much, that was really helpful!"), ("a", "You're welcome, happy to help."),
          ("u", "Ok, bye for now."), ("a", "Bye, take care!")],
         checks=[Nothing()], user="Tom"),
    case("greeting then a fact", "small talk",
         [("u", "Hey there!"), ("a", "Hello Priya, how are you today?"), ("u", "Good thanks. I live in Lisbon."),
          ("a", "Great to hear.")],
         checks=[A("Where does Priya live?", has="Lisbon", lacks=["Hello", "Hey there", "Great to hear"])],
         user="Priya"),
    case("acknowledgements", "small talk",
         [("u", "I work at Siemens."), ("a", "Got it, thanks for telling me."), ("u", "Cool, sounds good."),
          ("a", "Sure thing!")],
         checks=[A("Where does Lena work?", has="Siemens", lacks=["Got it", "sounds good", "Sure thing"])],
         user="Lena"),
    case("good morning", "small talk",
         [("u", "Good morning!"), ("a", "Good morning, Omar! How's it going?"), ("u", "All good, thank you."),
          ("u", "I'm a nurse at St Mary's hospital.")],
         checks=[A("What does Omar do?", has="nurse", lacks=["Good morning", "All good"])], user="Omar"),
    case("congratulations", "small talk",
         [("u", "I adopted a cat called Miso."), ("a", "Congratulations! That's exciting."),
          ("u", "Haha thanks!")],
         checks=[A("Does Kenji have a pet?", has="Miso", lacks=["Congratulations", "Haha"])], user="Kenji"),
    case("see you", "small talk",
         [("u", "I'm learning Spanish these days."), ("a", "Nice!"), ("u", "See you tomorrow."),
          ("a", "See you, have a great evening!")],
         checks=[A("What is Ana learning?", has="Spanish", lacks=["See you", "great evening"])], user="Ana"),
    case("no worries", "small talk",
         [("u", "Sorry for the late reply."), ("a", "No worries at all!"), ("u", "My sister lives in Oslo.")],
         checks=[A("Where does Maya's sister live?", has="Oslo", lacks=["No worries"])]),

    # --- 2./3. the assistant's words and its echo of memory ------------------------------------
    case("echo of a stale city", "assistant echo",
         [("u", "I live in Paris.")],
         [("u", "I moved to Berlin last week.")],
         [("u", "Any tips for the weekend?"), ("a", "From what I remember, you live in Paris. You could visit "
                                                   "the Musée d'Orsay.")],
         checks=[A("Where does Maya live?", has="Berlin", lacks="Paris")]),
    case("you mentioned", "assistant echo",
         [("u", "I work at Shopify as a designer.")],
         [("u", "I left Shopify and joined Stripe.")],
         [("u", "Can you help with my CV?"), ("a", "Sure. You mentioned you work at Shopify, so let's lead with "
                                                 "that.")],
         checks=[A("Where does Maya work?", has="Stripe", lacks="Shopify")]),
    case("tag question echo", "assistant echo",
         [("u", "I have a dog named Rex.")],
         [("u", "Rex passed away last month. I got a cat called Luna.")],
         [("a", "You have a dog named Rex, right?"), ("u", "Please just help me plan the week.")],
         checks=[A("What pet does Sam have?", has="Luna")], user="Sam"),
    case("pasted context block", "assistant echo",
         [("u", "I live in Madrid.")],
         [("u", "What do you know about me?"),
          ("a", "FACTS (what is true now; dates say since when):\n- Maya lives in Madrid. (valid from 2026-03-02)")],
         checks=[A("What does the assistant know about Maya?", has="Madrid", lacks="Assistant:")]),
    case("assistant states a user fact", "assistant echo",
         [("u", "I'm a vegetarian.")],
         [("u", "What should I cook?"), ("a", "Since you're vegan, try a lentil curry.")],
         checks=[A("What does Maya eat?", has="vegetarian", lacks=["Maya is vegan", "Maya: I'm vegan"])]),
    case("as you said", "assistant echo",
         [("u", "I study at McGill.")],
         [("u", "I transferred, I study at Concordia now.")],
         [("a", "As you said, you study at McGill, so the library there is a good spot."), ("u", "Hmm ok.")],
         checks=[A("Where does Jun study?", has="Concordia", lacks="McGill")], user="Jun"),
    case("assistant's own advice is kept", "assistant words",
         [("u", "I want to get fitter."), ("a", "I recommend swimming twice a week at the community pool.")],
         checks=[A("What did the assistant recommend?", has="swimming")]),
    case("assistant names the user", "assistant echo",
         [("u", "I live in Lyon.")],
         [("u", "I've moved to Marseille.")],
         [("u", "What's the weather like?"), ("a", "Noor lives in Lyon, where it is sunny today.")],
         checks=[A("Where does Noor live?", has="Marseille", lacks="Lyon")], user="Noor"),
    case("reaction is not a fact", "assistant echo",
         [("u", "I switched to squash."), ("a", "Squash is fun!")],
         checks=[A("What sport does Maya play?", has="squash", lacks="Assistant")]),
    case("i recall you", "assistant echo",
         [("u", "I'm 31.")],
         [("u", "I turned 32 yesterday!")],
         [("a", "I recall that you're 31, happy birthday anyway!"), ("u", "Thanks.")],
         checks=[A("How old is Maya?", has="32", lacks="31")]),

    # --- 4. corrections in the same conversation ------------------------------------------------
    case("I meant X, not Y", "correction",
         [("u", "I'm moving to Vancouver next month."), ("u", "Sorry, I meant Victoria, not Vancouver.")],
         checks=[A("Where is Maya moving?", has="Victoria", lacks="Vancouver"), TakenBack("Vancouver")]),
    case("not X but Y", "correction",
         [("u", "I work at Google."), ("a", "Nice."), ("u", "Oops, not Google but Alphabet's DeepMind.")],
         checks=[A("Where does Ravi work?", has="DeepMind", lacks="Google."), TakenBack("Google")],
         user="Ravi"),
    case("I said X but I meant Y", "correction",
         [("u", "I live in Austin."), ("u", "I said Austin but I meant Houston.")],
         checks=[A("Where does Maya live?", has="Houston", lacks="Austin"), TakenBack("Austin")]),
    case("make that", "correction",
         [("u", "My team has 5 engineers."), ("u", "Make that 6.")],
         checks=[A("How big is Maya's team?", has="6", lacks="5 engineers")]),
    case("scratch that, Y", "correction",
         [("u", "I have a meeting with Dana on Friday, I work with her at Initech."),
          ("u", "Scratch that, Globex.")],
         checks=[A("Where does Maya work?", has="Globex", lacks="Initech"), TakenBack("Initech")]),
    case("scratch that, full statement", "correction",
         [("u", "I'm a teacher."), ("u", "Scratch that, I'm a librarian.")],
         checks=[A("What does Maya do?", has="librarian", lacks="teacher")]),
    case("retract only", "correction",
         [("u", "I'm getting married in June."), ("u", "Forget what I said.")],
         checks=[A("When is Maya getting married?", lacks="married")]),
    case("wait no", "correction",
         [("u", "I was born in Porto."), ("u", "Wait, no, Braga.")],
         checks=[A("Where was Maya born?", has="Braga", lacks="Porto")]),
    case("actually it's", "correction",
         [("u", "My brother lives in Leeds."), ("u", "Actually, it's Sheffield, not Leeds.")],
         checks=[A("Where does Maya's brother live?", has="Sheffield", lacks="Leeds"), TakenBack("Leeds")]),
    case("typo", "correction",
         [("u", "I work at Mircosoft."), ("u", "Typo: Microsoft, not Mircosoft.")],
         checks=[A("Where does Maya work?", has="Microsoft", lacks="Mircosoft")]),
    case("correction with assistant between", "correction",
         [("u", "I live in Bern."), ("a", "Bern is a lovely city with a great old town."),
          ("u", "My bad, I meant Basel.")],
         checks=[A("Where does Maya live?", has="Basel", lacks="Bern"), TakenBack("Bern")]),
    case("misspoke", "correction",
         [("u", "I'm 28."), ("u", "I misspoke, it's 29.")],
         checks=[A("How old is Maya?", has="29", lacks="28")]),

    # --- 4. corrections in a later conversation ---------------------------------------------------
    case("actually a cat", "later correction",
         [("u", "I just got a dog called Biscuit.")],
         [("u", "Biscuit is actually a cat.")],
         checks=[A("What pet does Maya have?", has="cat", lacks="dog"), TakenBack("dog")]),
    case("later: I meant", "later correction",
         [("u", "I live in Bristol.")],
         [("u", "Last time I said Bristol but I meant Bath.")],
         checks=[A("Where does Maya live?", has="Bath", lacks="Bristol"), TakenBack("Bristol")]),
    case("later: not X, Y", "later correction",
         [("u", "I work at Deloitte.")],
         [("u", "Sorry, correction: not Deloitte, KPMG.")],
         checks=[A("Where does Maya work?", has="KPMG", lacks="Deloitte")]),
    case("later: actually a", "later correction",
         [("u", "My son Leo is a doctor.")],
         [("u", "Leo is actually a dentist.")],
         checks=[A("What does Leo do?", has="dentist", lacks="doctor")]),
    case("later: it was", "later correction",
         [("u", "I was born in Kyoto.")],
         [("u", "I meant Osaka, not Kyoto, when I told you where I was born.")],
         checks=[A("Where was Maya born?", has="Osaka", lacks="Kyoto"), TakenBack("Kyoto")]),

    # --- 5. ended activities ----------------------------------------------------------------------
    case("stopped and switched", "ended activity",
         [("u", "I play tennis every Sunday.")],
         [("u", "I stopped playing tennis, I switched to squash.")],
         checks=[A("What sport does Maya play?", has="squash", lacks="tennis")]),
    case("quit", "ended activity",
         [("u", "I do yoga three times a week.")],
         [("u", "I quit yoga, it hurt my back.")],
         checks=[A("Does Maya do yoga?", lacks="yoga three times")]),
    case("gave up", "ended activity",
         [("u", "I play the piano in the evenings.")],
         [("u", "I gave up the piano last year.")],
         checks=[A("Does Maya play an instrument?", lacks="evenings")]),
    case("anymore", "ended activity",
         [("u", "I go running before work.")],
         [("u", "I don't go running anymore, my knee is bad.")],
         checks=[A("Does Maya run?", lacks="before work")]),
    case("switched from to", "ended activity",
         [("u", "I play football on Tuesdays.")],
         [("u", "I switched from football to basketball.")],
         checks=[A("What sport does Maya play?", has="basketball", lacks="Tuesdays")]),
    case("no longer", "ended activity",
         [("u", "I play chess online a lot.")],
         [("u", "I no longer play chess.")],
         checks=[A("Does Maya play chess?", lacks="online a lot")]),
    case("dropped", "ended activity",
         [("u", "I'm doing pilates on Mondays.")],
         [("u", "I dropped pilates.")],
         checks=[A("What does Maya do on Mondays?", lacks="Mondays")]),
    case("took up after stopping", "ended activity",
         [("u", "I've been swimming for years.")],
         [("u", "I stopped swimming and took up climbing.")],
         checks=[A("What sport does Maya do?", has="climbing", lacks="for years")]),

    # --- 6. changed numbers -----------------------------------------------------------------------
    case("team grew", "changed number",
         [("u", "My team has 4 engineers.")],
         [("u", "My team grew to 7 engineers.")],
         checks=[A("How big is Maya's team?", has="7", lacks="4 engineers")]),
    case("now has", "changed number",
         [("u", "Our family is four people.")],
         [("u", "Our family now has five people, the baby arrived!")],
         checks=[A("How big is Maya's family?", has="5", lacks="4 people")]),
    case("manage", "changed number",
         [("u", "I manage 3 people.")],
         [("u", "I now manage 8 people after the reorg.")],
         checks=[A("How many people does Maya manage?", has="8", lacks="3 people")]),
    case("shrank", "changed number",
         [("u", "My band has 6 members.")],
         [("u", "My band shrank to 4 members.")],
         checks=[A("How big is Maya's band?", has="4", lacks="6 members")]),
    case("there are now", "changed number",
         [("u", "There are 10 people on my team.")],
         [("u", "There are now 12 people on my team.")],
         checks=[A("How big is Maya's team?", has="12", lacks="10 people")]),
    case("age changes", "changed number",
         [("u", "I am 40.")],
         [("u", "I just turned 41.")],
         checks=[A("How old is Maya?", has="41", lacks="40")]),
    case("team of", "changed number",
         [("u", "I lead a team of 5.")],
         [("u", "I lead a team of 9 now.")],
         checks=[A("How big is Maya's team?", has="9", lacks="team of 5")]),
    case("company size", "changed number",
         [("u", "My company has 50 employees.")],
         [("u", "My company has grown to 80 employees.")],
         checks=[A("How big is Maya's company?", has="80", lacks="50")]),

    # --- 7. quotes beside their facts -------------------------------------------------------------
    case("one fact, one slot: city", "quote",
         [("u", "I live in Paris.")],
         checks=[A("Where does Maya live?", has="Maya lives in Paris", lacks="Maya: I live in Paris")]),
    case("one fact, one slot: job", "quote",
         [("u", "I work at Acme.")],
         checks=[A("Where does Maya work?", has="Maya works at Acme", lacks="Maya: I work at Acme")]),
    case("one fact, one slot: pet", "quote",
         [("u", "I have a dog.")],
         checks=[A("Does Maya have a pet?", has="Maya has a dog", lacks="Maya: I have a dog")]),
    case("a quote that says more stays", "quote",
         [("u", "I live in Paris near the Canal Saint-Martin.")],
         checks=[A("Where does Maya live?", has=["Paris", "Canal Saint-Martin"])]),
    case("restated city retires its quote", "quote",
         [("u", "I live in Paris with my partner Alex.")],
         [("u", "I moved to Berlin.")],
         checks=[A("Where does Maya live?", has="Berlin", lacks="Paris")]),

    # --- control: plain changes of state ------------------------------------------------------------
    case("moved", "change of state",
         [("u", "I live in Paris.")],
         [("u", "I moved to Berlin last week.")],
         checks=[A("Where does Maya live?", has="Berlin", lacks="Paris")]),
    case("changed job", "change of state",
         [("u", "I work at Shopify.")],
         [("u", "I left Shopify and joined Stripe.")],
         checks=[A("Where does Maya work?", has="Stripe", lacks="Maya works at Shopify")]),
    case("new job title", "change of state",
         [("u", "I work as a junior developer.")],
         [("u", "I got promoted, I work as a team lead now.")],
         checks=[A("What is Maya's job?", has="team lead", lacks="junior")]),
    case("relocated", "change of state",
         [("u", "I'm based in Dublin.")],
         [("u", "I relocated to Cork in May.")],
         checks=[A("Where does Maya live?", has="Cork", lacks="Dublin")]),
    case("two users stay apart", "change of state",
         [("u", "I live in Rome."), ("a", "Rome is beautiful.")],
         checks=[A("Where does Maya live?", has="Rome", lacks=["Assistant"])]),

    # --- more phrasings of each class ---------------------------------------------------------------
    case("oh wait, I meant", "correction",
         [("u", "I'm relocating to Denver in June."), ("u", "Oh wait, I meant Boulder.")],
         checks=[A("Where is Maya moving?", has="Boulder", lacks="Denver")]),
    case("correction of a number, later", "later correction",
         [("u", "My team has 8 people.")],
         [("u", "Correction: my team is 9 people, not 8.")],
         checks=[A("How big is Maya's team?", has="9", lacks="8 people")]),
    case("statement, not X", "later correction",
         [("u", "I work at Moderna.")],
         [("u", "Actually no, I work at Pfizer, not Moderna.")],
         checks=[A("Where does Maya work?", has="Pfizer", lacks="Moderna"), TakenBack("Moderna")]),
    case("relative's city, not X", "later correction",
         [("u", "My sister lives in Oslo.")],
         [("u", "Sorry, my sister lives in Bergen, not Oslo.")],
         checks=[A("Where does Maya's sister live?", has="Bergen", lacks="Oslo")]),
    case("in the same message", "correction",
         [("u", "I'm flying to Rome on Friday. No sorry, Milan.")],
         checks=[A("Where is Maya flying?", has="Milan", lacks="Rome")]),
    case("in the same message, a number", "correction",
         [("u", "I'm 45. Oops, 46.")],
         checks=[A("How old is Maya?", has="46", lacks="45")]),
    case("hmm, no, I mean", "correction",
         [("u", "My favourite band is Muse."), ("u", "Hmm, no, I mean Radiohead.")],
         checks=[A("What is Maya's favourite band?", has="Radiohead", lacks="Muse")]),
    case("quick correction", "later correction",
         [("u", "I live in Ghent.")],
         [("u", "Quick correction, I live in Bruges, not Ghent.")],
         checks=[A("Where does Maya live?", has="Bruges", lacks="Ghent")]),
    case("name, not X", "later correction",
         [("u", "My brother's name is Sam.")],
         [("u", "Sorry, my brother's name is Tom, not Sam.")],
         checks=[A("What's Maya's brother's name?", has="Tom", lacks="Sam")]),
    case("last time you said", "assistant echo",
         [("u", "I live in Paris.")],
         [("u", "I moved to Prague.")],
         [("a", "Last time you said you lived in Paris. How is it going?"), ("u", "Fine.")],
         checks=[A("Where does Maya live?", has="Prague", lacks="Paris")]),
    case("you mentioned, kept as said", "assistant echo",
         [("u", "I'm a vegetarian.")],
         [("u", "Recipe ideas?"), ("a", "You mentioned you're a vegetarian, so here is a chickpea stew.")],
         checks=[A("What does Maya eat?", has="vegetarian", lacks="Assistant: You mentioned")]),
    case("echo in a premise", "assistant echo",
         [("u", "I work at Nike.")],
         [("u", "I started a new job at Adidas.")],
         [("a", "Since you work at Nike, you get a discount on shoes, right?"), ("u", "No.")],
         checks=[A("Where does Maya work?", has="Adidas", lacks="Nike")]),
    case("based on what you told me", "assistant echo",
         [("u", "I have a cat named Mochi.")],
         [("a", "Based on what you told me, you have a cat named Mochi. Want tips for cat care?"), ("u", "Sure")],
         checks=[A("What pet does Maya have?", has="Mochi", lacks="Assistant: Based")]),
    case("assistant names the user again", "assistant echo",
         [("u", "I live in Denver.")],
         [("u", "Help me plan a trip."), ("a", "Maya lives in Denver, so flights from DEN are best.")],
         checks=[A("Where does Maya live?", has="Maya lives in Denver", lacks="Assistant: Maya lives")]),
    case("premise with an old age", "assistant echo",
         [("u", "I'm 30.")],
         [("u", "I'm 31 now.")],
         [("a", "Since you are 30, you might consider a pension plan."), ("u", "ok")],
         checks=[A("How old is Maya?", has="31", lacks="Maya is 30")]),
    case("welcome back", "small talk",
         [("u", "Hello again!"), ("a", "Welcome back, Maya!")],
         checks=[Nothing()]),
    case("good evening", "small talk",
         [("u", "Good evening!"), ("a", "Good evening! What can I do for you?")],
         checks=[Nothing()]),
    case("anytime", "small talk",
         [("u", "Thank you!"), ("a", "Anytime!"), ("u", "Have a nice day.")],
         checks=[Nothing()]),
    case("not anymore", "ended activity",
         [("u", "I play golf on weekends.")],
         [("u", "I don't play golf anymore.")],
         checks=[A("Does Maya play golf?", lacks="weekends")]),
    case("hiking anymore", "ended activity",
         [("u", "I go hiking every weekend.")],
         [("u", "I don't go hiking anymore since the injury.")],
         checks=[A("Does Maya hike?", lacks="every weekend")]),
    case("quit my job", "change of state",
         [("u", "I work at Google.")],
         [("u", "I quit my job at Google.")],
         checks=[A("Where does Maya work?", lacks="Maya works at Google")]),
    case("graduated and work", "change of state",
         [("u", "I'm a student at MIT.")],
         [("u", "I graduated and now work at IBM.")],
         checks=[A("Where does Maya work?", has="IBM")]),
    case("we're a team of", "changed number",
         [("u", "We're a team of 10.")],
         [("u", "We're now a team of 12.")],
         checks=[A("How big is Maya's team?", has="12", lacks="10")]),
    case("a relative's age", "changed number",
         [("u", "My daughter is 5.")],
         [("u", "My daughter turned 6 today.")],
         checks=[A("How old is Maya's daughter?", has="6", lacks="is 5")]),
    case("how many kids", "changed number",
         [("u", "I have 2 kids.")],
         [("u", "We just had our third baby, so now I have 3 kids.")],
         checks=[A("How many kids does Maya have?", has="3", lacks="2 kids")]),
    case("startup grew", "changed number",
         [("u", "Our startup has 15 employees.")],
         [("u", "Our startup grew to 40 employees.")],
         checks=[A("How big is Maya's startup?", has="40", lacks="15")]),
    case("one fact, one slot: a move", "quote",
         [("u", "I moved to Seattle.")],
         checks=[A("Where does Maya live?", has="Maya lives in Seattle", lacks="Maya: I moved to Seattle")]),
    case("one fact, one slot: a job", "quote",
         [("u", "I work as a nurse.")],
         checks=[A("What does Maya do?", has="Maya works as a nurse", lacks="Maya: I work as a nurse")]),

    case("age, not X, beside a city", "later correction",
         [("u", "I'm 34, and I live in Austin with my husband.")],
         [("u", "Sorry, I'm 35, not 34.")],
         checks=[A("How old is Maya?", has="35", lacks="34"), A("Where does Maya live?", has="Austin")]),
    case("a number in words", "later correction",
         [("u", "My dog Rex is three years old.")],
         [("u", "Correction: Rex is actually four.")],
         checks=[A("How old is Rex?", has="four", lacks="three")]),
    case("nothing stored to correct", "correction",
         [("u", "I'm vegan."), ("u", "Oops, I meant vegetarian.")],
         checks=[A("What is Maya's diet?", has="vegetarian", lacks="vegan")]),
    case("honeymoon, with a reply between", "correction",
         [("u", "We're heading to Crete for our honeymoon."), ("a", "Crete is gorgeous in June!"),
          ("u", "No wait, it's Rhodes, not Crete.")],
         checks=[A("Where is Maya going for the honeymoon?", has="Rhodes", lacks="Crete"), TakenBack("Crete")]),
    case("you live in X, right?", "assistant echo",
         [("u", "I live in Oakland.")],
         [("a", "You live in Oakland, right? The weather there is mild."), ("u", "yes")],
         checks=[A("Where does Maya live?", has="Maya lives in Oakland", lacks="Assistant: You live")]),
    case("good night", "small talk",
         [("u", "Good night!"), ("a", "Sleep well, Maya!")],
         checks=[Nothing()]),
    case("cheers", "small talk",
         [("u", "Cheers mate"), ("a", "No problem at all!")],
         checks=[Nothing()]),
    case("one of my cats", "changed number",
         [("u", "I have 3 cats.")],
         [("u", "One of my cats ran away, so now I have 2 cats.")],
         checks=[A("How many cats does Maya have?", has="2", lacks="3 cats")]),

    # --- the whole story, as a new user tried it ----------------------------------------------------
    case("maya's story", "story",
         [("u", "Hi! Nice to meet you."), ("a", "Nice to meet you too, Maya!"),
          ("u", "I live in Paris and I work at Shopify."), ("a", "Paris is lovely."),
          ("u", "I play tennis every Sunday."), ("u", "My team has 4 engineers.")],
         [("u", "I'm moving to Vancouver next month."), ("u", "Sorry, I meant Victoria, not Vancouver."),
          ("u", "I just got a dog called Biscuit."), ("a", "Congrats on Biscuit!")],
         [("u", "I moved to Berlin last week."), ("u", "I left Shopify and joined Stripe."),
          ("u", "Biscuit is actually a cat."), ("u", "I stopped playing tennis, I switched to squash."),
          ("u", "My team grew to 7 engineers.")],
         [("u", "Any tips for the weekend?"),
          ("a", "From what I remember, you live in Paris and work at Shopify. You could visit the Louvre.")],
         checks=[A("Where does Maya live?", has="Berlin", lacks=["Paris", "Nice to meet"]),
                 A("Where does Maya work?", has="Stripe", lacks="works at Shopify"),
                 A("What pet does Maya have?", has="cat", lacks="dog"),
                 A("What sport does Maya play?", has="squash", lacks="tennis every"),
                 A("How big is Maya's team?", has="7", lacks="4 engineers"),
                 TakenBack("Vancouver")]),
)


@dataclass
class Outcome:
    """One check's result: whether it held, and what the memory returned when it did not."""

    case: str
    kind: str
    check: str
    held: bool
    why: str = ""


@dataclass
class Report:
    """The corpus figure: checks and cases that held, by class."""

    outcomes: list[Outcome] = field(default_factory=list)

    @property
    def held(self) -> int:
        return sum(o.held for o in self.outcomes)

    def cases_held(self) -> tuple[int, int]:
        by_case: dict[str, bool] = {}
        for o in self.outcomes:
            by_case[o.case] = by_case.get(o.case, True) and o.held
        return sum(by_case.values()), len(by_case)

    def by_kind(self) -> dict[str, tuple[int, int]]:
        held, total = Counter(), Counter()
        for o in self.outcomes:
            total[o.kind] += 1
            held[o.kind] += o.held
        return {k: (held[k], total[k]) for k in total}


def ingest(memory, case: Case, user_id: str) -> None:
    """Each conversation of ``case`` as one session, ``days_apart`` days after the one before."""
    from zep_core import Message

    for n, turns in enumerate(case.conversations):
        start = T0 + timedelta(days=n * case.days_apart)
        messages = [Message(text, role="user" if role == "u" else "assistant",
                            name=case.user if role == "u" else None, timestamp=start + timedelta(minutes=i))
                    for i, (role, text) in enumerate(turns)]
        memory.conversation_end(f"chat-{n + 1}", messages, user_id=user_id)


def judge(memory, case: Case, user_id: str) -> list[Outcome]:
    """Run the checks of ``case`` on ``user_id``'s memory."""
    out = []
    for check in case.checks:
        if isinstance(check, Ask):
            facts = memory.get_context(check.question, user_id=user_id)
            text = "\n".join(f.content for f in facts).lower()
            missing = [h for h in check.has if h.lower() not in text]
            present = [x for x in check.lacks if x.lower() in text]
            why = "; ".join([*(f"missing {m!r}" for m in missing), *(f"holds {p!r}" for p in present)])
            out.append(Outcome(case.name, case.kind, f"ask {check.question!r}", not why,
                               f"{why} in {[f.content for f in facts]}" if why else ""))
        elif isinstance(check, TakenBack):
            facts = [f for f in memory.facts(user_id) if check.text.lower() in f.content.lower()]
            wrong = [f.content for f in facts if f.valid_until is None or f.valid_until != f.valid_from]
            why = "no fact mentions it" if not facts else (f"not taken back: {wrong}" if wrong else "")
            out.append(Outcome(case.name, case.kind, f"taken back {check.text!r}", not why, why))
        else:
            facts = memory.facts(user_id) if memory.has_user(user_id) else []
            why = f"stored {[f.content for f in facts]}" if facts else ""
            out.append(Outcome(case.name, case.kind, "nothing stored", not why, why))
    return out


def run(memory, cases: Sequence[Case] = CASES) -> Report:
    """Every case as a user of its own in ``memory``, then its checks."""
    report = Report()
    for n, c in enumerate(cases):
        user_id = f"chat-{n:03d}"
        ingest(memory, c, user_id)
        report.outcomes += judge(memory, c, user_id)
    return report


def main(argv: Sequence[str] | None = None) -> int:
    """Run the corpus on the offline defaults, print the figure, write ``chat.json``."""
    parser = argparse.ArgumentParser(prog="python -m bench.chat", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results folder (default: bench/results)")
    args = parser.parse_args(argv)
    from zep_core import Memory

    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder, Memory.open(folder) as memory:
        report = run(memory)
    seconds = time.perf_counter() - start
    cases_held, cases = report.cases_held()
    total = len(report.outcomes)
    print(f"chat corpus: {report.held}/{total} checks hold ({report.held / total:.1%}), "
          f"{cases_held}/{cases} cases, {seconds:.0f} s")
    for kind, (held, n) in report.by_kind().items():
        print(f"  {kind:18} {held}/{n}")
    for o in report.outcomes:
        if not o.held:
            print(f"  FAILED {o.case}: {o.check}: {o.why}")
    write_result("chat", {"checks": total, "held": report.held, "share": round(report.held / total, 4),
                          "cases": cases, "cases_held": cases_held, "seconds": round(seconds, 1),
                          "by_kind": {k: {"held": h, "checks": n} for k, (h, n) in report.by_kind().items()},
                          "failed": [o.__dict__ for o in report.outcomes if not o.held]}, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

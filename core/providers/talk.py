"""What chat says about what is true now: the rules, in one list.

A conversation is not a list of facts. People greet, thank and agree; the assistant
repeats back what it remembers; people correct themselves; activities end and numbers
change. Each rule below is one such class, so that none of them leaves a stale or empty
fact in memory. The offline extractor applies them (:mod:`~zep_core.providers.rules`,
and the patterns of :mod:`~zep_core.providers.patterns`), the update rules carry them out
(:func:`zep_core.temporal.plan_updates`), and the OpenAI extractor's prompt states the
same classes (:mod:`~zep_core.providers.openai_prompts`).

==  =====================================================  ==================================================
#   what is said                                           what the memory keeps
==  =====================================================  ==================================================
1   small talk: greetings, thanks, acknowledgements,       nothing: such a sentence is not quoted, and a
    farewells ("Hi! Nice to meet you.", "Got it, thanks")  message of nothing else stores no fact
    (:func:`is_small_talk`)
2   the assistant's words                                  what the assistant said, as its quote (speaker
                                                           ``Assistant``); never a fact about anyone else, so
                                                           its words never supersede what the user stated
3   the assistant echoing memory ("From what I remember,   nothing: it is the user's fact told back, maybe
    you live in Paris", "You mentioned…", a pasted         stale (:func:`is_echo`); nor a short reaction
    context block), or reacting to it ("Squash is fun!")   made of the user's words (:func:`is_reaction`)
4   a correction ("I meant Victoria, not Vancouver", "not  the corrected statement and its facts are taken
    X but Y", "make that Y", "scratch that, Y", "Biscuit   back: kept in history as never having held
    is actually a cat")                                    (``valid_until == valid_from``), superseded by the
                                                           same statement with the meant value
                                                           (:func:`corrections`)
5   an ended activity ("I stopped playing tennis", "I      the activity (``does``) ends, and its quote with it
    switched from tennis to squash", "no more tennis for
    me", "I don't play tennis anymore")
6   a changed number ("my team grew to 7", "we are now 7   a count holds one value at a time: the new one
    engineers", "I now manage 5 people")                   supersedes the old (``size``, ``number_of_…``)
7   a quote that says nothing the facts drawn from it do   not stored beside them: one fact, one context slot
    not say ("I live in Paris." beside "Maya lives in
    Paris.")
==  =====================================================  ==================================================
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from .lexicon import NUMBER_WORDS, PETS, PROFESSIONS

__all__ = ["Cue", "casts_a_role", "corrections", "is_echo", "is_reaction", "is_small_talk", "kind_of",
           "same_kind_values", "values_of_kind", "without_assumption", "without_context_block"]

# --- 1. small talk -------------------------------------------------------------------

#: Words a sentence of small talk is made of, and nothing else (names aside).
SMALL_TALK_WORDS = frozenset(
    """hi hello hey hiya howdy yo greetings good morning afternoon evening night day nice great glad pleased
    lovely wonderful happy weekend week to meet see seeing hear hearing talk talking chat chatting with from you your
    too again as well how are is it going doing today been fine ok okay okey k alright all right sure cool
    awesome perfect fantastic amazing excellent brilliant thanks thank thx ty cheers much so very really a
    lot bunch welcome no problem worries pleasure my anytime any time of course absolutely definitely
    totally got understood noted makes sense sounds that this yes yeah yep yup nope bye goodbye later soon
    tomorrow take care have and the same there what's whats up hmm oh ah wow haha hahaha lol lmao i i'm im
    am me help helpful glad congrats congratulations exciting hope hoping fun enjoy it's its was for now bye-bye sorry
    at how's you're we're that's all back sleep well sweet dreams goodnight"""
    .split())
_WORD = re.compile(r"[A-Za-zÀ-ÿ']+|\d+")
_GREETED = re.compile(r"(?i:\b(?:hi|hello|hey|thanks|thank\s+you|bye|morning|evening|too|again|welcome)\b)"
                      r"[\s,!]+(?!I\b|I')(?-i:[A-Z][\w'-]*)")
_VOCATIVE = re.compile(r",\s*(?-i:[A-Z][\w'-]*)\s*[.!?]*\s*$")


def is_small_talk(sentence: str) -> bool:
    """Whether a sentence is only a greeting, thanks, an acknowledgement or a farewell.

    The name of whoever is greeted or thanked ("Hi Maya!", "Nice to meet you too, Maya!")
    does not count; any other word that is not small talk does ("Hi, I'm Maya",
    "Thanks, the pasta was great").

    Example:
        >>> is_small_talk("Nice to meet you too, Maya!"), is_small_talk("I just got a dog.")
        (True, False)

    """
    text = _VOCATIVE.sub("", _GREETED.sub(lambda m: m.group(0).split()[0], sentence.strip()))
    words = [w.lower().replace("’", "'") for w in _WORD.findall(text)]
    return bool(words) and all(w in SMALL_TALK_WORDS for w in words)


# --- 3. the assistant echoing memory -------------------------------------------------

_MEMORY_CUE = re.compile(
    r"\b(?:(?:I'?ll|I\s+will)\s+(?:remember|keep\s+(?:that|it|this)\s+in\s+mind|make\s+a\s+note\s+of|note)\s+"
    r"(?:that|this|it)\b|noted\b|from\s+(?:my\s+)?memory\b|from\s+what\s+I\s+(?:remember|recall|know)|as\s+(?:far\s+as\s+)?I\s+(?:remember|recall)|"
    r"if\s+I\s+(?:remember|recall)(?:\s+(?:correctly|right))?|I\s+(?:remember|recall)\s+(?:that\s+)?you|"
    r"you(?:'ve|\s+have)?\s+(?:told\s+me|mentioned|said|shared|noted)|as\s+you\s+(?:said|mentioned|told\s+me)|"
    r"according\s+to\s+(?:my|your|the)\s+(?:notes|memory|records|profile)|(?:my|the)\s+(?:notes|memory|records)\s+"
    r"(?:say|show)|last\s+time\s+you\s+(?:said|mentioned|told)|you\s+(?:once|previously|earlier)\s+(?:said|told|"
    r"mentioned))\b", re.IGNORECASE)
_YOU_STATE = re.compile(
    r"^(?:(?:so|oh|right|ok|okay|great|ah|and|also|now|since|because|as|given\s+that)[\s,]+)*"
    r"(?:you(?:'re|'ve|'d)?|your(?:\s+[\w-]+)?\s+(?:team|job|company|employer|home|house|apartment|flat|place|city|"
    r"name|family|kids?|children|son|daughter|wife|husband|partner|boyfriend|girlfriend|sister|brother|mom|mum|dad|"
    r"mother|father|boss|dog|cat|pet|puppy|kitten|band|class|office|work|school|university|birthday|age))\s+"
    r"(?:(?:already|still|now|currently|also|just|recently)\s+)?"
    r"(?:live|lived|living|work|worked|working|are|were|have|had|has|moved|like|love|own|got|is|was|study|"
    r"studied|play|played|prefer|enjoy|started|quit|left|joined|adopted|bought|\w+ed)\b", re.IGNORECASE)
_ADVICE = re.compile(r"\b(?:should|could|might|may|can|would|try|consider|recommend|suggest|maybe|perhaps|"
                     r"want\s+to|need\s+to|if\s+you)\b", re.IGNORECASE)
_TAG_QUESTION = re.compile(r",\s*(?:right|correct|yes|no|isn't\s+it|aren't\s+you|don't\s+you)\s*\?$", re.IGNORECASE)
_CONTEXT_LINE = re.compile(r"^\s*(?:FACTS\s*\(|ENTITIES:|-\s.*\((?:valid\s+from|valid\s+\d{4}|since|until)\b|"
                           r"\((?:valid\s+from|valid|since|until)\s+\d{4}-\d\d-\d\d|"
                           r"-\s[^()\n]{1,80}\s\([a-z_ ]{2,20}\):)",
                           re.IGNORECASE)
#: A list item's mark ("- ", "* ", "• ", "1. "): a pasted context block's lines start with one.
_BULLET = re.compile(r"^(?:[-*•·]|\d{1,2}[.)])\s+")


def is_echo(sentence: str, users: frozenset[str] = frozenset()) -> bool:
    """Whether an assistant's sentence only tells the user back what memory holds about them.

    "From what I remember, you live in Paris", "You mentioned your dog", "You work at
    Acme, right?"… — and a line of a pasted context block, and a statement about one of
    the conversation's users by name (``users``, lowercase). Advice ("you could try…")
    and questions are not echoes.

    Example:
        >>> is_echo("From what I remember, you live in Paris."), is_echo("You could try the museum.")
        (True, False)

    """
    if _CONTEXT_LINE.match(sentence):
        return True
    text = _BULLET.sub("", sentence.strip())
    if not text:
        return False
    if _CONTEXT_LINE.match(text) or _MEMORY_CUE.search(text):
        return True
    if _ADVICE.search(text) or (text.endswith("?") and not _TAG_QUESTION.search(text)):
        return False
    if _YOU_STATE.match(text):
        return True
    first = _WORD.match(text)
    return bool(first and users and first.group(0).lower() in users and not text.lower().startswith("i "))


#: What an assistant assumes of the user before saying something else: "Since you're in London, …",
#: "As a nurse, you …", "Because you work nights, …". The assumption goes, what follows stays.
_ASSUMED = re.compile(
    r"^(?:(?:so|and|ok|okay|great|well)[\s,]+)?(?:(?:since|because|as|given\s+that|now\s+that|seeing\s+(?:as|that))\s+"
    r"you(?:'re|\s+are|'ve|\s+have|\s+live|\s+work|\s+do|\s+own|\s+drive)\b[^,;:]*|as\s+an?\s+[\w -]{1,40}?)"
    r"[,;:]\s*(?=\w)", re.IGNORECASE)
#: A summary of what the assistant took the user to have said: an echo, never the assistant's own word.
_RECAP = re.compile(r"^(?:(?:so|ok|okay|alright)[\s,]+)?(?:to\s+(?:summarize|sum\s+up|recap)|just\s+to\s+confirm|"
                    r"let\s+me\s+make\s+sure)\b[^.!?]*\byou", re.IGNORECASE)


def without_assumption(sentence: str) -> str:
    """An assistant's sentence without what it assumes of the user ("" when it only recaps them).

    Example:
        >>> without_assumption("Since you're in London, Manila is 8 hours ahead.")
        'Manila is 8 hours ahead.'
        >>> without_assumption("To summarize: you're a 48-year-old accountant."), without_assumption("Try a bike.")
        ('', 'Try a bike.')

    """
    if _RECAP.match(sentence):
        return ""
    found = _ASSUMED.match(sentence)
    if found is None:
        return sentence
    rest = sentence[found.end():]
    return rest[:1].upper() + rest[1:]


#: Words that carry no content of their own.
_FUNCTION = frozenset("""a an the and or but so then of in on at to for with from by about it's it is are was were be
    that this these those what which who there here just really very quite such some any your you my our their his
    her its not no as too also""".split())


#: The heads of what the memory itself writes (a context block, a memory tool's answer): a reply quoting them
#: tells back what memory holds, never something new.
_BLOCK_HEAD = re.compile(r"^\s*(?:FACTS\s*\(what\s+is\s+true|ENTITIES:|Facts\s+in\s+memory\s+for\s+\"|"
                         r"History\s+of\s+.{1,80}\(oldest\s+first|Entities\s+connected\s+to\s+.{1,80}\(within\s+\d\s+hops\):)",
                         re.IGNORECASE | re.MULTILINE)
_BLOCK_LINE = re.compile(r"^\s*(?:[-*•]\s|\(valid\s+from|$)")


def without_context_block(text: str) -> str:
    r"""An assistant's message without a pasted context block (its header and the list under it).

    A reply that quotes what ``context_block`` gave it ("FACTS (what is true now…" and
    its "- …" lines, "ENTITIES:" and its lines) tells nothing new: those lines are left
    out, the rest of the reply is read as usual.

    Example:
        >>> without_context_block("Sure.\nFACTS (what is true now; dates say since when):\n- Maya lives in Oslo.")
        'Sure.'

    """
    if not _BLOCK_HEAD.search(text):
        return text
    kept, inside = [], False
    for line in text.splitlines():
        if _BLOCK_HEAD.match(line):
            inside = True
        elif inside and _BLOCK_LINE.match(line):
            continue
        else:
            inside = False
            kept.append(line)
    return "\n".join(kept).strip()


#: An instruction to speak as someone else: "act as bailey: …", "pretend to be my landlord", "can you
#: roleplay as a pirate". Said at a sentence's start (or after "please", "can you"…), never of oneself:
#: "I act as the club's treasurer" states a role one holds.
_CASTS_A_ROLE = re.compile(
    r"(?i)(?:^|[.!?:;]\s+|\n\s*|\b(?:please|ok|okay|now|and|then|so|let's|let\s+us|(?:can|could|would|will)\s+you(?:\s+please)?)\s+)"
    r"(?:(?:act|respond|reply|answer|write|speak|talk|role-?play)\s+(?:as|like)\s+(?!if\b|though\b|usual\b|"
    r"well\b|soon\b|much\b|many\b|long\b|quickly\b|briefly\b|such\b|follows?\b|before\b)|"
    r"pretend\s+(?:to\s+be|you(?:'re|\s+are))\s|imagine\s+you(?:'re|\s+are)\s|role-?play\b)")


def casts_a_role(text: str) -> bool:
    """Whether a person's message asks the assistant to speak as someone ("act as bailey: …").

    What follows such an instruction is the role's (a draft to reply to, a script), not what
    the person says of themselves: "I work at Televero Health" in a recruiter's pasted
    message is not where the user works.

    Example:
        >>> casts_a_role("act as bailey: Hi Dr. Scott, I work at Televero Health"), casts_a_role("I act as treasurer")
        (True, False)

    """
    return _CASTS_A_ROLE.search(text) is not None


def is_reaction(sentence: str, heard: frozenset[str] = frozenset()) -> bool:
    """Whether an assistant's short sentence only reacts to what it heard: "Squash is fun.", "Oh, a cat then!".

    A reaction has six words at most, no number, no advice, and at most one word that is
    neither small talk nor a word the user said (``heard``, lowercase) — so it tells
    nothing the conversation does not hold already.

    Example:
        >>> is_reaction("Squash is fun.", frozenset({"squash"})), is_reaction("Try the Louvre at 9.")
        (True, False)

    """
    words = [w.lower().replace("’", "'") for w in _WORD.findall(sentence)]
    if not words or len(words) > 6 or any(w.isdigit() for w in words) or _ADVICE.search(sentence):
        return False
    new = [w for w in words if w not in SMALL_TALK_WORDS and w not in _FUNCTION and w not in heard
           and w.rstrip("s") not in heard]
    return len(new) <= 1


# --- 4. corrections -------------------------------------------------------------------


@dataclass(frozen=True)
class Cue:
    """A correction found in a sentence.

    Attributes:
        right: the value meant ("Victoria"); None when something is only taken back.
        wrong: the value it replaces ("Vancouver"), when the sentence names it.
        about: the name the corrected statement is about, when the sentence names it
            instead of the wrong value ("Biscuit is actually a cat").
        rest: a statement of its own that follows the correction ("scratch that, I'm a
            librarian": "I'm a librarian"; "scratch that, $1200, my partner wants the
            sectional": "my partner wants the sectional"); it is read as any other sentence.

    """

    right: str | None
    wrong: str | None = None
    about: str | None = None
    rest: str | None = None


_VALUE = r"(?:(?:a|an|the)\s+)?[$€£]?[\w'’][\w'’-]*(?:[.,]\d+)*(?:\s+[\w'’][\w'’-]*){0,2}"
_MARKER = r"(?:I\s+meant(?:\s+to\s+say)?|I\s+mean|sorry|oops|my\s+bad|correction:?|typo|I\s+misspoke|actually|wait|no)"
#: A whole sentence of markers and a value: "No sorry, Milan.", "Oops, 7."
_BARE = re.compile(rf"^(?:(?:oh|ah|er|erm|um|hmm)[\s,:-]+)*(?:{_MARKER}[\s,:-]+)+(?P<right>{_VALUE})\s*[.!]*$",
                   re.IGNORECASE)
_CUES: tuple[tuple[str, re.Pattern[str]], ...] = (
    # "I said Vancouver but I meant Victoria"
    ("said-meant", re.compile(rf"\bI\s+said\s+(?P<wrong>{_VALUE}?)\s*,?\s+(?:but\s+)?I\s+meant\s+(?P<right>{_VALUE})",
                              re.IGNORECASE)),
    # "not Vancouver but Victoria", "not Vancouver, Victoria" (after a marker)
    ("not-but", re.compile(rf"(?:^|\b(?:{_MARKER}[\s,:-]+)+)not\s+(?P<wrong>{_VALUE}?)\s*,\s*(?:but\s+)?"
                           rf"(?P<right>{_VALUE})|\bnot\s+(?P<wrong2>{_VALUE}?)\s*,?\s+but\s+(?P<right2>{_VALUE})",
                           re.IGNORECASE)),
    # "I meant Victoria, not Vancouver", "sorry, Victoria not Vancouver"
    ("right-not-wrong", re.compile(rf"\b(?:{_MARKER}[\s,:-]+)+(?:it(?:'s|\s+is|\s+was)\s+)?(?P<right>{_VALUE}?)\s*,?\s+"
                                   rf"(?:and\s+)?not\s+(?P<wrong>{_VALUE})", re.IGNORECASE)),
    # "Biscuit is actually a cat", "Biscuit's actually a cat"
    ("about", re.compile(rf"\b(?P<about>[A-Z][\w'-]+)(?:'s|\s+is|\s+are|\s+was)\s+actually\s+(?P<right>{_VALUE})")),
    # "oops she's 8 actually", "it's 12 actually": a number put right, the word after it
    ("it-actually", re.compile(r"\b(?:it|she|he|they|that)(?:'s|\s+is|\s+was|'re|\s+are)\s+"
                               r"(?P<right>[$€£]?\d+(?:[.,]\d+)*)\s+actually\b", re.IGNORECASE)),
    # "I meant Victoria", "make that Victoria", "scratch that, 5", "correction: Victoria", "wait its a 2014",
    # "real answer is 35" (after a joke)
    ("right", re.compile(rf"\b(?:I\s+meant(?:\s+to\s+say)?(?!\s+to\b)|make\s+(?:that|it)|scratch\s+that,?|correction:|"
                         rf"no\s+wait,?|wait,?\s+no,?|sorry,?\s+I\s+mean|I\s+misspoke,?(?:\s+it's)?|"
                         rf"(?:actually|wait),?\s+it(?:'?s|\s+is|\s+was)|(?:the\s+)?real\s+answer(?:\s+is)?:?)"
                         rf"\s+(?P<right>{_VALUE})", re.IGNORECASE)),
    # "No sorry, Milan.", "Oops, Basel!": markers and a value, nothing else
    ("bare", _BARE),
    # "scratch that", "forget what I said", "I take that back": taken back, nothing meant instead
    ("retract", re.compile(r"\b(?:scratch\s+that|forget\s+(?:what\s+I\s+(?:just\s+)?said|that|I\s+said\s+that)|"
                           r"ignore\s+(?:what\s+I\s+(?:just\s+)?said|that)|I\s+take\s+(?:that|it)\s+back|"
                           r"never\s+mind\s+what\s+I\s+said)\s*[.!]*\s*$", re.IGNORECASE)),
)
#: "(Sorry,) my sister lives in Bergen, not Oslo": a statement of the speaker, then the value it replaces.
_STATED_NOT = re.compile(rf"(?P<clause>\b(?!I\s+(?:meant|mean|said)\b)(?:I|I'm|I've|(?i:my|we|we're|our))\b[^,;]*?)"
                         rf"\s*,\s*(?:and\s+)?"
                         rf"not\s+(?P<wrong>{_VALUE}?)\s*[.!]*$")
#: A value that starts a clause of its own: the sentence restates, it does not name a value.
_CLAUSE_START = re.compile(r"^(?:I|I'm|I've|I'll|my|we|we're|our|he|she|they|there)\b", re.IGNORECASE)
_IT_IS = re.compile(r"^(?:it's|it\s+is|it\s+was|that's|that\s+is)\s+", re.IGNORECASE)
#: Words that end a value ("Victoria then", "cat lol").
_VALUE_TAIL = frozenset("then instead actually though sorry lol haha please now really too i".split())
_ARTICLES = ("a ", "an ", "the ")
#: Capitalized words that start a sentence without naming anyone.
_PRONOUNS = frozenset("it it's that that's this there he she they we you i what which who everything".split())
#: A cue's value can never be one of these (the rest of a sentence, not a value).
_NOT_VALUES = frozenset("that it this i you to be so what way problem worries idea clue him her them us me".split())


def _value(text: str | None) -> str | None:
    """The value as it would appear in the corrected statement: articles, tails and punctuation trimmed."""
    if not text:
        return None
    words = text.strip(" ,.!?;:\"'").split()
    while words and words[-1].lower().strip(".,!?") in _VALUE_TAIL:
        words.pop()
    value = " ".join(words).strip(" ,.!?;:\"'")
    lowered = value.lower()
    for article in _ARTICLES:
        if lowered.startswith(article):
            value, lowered = value[len(article):], lowered[len(article):]
    return value if value and lowered not in _NOT_VALUES else None


def _rest(tail: str) -> str | None:
    """What follows a correction's value when it says something of its own: ", my partner wants the sectional".

    Only after a comma or a dash (", then" and a word or two are the value's tail, not a statement).
    """
    found = re.match(r"\s*(?:,|[-–—]|\.\s)\s*(?P<rest>.*\S)", tail)
    if found is None:
        return None
    rest = found["rest"].strip()
    return rest if len([w for w in rest.split() if w.lower() not in _VALUE_TAIL]) >= 3 else None


def corrections(sentence: str) -> list[Cue]:
    """The corrections a sentence makes (rule 4), most specific first; [] for none.

    Example:
        >>> corrections("Sorry, I meant Victoria, not Vancouver.")
        [Cue(right='Victoria', wrong='Vancouver', about=None, rest=None)]
        >>> corrections("Biscuit is actually a cat.")
        [Cue(right='cat', wrong=None, about='Biscuit', rest=None)]

    """
    cue = _cue(sentence)
    return [cue] if cue is not None else []


@functools.lru_cache(maxsize=4096)
def _cue(sentence: str) -> Cue | None:
    """The correction of :func:`corrections`, read once per sentence (the extractor asks more than once)."""
    text = sentence.strip().replace("’", "'")
    stated = _STATED_NOT.search(text)
    if stated is not None:  # "I work at Pfizer, not Moderna": the statement stands, and corrects Moderna
        wrong = _value(stated["wrong"])
        clause = stated["clause"].strip()
        if wrong is not None:
            # the value of the wrong one's kind ("9" for "8", "New York" for "Boston"), else as many words
            # at the clause's end as the wrong value has ("May 13th" for "May 3rd", "data scientist")
            found = same_kind_values(clause, wrong) if kind_of(wrong) in ("number", "name") else []
            right = found[-1] if found else " ".join(clause.split()[-len(wrong.split()):])
            if right.lower() != wrong.lower() and not _CLAUSE_START.fullmatch(right):
                return Cue(right=right, wrong=wrong, rest=clause + ".")
    for name, pattern in _CUES:
        match = pattern.search(text)
        if match is None:
            continue
        groups = {k: v for k, v in match.groupdict().items() if v}
        if name == "retract":
            return Cue(right=None)
        raw = groups.get("right") or groups.get("right2") or ""
        if _CLAUSE_START.match(raw):  # "scratch that, my team has 5 engineers": the new statement stands alone
            if name != "right":  # "I'm not a morning person but I like running": no correction
                continue
            start = match.start("right") if groups.get("right") else match.start("right2")
            return Cue(right=None, rest=text[start:].strip())
        right = _value(_IT_IS.sub("", raw))
        wrong = _value(groups.get("wrong") or groups.get("wrong2"))
        if right is not None and kind_of(right) == "number":  # "7 engineers, not 4": the number is what changes
            right = right.split()[0]
        about = groups.get("about")
        if about is not None and about.lower() in _PRONOUNS:  # "It's actually quite nice": no name
            continue
        if right is None or (wrong is not None and wrong.lower() == right.lower()):
            continue
        if name == "bare" and is_small_talk(right):  # "No, thanks.", "Actually, yes."
            continue
        rest = _rest(text[match.end():]) if name in ("right", "it-actually") else None
        return Cue(right=right, wrong=wrong, about=about, rest=rest)
    return None




# --- kinds of values: what a correction that names only the right value replaces -------

_NUMBER = re.compile(r"^[$€£]?\d+(?:[.,]\d+)*$")
_PROFESSION = re.compile(rf"^(?:{PROFESSIONS})$", re.IGNORECASE)
#: Pets people name, for "Biscuit is actually a cat" (the relations' dog and cat, and more).
PET_WORDS = frozenset(PETS | {"puppy", "kitten", "rabbit", "bunny", "hamster", "parrot", "bird", "turtle",
                              "tortoise", "horse", "guinea pig", "snake", "lizard", "fish", "ferret"})


#: Numbers written as words ("three"): a correction's value of the number kind.
_NUMBER_WORDS = frozenset(w for w in NUMBER_WORDS if " " not in w)
#: Capitalized words that date a statement, not a value of it ("moving to Denver in June").
_CALENDAR = frozenset("""january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday today tomorrow yesterday christmas easter""".split())


def kind_of(value: str) -> str:
    """``number``, ``pet``, ``profession``, ``name`` (capitalized) or ``word``."""
    head = value.split()[0] if value.split() else value
    if _NUMBER.match(head) or head.lower() in _NUMBER_WORDS:
        return "number"
    if value.lower() in PET_WORDS:
        return "pet"
    if _PROFESSION.match(value):
        return "profession"
    if value[:1].isupper():
        return "name"
    return "word"


def same_kind_values(text: str, right: str) -> list[str]:
    """The values in ``text`` of the same kind as ``right`` (not ``right`` itself), in order.

    For a name, a capitalized word that does not start the sentence; for a pet or a
    profession, a word of that vocabulary; for a number, a number.
    """
    return [v for v in values_of_kind(text, kind_of(right)) if v.lower() != right.lower()]


def values_of_kind(text: str, kind: str) -> list[str]:
    """The values of ``kind`` (:func:`kind_of`) in ``text``, in order: :func:`same_kind_values` keeping ``right``.

    Example:
        >>> values_of_kind("I have 2 cats and three dogs", "number")
        ['2', 'three']
        >>> values_of_kind("rent is $1,850 a month, up from 1,700", "number")
        ['$1,850', '1,700']

    """
    out: list[str] = []
    if kind == "name":
        for match in re.finditer(r"(?<![.!?]\s)(?<!^)\b([A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)*)", text.strip()):
            out.append(match.group(1))
    elif kind == "number":  # digits, or a number in words ("three")
        out = [w for w in re.findall(r"[$€£]?\b\d+(?:[.,]\d+)*\b|\b[A-Za-z]+\b", text)
               if w.lstrip("$€£")[:1].isdigit() or w.lower() in _NUMBER_WORDS]
    elif kind in ("pet", "profession"):
        vocabulary = PET_WORDS if kind == "pet" else None
        for word in re.findall(r"[A-Za-z-]+", text):
            lowered = word.lower()
            if (vocabulary is not None and lowered in vocabulary) or (vocabulary is None and _PROFESSION.match(word)):
                out.append(word)
    return [v for v in out if v != "I" and v.lower() not in _CALENDAR]

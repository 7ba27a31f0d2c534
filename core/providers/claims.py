"""Reading what a user's sentence does: a claim about an attribute, or talk that claims nothing.

People say far more than they claim. A sentence of a user's message is one of:

* **small talk** — greetings, thanks, the weather, how one feels today ("tired lol, long
  week", "it's SO hot today"): never a fact, never quoted;
* **a joke or a hypothetical** — "I'm moving to Mars next week jk", "if I won the lottery I'd
  buy a cabin": not quoted either; what follows "jk", "for real", "realistically" is read;
* **an ask** — a question or a request ("any tips for…", "can you help me…"): quoted (what
  people mention while asking is memory too) but never a claim that retires anything;
* **a claim** — everything else: a statement about one of the speaker's attributes
  (:mod:`zep_core.attributes`), read by meaning (the embedder, against each attribute's
  examples) when the words leave it open, with the cue it carries: a **change** or an **end**
  ("switched to", "got rid of", "passed away", "no longer") or a **correction** ("it's actually",
  "I meant", "not the 3rd"), and the **names** it mentions (the words that say which thing:
  "corolla", "Biscuit"), through which a change or an end finds what it replaces.

The words are rules, each with its examples; the meaning is the embedder the memory already
loaded (no other model). :class:`ClaimReader` reads a message's sentences in one embedder call.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..attributes import ATTRIBUTES, Attribute
from .lexicon import FILLER_WORDS
from .talk import SMALL_TALK_WORDS, is_small_talk

__all__ = ["ASK", "CLAIM", "DROP", "ClaimReader", "Reading", "counts_of", "cue_of", "names_of", "shared_names",
           "split_talk"]

CLAIM, ASK, DROP = "claim", "ask", "drop"

log = logging.getLogger("zep_core")

# --- jokes and hypotheticals --------------------------------------------------------------

#: What comes after it is what the speaker means; what came before was not meant ("… jk. for real …").
_UNSAID = re.compile(
    r"(?i)(?<![\w'])(?:j/?k|just\s+kidding|(?:i'?m\s+)?kidding|lol\s+not\s+really|not\s+really|haha\s+no|"
    r"jokes?\s+aside|but\s+(?:for\s+real|seriously|realistically)|for\s+real\s+(?:tho(?:ugh)?|though)?|"
    r"realistically(?:\s+tho(?:ugh)?)?|(?:ok\s+|okay\s+)?real\s+answer(?:\s+is)?|in\s+reality)(?![\w'])")
#: A sentence that only imagines: "if I won…", "hypothetically…", "I would've…", "what if…".
_HYPOTHETICAL = re.compile(
    r"(?i)(?<![\w'])(?:hypothetically|what\s+if|imagine|in\s+theory|suppose|if\s+(?:i|we)\s+(?:ever\s+)?"
    r"(?:won|win|had|get|got|took|take|were|was|moved|move|could|did|went|go|tried|try|quit)|"
    r"i\s+would(?:'ve|\s+have)|i'?d\s+have|"
    r"if\s+my\s+\w+\s+(?:allowed|let)|(?:i|we)\s+could\s+(?:buy|move|get))(?![\w'])")
#: Hyperbole flagged as such: "basically a professional chef 😂", "literally dying 🙄".
_HYPERBOLE = re.compile(r"(?i)\b(?:basically|literally)\b.*(?:😂|🤣|😏|🙄|😜|🙃)")

# --- asks ---------------------------------------------------------------------------------

_ASK = re.compile(
    r"(?i)^(?:(?:ok|okay|so|also|and|anyway|hey|hi|pls|please|btw|ugh|hm+|oh)[\s,!]+)*(?:can|could|would|will)\s+"
    r"(?:you|u)\b|^(?:(?:ok|okay|so|also|and|anyway)[\s,]+)*(?:help\s+me|give\s+me|tell\s+me|show\s+me|make\s+me|"
    r"write\s+me|recommend|suggest|any\s+(?:tips|ideas|recs|recommendations|advice|suggestions)|"
    r"what(?:'s|\s+is|\s+are)\s+(?:a\s+)?(?:good|the\s+best|some)|how\s+(?:do|can|should|would)\s+(?:i|we)|"
    r"need\s+(?:a|some|help|ideas|recs)|looking\s+for|ideas\s+for|tips\s+for)\b")

#: A question starts as one ("how…", "is it…", "any…"); "leo's in first grade now??" is a claim said loudly.
_QUESTION = re.compile(
    r"(?i)^(?:(?:ok|okay|so|and|also|but|anyway|hey|wait|um+|hm+|btw|like|lol|ugh|oh|also|then|pls|please)"
    r"[\s,.!]+)*(?:what|what's|whats|how|how's|hows|why|when|where|who|which|whose|is|are|am|was|were|do|does|"
    r"did|can|could|would|should|will|shall|have|has|any|anyone|anybody|isn't|aren't|don't|doesn't|didn't|"
    r"wouldn't|shouldn't|might|may|u|r)\b")
#: A claim whose subject is someone else ("my husband got a job offer", "she moved to Austin", "Maya's in
#: first grade"): not a claim about the speaker's own attributes.
_ABOUT_OTHERS = re.compile(
    r"(?i)^(?:(?:ok|okay|so|and|also|but|anyway|oh|update|btw|plus|lol|omg|yeah|well)[\s,:!.]+)*(?:(?:my|our|his|her|their)"
    r"\s+(?:\w+\s+)?(?:husband|wife|partner|boyfriend|bf|girlfriend|gf|fianc[eé]e?|son|daughter|kid|kids|child|"
    r"children|baby|mom|mum|mother|dad|father|parents|sister|brother|sibling|aunt|uncle|cousin|grandma|grandpa|"
    r"grandmother|grandfather|grandson|granddaughter|friend|buddy|roommate|boss|coworker|colleague|neighbou?r|"
    r"teacher|manager|team|dog|cat|pet|puppy|kitten)s?\b(?!\s+and\s+(?:i|me)\b)|(?:she|he|they)(?:'s|'re|\s)|"
    r"[a-z]+'s\s+(?:in|at|a|an|"
    r"the|been|going|starting|moving|working|turning|getting|doing|now)\b)")
#: A question by its first words, with or without its mark: "what should I cook tonight", "where can I…".
_QUESTION_WORD = re.compile(r"(?i)^(?:(?:ok|okay|so|and|also|but|anyway|hey|hmm|btw)[\s,]+)*"
                            r"(?:what|where|how|which|who|why|when)(?:'s|\s+is|\s+are|\s+do|\s+does|\s+should|\s+can|\s+could|\s+would|\s+will|"
                            r"\s+to|\s+kind|\s+sort)\b")
#: What asks for something, anywhere in a sentence that ends in "?": "gift ideas for my partner?".
_WANTS = re.compile(r"(?i)\b(?:ideas|tips|recs|recommendations|advice|suggestions|options)\b")
#: A day, a date, a number: a sentence that holds one says when or how much, not only how one is.
_DATED = re.compile(r"(?i)\d|\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|mondays|tuesdays|"
                    r"wednesdays|thursdays|fridays|saturdays|sundays|tues|thurs|weekdays?|january|february|march|"
                    r"april|june|july|august|september|october|november|december)\b")

# --- cues ---------------------------------------------------------------------------------

#: It says something replaced, changed or ended: "switched to", "got rid of", "passed away", "no longer".
_CHANGE = re.compile(
    r"(?i)(?<![\w'])(?:switch(?:ed|ing)\s+(?:from|to|over|me|us|back|jobs|majors|careers)|replac(?:ed|ing)|"
    r"instead|upgrad(?:ed|ing)\s+(?:to|from)|traded(?:\s+it)?\s+in|got\s+rid\s+of|sold|gave\s+away|returned|"
    r"no\s+longer|not\s+\w+\s+any\s?more|any\s?more|no\s+more|passed\s+away|passed\s+in|died|"
    r"put\s+(?:\w+\s+)?down|rehom(?:e|ed|ing)|stole|stolen|lost\s+(?:my|our)|"
    r"broke\s+up|divorc(?:ed|e\s+was\s+finali[sz]ed)|split\s+up|separated|quit|left\s+(?:my|our)|retired|"
    r"fully\s+over|cancel+ed|called\s+off|closed\s+(?:down|for\s+good)|pulled\s+(?:the|his|her|my|our|their)|"
    r"pushed\s+(?:it|back|to)|postponed|rescheduled|moved\s+(?:to|out|back|in\s+with|closer)|relocated|"
    r"went\s+(?:w|with)\s+(?:a|an|the)|plot\s+twist|"
    r"(?:raised|dropped|down|up|went\s+up|went\s+down|increased|decreased)\s+(?:\w+\s+)?to\s+\$?\d)(?![\w'])")
#: It says something said before was wrong: "it's actually", "I meant", "not the 3rd", "I mixed them up".
_CORRECTION = re.compile(
    r"(?i)(?<![\w'])(?:(?:it|that|she|he|they|this|which)(?:'s|\s+is|\s+was|'re|\s+are)\s+actually|"
    r"actually\s+(?:it'?s|its|is|was)|i\s+meant|meant\s+to\s+say|(?:i|i've)\s+said\s+\S+|i\s+told\s+you|"
    r"(?:wrong|incorrect)\s+(?:date|number|name|day|year|info|one)|gave\s+you\s+the\s+wrong|correction|"
    r"correct\s+(?:something|that|myself)|mix(?:ed|ing)?\s+(?:them|it|that|those|these)\s+up|mixed\s+up|"
    r"double[\s-]checked|typo|brain\s+glitch|not\s+the\s+\w+|my\s+bad|oops|wait\s+no|scratch\s+that|"
    r"did\s+i\s+say|i\s+misspoke)(?![\w'])")


def cue_of(sentence: str) -> str | None:
    """``"correction"``, ``"change"`` or None: what the sentence says of what was said before.

    Example:
        >>> cue_of("it's actually stripe"), cue_of("finally got rid of the corolla"), cue_of("I like tea now")
        ('correction', 'change', None)

    """
    if _CORRECTION.search(sentence):
        return "correction"
    if _CHANGE.search(sentence):
        return "change"
    return None


# --- names --------------------------------------------------------------------------------

_TOKEN = re.compile(r"[^\W\d_][\w'’-]*[\w]|[^\W\d_]", re.UNICODE)
_VALUE_TOKEN = re.compile(r"\d[\w.,/:-]*\w|\d|[^\W\d_][\w'’-]*[\w]|[^\W\d_]", re.UNICODE)
_CALENDAR = frozenset("""january february march april may june july august september october november december jan feb
mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday mon tue tues wed
thu thur thurs fri sat sun mondays tuesdays wednesdays thursdays fridays saturdays sundays""".split())
#: Words that name nothing in particular: function words, chat words, and the verbs and nouns of
#: every topic (a "car" or a "job" is any car or job: the name that says which one is what counts).
COMMON_WORDS = frozenset("""
a about above after again against ago all almost already also although always am among an and another any
anybody anyone anything anyway anyways anywhere are aren't around as at away back be because been before
being below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't done
down during each either else enough even ever every everybody everyone everything few for from further get
gets getting got gotta gonna had hadn't has hasn't have haven't having he he's her here hers herself him
himself his how however i i'd i'll i'm i've if in into is isn't it it's its itself just kinda kind least
less let let's like likely made make makes making many may maybe me might mine more most much must my
myself need needs never new next no nor not nothing now of off often oh ok okay old on once one only or
other others otherwise our ours ourselves out over own per perhaps please pls pretty quite rather really
right same say says said see seems seen shall she she's should shouldn't since so some somebody someone
something sometimes somewhat soon still such sure than that that's the their theirs them themselves then
there there's these they they're thing things think this those though thought through thru to too toward
tho u ur under until up upon us use used very via want wanted wants was wasn't way we we're we've well
went were weren't what what's whatever when where whether which while who who's whole whom whose why will
with within without won't would wouldn't yeah yes yet you you'd you'll you're you've your yours yourself
also actually basically literally honestly totally seriously super so lol lmao haha omg ugh hmm idk imo
tbh ngl btw fyi thx ty rn tmrw bc cuz ppl yep yup nope nah wow yay hey hi hello thanks thank bye cool nice
great good bad best better worse worst big small little lot lots bit first last second third same different
year years month months week weeks day days today tomorrow yesterday tonight morning night evening weekend
time times minute minutes hour hours ago since until now later earlier recently currently finally officially
january february march april may june july august september october november december monday tuesday wednesday
thursday friday saturday sunday spring summer fall autumn winter
live lives lived living moved move moving home house place apartment flat city town work works worked
working job jobs company boss office started start starting quit left switched switch changed change new
study studies studying school college university class classes major degree
car cars drive driving drove vehicle
pet pets dog dogs cat cats puppy kitten
kid kids son sons daughter daughters child children baby mom mum dad mother father parents wife husband
partner girlfriend boyfriend sister brother family friend friends
love loves loved like likes liked hate hates hated enjoy enjoyed prefer favorite favourite fav
buy bought got get sold sell own owns have has had use using used
help need needs want wants tips ideas idea recs advice question thing stuff people person guy guys girl
pay paid cost costs money budget dollars bucks price
feel feels felt feeling going go goes gone come came coming take took taken give gave given keep kept
tell told ask asked know knew try tried say said look looking make made call called
switch switched changed replaced instead upgraded traded rid sold gave returned longer anymore passed died
rehomed stole stolen lost broke divorce divorced finalized separated split quit retired graduated finished
fully recovered cancelled canceled pulled pushed postponed rescheduled relocated update twist turns ended
stopped raised dropped meant mean correction wrong mixed double checked typo glitch oops scratch told said
""".split()) | FILLER_WORDS | SMALL_TALK_WORDS


def names_of(text: str, *, values: bool = False) -> frozenset[str]:
    """The words of ``text`` that say which thing it is about: not a common word, a number or a short word.

    Lowercase, as said (the lexical index finds them so); two mentions of one thing meet by
    their stems (:func:`shared_names`: "teaches" and "teaching"). With ``values`` (a correction:
    the value itself is what was wrong), numbers, months and weekdays count too ("34", "march").

    Example:
        >>> sorted(names_of("finally got rid of the corolla lol, traded it in for a 2019 civic EX"))
        ['civic', 'corolla', 'ex']
        >>> sorted(names_of("it's march 13, not the 3rd", values=True))
        ['13', '3rd', 'march']

    """
    out = set()
    for word in (_VALUE_TOKEN if values else _TOKEN).findall(text.replace("’", "'")):
        w = word.lower().strip("'-")
        w = w[:-2] if w.endswith("'s") else w
        if values and (w[:1].isdigit() or w in _CALENDAR):
            out.add(w.rstrip(".,"))
            continue
        if len(w) < 2 or w in COMMON_WORDS or _stem(w) in COMMON_WORDS:
            continue
        out.add(w)
    return frozenset(out)


def shared_names(names: frozenset[str], other: frozenset[str]) -> frozenset[str]:
    """The words of ``names`` that name what a word of ``other`` names (the same stem: "teaching", "teaches").

    Example:
        >>> sorted(shared_names(frozenset({"teaching", "google"}), frozenset({"teaches", "boston"})))
        ['teaching']

    """
    stems = {_stem(w) for w in other}
    return frozenset(w for w in names if _stem(w) in stems)


def _stem(word: str) -> str:
    for ending in ("ing", "es", "ed", "s"):
        if len(word) > len(ending) + 3 and word.endswith(ending) and not word.endswith("ss"):
            return word[:-len(ending)]
    return word


# --- counts -------------------------------------------------------------------------------

_NUMBER_WORDS = ("zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|"
                 "sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred")
_COUNT_CLAUSES = re.compile(r"[,;:]\s+|\s+(?:and|but|so)\s+|(?<=[.!?])\s+", re.IGNORECASE)
#: Words that say nothing of what a count counts ("it's been # years": nothing in particular).
_COUNT_EMPTY = frozenset("""a an the is are was were be been being am i i'm im me my mine we our us you your it it's its
they their them he she his her of to in on at for with from by and or than then that this there year years month months
week weeks day days hour hours minute minutes time times old about""".split())
_COUNT_WORD = re.compile(rf"(?i)^(?:\$?\d[\d,]*(?:\.\d+)?[k%]?|{_NUMBER_WORDS})$")
#: Words that change nothing in what a count is of: "11 people report to me *now*".
_COUNT_FILLER = frozenset("""now currently still just only about around roughly like almost nearly over under approx
approximately exactly already also too so really actually lol haha anymore these days today tho though ok okay well
oh yeah""".split())


#: "my fav band is…", "our go-to date night spot": a favorite holds one value at a time.
_FAVORITE = re.compile(r"(?i)\b(?:my|our|his|her)\s+(?:new\s+|all[\s-]time\s+)?(?:fav|fave|favou?rite|go[\s-]to)\s+"
                       r"(?P<what>(?!is\b|thing\b|ever\b)[a-z]+(?:\s+(?!is\b|are\b|was\b|now\b|ever\b|of\b|too\b|"
                       r"lately\b|rn\b)[a-z]+)?)")


def counts_of(text: str) -> dict[str, str]:
    """The counts a text states, by what they count: ``{"# people report to me": "9"}``; and its favorites.

    A count is a number (or a number word) in a clause; what it counts is the clause's words
    around it, the number as ``#``, without filler ("now", "like"…). Two statements that count
    the same thing with two values say one replaced the other: "9 people report to me", then
    "11 people report to me now".

    Example:
        >>> counts_of("I work as a nurse and 9 people report to me.")
        {'# people report to me': '9'}
        >>> counts_of("now i have three cats.")
        {'i have # cats': 'three'}
        >>> counts_of("my fav band is twenty one pilots")
        {'favorite band': 'my fav band is twenty one pilots'}

    """
    out: dict[str, str] = {}
    for found in _FAVORITE.finditer(text):  # "theyre my favorite band now": one favorite band at a time
        out[f"favorite {found['what'].lower()}"] = text[found.start():].split(".")[0].lower()
    for clause in _COUNT_CLAUSES.split(text):
        words = [w for w in re.findall(r"[\w$'%.,-]+", clause.lower().replace("’", "'")) if w.strip(".,")]
        words = [w.strip(".,") for w in words if w.strip(".,") not in _COUNT_FILLER]
        found = [i for i, w in enumerate(words) if _COUNT_WORD.match(w)]
        if len(found) != 1:
            continue  # none, or several: not one count of one thing
        i = found[0]
        window = words[max(0, i - 4):i] + ["#"] + words[i + 1:i + 5]
        if not [w for w in window if w != "#" and w not in _COUNT_EMPTY]:
            continue  # "it's been # years" counts nothing in particular
        out[" ".join(window)] = words[i]
    return out


# --- sentences ------------------------------------------------------------------------------

#: Emoji and the like end a thought as a full stop does ("so excited 🎉 we move in may").
_PICTOGRAPH = "[\U0001F300-\U0001FAFF\u2600-\u27BF\u2B50\u2B06\u2934\u2935\u3030\u303D]"
_AFTER_PICTOGRAPH = re.compile(f"(?<={_PICTOGRAPH})[\ufe0f\u200d]*\\s+(?=[^\\W\\d_]|\\()")


def split_talk(text: str) -> list[str]:
    """The sentences of a chat message: at ``.!?`` before a space, line breaks and emoji.

    Example:
        >>> split_talk("so excited 🎉 we move in may!! ok bye")
        ['so excited 🎉', 'we move in may!!', 'ok bye']

    """
    from .extractive import split_sentences

    out: list[str] = []
    for sentence in split_sentences(text):
        parts = [p for p in _AFTER_PICTOGRAPH.split(sentence) if p.strip()]
        out += [p.strip() for p in parts]
    return out


@dataclass(frozen=True)
class Reading:
    """What one sentence does: its ``act`` (:data:`CLAIM`, :data:`ASK`, :data:`DROP`).

    For a claim, also its attribute, cue and names.
    """

    text: str
    act: str
    attribute: str | None = None
    cue: str | None = None
    names: frozenset[str] = frozenset()
    by_meaning: bool = False  # a drop the words alone did not decide (the rules' facts may overrule it)
    sure: bool = False  # the attribute may retire the speaker's older claims on it (a cue, or the rules, say so)


def _meant(sentence: str) -> str | None:
    """The part of a sentence that is meant: after a "jk"/"for real" marker; None if the whole was not meant."""
    last = None
    for found in _UNSAID.finditer(sentence):
        last = found
    if last is None:
        return sentence
    rest = sentence[last.end():].strip(" ,.;:!-—)(")
    return rest or None


# --- meaning ----------------------------------------------------------------------------------

#: Sentences that say nothing to remember: how one is, the weather, pleasantries, venting.
SMALL_TALK_EXAMPLES = (
    "hi how are you", "good morning!", "thanks so much, you're the best", "it's so hot today", "ugh it's raining again",
    "what a long week", "I'm so tired lol", "happy new year!", "ok sounds good", "lol true", "talk later, bye",
    "just needed to vent", "haha yeah", "that's hilarious", "ok going back to work now", "hope you have a good day",
    "how's your day going?", "bored lol", "it's freezing out", "weekend finally", "ok cool thanks",
)
#: Sentences that state something worth remembering, to weigh small talk against.
INFORMATIVE_EXAMPLES = tuple(e for a in ATTRIBUTES for e in a.examples[:4]) + (
    "my flight lands at 7am", "the meeting is at the downtown office", "I need a gift for my mom's birthday",
)
#: Cosine above which a short sentence nearer small talk than any informative example is small talk.
SMALL_TALK_MIN = 0.45
#: A claim's attribute needs this cosine to the nearest of its examples ...
ATTRIBUTE_MIN = 0.35
#: ... and this lead over the next attribute's nearest example.
ATTRIBUTE_MARGIN = 0.03



_PROTOTYPES: dict[tuple[int, tuple[Attribute, ...]], tuple[object, tuple[np.ndarray, list[str], np.ndarray,
                                                                        np.ndarray]]] = {}
_PROTOTYPES_LOCK = threading.Lock()


class ClaimReader:
    """Reads a message's sentences (:class:`Reading`), by rules and by meaning (``embedder``; None: rules only).

    Example:
        >>> reader = ClaimReader(None)
        >>> [(r.act, r.cue) for r in reader.read(["hey!", "got rid of the corolla", "any tips?"])]
        [('drop', None), ('claim', 'change'), ('ask', None)]

    """

    def __init__(self, embedder: object | None, attributes: Sequence[Attribute] = ATTRIBUTES) -> None:
        """Read with ``embedder`` (what the memory embeds with), against ``attributes``' examples."""
        self.embedder, self.attributes = embedder, tuple(attributes)

    def _prototypes(self) -> tuple[np.ndarray, list[str], np.ndarray, np.ndarray]:
        """The examples' vectors, embedded once per embedder (a process opens many memories on one).

        Labels are an attribute's name for its examples, ``"-" + name`` for its non-examples.
        """
        key = (id(self.embedder), self.attributes)
        with _PROTOTYPES_LOCK:
            found = _PROTOTYPES.get(key)
            if found is None or found[0] is not self.embedder:
                labels = [a.name for a in self.attributes for _ in a.examples]
                labels += ["-" + a.name for a in self.attributes for _ in a.non_examples]
                texts = [e for a in self.attributes for e in a.examples]
                texts += [e for a in self.attributes for e in a.non_examples]
                vectors = _unit(self.embedder.embed(texts + list(SMALL_TALK_EXAMPLES) + list(INFORMATIVE_EXAMPLES)))
                n, m = len(texts), len(SMALL_TALK_EXAMPLES)
                found = (self.embedder, (vectors[:n], labels, vectors[n:n + m], vectors[n + m:]))
                if len(_PROTOTYPES) >= 8:
                    _PROTOTYPES.clear()
                _PROTOTYPES[key] = found
            return found[1]

    def read(self, sentences: Sequence[str]) -> list[Reading]:
        """One :class:`Reading` per sentence, in order."""
        first = [self._by_rules(s) for s in sentences]
        open_ = [i for i, r in enumerate(first) if r.act != DROP]
        if self.embedder is None or not open_:
            return first
        try:
            attr_vecs, labels, talk_vecs, info_vecs = self._prototypes()
            vectors = _unit(self.embedder.embed([first[i].text for i in open_]))
        except Exception as exc:  # the meaning is a help, never a failure of its own: the rules' reading stands
            log.warning("reading %d sentences by meaning failed, read by rules only: %s: %s", len(open_),
                        type(exc).__name__, exc)
            return first
        out = list(first)
        for i, v in zip(open_, vectors):
            r = first[i]
            talk, info = float(np.max(talk_vecs @ v)), float(np.max(info_vecs @ v))
            if (r.act == CLAIM and r.cue is None and talk >= SMALL_TALK_MIN and talk > info and _short(r.text)
                    and not _DATED.search(r.text)):
                out[i] = Reading(r.text, DROP, by_meaning=True)
                continue
            if r.act != CLAIM:
                continue
            best: dict[str, float] = {}
            for label, score in zip(labels, attr_vecs @ v):
                best[label] = max(best.get(label, -1.0), float(score))
            # an attribute whose non-examples are as near as its examples is not what the sentence claims
            ranked = sorted(((k, x) for k, x in best.items() if not k.startswith("-") and x > best.get("-" + k, -1.0)),
                            key=lambda kv: -kv[1])
            if ranked and ranked[0][1] >= ATTRIBUTE_MIN and not _ABOUT_OTHERS.search(r.text) and (
                    len(ranked) < 2 or ranked[0][1] - ranked[1][1] >= ATTRIBUTE_MARGIN):
                sure = r.cue is not None  # meaning alone names an attribute (to be retired), it does not retire
                out[i] = Reading(r.text, CLAIM, ranked[0][0], r.cue, r.names, sure=sure)
        return out

    @staticmethod
    def _by_rules(sentence: str) -> Reading:
        meant = _meant(sentence)
        if meant is None or _HYPOTHETICAL.search(meant) or _HYPERBOLE.search(meant) or is_small_talk(meant):
            return Reading(sentence, DROP)
        words = [w for w in re.findall(r"[\w']+", meant.lower())]
        if not words or all(w in FILLER_WORDS or w in SMALL_TALK_WORDS for w in words):
            return Reading(meant, DROP)
        question = meant.rstrip(" )\"'").endswith("?")
        if _ASK.search(meant) or _QUESTION_WORD.search(meant) or (question and (
                _QUESTION.search(meant) or _WANTS.search(meant))):
            return Reading(meant, ASK, names=names_of(meant))
        return Reading(meant, CLAIM, cue=cue_of(meant), names=names_of(meant))


def _short(text: str) -> bool:
    return len(re.findall(r"\w+", text)) <= 12


def _unit(vectors: object) -> np.ndarray:
    array = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return array / np.where(norms == 0, 1.0, norms)

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
from dataclasses import dataclass, replace

import numpy as np

from ..attributes import ATTRIBUTES, Attribute
from .base import ExtractedFact
from .cues import change_names, counts_of, cue_of, names_of, recalled_swap, without_recall
from .lexicon import FILLER_WORDS
from .talk import SMALL_TALK_WORDS, is_small_talk, values_of_kind

__all__ = ["ASK", "CLAIM", "DROP", "ClaimReader", "Reading", "about_others", "claim_groups", "is_request",
           "said_before", "split_talk", "with_claim"]

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
#: A value that is over or not yet: "in my previous role as…", "my former landlord", "I used to…",
#: "I'd like to start…", "I'm planning to…". History or a wish, not what holds now: by its meaning
#: alone such a sentence names no one-value attribute, so a later claim on it does not retire the
#: sentence (nor would the sentence retire what holds).
_NOT_NOW = re.compile(r"(?i)\b(?:previous|former|prior|used\s+to|(?:i'?d|i\s+would)\s+(?:like|love)\s+to|"
                      r"i\s+(?:want|hope|plan|intend)\s+to|i'?m\s+(?:planning|hoping|aiming)\s+to)\b")
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
#: The words by which speakers speak of themselves or their own ("I", "my team", "our kids", "im").
SELF_WORDS = re.compile(r"(?i)(?<![\w'])(?:i|me|my|mine|myself|we|us|our|ours|im|ive|id|ill)(?![\w])")

def is_request(text: str) -> bool:
    """Whether ``text`` asks for something: a recommendation, tips, help ("any suggestions?", "can you…").

    Example:
        >>> is_request("I'm thinking of baking for my colleagues. Any tips?")
        True
        >>> is_request("How many fitness classes do I attend?")
        False

    """
    return any(_ASK.search(s) or (_WANTS.search(s) and s.rstrip(" )\"'").endswith("?")) for s in split_talk(text))


def about_others(sentence: str) -> bool:
    """Whether ``sentence`` is said of someone else than its speaker ("my son leo starts kindergarten").

    Example:
        >>> about_others("my son leo starts kindergarten"), about_others("omar and i are engaged")
        (True, False)

    """
    return bool(_ABOUT_OTHERS.search(sentence))


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
    """The part of a sentence that is meant: after a "jk"/"for real" marker; None if the whole was not meant.

    A number alone after the marker puts right the one number of what was not meant: "i have 12
    cats lol not really, just 2" means "i have 2 cats".

    Example:
        >>> _meant("i have 12 cats lol not really, just 2"), _meant("I'm moving to Mars jk")
        ('i have 2 cats', None)

    """
    first = last = None
    for found in _UNSAID.finditer(sentence):
        first, last = first or found, found
    if last is None:
        return sentence
    rest = sentence[last.end():].strip(" ,.;:!-—)(")
    unsaid = sentence[:first.start()].strip(" ,.;:!-—)(")
    said, joked = values_of_kind(rest, "number"), values_of_kind(unsaid, "number")
    if len(rest.split()) <= 3 and len(said) == 1 and len(joked) == 1:
        return re.sub(rf"(?<![\w$€£.,]){re.escape(joked[0])}(?![\w.,])", said[0], unsaid, count=1)
    return rest or None


# --- claims in a message ---------------------------------------------------------------

def claim_groups(sentences: Sequence[str], read: Sequence[Reading | None]) -> list[tuple[list[str], Reading | None]]:
    """A message's kept sentences, one group per claim that changes or corrects something.

    A claim with a cue starts a group; the sentences after it (asks, other claims) go with
    it, those before the first such claim with the first. So "got rid of the corolla. how
    often should I change the oil on the civic?" is one quote that ends the old car's
    statements, while the rest of the message stays one quote (quoted whole, a message is
    found whole). A group's claim is its cue's, else its first claim with an attribute.
    """
    groups: list[tuple[list[str], Reading | None]] = []
    lead: list[str] = []
    for sentence, reading in zip(sentences, read):
        claim = reading if reading is not None and reading.act == CLAIM else None
        if claim is not None and claim.cue:
            groups.append(([*lead, sentence], claim))
            lead = []
        elif groups:
            text, held = groups[-1]
            text.append(sentence)
            if held is None and claim is not None and claim.attribute:
                groups[-1] = (text, claim)
        else:
            lead.append(sentence)
    if lead:
        first = next((r for r in read[:len(lead)] if r is not None and r.act == CLAIM and r.attribute), None)
        groups.append((lead, first))
    return groups or [([], None)]


def with_claim(fact: ExtractedFact, claim: Reading | None, text: str, before: str = "") -> ExtractedFact:
    """``fact`` (quoting ``text``) with the attribute and cue of the claim it comes from, and the claim's names.

    A correction that recalls the words said before ("remember i said pepper is a beagle?") is
    quoted without them (:func:`without_recall`), with the swap it says (:func:`recalled_swap`).
    A change's names are those of the clauses that say what changed (:func:`change_names`), not
    the whole quote's: in "crazy thing happened at school today. I lost my job", the school did
    not end; those of the sentence ``before`` it when it names nothing ("tavola closed 😭 end
    of an era"). A correction's are those of its sentence and the one before it, values too
    ("did i say march? i meant april": "march" was wrong), not a long message's every word
    ("…the piano-driven songs I love. As for playing along, it was actually easier than
    I expected!" corrects nothing about the piano). What a statement counts goes with it, claim or none.
    """
    counts = tuple(sorted(counts_of(text).items())) if fact.predicate == "statement" else ()
    if claim is None:
        return replace(fact, counts=counts) if counts else fact
    if claim.cue == "correction":
        names = names_of(f"{before} {claim.text}" if claim.text in text else text, values=True)
    else:
        names = change_names(claim.text) or names_of(before) if claim.cue else frozenset()
    fact = replace(fact, attribute=claim.attribute, cue=claim.cue, names=tuple(sorted(names)),
                   retires=bool(claim.attribute and claim.sure), counts=counts)
    if claim.cue != "correction" or fact.predicate != "statement" or (kept := without_recall(text)) == text:
        return fact
    # "remember i said pepper is a beagle? …she's actually a basset hound mix": the quote keeps what is
    # meant, not the words recalled as wrong; the statement they were said in is put right instead
    prefix = fact.content[:len(fact.content) - len(fact.object)] if fact.content.endswith(fact.object) else ""
    return replace(fact, object=kept, content=f"{prefix}{kept}", swap=recalled_swap(text))


def said_before(kept: Sequence[str], claim: Reading | None) -> str:
    """The sentence said before ``claim``'s among ``kept``: what "it" is in "tavola closed. end of an era"."""
    at = kept.index(claim.text) if claim is not None and claim.text in kept else 0
    return kept[at - 1] if at > 0 else ""


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
        # only a claim's meaning is weighed (small talk, its attribute): a question or a dropped sentence
        # is read by the rules alone, and embedding it would cost as much as a claim. So is a long sentence
        # that speaks of no one's own ("…, which helps dissipate force away from the spine"): a text passed
        # on (a pasted document, what a request is about), not small talk (that is short) and no claim of
        # the speaker's that meaning alone could name an attribute of
        open_ = [i for i, r in enumerate(first) if r.act == CLAIM and (_short(r.text) or SELF_WORDS.search(r.text))]
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
            if (r.cue is None and talk >= SMALL_TALK_MIN and talk > info and _short(r.text)
                    and not _DATED.search(r.text)):
                out[i] = Reading(r.text, DROP, by_meaning=True)
                continue
            best: dict[str, float] = {}
            for label, score in zip(labels, attr_vecs @ v):
                best[label] = max(best.get(label, -1.0), float(score))
            # an attribute whose non-examples are as near as its examples is not what the sentence claims
            ranked = sorted(((k, x) for k, x in best.items() if not k.startswith("-") and x > best.get("-" + k, -1.0)),
                            key=lambda kv: -kv[1])
            if ranked and ranked[0][1] >= ATTRIBUTE_MIN and not _ABOUT_OTHERS.search(r.text) and (
                    r.cue is not None or not _NOT_NOW.search(r.text)) and (
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

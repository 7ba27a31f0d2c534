"""The offline extractor: regular-expression rules over what speakers say.

No model and no network. Two kinds of facts come out of an episode:

* **canonical facts** from plain first-person or named statements — ``lives_in``,
  ``works_at``, ``works_as``, ``studies_at``, ``born_in``, ``birth_year``,
  ``is_from``, ``married_to``, ``likes``, ``dislikes``, ``has``, ``is_named``,
  ``age`` and ``has_<relation>`` ("my sister Anna") — with "I/me/my" resolved to
  the speaker and the time they became true read from the sentence ("since 2019",
  "last year") against the message's timestamp;
* **ended facts** from statements that a state is over — "I lived in Rome until
  2020", "I used to work at Initech", "I no longer live in Paris", "I quit my job at
  Acme", "I left Google in 2021" — with ``valid_until`` the stated end, or the
  message time when none is stated, so they go to history and never to the current
  view. Their start is the stated one ("from 2015 to 2019"); when none is stated it
  is unknown and ``valid_from`` equals ``valid_until``;
* a **statement fact** per informative message (``predicate="statement"``, the
  utterance as object), so nothing said goes unindexed.

The rules favour precision: questions, negations ("I don't live in Paris", "I never
lived in Rome") and conditionals ("if I moved to Rome") produce no canonical facts;
"not … anymore" ends one. An end stated in the future ("I'm in Rome until June")
does not end the fact, since it still holds. An unnamed
assistant message speaks as ``ExtractionContext.assistant_speaker`` ("Assistant"), so
what it recommended is remembered too. Anything subtler is the LLM extractor's job.

This module runs the rules over an episode; the rule table and its object readers
are in :mod:`~zep_core.providers.patterns`, the words they are written in are in
:mod:`~zep_core.providers.lexicon`.

Example:
    >>> from datetime import datetime, timezone
    >>> from zep_core.models import Message
    >>> from zep_core.providers.base import ExtractionContext
    >>> ctx = ExtractionContext("u1", "s1", now=datetime(2024, 5, 1, tzinfo=timezone.utc))
    >>> out = RuleExtractor().extract([Message("I live in Berlin.", name="Alice")], ctx)
    >>> [(f.subject, f.predicate, f.object) for f in out.facts]
    [('Alice', 'lives_in', 'Berlin'), ('Alice', 'statement', 'I live in Berlin.')]

"""

from __future__ import annotations

import re
import sys
from bisect import bisect_left, bisect_right
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from ..models import Message
from ..temporal import is_own
from .base import ExtractedCorrection, ExtractedEntity, ExtractedFact, Extraction, ExtractionContext
from .extractive import predicate_phrase, speaker_of, split_sentences, summarize_messages
from .lexicon import CONDITIONAL_WORDS, FILLER_WORDS, GROUPS, NAME, NOT_NAMES, NUMBER_WORDS, PETS, RELATIONS, WORD_RE
from .patterns import RULES, Rule, agrees
from .talk import corrections, is_echo, is_reaction, is_small_talk, same_kind_values, without_context_block
from .timeparse import TimeMention, duration_start, find_times

__all__ = ["RuleExtractor", "is_informative"]

CANONICAL_CONFIDENCE = 0.9
HEDGED_CONFIDENCE = 0.7
STATEMENT_CONFIDENCE = 0.6
STATEMENT_MAX_CHARS = 500
_QUESTION_MAX_WORDS = 8

# --- sentence checks and relations ------------------------------------------------

_RELATIVE_CLAUSE_RE = re.compile(
    r"(?i:\b(?:the|a|an|all|every|some|any|those|these)\s+(?!(?:end|moment|meantime|past|beginning|morning|"
    r"afternoon|evening|weekend|summer|winter|spring|fall|autumn|future|meanwhile)\b)[\w-]+|"
    r"\b(?:what|everything|anything|something|whatever|nothing))\s*$"
)
_HEDGE_RE = re.compile(
    r"\b(?:I\s+think|I\s+guess|I\s+believe|I\s+suppose|maybe|probably|perhaps|might|possibly|"
    r"kinda|not\s+sure)\b",
    re.IGNORECASE,
)
_NARRATIVE_PREDICATES = frozenset({"lives_in", "works_at"})  # "when I moved to Rome, …" still happened
_CONTRACTION_RE = re.compile(r"\b([Ii])['’](m|ve|d|ll)\b|\b(can)['’]t\b|\b(won)['’]t\b|n['’]t\b")
_CONTRACTED = {"m": " am", "ve": " have", "d": " would", "ll": " will"}
_SPACE_RE = re.compile(r"\s+")
_PERFECT_RE = re.compile(r"\b(?:have|has)\s+(?:\w+\s+)?(?:been|lived|worked|had|owned|studied)\b", re.IGNORECASE)
# "I am no longer a nurse", "I am not into jazz anymore" → "I no longer am …", which the rules read.
_COPULA_ENDED_RE = re.compile(
    r"\b(am|is|are|was|were)\s+(?:no\s+longer|not(?=[^.;!?]*\bany\s?(?:more|longer)\b))\b", re.IGNORECASE
)
# "I left Shopify and joined Stripe": a second verb whose subject, "I", is left out.
_ELIDED_I_RE = re.compile(
    r"(?<=\w)(,?\s+(?:and|but)(?:\s+(?:then|now|also))?|,\s+then)\s+(?=(?:joined|started|moved|switched|took|"
    r"got|adopted|bought|began|picked|became|quit|left|stopped|gave|dropped|now\s+(?:work|live|play))\b)",
    re.IGNORECASE,
)
# "I am currently working as", "I'm really into": an adverb after the auxiliary.
_AUX_ADVERB_RE = re.compile(
    r"\b(am|is|are|was|were|have|has|had)\s+(?:currently|also|still|just|recently|actually|really|now|finally|"
    r"already|officially|mainly|mostly|basically)\s+(?=\w)",
    re.IGNORECASE,
)
_ANYMORE_RE = re.compile(r"\bany\s?(?:more|longer)\b", re.IGNORECASE)
_CLAUSE_END_RE = re.compile(r"[,;:]|\s(?:but|and\s+now|though|although|whereas)\s", re.IGNORECASE)
_BASE_FORM_AUX = frozenset({"used", "do", "does", "did"})
_PERSONAL = ("I", "i")
_EPISODE_WINDOW = timedelta(days=31)  # a plain past tense dated closer than this is an event
_CLAUSE_LOOKBACK = 300  # characters around a match searched for "if", "when", "anymore"…
_MY_RELATION_RE = re.compile(
    r"(?<![\w'])(?i:my)\s+(?P<rel>(?i:best\s+friend|"
    + "|".join(sorted((k for k in RELATIONS if k != "best friend"), key=len, reverse=True))
    + rf"))\s+(?P<name>{NAME})(?![\w-])"
)

# --- the extractor -----------------------------------------------------------------


def is_informative(text: str) -> bool:
    """Whether a message says something worth indexing: 3+ words, not only pleasantries.

    Example:
        >>> is_informative("ok thanks!"), is_informative("I adopted a puppy")
        (False, True)

    """
    words = [w.lower().strip("'’") for w in WORD_RE.findall(text) if w[0].isalnum()]
    if len(words) < 3 or all(w in FILLER_WORDS for w in words):
        return False
    return not _is_short_question(text, len(words))


def _is_short_question(text: str, n_words: int) -> bool:
    """A short message that only asks ("Where do I live now?") states nothing to remember."""
    sentences = [s.strip() for s in split_sentences(text) if s.strip()]
    return n_words <= _QUESTION_MAX_WORDS and bool(sentences) and all(s.endswith("?") for s in sentences)


@dataclass(frozen=True)
class _Said:
    """One message prepared for the rules: who said it, when, its citation, and whether the assistant did."""

    speaker: str
    when: datetime
    ids: tuple[str, ...]
    assistant: bool = False
    users: frozenset[str] = frozenset()  # the conversation's users, lowercase: whom an echo names
    heard: frozenset[str] = frozenset()  # words the users said before this message, lowercase


class RuleExtractor:
    """The offline :class:`~zep_core.providers.base.Extractor`: rules, no model.

    Example:
        >>> from datetime import datetime, timezone
        >>> from zep_core.models import Message
        >>> from zep_core.providers.base import ExtractionContext
        >>> ctx = ExtractionContext("u1", "s1", now=datetime(2024, 5, 1, tzinfo=timezone.utc))
        >>> facts = RuleExtractor().extract([Message("I moved to Lisbon last year")], ctx).facts
        >>> facts[0].subject, facts[0].object, facts[0].valid_from.year
        ('User', 'Lisbon', 2023)

    """

    needs_known_facts = False

    def __init__(self, summary_sentences: int = 3, summary_chars: int = 400) -> None:
        """Create an extractor whose episode summaries keep that many sentences and chars."""
        self.summary_sentences = summary_sentences
        self.summary_chars = summary_chars

    def extract(self, messages: Sequence[Message], context: ExtractionContext) -> Extraction:
        """Extract canonical and statement facts, entities and a summary from one episode.

        Args:
            messages: the episode, in order.
            context: the ingest context; ``now`` is the fallback message time and
                ``default_speaker`` names unnamed ``user`` messages.

        Returns:
            The extraction; facts cite their message ids where messages have ids.

        """
        facts: dict[tuple[str, str, str], ExtractedFact] = {}
        speakers: list[str] = []
        heard: list[tuple[Message, _Said]] = []
        users = frozenset(speaker_of(m, context.default_speaker).split()[0].lower()
                          for m in messages if m.role == "user" and speaker_of(m, context.default_speaker).split())
        fixes: list[ExtractedCorrection] = []
        words: set[str] = set()
        for message in messages:
            said = _said(message, context, users)
            if said is None:
                continue
            speakers.append(said.speaker)
            text, loose = message.content, []
            if said.assistant:
                said = replace(said, heard=frozenset(words))
                text = without_context_block(text)
            else:
                text, pending = _self_corrected(text)
                found, loose = _corrections(message, said, heard, pending)
                fixes += found
                words.update(w.lower() for w in _QUOTE_WORD.findall(message.content.replace("’", "'")))
            heard.append((message, said))
            for fact in _message_facts(text, said, loose if not said.assistant else ()):
                _merge(facts, fact)
        summary = summarize_messages(
            [m for m, _ in heard],
            self.summary_sentences,
            self.summary_chars,
            default_speaker=context.default_speaker,
        )
        return Extraction(
            summary=summary or None,
            entities=_entities(speakers, facts.values()),
            facts=tuple(facts.values()),
            corrections=tuple(fixes),
        )


def _said(message: Message, context: ExtractionContext, users: frozenset[str] = frozenset()) -> _Said | None:
    if message.role not in ("user", "assistant"):
        return None
    if message.role == "assistant" and not message.name:
        if not context.assistant_speaker:
            return None
        message = replace(message, name=context.assistant_speaker)
    ids = (message.id,) if message.id else ()
    return _Said(speaker_of(message, context.default_speaker), message.timestamp or context.now, ids,
                 assistant=message.role == "assistant", users=users)


def _self_corrected(text: str) -> tuple[str, list[str]]:
    """A message with the corrections it makes of itself carried out, and its other correcting sentences.

    "I'm flying to Rome on Friday. No sorry, Milan.": the message is read as "I'm
    flying to Milan on Friday." — Rome was never said as a statement of its own. A
    correction that finds nothing earlier in its message is left for the messages
    before it (:func:`_corrections`).
    """
    sentences = split_sentences(text)
    if len(sentences) < 2 or not any(corrections(x) for x in sentences[1:]):
        return text, [x for x in sentences if corrections(x)]
    out: list[str] = []
    pending: list[str] = []
    for sentence in sentences:
        cues = corrections(sentence)
        if not cues:
            out.append(sentence)
            continue
        cue = cues[0]
        for i in range(len(out) - 1, -1, -1) if cue.right is not None else ():
            wrong = cue.wrong or next(iter(same_kind_values(out[i], cue.right)[-1:]), None)
            if wrong is not None and _mentions(out[i], wrong):
                out[i] = re.sub(rf"(?<![\w'’]){re.escape(wrong)}(?![\w'’])", cue.right, out[i], flags=re.IGNORECASE)
                break
        else:
            out.append(sentence)
            pending.append(sentence)
    return " ".join(out), pending


def _corrections(message: Message, said: _Said, earlier: Sequence[tuple[Message, _Said]],
                 sentences: Sequence[str]) -> tuple[list[ExtractedCorrection], list[str]]:
    """The corrections a user message makes (rule 4 of :mod:`~zep_core.providers.talk`), resolved in the episode.

    The corrected message is the latest earlier one of the same speaker that holds the
    wrong value (or, when the correction names only the value meant, a value of the
    same kind; when it only takes something back, the latest one that is not small
    talk). When none of this episode's messages is it, the core looks among the
    speaker's stored facts for the wrong value, or for the name the correction is about.
    """
    own = [(m, s) for m, s in earlier if s.speaker == said.speaker and not s.assistant]
    out: list[ExtractedCorrection] = []
    loose: list[str] = []
    for sentence in sentences:
        for cue in corrections(sentence):
            wrong, target = cue.wrong, None
            for m, _ in reversed(own):
                text = m.content
                if cue.right is None:
                    if not all(is_small_talk(x) for x in split_sentences(text)):
                        target = m
                elif wrong is not None:
                    target = m if _mentions(text, wrong) else None
                else:
                    scope = text if cue.about is None or _mentions(text, cue.about) else ""
                    found = same_kind_values(scope, cue.right)
                    if found:
                        wrong, target = found[-1], m
                if target is not None:
                    break
            if target is None and wrong is None and cue.about is None:
                loose.append(sentence)  # nothing here to correct, nothing to look for: read as said
                continue
            out.append(ExtractedCorrection(
                speaker=said.speaker, right=cue.right, wrong=wrong, about=None if wrong else cue.about,
                in_messages=(target.id,) if target is not None and target.id else (), source_message_ids=said.ids))
            if target is not None and wrong is not None:
                out += _replies_to(target, wrong, earlier, said.ids)
    return out, loose


def _replies_to(target: Message, wrong: str, earlier: Sequence[tuple[Message, _Said]],
                source: tuple[str, ...]) -> list[ExtractedCorrection]:
    """The assistant's replies to a corrected message that repeat its wrong value ("Bern is lovely").

    They answered a mistake: what they say of the wrong value is taken back with it.
    """
    after = False
    out = []
    for m, s in earlier:
        after = after or m is target
        if after and s.assistant and m.id and _mentions(m.content, wrong):
            out.append(ExtractedCorrection(speaker=s.speaker, right=None, wrong=wrong, in_messages=(m.id,),
                                           source_message_ids=source))
    return out


def _mentions(text: str, value: str) -> bool:
    return re.search(rf"(?<![\w'’]){re.escape(value)}(?![\w'’])", text, re.IGNORECASE) is not None


def _merge(facts: dict[tuple[str, str, str], ExtractedFact], fact: ExtractedFact) -> None:
    key = (fact.subject.casefold(), fact.predicate, fact.object.casefold())
    seen = facts.get(key)
    if seen is None:
        facts[key] = fact
        return
    ids = tuple(dict.fromkeys(seen.source_message_ids + fact.source_message_ids))
    facts[key] = replace(seen, source_message_ids=ids, confidence=max(seen.confidence, fact.confidence),
                         covered=seen.covered and fact.covered)


def _message_facts(text: str, said: _Said, loose: Collection[str] = ()) -> Iterator[ExtractedFact]:
    """The facts of one message, by the rules of :mod:`~zep_core.providers.talk`.

    Small talk says nothing; the assistant's words are only its quotes, without what it
    echoes of memory; a correction's sentence says nothing of its own (what it means
    goes into the statement it corrects; ``loose``: correcting sentences that found
    nothing to correct, read as said); a quote is kept only where it says more than the
    canonical facts drawn from it.
    """
    canonical: list[ExtractedFact] = []
    kept: list[str] = []
    for sentence in split_sentences(text):
        if is_small_talk(sentence) or (said.assistant and (is_echo(sentence, said.users)
                                                           or is_reaction(sentence, said.heard))):
            continue
        if not said.assistant and sentence not in loose and (cues := corrections(sentence)):
            if not cues[0].rest:
                continue  # what a correction means goes into the statement it corrects
            sentence = cues[0].rest  # "scratch that, I'm a librarian": the new statement is read as said
        if not sentence.rstrip("\"')").endswith("?"):
            found = _sentence_facts(_normalize(sentence), said)
            # the assistant's words speak for the assistant only: never a fact about the user
            canonical += [f for f in found if not said.assistant or is_own(f.subject, said.speaker)]
        kept.append(sentence)
    yield from canonical
    if not kept:
        return
    for quote in _quotes(_SPACE_RE.sub(" ", " ".join(kept)).strip(), canonical):
        if is_informative(quote):
            yield _statement(quote, said, covered=not _says_more(quote, canonical))


#: Where a sentence starts a new clause with its own subject: "…, and I work at Initech".
_NEW_CLAUSE_RE = re.compile(
    r"\s*;\s*|,?\s+(?:and|but|so|while|whereas)\s+(?=(?:I|I'm|I've|I'd|my|we|our|he|she|they|his|her|their)\b)",
    re.IGNORECASE)


def _quotes(flat: str, canonical: Sequence[ExtractedFact]) -> list[str]:
    """The message as one quote, or clause by clause when its clauses state different facts.

    A quote stays current while a canonical fact whose value it mentions is current
    (:func:`zep_core.temporal.plan_updates`). So "I live in Paris and I work at Acme"
    is quoted as "I live in Paris" and "I work at Acme": the move to Berlin retires
    the first and keeps the second. Clauses that state no fact stay with the clause
    before them; a message stating facts in one clause only is quoted whole.
    """
    values = [v for v in dict.fromkeys(f.object.casefold() for f in canonical) if v]
    if len(values) < 2:
        return [flat]

    def states(clause: str) -> bool:
        lowered = clause.casefold()
        return any(re.search(rf"(?<!\w){re.escape(v)}(?!\w)", lowered) for v in values)

    clauses = [c.strip() for sentence in split_sentences(flat) for c in _NEW_CLAUSE_RE.split(sentence) if c.strip()]
    groups: list[list[str]] = []
    for clause in clauses:
        if states(clause) or not groups:
            groups.append([clause])
        else:
            groups[-1].append(clause)
    if len(groups) > 1 and not states(groups[0][0]):
        lead = groups.pop(0)  # a lead-in that states nothing goes with the first clause that does
        groups[0][:0] = lead
    return [" ".join(g) for g in groups] if len(groups) > 1 else [flat]


def _normalize(sentence: str) -> str:
    def expand(match: re.Match[str]) -> str:
        if match[1]:
            return match[1] + _CONTRACTED[match[2].lower()]
        if match[3]:
            return match[3] + "not"
        if match[4]:
            return "will not"
        return " not"

    expanded = _CONTRACTION_RE.sub(expand, sentence.replace("’", "'"))
    expanded = _COPULA_ENDED_RE.sub(lambda m: f"no longer {m[1]}", expanded)
    if re.match(r"\s*(?:\w+[\s,]+){0,2}I\b", expanded):  # the sentence's subject is "I": say it again
        expanded = _ELIDED_I_RE.sub(lambda m: f"{m[1]} I ", expanded)
    return _AUX_ADVERB_RE.sub(lambda m: f"{m[1]} ", expanded)


@dataclass(frozen=True)
class _Found:
    """One rule match in a sentence, before its time is read: what it says and whether it ended."""

    rule: Rule
    match: re.Match[str]
    subject: str
    objects: list[str]
    ended: bool


def _sentence_facts(sentence: str, said: _Said) -> Iterator[ExtractedFact]:
    lower = sentence.lower()
    confidence = HEDGED_CONFIDENCE if _HEDGE_RE.search(sentence) else CANONICAL_CONFIDENCE
    times: list[TimeMention] | None = None
    found: list[_Found] = []
    for rule in RULES:
        if not rule.trigger_re.search(lower) or not rule.applies_to(sentence):
            continue
        for match in rule.pattern.finditer(sentence):
            subject = _subject(match, said.speaker, rule)
            if subject is None or _is_conditional(sentence, match, rule):
                continue
            ended = _ended(sentence, match, rule)
            if ended is None:
                continue
            if times is None:
                times = find_times(sentence, said.when)
            objects = rule.read_object(_until_time(sentence, match.end(), times))
            if objects:
                found.append(_Found(rule, match, subject, objects, ended))
    layout = _Layout(found, times or [])
    for item in found:
        valid_from, valid_until = _validity(sentence, item, layout, said.when)
        if valid_from != valid_until and _is_episode(item, valid_from, said.when):
            continue
        for obj in item.objects:
            yield _canonical(item.rule, item.subject, obj, (valid_from, valid_until), confidence, said)
    if "my" in lower:
        yield from _relation_facts(sentence, said, confidence)
    yield from _count_facts(sentence, said, confidence)


def _ended(sentence: str, match: re.Match[str], rule: Rule) -> bool | None:
    """Whether the match states a state that is over; ``None`` when it denies the fact.

    "I used to live", "I no longer live", "I lived", "I quit" are over; "I do not live
    in Paris" denies it, "I do not live in Paris anymore" is over; "I be a nurse"
    without "used to" is no English the rules read.
    """
    groups = match.groupdict()
    aux = (groups.get("ended") or "").lower().split()
    verb = (groups.get("verb") or "").lower().split()
    if aux and aux[-1] == "not":
        clause = sentence[match.end() : match.end() + _CLAUSE_LOOKBACK]
        cut = _CLAUSE_END_RE.search(clause)
        return True if _ANYMORE_RE.search(clause[: cut.start()] if cut else clause) else None
    if verb[:1] == ["be"] and not aux:
        return None
    if not (aux and aux[0] in _BASE_FORM_AUX) and not agrees(match, first_person=match["subj"] in _PERSONAL):
        return None
    return bool(aux) or rule.ends or groups.get("past") is not None


def _subject(match: re.Match[str], speaker: str, rule: Rule) -> str | None:
    raw = match.group("subj") or (match.groupdict().get("subj2") or match.groupdict().get("subj3"))
    if raw is None:
        return None
    if raw.lower() in ("i", "my", "me"):
        return speaker
    if rule.subject_first_person_only:
        return None
    if raw[:3].lower() == "my ":  # "my sister lives in Oslo": the speaker's sister
        return f"{speaker}'s {' '.join(raw.split()[1:]).lower()}"
    words = raw.split()
    while words and words[0] in NOT_NAMES:
        words.pop(0)
    if not words or any(w in NOT_NAMES for w in words):
        return None
    return " ".join(words)


def _is_conditional(sentence: str, match: re.Match[str], rule: Rule) -> bool:
    prefix = sentence[max(0, match.start() - _CLAUSE_LOOKBACK) : match.start()]  # bounded: no quadratic scan
    segment = prefix[max(prefix.rfind(","), prefix.rfind(";"), prefix.rfind(":")) + 1 :].lower()
    if _RELATIVE_CLAUSE_RE.search(segment):
        return True
    words = set(segment.replace("'", " ").split())
    if "when" in words and rule.predicate not in _NARRATIVE_PREDICATES:
        return True
    return not CONDITIONAL_WORDS.isdisjoint(words)


def _until_time(sentence: str, start: int, times: list[TimeMention]) -> str:
    i = bisect_left(times, start, key=lambda t: t.start)
    return sentence[start : times[i].start if i < len(times) else len(sentence)]


class _Layout:
    """Where a sentence's matches and time mentions lie, to tell which times are whose.

    A time belongs to a match unless another match stands wholly between them.
    """

    def __init__(self, found: list[_Found], times: list[TimeMention]) -> None:
        by_start = sorted((f.match.start(), f.match.end()) for f in found)
        self._starts = [s for s, _ in by_start]
        self._first_end_after = [e for _, e in by_start]  # suffix minimum of ends
        for i in range(len(by_start) - 2, -1, -1):
            self._first_end_after[i] = min(self._first_end_after[i], self._first_end_after[i + 1])
        by_end = sorted((e, s) for s, e in by_start)
        self._ends = [e for e, _ in by_end]
        self._last_start_before = [s for _, s in by_end]  # prefix maximum of starts
        for i in range(1, len(by_end)):
            self._last_start_before[i] = max(self._last_start_before[i], self._last_start_before[i - 1])
        self.times = times
        self._time_starts = [t.start for t in times]
        self._time_ends = [t.end for t in times]

    def window(self, match: re.Match[str]) -> tuple[int, int]:
        """The span outside which another match cuts this one off from a time."""
        i = bisect_left(self._starts, match.end())
        high = self._first_end_after[i] if i < len(self._starts) else sys.maxsize
        j = bisect_right(self._ends, match.start())
        low = self._last_start_before[j - 1] if j else -1
        return low, high

    def times_of(self, match: re.Match[str]) -> list[TimeMention]:
        """The times no other match stands between this match and."""
        low, high = self.window(match)
        return self.times[bisect_right(self._time_ends, low) : bisect_left(self._time_starts, high)]


def _validity(
    sentence: str, item: _Found, layout: _Layout, said_at: datetime
) -> tuple[datetime | None, datetime | None]:
    """The fact's ``(valid_from, valid_until)`` from the times stated next to it.

    A time belongs to the nearest match it is not cut off from by another match. "until
    2020" ends the fact; any other time starts it, except after a verb that ends the
    fact ("I left Google in 2021"). An ended fact without a stated end ends when it was
    said; one without a stated start starts when it ends (the start is unknown).
    """
    match = item.match
    mine = layout.times_of(match)
    ends = [t for t in mine if t.bound == "end"]
    starts = [t for t in mine if t.bound != "end"]
    until = _nearest(ends, match)
    if item.rule.ends and until is None:
        until = _nearest([t for t in starts if t.bound is None], match)
    if until is not None:
        starts = [t for t in starts if t is not until and t.start < until.start and t.when <= until.when]
    start = _nearest(starts, match)
    valid_from = start.when if start else None
    valid_until = until.when if until else None
    if valid_until is not None and valid_until > said_at:
        valid_until = said_at if item.ended else None  # "until June", said in May: it still holds
    elif valid_until is None and item.ended:
        valid_until = said_at
    if valid_until is None and valid_from is None and _PERFECT_RE.search(match.group(0)):
        valid_from = duration_start(sentence[match.end() : layout.window(match)[1]], said_at)
    if valid_until is not None and (valid_from is None or valid_from > valid_until):
        valid_from = valid_until
    return valid_from, valid_until


def _is_episode(item: _Found, valid_from: datetime | None, said_at: datetime) -> bool:
    """A plain past tense dated days ago tells an event, not a state that ended.

    "I worked at Acme yesterday" says nothing about whether Alice still works there, so
    it must not end that fact; "I lived in Rome in 2010" did end, and so did "I lived
    in Rome until last week" (the caller passes only a start read from the text).
    """
    plain_past = item.match.groupdict().get("past") is not None and not item.match.groupdict().get("ended")
    return plain_past and valid_from is not None and said_at - valid_from < _EPISODE_WINDOW


def _nearest(mentions: list[TimeMention], match: re.Match[str]) -> TimeMention | None:
    return min(mentions, key=lambda t: _distance(t, match)) if mentions else None


def _distance(mention: TimeMention, match: re.Match[str]) -> int:
    if mention.start >= match.end():
        return mention.start - match.end()
    return max(match.start() - mention.end, 0)


def _canonical(
    rule: Rule,
    subject: str,
    obj: str,
    validity: tuple[datetime | None, datetime | None],
    confidence: float,
    said: _Said,
) -> ExtractedFact:
    valid_from, valid_until = validity
    phrase = predicate_phrase(rule.predicate, obj)
    return ExtractedFact(
        subject=subject,
        predicate=rule.predicate,
        object=obj,
        content=f"{subject} {_used_to(phrase) if valid_until else phrase}.",
        confidence=confidence,
        valid_from=valid_from,
        valid_until=valid_until,
        source_message_ids=said.ids,
        subject_type="person",
        object_type=rule.object_type,
        object_is_entity=rule.object_is_entity,
    )


_BASE_VERBS = {"lives": "live", "works": "work", "studies": "study", "is": "be", "likes": "like",
               "dislikes": "dislike", "has": "have", "goes": "go", "was": "be", "plays": "play",
               "does": "do"}  # fmt: skip


def _used_to(phrase: str) -> str:
    """Turn "lives in Rome" into "used to live in Rome": how an ended fact reads."""
    verb, _, rest = phrase.partition(" ")
    return f"used to {_BASE_VERBS.get(verb, verb)} {rest}".rstrip()


def _relation_facts(sentence: str, said: _Said, confidence: float) -> Iterator[ExtractedFact]:
    for match in _MY_RELATION_RE.finditer(sentence):
        name = match["name"]
        if name in NOT_NAMES or name == said.speaker:
            continue
        relation = RELATIONS[" ".join(match["rel"].lower().split())]
        predicate = "married_to" if relation == "spouse" else f"has_{relation}"
        yield ExtractedFact(
            subject=said.speaker,
            predicate=predicate,
            object=name,
            content=f"{said.speaker} {predicate_phrase(predicate, name)}.",
            confidence=confidence,
            source_message_ids=said.ids,
            object_type="thing" if relation in PETS else "person",
        )


# --- sizes: a count holds one value at a time (rule 6 of talk.py) ----------------------------

_NUMBER = r"(?P<n>\d{1,6}|" + "|".join(sorted(map(re.escape, NUMBER_WORDS), key=len, reverse=True)) + ")"
_UNIT = r"(?:\s+(?P<unit>(?!(?:and|but|now|so|in|on|at|of|this|total|people\s+now)\b)[a-z]+))?"
_SIZE_VERB = (r"(?:has|have|is|are|was|consists\s+of|is\s+made\s+up\s+of|(?:has\s+)?(?:grew|grown|shrank|shrunk|"
              r"dropped|fell|fallen|doubled|tripled|expanded|increased|decreased|went\s+(?:up|down)|gone\s+(?:up|down))"
              r"\s+to|is\s+(?:up|down)\s+to|now\s+has|now\s+is|reached|hit|counts)")
_QUALIFIER = r"(?:(?:now|only|just|about|around|roughly|exactly|over|almost|nearly)\s+)*"
_SIZES = (
    # "my team has 4 engineers", "my team grew to 7", "our family is now five people"
    re.compile(rf"(?P<owner>(?<![\w'])(?i:my|our)|{NAME}['’]s)\s+(?:(?i:whole|entire|little|new|current)\s+)?"
               rf"(?P<noun>(?i:{GROUPS}))\s+(?i:(?:now\s+)?{_SIZE_VERB})\s+{_QUALIFIER}(?i:{_NUMBER}){_UNIT}"),
    # "there are 7 engineers on my team"
    re.compile(rf"(?i:there\s+(?:are|is)\s+(?:now\s+)?{_QUALIFIER}{_NUMBER}{_UNIT}\s+(?:on|in)\s+)"
               rf"(?P<owner>(?i:my|our))\s+(?P<noun>(?i:{GROUPS}))"),
    # "I lead 5 engineers", "I now manage a team of 7", "my team of 6"
    re.compile(rf"(?P<owner>(?<![\w'])I)\s+(?i:(?:now\s+|currently\s+|also\s+)?(?:lead|manage|supervise|oversee|run|"
               rf"have)\s+(?:a\s+(?P<noun>team|group|staff|crew)\s+of\s+)?{_QUALIFIER}{_NUMBER}"
               rf"(?:\s+(?P<unit>people|engineers|developers|designers|reports|employees|researchers|nurses|"
               rf"teachers|analysts|members|staff|folks|direct\s+reports))?)"),
    re.compile(rf"(?P<owner>(?<![\w'])(?i:my|our))\s+(?P<noun>(?i:team|group|staff|crew))\s+(?i:of\s+{_NUMBER}{_UNIT})"),
    # "we're a team of 10", "we are now a family of five"
    re.compile(rf"(?P<owner>(?<![\w'])(?i:we))(?i:'re|\s+are)\s+(?i:(?:now|still|currently)\s+)?(?i:an?)\s+"
               rf"(?P<noun>(?i:{GROUPS}))\s+(?i:of\s+{_QUALIFIER}{_NUMBER}){_UNIT}"),
)


def _count_facts(sentence: str, said: _Said, confidence: float) -> Iterator[ExtractedFact]:
    """``<owner>'s <group> size <n> [unit]``: "Maya's team has 7 engineers." (``size`` is single-valued)."""
    seen: set[str] = set()
    for pattern in _SIZES:
        for match in pattern.finditer(sentence):
            groups = match.groupdict()
            noun = (groups.get("noun") or "").lower()
            if not noun and not groups.get("unit"):
                continue  # "I have 2" says nothing of a team
            noun = noun or "team"
            owner = groups["owner"]
            who = said.speaker if owner.lower() in ("i", "my", "our", "we") else owner[:-2]
            if noun in seen:
                continue
            seen.add(noun)
            raw = groups["n"].lower()
            number = str(NUMBER_WORDS.get(raw, raw))
            unit = (groups.get("unit") or "").lower()
            obj = f"{number} {unit}".strip()
            subject = f"{who}'s {noun}"
            yield ExtractedFact(subject=subject, predicate="size", object=obj, content=f"{subject} has {obj}.",
                                confidence=confidence, source_message_ids=said.ids, subject_type="group",
                                object_is_entity=False)


# --- quotes ------------------------------------------------------------------------------

#: Words a quote may hold and still say nothing its canonical facts do not: function words, times
#: (a fact carries its dates), and the verbs that state the canonical predicates.
_SAYS_NOTHING = frozenset(
    """i i'm i've i'd me my mine myself we our us you your a an the and or but so then also too now just still
    already currently recently finally really actually very is am are was were be been being have has had do
    does did to of in at on for from with as by about since ago last next this that these those it its there
    here yes no not oh well ok okay hey hi year years month months week weeks day days today yesterday
    tomorrow tonight morning evening weekend january february march april may june july august september
    october november december monday tuesday wednesday thursday friday saturday sunday live lives lived living
    moved move moving relocated home based work works worked working job employed joined started starting
    left quit switched stopped turned turn
    start began new study studies studied studying like likes liked love loves loved enjoy enjoys enjoyed
    got get own owns adopted bought play plays played playing practice doing go going goes quit stopped
    switched gave given up named called name born married anymore longer used every grew grown shrank shrunk
    dropped fell doubled tripled expanded increased decreased went reached hit consists made lead leads manage
    manages supervise run people members big news guess what fun fact quick update btw way""".split())
_QUOTE_WORD = re.compile(r"[A-Za-zÀ-ÿ0-9][\w'’-]*")


def _says_more(quote: str, canonical: Sequence[ExtractedFact]) -> bool:
    """Whether a quote holds a word its canonical facts (and plain function words) do not (rule 7)."""
    if not canonical:
        return True
    covered = set(_SAYS_NOTHING)
    for fact in canonical:
        covered.update(w.lower() for w in _QUOTE_WORD.findall(f"{fact.content} {fact.object} {fact.subject}"))
    for word in _QUOTE_WORD.findall(quote.replace("’", "'")):
        lowered = word.lower()
        if lowered not in covered and lowered.rstrip("s") not in covered and not re.fullmatch(r"(?:19|20)\d\d", word):
            return True
    return False


def _statement(text: str, said: _Said, covered: bool = False) -> ExtractedFact:
    if len(text) > STATEMENT_MAX_CHARS:
        cut = text[: STATEMENT_MAX_CHARS - 1]
        text = cut[: cut.rfind(" ")] + "…" if " " in cut else cut + "…"
    return ExtractedFact(
        subject=said.speaker,
        predicate="statement",
        object=text,
        content=f"{said.speaker}: {text}",
        confidence=STATEMENT_CONFIDENCE,
        source_message_ids=said.ids,
        object_type="thing",
        object_is_entity=False,
        covered=covered,
    )


def _entities(speakers: list[str], facts: Iterable[ExtractedFact]) -> tuple[ExtractedEntity, ...]:
    seen: dict[str, ExtractedEntity] = {}

    def add(name: str, entity_type: str) -> None:
        seen.setdefault(name.casefold(), ExtractedEntity(name, entity_type))

    for speaker in speakers:
        add(speaker, "person")
    for fact in facts:
        add(fact.subject, fact.subject_type)
        if fact.object_is_entity:
            add(fact.object, fact.object_type)
    return tuple(seen.values())

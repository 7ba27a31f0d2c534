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

This module runs the rules over an episode, message by message; reading one sentence
(the rule matches, their times, the canonical facts) is in
:mod:`~zep_core.providers.sentences`, the rule table is in
:mod:`~zep_core.providers.patterns` and its object readers in
:mod:`~zep_core.providers.objects`, the words they are written in are in
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
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace

from ..attributes import attribute_of
from ..models import Message
from ..names import is_own
from ..predicates import stating_words
from .base import ExtractedCorrection, ExtractedEntity, ExtractedFact, Extraction, ExtractionContext
from .claims import CLAIM, DROP, SELF_WORDS, ClaimReader, Reading, claim_groups, said_before, split_talk, with_claim
from .cues import names_of
from .earlier import Earlier, Heard, mentions
from .extractive import speaker_of, split_sentences, summarize_messages
from .lexicon import FILLER_WORDS, WORD_RE
from .phrase_finder import PhraseFinder
from .sentences import Said, normalize, sentence_facts
from .talk import (
    casts_a_role,
    corrections,
    is_echo,
    is_reaction,
    is_small_talk,
    without_assumption,
    without_context_block,
)

__all__ = ["RuleExtractor", "is_informative"]

STATEMENT_CONFIDENCE = 0.6
STATEMENT_MAX_CHARS = 500
_QUESTION_MAX_WORDS = 8
_SPACE_RE = re.compile(r"\s+")

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

    def __init__(self, summary_sentences: int = 3, summary_chars: int = 400, *, embedder: object | None = None) -> None:
        """Create an extractor whose episode summaries keep that many sentences and chars.

        ``embedder``: what the memory embeds with; the extractor reads a user's sentences by
        meaning with it too (:class:`~zep_core.providers.claims.ClaimReader`). None: by rules only.
        """
        self.summary_sentences = summary_sentences
        self.summary_chars = summary_chars
        self.reader = ClaimReader(embedder)

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
        heard = Heard()
        users = frozenset(speaker_of(m, context.default_speaker).split()[0].lower()
                          for m in messages if m.role == "user" and speaker_of(m, context.default_speaker).split())
        fixes: list[ExtractedCorrection] = []
        words: set[str] = set()
        # a message that asks the assistant to speak as someone: what follows is the role's, quoted, never read
        cast = {i for i, m in enumerate(messages) if m.role == "user" and casts_a_role(m.content)}
        corrected = {i: _self_corrected(m.content) for i, m in enumerate(messages)
                     if m.role == "user" and i not in cast}
        sentences = list(dict.fromkeys(x for text, _ in corrected.values() for x in split_talk(text)))
        readings = dict(zip(sentences, self.reader.read(sentences)))  # one embedder call for the episode
        unsaid: frozenset[str] = frozenset()  # names only the user's last unmeant sentences said ("mars" of a joke)
        for i, message in enumerate(messages):
            said = _said(message, context, users)
            if said is None:
                continue
            speakers.append(said.speaker)
            text, loose = message.content, []
            if said.assistant:
                said = replace(said, heard=frozenset(words), unsaid=unsaid)
                text = without_context_block(text)
                unsaid = frozenset()
            elif i in cast:
                said = replace(said, role=True)
            else:
                read = [readings[x] for x in split_talk(corrected[i][0]) if x in readings]
                meant = frozenset().union(*(names_of(r.text, values=True) for r in read if r.act != DROP))
                unsaid = frozenset().union(*(names_of(r.text, values=True) for r in read if r.act == DROP)) - meant
                text, pending = corrected[i]
                found, loose = _corrections(message, said, heard, pending)
                fixes += found
            if not said.assistant:
                words.update(w.lower() for w in _QUOTE_WORD.findall(message.content.replace("’", "'")))
            heard.add(message, said)
            for fact in _message_facts(text, said, loose if not said.assistant else (), readings):
                _merge(facts, fact)
        summary = summarize_messages(
            [m for m, _ in heard.messages],
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


def _said(message: Message, context: ExtractionContext, users: frozenset[str] = frozenset()) -> Said | None:
    if message.role not in ("user", "assistant"):
        return None
    if message.role == "assistant" and not message.name:
        if not context.assistant_speaker:
            return None
        message = replace(message, name=context.assistant_speaker)
    ids = (message.id,) if message.id else ()
    return Said(speaker_of(message, context.default_speaker), message.timestamp or context.now, ids,
                 assistant=message.role == "assistant", users=users)


def _self_corrected(text: str) -> tuple[str, list[str]]:
    """A message with the corrections it makes of itself carried out, and its other correcting sentences.

    "I'm flying to Rome on Friday. No sorry, Milan.": the message is read as "I'm
    flying to Milan on Friday." — Rome was never said as a statement of its own. A
    correction that finds nothing earlier in its message is left for the messages
    before it (:func:`_corrections`). The sentences before a correction are indexed
    (:class:`~zep_core.providers.earlier.Earlier`), so a long message of many
    corrections is read in time linear in its length.
    """
    sentences = split_sentences(text)
    said = [(x, corrections(x)) for x in sentences]  # read once: a long message has more sentences than the cache
    if len(sentences) < 2 or not any(cues for _, cues in said[1:]):
        return text, [x for x, cues in said if cues]
    out = Earlier()
    pending: list[str] = []
    for sentence, cues in said:
        if not cues:
            out.add(sentence)
            continue
        cue, found = cues[0], None
        if cue.right is not None and cue.wrong:
            at = out.latest_mentioning(cue.wrong)
            found = (at, cue.wrong) if at is not None else None
        elif cue.right is not None:
            found = out.latest_with_value(cue.right, mentioned=True)
        if found is not None:
            at, wrong = found
            out.replace(at, re.sub(rf"(?<![\w'’]){re.escape(wrong)}(?![\w'’])", cue.right, out.texts[at],
                                   flags=re.IGNORECASE))
            if cue.rest:  # "scratch that, $1200, my partner wants the sectional": the sectional stays said
                out.add(cue.rest)
        else:
            out.add(sentence)
            pending.append(sentence)
    return " ".join(out.texts), pending


def _corrections(message: Message, said: Said, heard: Heard,
                 sentences: Sequence[str]) -> tuple[list[ExtractedCorrection], list[str]]:
    """The corrections a user message makes (rule 4 of :mod:`~zep_core.providers.talk`), resolved in the episode.

    The corrected message is the latest earlier one of the same speaker that holds the
    wrong value (or, when the correction names only the value meant, a value of the
    same kind; when it only takes something back, the latest one that is not small
    talk). When none of this episode's messages is it, the core looks among the
    speaker's stored facts for the wrong value, or for the name the correction is about.
    """
    own = heard.own(said.speaker)
    out: list[ExtractedCorrection] = []
    loose: list[str] = []
    for sentence in sentences:
        for cue in corrections(sentence):
            wrong, target = cue.wrong, None
            if cue.right is None:
                target = own.latest_stating()
            elif wrong is not None:
                at = own.texts.latest_mentioning(wrong)
                target = own.said[at] if at is not None else None
            else:
                about = cue.about
                found = own.texts.latest_with_value(
                    cue.right, where=None if about is None else lambda i, a=about: mentions(own.texts.texts[i], a))
                if found is not None:
                    target, wrong = own.said[found[0]], found[1]
            if target is None and wrong is None and cue.about is None:
                loose.append(sentence)  # nothing here to correct, nothing to look for: read as said
                continue
            position, corrected = target if target is not None else (None, None)
            out.append(ExtractedCorrection(
                speaker=said.speaker, right=cue.right, wrong=wrong, about=None if wrong else cue.about,
                in_messages=(corrected.id,) if corrected is not None and corrected.id else (),
                source_message_ids=said.ids))
            if position is not None and wrong is not None:
                # the assistant's replies that repeat the wrong value answered a mistake: taken back with it
                out += [ExtractedCorrection(speaker=s.speaker, right=None, wrong=wrong, in_messages=(m.id,),
                                            source_message_ids=said.ids)
                        for m, s in heard.replies_after(position, wrong) if m.id]
    return out, loose


def _of_self(sentence: str, speaker: str) -> bool:
    """Whether ``sentence`` may state something of ``speaker``: it says "I", "my"… or the speaker's name.

    Only such a sentence yields a fact whose subject is the speaker or the speaker's own, the one
    kind of fact the assistant's words give; the rest of a long reply need not be read by the rules.
    """
    return SELF_WORDS.search(sentence) is not None or speaker.casefold() in sentence.casefold()


def _merge(facts: dict[tuple[str, str, str], ExtractedFact], fact: ExtractedFact) -> None:
    key = (fact.subject.casefold(), fact.predicate, fact.object.casefold())
    seen = facts.get(key)
    if seen is None:
        facts[key] = fact
        return
    ids = tuple(dict.fromkeys(seen.source_message_ids + fact.source_message_ids))
    facts[key] = replace(seen, source_message_ids=ids, confidence=max(seen.confidence, fact.confidence),
                         covered=seen.covered and fact.covered)


def _message_facts(text: str, said: Said, loose: Collection[str] = (),
                   readings: Mapping[str, Reading] | None = None) -> Iterator[ExtractedFact]:
    """The facts of one message, by the rules of :mod:`~zep_core.providers.talk` and what its sentences do.

    Small talk, jokes and what is only imagined say nothing (:mod:`~zep_core.providers.claims`);
    the assistant's words are only its quotes, without what it echoes of memory or assumes
    of the user; a correction's sentence says nothing of its own (what it means goes into
    the statement it corrects; ``loose``: correcting sentences that found nothing to
    correct, read as said); a quote is kept only where it says more than the canonical
    facts drawn from it. A user's message is quoted claim by claim (:func:`~zep_core.providers.claims.claim_groups`).
    """
    canonical: list[ExtractedFact] = []
    kept: list[str] = []
    read: list[Reading | None] = []
    dropped = False
    unread = said.assistant or said.role or readings is None  # no claims: the assistant's, a role's words
    for sentence in (split_sentences(text) if unread else split_talk(text)):
        reading = None if unread or readings is None else readings.get(sentence)
        if reading is not None:
            if reading.act == DROP and reading.by_meaning and any(sentence_facts(normalize(sentence), said)):
                reading = replace(reading, act=CLAIM)  # small talk by its sound, but the rules read a fact in it
            # a fragment after a sentence that says nothing, cut from it by an emoji, goes with it
            # ("it's SO hot today 🥵 like 98 degrees")
            if reading.act == DROP or (dropped and len(sentence.split()) <= 4):
                dropped = not sentence.rstrip().endswith((".", "!", "?"))
                continue
            dropped = False
            sentence = reading.text  # what is meant of it ("... jk. for real, X": X)
        if said.assistant:
            sentence = without_assumption(sentence)
        if not sentence or is_small_talk(sentence) or (said.assistant and (
                is_echo(sentence, said.users) or is_reaction(sentence, said.heard)
                or names_of(sentence, values=True) & said.unsaid)):  # "Tucson's closer than Mars!" to a joke
            continue
        if not said.assistant and sentence not in loose and (cues := corrections(sentence)):
            if not cues[0].rest:
                continue  # what a correction means goes into the statement it corrects
            sentence = cues[0].rest  # "scratch that, I'm a librarian": the new statement is read as said
        if not sentence.rstrip("\"')").endswith("?"):
            # a role's words, or the assistant's advice in the second person: nothing of the speaker's own
            found = [] if said.role or (said.assistant and not _of_self(sentence, said.speaker)) else list(
                sentence_facts(normalize(sentence), said))
            stated = next((a for f in found if (a := attribute_of(f.predicate)) and f.subject == said.speaker), None)
            if reading is not None and reading.act == CLAIM and stated:  # the rules' word over the meaning's
                reading = replace(reading, attribute=stated, sure=True)
            # the assistant's words speak for the assistant only: never a fact about the user
            canonical += [with_claim(f, reading, sentence, kept[-1] if kept else "") for f in found
                          if not said.assistant or is_own(f.subject, said.speaker)]
        kept.append(sentence)
        read.append(reading)
    yield from canonical
    if not kept:
        return
    covered = _covered_words(canonical)
    groups = claim_groups(kept, read)
    if len(groups) == 1:
        claim = groups[0][1]
        quotes = _quotes(_SPACE_RE.sub(" ", " ".join(kept)).strip(), canonical)
        for quote in quotes:
            if is_informative(quote):
                own = claim if len(quotes) == 1 else _claim_of(quote, canonical, claim)
                yield with_claim(_statement(quote, said, covered=not _says_more(quote, covered)), own, quote,
                                 said_before(kept, own))
        return
    for texts, claim in groups:
        quote = _SPACE_RE.sub(" ", " ".join(texts)).strip()
        if is_informative(quote):
            yield with_claim(_statement(quote, said, covered=not _says_more(quote, covered)), claim, quote,
                             said_before(kept, claim))


def _claim_of(quote: str, canonical: Sequence[ExtractedFact], claim: Reading | None) -> Reading | None:
    """The claim of one of a message's split quotes: on the attribute of the canonical fact whose value it states.

    "I work as a pharmacist now! And I live in Hoboken" is quoted clause by clause (:func:`_quotes`);
    the second quote is about one's home, not one's work, and a new job must not retire it.
    """
    if claim is None:
        return None
    low = quote.casefold()
    attribute = next((a for f in canonical if f.object and f.object.casefold() in low
                      and (a := attribute_of(f.predicate))), None)
    return replace(claim, attribute=attribute) if attribute else claim


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
    finder = PhraseFinder(values)  # one pass per clause, however many values: a regex per value was quadratic

    def states(clause: str) -> bool:
        return finder.in_text(clause.casefold())

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


# --- quotes ------------------------------------------------------------------------------

#: Words a quote may hold and still say nothing its canonical facts do not: function words, times
#: (a fact carries its dates), and the words that state the canonical predicates (zep_core.predicates).
_SAYS_NOTHING = frozenset(
    """a about actually ago already also am an and anymore april are as at august be been began being big btw
    but by currently day days december did do does evening every fact february finally for friday from fun
    guess had has have here hey hi i i'd i'm i've in is it its january july june just last lead leads longer
    manage manages march may me mine monday month months morning my myself new news next no not november now
    october of oh ok okay on or our quick really recently run saturday september since so start still sunday
    supervise that the then there these this those thursday to today tomorrow tonight too tuesday turn
    turned update us used very was way we wednesday week weekend weeks well went were what with year years
    yes yesterday you your""".split()) | stating_words()
_QUOTE_WORD = re.compile(r"[A-Za-zÀ-ÿ0-9][\w'’-]*")
_YEAR = re.compile(r"(?:19|20)\d\d")


def _covered_words(canonical: Sequence[ExtractedFact]) -> frozenset[str] | None:
    """The words a quote may hold and say nothing more than ``canonical`` (None: there are no facts).

    Read once per message, not once per quote: a long message has thousands of each.
    """
    if not canonical:
        return None
    covered = set(_SAYS_NOTHING)
    for fact in canonical:
        covered.update(w.lower() for w in _QUOTE_WORD.findall(f"{fact.content} {fact.object} {fact.subject}"))
    return frozenset(covered)


def _says_more(quote: str, covered: frozenset[str] | None) -> bool:
    """Whether a quote holds a word outside ``covered`` (:func:`_covered_words`) (rule 7)."""
    if covered is None:
        return True
    for word in _QUOTE_WORD.findall(quote.replace("’", "'")):
        lowered = word.lower()
        if lowered not in covered and lowered.rstrip("s") not in covered and not _YEAR.fullmatch(word):
            return True
    return False


def _statement(text: str, said: Said, covered: bool = False) -> ExtractedFact:
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

"""The offline extractor: regular-expression rules over what speakers say.

No model and no network. Two kinds of facts come out of an episode:

* **canonical facts** from plain first-person or named statements — ``lives_in``,
  ``works_at``, ``works_as``, ``studies_at``, ``born_in``, ``birth_year``,
  ``is_from``, ``married_to``, ``likes``, ``dislikes``, ``has``, ``is_named``,
  ``age`` and ``has_<relation>`` ("my sister Anna") — with "I/me/my" resolved to
  the speaker and the time they became true read from the sentence ("since 2019",
  "last year") against the message's timestamp;
* a **statement fact** per informative message (``predicate="statement"``, the
  utterance as object), so nothing said goes unindexed.

The rules favour precision: questions, negations ("I don't live in Paris anymore"),
conditionals ("if I moved to Rome") and unnamed assistant messages produce no
canonical facts. Anything subtler is the LLM extractor's job.

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
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from ..models import Message
from .base import ExtractedEntity, ExtractedFact, Extraction, ExtractionContext
from .extractive import predicate_phrase, speaker_of, split_sentences, summarize_messages
from .timeparse import TimeMention, duration_start, find_times

__all__ = ["RuleExtractor", "is_informative"]

CANONICAL_CONFIDENCE = 0.9
HEDGED_CONFIDENCE = 0.7
STATEMENT_CONFIDENCE = 0.6
STATEMENT_MAX_CHARS = 500
_QUESTION_MAX_WORDS = 8

# --- words --------------------------------------------------------------------------

_MONTH_WEEKDAY = (
    "January February March April May June July August September October November December "
    "Monday Tuesday Wednesday Thursday Friday Saturday Sunday"
)
_NOT_NAMES = frozenset(
    f"""The A An This That These Those It Its He She They We You Your There Here What Who
    Which When Where Why How Yesterday Today Tomorrow Tonight Maybe Perhaps So And But Or
    Also Then Now Well Yes Yeah Yep No Nope Oh Ah Hey Hi Hello Thanks Thank Mom Dad Mum
    Mommy Daddy Mama Papa Grandma Grandpa Granny Everyone Everybody Someone Somebody Nobody
    Anyone Last Next Since Actually Honestly Plus Still Just Finally Recently Eventually
    Lately Sometimes Often Usually Never Always Once After Before Because Though Although
    While If Unless Wow Lol Haha Okay Ok Sure Great Cool Nice Good Awesome God Anyway Both
    Even Only Really Definitely Totally Guess Like Love Our My His Her Their Family Home
    Mine Yours Life Right Sorry Please Look Let Being Speaking Talking Sounds Sound Looks
    Seems Seem Feels Feel Feeling Would Could Should Almost Themes Kind Sort Glad Happy Whoa
    Congrats Congratulations Sounding Looking Seeing Having Getting Making Doing Knowing
    Everything Something Nothing Anything Lots Most Some Many Much Any All Each Every
    {_MONTH_WEEKDAY}""".split()
)
_PRONOUN_STARTS = frozenset(
    """it that this those these them you him her us me myself yourself how what when where
    why who which whether everything anything something nothing all every each your his
    their our my its there here one ones some any much many more most so such being
    seeing hearing having getting knowing doing making they we he she i both""".split()
)
_PHRASE_BOUNDARIES = frozenset(
    """with because since when while so but and or that which who whom whose as if at in
    on for from to about during after before by than until like though although even
    every each whenever where cause cuz now too today yesterday tomorrow tonight last this
    next lately again anymore either really very these nowadays recently sometimes often
    always i we you he she they is are was
    were has have had will would can could should must might may do does did not""".split()
)
_CONTEXT_WORDS = frozenset("it them him her us you myself yourself ourselves this that these those".split())
_EMPTY_GERUNDS = frozenset(
    "going doing getting being having making taking trying coming keeping putting giving".split()
)
_NOT_HOBBY_VERBS = frozenset(
    "think say believe know imagine assume guess mention be have get see hear let keep tell".split()
)
_TRAILING_FILLERS = frozenset("too so much lot a well as very now lately really most the anyway also again".split())
_FILLER_WORDS = frozenset(
    """ok okay k kk thanks thank thx ty you so much lol haha hahaha hah lmao hi hey hello
    bye goodbye see ya yeah yes yep yup no nope sure alright right wow oh ah hmm sounds
    good great cool nice awesome will do take care night morning np me same totally
    agreed exactly indeed of course definitely too later soon then talk to the a it that
    is was and i sounds perfect love lovely welcome u ur very really""".split()
)
_PROFESSIONS = (
    "teacher|nurse|doctor|physician|surgeon|dentist|engineer|developer|programmer|designer|"
    "architect|lawyer|attorney|accountant|scientist|researcher|professor|lecturer|writer|"
    "author|journalist|editor|artist|painter|musician|singer|songwriter|photographer|chef|"
    "baker|barista|waiter|waitress|bartender|pilot|mechanic|electrician|plumber|"
    "carpenter|farmer|firefighter|soldier|pharmacist|therapist|counselor|counsellor|"
    "psychologist|psychiatrist|veterinarian|vet|consultant|analyst|manager|director|"
    "entrepreneur|banker|economist|librarian|cashier|clerk|secretary|receptionist|"
    "technician|paramedic|midwife|coach|instructor|tutor|dancer|actor|actress|comedian|"
    "athlete|blogger|youtuber|streamer|freelancer|contractor|translator|interpreter|"
    "caregiver|social worker|police officer|realtor|hairdresser|tailor|filmmaker|"
    "animator|illustrator|sculptor|potter|historian|biologist|chemist|physicist|"
    "mathematician|statistician|sailor|fisherman|butcher|judge|politician|diplomat|"
    "investor|ceo|cto|founder|co-founder|intern|professional gamer"
)
_HAS_HEADS = (
    "dogs?|cats?|pupp(?:y|ies)|pups?|kittens?|pets?|hamsters?|rabbits?|bunn(?:y|ies)|parrots?|"
    "birds?|fish|turtles?|tortoises?|horses?|guinea pigs?|snakes?|lizards?|kids?|child|"
    "children|sons?|daughters?|bab(?:y|ies)|brothers?|sisters?|siblings?|twins?|husband|"
    "wife|boyfriend|girlfriend|partner|fianc[eé]e?|grandchild(?:ren)?|grandkids?|"
    "grandsons?|granddaughters?|cars?|bikes?|bicycles?|motorcycles?|trucks?|boats?|house|"
    "apartment|condo|garden|farm|cabin|pianos?|guitars?|tattoos?|degree"
)
_RELATIONS = {
    "sister": "sister", "brother": "brother", "mom": "mother", "mum": "mother",
    "mother": "mother", "dad": "father", "father": "father", "son": "son",
    "daughter": "daughter", "partner": "partner", "boyfriend": "boyfriend",
    "girlfriend": "girlfriend", "fiance": "fiance", "fiancé": "fiance", "fiancee": "fiance",
    "fiancée": "fiance", "best friend": "best_friend", "friend": "friend", "cousin": "cousin",
    "aunt": "aunt", "uncle": "uncle", "grandma": "grandmother", "grandmother": "grandmother",
    "grandpa": "grandfather", "grandfather": "grandfather", "niece": "niece",
    "nephew": "nephew", "boss": "boss", "coworker": "coworker", "colleague": "colleague",
    "roommate": "roommate", "neighbor": "neighbor", "neighbour": "neighbor",
    "husband": "spouse", "wife": "spouse", "dog": "dog", "cat": "cat", "puppy": "dog",
    "kitten": "cat",
}  # fmt: skip
_PETS = frozenset({"dog", "cat"})
# "a good cook", "a former teacher", "an aspiring writer": not what the speaker works as.
_NOT_A_JOB = frozenset(
    """good great bad terrible decent better best natural amazing awful true real proud total
    complete former retired ex aspiring future wannabe amateur hobby horrible lousy little""".split()
)
_FIRST_PERSON_VERBS = frozenset(
    "like love enjoy adore hate dislike detest live work have own study reside come am turn do go".split()
)
_THIRD_PERSON_VERBS = frozenset(
    "likes loves enjoys adores hates dislikes detests lives works has owns studies resides comes is turns does".split()
)
_BAD_MODIFIERS = (
    _PHRASE_BOUNDARIES
    | _PRONOUN_STARTS
    | frozenset("a an the no been got had lot lots of any big huge fan kind sort".split())
)

# --- patterns -----------------------------------------------------------------------

_UPPER = "A-ZÀ-ÖØ-Þ"
_NAME = rf"[{_UPPER}][a-zß-öø-ÿ]+(?:[-'][{_UPPER}][a-zß-öø-ÿ]+)?"
_SUBJECT = rf"(?P<subj>(?<![\w'’-])(?:[Ii]|{_NAME}(?:\s+{_NAME})?)(?![\w'’-]))"
_ADVERBS = (
    r"(?:\s+(?i:also|still|now|currently|actually|just|really|recently|finally|already|even|"
    r"both|then|eventually|officially|permanently|happily|basically|literally|totally|"
    r"absolutely|truly|definitely|honestly|mostly|originally|kind\s+of|sort\s+of|kinda|so|"
    r"pretty|quite|genuinely|proudly|probably|usually|always|mainly))*"
)
_CAP_WORD = rf"(?:[{_UPPER}][\w'’&.-]*|\d+[{_UPPER}][\w-]*)"
_PROPER_RE = re.compile(
    rf"(?:(?i:the)\s+)?(?P<obj>{_CAP_WORD}(?:\s+(?:(?:of|de|del|da|du|la|le|von|van|upon|on|am|&)\s+)?"
    rf"(?!I\b){_CAP_WORD})*)"
)
_PERSON_RE = re.compile(rf"(?P<obj>{_NAME}(?:\s+{_NAME})?)(?![\w'’-])")
_YEAR_RE = re.compile(r"(?P<obj>(?:19|20)\d{2})\b")
_PROFESSION_RE = re.compile(rf"(?i:an?)\s+(?P<obj>(?:[a-z-]+\s+){{0,2}}?(?i:{_PROFESSIONS}))(?![\w'’-])")
_HAS_RE = re.compile(
    r"(?:(?P<article>(?i:a|an|this))\s+|(?P<count>(?i:one|two|three|four|five|six|seven|eight|nine|ten"
    r"|\d{1,2}|some|several|a\s+couple\s+of|a\s+few))\s+)?"
    rf"(?P<obj>(?:[a-z-]+\s+){{0,2}}?(?i:{_HAS_HEADS}))(?![\w'’-])"
)
_AGE_RE = re.compile(r"(?P<obj>\d{1,3})(?:\s*(?:years?|yrs?)(?:\s+old)?|\s*y/?o)?(?![\w%$])")
_AGE_TAIL_RE = re.compile(r"\s*(?:$|[,.!;:)]|(?i:now|today|this|last|and|but|so|already|yesterday|myself)\b)")
_STRICT_TAIL_RE = re.compile(r"\s*(?:$|[,.!;:)]|(?i:as|in|back|recently|last|this|a\s+few|and|but|so)\b)")
_WORD_RE = re.compile(r"[\w'’&-]+|[^\w\s]")
_ADJECTIVE_COMMA_RE = re.compile(r"(?i:\b(?:a|an|the)\s+[\w-]+)$")
_RELATIVE_CLAUSE_RE = re.compile(
    r"(?i:\b(?:the|a|an|all|every|some|any|those|these)\s+(?!(?:end|moment|meantime|past|beginning|morning|"
    r"afternoon|evening|weekend|summer|winter|spring|fall|autumn|future|meanwhile)\b)[\w-]+|"
    r"\b(?:what|everything|anything|something|whatever|nothing))\s*$"
)
_LIST_SPLIT_RE = re.compile(r"\s*(?:,\s*(?:and\s+|or\s+)?|\s+and\s+|\s+or\s+)\s*")
_HEDGE_RE = re.compile(
    r"\b(?:I\s+think|I\s+guess|I\s+believe|I\s+suppose|maybe|probably|perhaps|might|possibly|"
    r"kinda|not\s+sure)\b",
    re.IGNORECASE,
)
_NARRATIVE_PREDICATES = frozenset({"lives_in", "works_at"})  # "when I moved to Rome, …" still happened
_CONDITIONAL_WORDS = frozenset(
    "if unless wish whether hope hoping want wants wanted planning plan plans would could "
    "should imagine dream dreaming pretend not never suppose".split()
)
_CONTRACTION_RE = re.compile(r"\b([Ii])['’](m|ve|d|ll)\b|\b(can)['’]t\b|\b(won)['’]t\b|n['’]t\b")
_CONTRACTED = {"m": " am", "ve": " have", "d": " would", "ll": " will"}
_SPACE_RE = re.compile(r"\s+")
_PERFECT_RE = re.compile(r"\b(?:have|has)\s+(?:\w+\s+)?(?:been|lived|worked|had|owned|studied)\b", re.IGNORECASE)
_MY_RELATION_RE = re.compile(
    r"(?<![\w'])(?i:my)\s+(?P<rel>(?i:best\s+friend|"
    + "|".join(sorted((k for k in _RELATIONS if k != "best friend"), key=len, reverse=True))
    + rf"))\s+(?P<name>{_NAME})(?![\w-])"
)


@dataclass(frozen=True)
class _Rule:
    """One canonical predicate, the verbs that state it, and how to read its object."""

    predicate: str
    pattern: re.Pattern[str]
    read_object: Callable[[str], list[str]]
    object_type: str
    triggers: tuple[str, ...]
    object_is_entity: bool = True
    subject_first_person_only: bool = False
    trigger_re: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # A cheap substring test (in C) before the full pattern runs.
        object.__setattr__(self, "trigger_re", re.compile("|".join(map(re.escape, self.triggers))))


def _verbs(verbs: str, subject: str = _SUBJECT) -> re.Pattern[str]:
    return re.compile(rf"{subject}{_ADVERBS}\s+(?P<verb>(?i:{verbs}))(?:\s+|(?=\d))")


def _agrees(match: re.Match[str], first_person: bool) -> bool:
    """Check the verb's person: "I like", "Anna likes"; never "Sounds like" or "I likes"."""
    verb = match.groupdict().get("verb")
    if not verb:
        return True
    head = verb.split(None, 1)[0].lower()
    return head not in (_THIRD_PERSON_VERBS if first_person else _FIRST_PERSON_VERBS)


# --- object readers ----------------------------------------------------------------


def _proper(rest: str) -> list[str]:
    match = _PROPER_RE.match(rest)
    if match is None:
        return []
    obj = _strip_punct(match["obj"])
    first = obj.split()[0] if obj else ""
    return [obj] if obj and first not in _NOT_NAMES and obj != "I" else []


def _proper_strict(rest: str) -> list[str]:
    """Read a proper noun that ends its clause: "joined Acme", not "joined Mel at the park"."""
    match = _PROPER_RE.match(rest)
    if match is None or not _STRICT_TAIL_RE.match(rest, match.end()):
        return []
    return _proper(rest)


def _person(rest: str) -> list[str]:
    match = _PERSON_RE.match(rest)
    if match is None:
        return []
    words = match["obj"].split()
    if words[0] in _NOT_NAMES:
        return []
    return [" ".join(w for w in words if w not in _NOT_NAMES)]


def _year(rest: str) -> list[str]:
    match = _YEAR_RE.match(rest)
    return [match["obj"]] if match else []


def _profession(rest: str) -> list[str]:
    match = _PROFESSION_RE.match(rest)
    if match is None:
        return []
    obj = match["obj"].lower()
    modifiers = obj.split()[:-1]
    if not _BAD_MODIFIERS.isdisjoint(modifiers) or not _NOT_A_JOB.isdisjoint(modifiers):
        return []
    return [obj]


def _role(rest: str) -> list[str]:
    """Read what follows "work as": "a nurse at the hospital" → "nurse"."""
    return _phrases(rest, max_items=1)


def _liked(rest: str) -> list[str]:
    return _phrases(rest, max_items=3)


def _possessions(rest: str) -> list[str]:
    found: list[str] = []
    position = 0
    while len(found) < 3:
        match = _HAS_RE.match(rest, position)
        if match is None:
            break
        obj = match["obj"].lower()
        modifiers = obj.split()[:-1]
        if not _BAD_MODIFIERS.isdisjoint(modifiers) or any(w.endswith("ed") for w in modifiers):
            break
        count = match["count"]
        found.append(f"{count.lower()} {obj}" if count else obj)
        joiner = _LIST_SPLIT_RE.match(rest, match.end())
        if joiner is None:
            break
        position = joiner.end()
    return found


def _age(rest: str) -> list[str]:
    match = _AGE_RE.match(rest)
    if match is None or not _AGE_TAIL_RE.match(rest, match.end()):
        return []
    return [match["obj"]] if 0 < int(match["obj"]) <= 120 else []


def _phrases(rest: str, *, max_items: int) -> list[str]:
    items: list[str] = []
    for chunk in _list_items(_first_clause(rest))[:max_items]:
        item = _noun_phrase(chunk)
        if item is None:
            break
        items.append(item)
    return items


def _list_items(clause: str) -> list[str]:
    """Split "hiking, camping and fishing" but keep "a safe, inviting place" whole."""
    items: list[str] = []
    for piece in _LIST_SPLIT_RE.split(clause):
        if items and _ADJECTIVE_COMMA_RE.search(items[-1]):
            items[-1] = f"{items[-1]}, {piece}"
        else:
            items.append(piece)
    return items


def _first_clause(rest: str) -> str:
    """Cut at the first punctuation or boundary word that is not a list joiner."""
    words: list[str] = []
    for token in _WORD_RE.findall(rest):
        lower = token.lower()
        if token == ",":
            words.append(",")
            continue
        if lower in ("and", "or") and words:
            words.append(lower)
            continue
        if not (token[0].isalnum() or token[0] in "'’") or (lower in _PHRASE_BOUNDARIES and words):
            break
        words.append(token)
    return " ".join(words).replace(" ,", ",").strip(" ,")


def _noun_phrase(chunk: str) -> str | None:
    words = chunk.split()
    if words and words[0].lower() == "to" and len(words) > 1:
        words = words[1:]
        if len(words) > 1 and words[0].lower() in ("just", "really", "also", "simply", "always"):
            words = words[1:]
        if words[0].lower() in _NOT_HOBBY_VERBS:
            return None  # "I like to think…", "I'd love to say…"
        words = [_gerund(words[0].lower()), *words[1:]]
    if words and words[0].lower() in ("a", "an", "both"):
        words = words[1:]
    if words and words[0].lower() == "the":
        if not (len(words) > 1 and words[1][:1].isupper()):
            return None  # "the color" points at something in the chat; "the Beatles" does not
        words = words[1:]
    while words and words[-1].lower() in _TRAILING_FILLERS:
        words.pop()
    if not words or len(words) > 4 or re.split(r"['’]", words[0].lower())[0] in _PRONOUN_STARTS:
        return None
    lowered = [w.lower() for w in words]
    if not _PHRASE_BOUNDARIES.isdisjoint(lowered) or not _CONTEXT_WORDS.isdisjoint(lowered):
        return None
    if len(words) == 1 and lowered[0] in _EMPTY_GERUNDS:
        return None
    return _strip_punct(" ".join(words))


def _gerund(verb: str) -> str:
    if (verb.endswith("ing") and len(verb) > 5) or not verb.isalpha():
        return verb
    if verb.endswith("ie"):
        return verb[:-2] + "ying"
    if verb.endswith("e") and not verb.endswith(("ee", "ye", "oe")):
        return verb[:-1] + "ing"
    vowels = "aeiou"
    if (
        len(verb) <= 4
        and len(verb) >= 3
        and verb[-1] not in vowels + "wxy"
        and verb[-2] in vowels
        and verb[-3] not in vowels
    ):
        return verb + verb[-1] + "ing"
    return verb + "ing"


def _strip_punct(text: str) -> str:
    text = text.strip().rstrip(",;:!?\"')(")
    if text.endswith(".") and "." not in text.split()[-1][:-1]:
        text = text[:-1]
    return text.strip()


# --- the rules ----------------------------------------------------------------------

_MY_HOME = r"(?P<subj>(?<![\w'])[Mm]y)"
_RULES: tuple[_Rule, ...] = (
    _Rule(
        "lives_in",
        _verbs(
            r"live\s+in|lives\s+in|am\s+living\s+in|is\s+living\s+in|(?:have|has)\s+(?:always\s+|also\s+)?lived\s+in|"
            r"(?:have|has)\s+been\s+living\s+in|reside\s+in|resides\s+in|"
            r"(?:have\s+|has\s+)?(?:moved|relocated)(?:\s+back|\s+here|\s+over)?(?:\s+from(?:\s+the)?(?:\s+(?-i:[A-Z][\w.-]*))+)?"
            r"\s+to|am\s+based\s+in|is\s+based\s+in"
        ),
        _proper,
        "place",
        ("liv", "moved", "relocated", "based", "reside"),
    ),
    _Rule(
        "lives_in",
        re.compile(rf"{_MY_HOME}\s+(?i:home|house|apartment|place)\s+(?i:is)\s+(?:(?i:now)\s+)?(?i:in)\s+"),
        _proper,
        "place",
        ("home", "house", "apartment", "place"),
        subject_first_person_only=True,
    ),
    _Rule(
        "works_at",
        _verbs(
            r"(?:work|works|am\s+working|is\s+working|(?:have|has)\s+worked|(?:have|has)\s+been\s+working)"
            r"\s+(?:at|for)|am\s+employed\s+(?:at|by)|is\s+employed\s+(?:at|by)|"
            r"got\s+a\s+(?:new\s+)?job\s+(?:at|with)|got\s+hired\s+(?:at|by)|was\s+hired\s+(?:at|by)|"
            r"started\s+working\s+(?:at|for)|began\s+working\s+(?:at|for)"
        ),
        _proper,
        "organization",
        ("work", "employed", "job", "hired"),
    ),
    _Rule(
        "works_at",
        _verbs(r"joined|(?:have|has)\s+joined|started\s+at"),
        _proper_strict,
        "organization",
        ("joined", "started at"),
    ),
    _Rule(
        "works_as",
        _verbs(
            r"work\s+as|works\s+as|am\s+working\s+as|is\s+working\s+as|(?:have|has)\s+(?:been\s+working|worked)\s+as"
        ),
        _role,
        "profession",
        ("as",),
    ),
    _Rule(
        "works_as",
        _verbs(r"am|is|became|(?:have|has)\s+been|am\s+now|is\s+now"),
        _profession,
        "profession",
        ("a ", "an "),
    ),
    _Rule(
        "studies_at",
        _verbs(
            r"study\s+at|studies\s+at|am\s+studying\s+at|is\s+studying\s+at|am\s+a\s+student\s+at|"
            r"is\s+a\s+student\s+at|am\s+enrolled\s+(?:at|in)|is\s+enrolled\s+(?:at|in)|go\s+to\s+school\s+at"
        ),
        _proper,
        "organization",
        ("stud", "enrolled", "school"),
    ),
    _Rule("born_in", _verbs(r"(?:was|were)\s+born\s+in"), _proper, "place", ("born",)),
    _Rule(
        "birth_year",
        _verbs(r"(?:was|were)\s+born\s+in"),
        _year,
        "thing",
        ("born",),
        object_is_entity=False,
    ),
    _Rule(
        "is_from",
        _verbs(r"(?:am|is)\s+(?:originally\s+)?from|(?:come|comes)\s+(?:originally\s+)?from"),
        _proper,
        "place",
        ("from",),
    ),
    _Rule(
        "married_to",
        _verbs(
            r"married|am\s+married\s+to|is\s+married\s+to|got\s+married\s+to|"
            r"(?:have|has)\s+been\s+married\s+to|wed"
        ),
        _person,
        "person",
        ("married", "wed"),
    ),
    _Rule(
        "likes",
        _verbs(
            r"like|likes|love|loves|enjoy|enjoys|adore|adores|am\s+into|is\s+into|"
            r"am\s+(?:a\s+)?(?:big\s+|huge\s+)?fan\s+of|is\s+(?:a\s+)?(?:big\s+|huge\s+)?fan\s+of|"
            r"am\s+passionate\s+about|is\s+passionate\s+about|am\s+obsessed\s+with|is\s+obsessed\s+with|"
            r"am\s+crazy\s+about"
        ),
        _liked,
        "thing",
        ("like", "love", "enjoy", "adore", "into", "fan", "passionate", "obsessed", "crazy"),
    ),
    _Rule(
        "dislikes",
        _verbs(
            r"hate|hates|dislike|dislikes|detest|detests|cannot\s+stand|can\s+not\s+stand|"
            r"(?:do|does)\s+not\s+(?:really\s+)?(?:like|enjoy)|am\s+not\s+(?:really\s+)?(?:a\s+)?(?:big\s+)?fan\s+of|"
            r"is\s+not\s+(?:really\s+)?(?:a\s+)?(?:big\s+)?fan\s+of|am\s+not\s+(?:really\s+)?into|"
            r"is\s+not\s+(?:really\s+)?into"
        ),
        _liked,
        "thing",
        ("hate", "dislike", "detest", "stand", "not"),
    ),
    _Rule(
        "has",
        _verbs(r"(?:have|has)\s+got|have|has|own|owns|got|adopted|bought|(?:have|has)\s+had"),
        _possessions,
        "thing",
        ("have", "has", "own", "got", "adopted", "bought"),
    ),
    _Rule(
        "is_named",
        re.compile(
            r"(?:(?P<subj>(?<![\w'])[Mm]y)\s+(?i:name)\s+(?i:is)|(?<![\w'])(?i:call)\s+(?P<subj2>me)"
            r"|(?P<subj3>(?<![\w'])I)\s+(?i:am\s+called|go\s+by))\s+"
        ),
        _person,
        "person",
        ("name", "call", "called", "go by"),
        object_is_entity=False,
        subject_first_person_only=True,
    ),
    _Rule(
        "age",
        _verbs(r"am|is|turned|(?:will\s+)?turn|just\s+turned"),
        _age,
        "thing",
        ("am", "is", "turn"),
        object_is_entity=False,
    ),
)

# --- the extractor -----------------------------------------------------------------


def is_informative(text: str) -> bool:
    """Whether a message says something worth indexing: 3+ words, not only pleasantries.

    Example:
        >>> is_informative("ok thanks!"), is_informative("I adopted a puppy")
        (False, True)

    """
    words = [w.lower().strip("'’") for w in _WORD_RE.findall(text) if w[0].isalnum()]
    if len(words) < 3 or all(w in _FILLER_WORDS for w in words):
        return False
    return not _is_short_question(text, len(words))


def _is_short_question(text: str, n_words: int) -> bool:
    """A short message that only asks ("Where do I live now?") states nothing to remember."""
    sentences = [s.strip() for s in split_sentences(text) if s.strip()]
    return n_words <= _QUESTION_MAX_WORDS and bool(sentences) and all(s.endswith("?") for s in sentences)


@dataclass(frozen=True)
class _Said:
    """One message prepared for the rules: who said it, when, and its citation."""

    speaker: str
    when: datetime
    ids: tuple[str, ...]


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
        heard: list[Message] = []
        for message in messages:
            said = _said(message, context)
            if said is None:
                continue
            heard.append(message)
            speakers.append(said.speaker)
            for fact in _message_facts(message.content, said):
                _merge(facts, fact)
        summary = summarize_messages(
            heard,
            self.summary_sentences,
            self.summary_chars,
            default_speaker=context.default_speaker,
        )
        return Extraction(
            summary=summary or None,
            entities=_entities(speakers, facts.values()),
            facts=tuple(facts.values()),
        )


def _said(message: Message, context: ExtractionContext) -> _Said | None:
    if message.role not in ("user", "assistant") or (message.role == "assistant" and not message.name):
        return None
    ids = (message.id,) if message.id else ()
    return _Said(speaker_of(message, context.default_speaker), message.timestamp or context.now, ids)


def _merge(facts: dict[tuple[str, str, str], ExtractedFact], fact: ExtractedFact) -> None:
    key = (fact.subject.casefold(), fact.predicate, fact.object.casefold())
    seen = facts.get(key)
    if seen is None:
        facts[key] = fact
        return
    ids = tuple(dict.fromkeys(seen.source_message_ids + fact.source_message_ids))
    facts[key] = replace(seen, source_message_ids=ids, confidence=max(seen.confidence, fact.confidence))


def _message_facts(text: str, said: _Said) -> Iterator[ExtractedFact]:
    for sentence in split_sentences(text):
        if not sentence.rstrip("\"')").endswith("?"):
            yield from _sentence_facts(_normalize(sentence), said)
    flat = _SPACE_RE.sub(" ", text).strip()
    if is_informative(flat):
        yield _statement(flat, said)


def _normalize(sentence: str) -> str:
    def expand(match: re.Match[str]) -> str:
        if match[1]:
            return match[1] + _CONTRACTED[match[2].lower()]
        if match[3]:
            return match[3] + "not"
        if match[4]:
            return "will not"
        return " not"

    return _CONTRACTION_RE.sub(expand, sentence.replace("’", "'"))


def _sentence_facts(sentence: str, said: _Said) -> Iterator[ExtractedFact]:
    lower = sentence.lower()
    confidence = HEDGED_CONFIDENCE if _HEDGE_RE.search(sentence) else CANONICAL_CONFIDENCE
    times: list[TimeMention] | None = None
    for rule in _RULES:
        if not rule.trigger_re.search(lower):
            continue
        for match in rule.pattern.finditer(sentence):
            subject = _subject(match, said.speaker, rule)
            if subject is None or _is_conditional(sentence, match, rule):
                continue
            if not _agrees(match, first_person=match["subj"] in ("I", "i")):
                continue
            if times is None:
                times = find_times(sentence, said.when)
            objects = rule.read_object(_until_time(sentence, match.end(), times))
            when = _when(sentence, match, times, said.when) if objects else None
            for obj in objects:
                yield _canonical(rule, subject, obj, when, confidence, said)
    if "my" in lower:
        yield from _relation_facts(sentence, said, confidence)


def _subject(match: re.Match[str], speaker: str, rule: _Rule) -> str | None:
    raw = match.group("subj") or (match.groupdict().get("subj2") or match.groupdict().get("subj3"))
    if raw is None:
        return None
    if raw.lower() in ("i", "my", "me"):
        return speaker
    if rule.subject_first_person_only:
        return None
    words = raw.split()
    while words and words[0] in _NOT_NAMES:
        words.pop(0)
    if not words or any(w in _NOT_NAMES for w in words):
        return None
    return " ".join(words)


def _is_conditional(sentence: str, match: re.Match[str], rule: _Rule) -> bool:
    prefix = sentence[: match.start()]
    segment = prefix[max(prefix.rfind(","), prefix.rfind(";"), prefix.rfind(":")) + 1 :].lower()
    if _RELATIVE_CLAUSE_RE.search(segment):
        return True
    words = set(segment.replace("'", " ").split())
    if "when" in words and rule.predicate not in _NARRATIVE_PREDICATES:
        return True
    return not _CONDITIONAL_WORDS.isdisjoint(words)


def _until_time(sentence: str, start: int, times: list[TimeMention]) -> str:
    end = next((t.start for t in times if t.start >= start), len(sentence))
    return sentence[start:end]


def _when(sentence: str, match: re.Match[str], times: list[TimeMention], said_at: datetime) -> datetime | None:
    if times:
        return min(times, key=lambda t: _distance(t, match)).when
    if _PERFECT_RE.search(match.group(0)):
        return duration_start(sentence[match.end() :], said_at)
    return None


def _distance(mention: TimeMention, match: re.Match[str]) -> int:
    if mention.start >= match.end():
        return mention.start - match.end()
    return max(match.start() - mention.end, 0)


def _canonical(
    rule: _Rule, subject: str, obj: str, when: datetime | None, confidence: float, said: _Said
) -> ExtractedFact:
    return ExtractedFact(
        subject=subject,
        predicate=rule.predicate,
        object=obj,
        content=f"{subject} {predicate_phrase(rule.predicate, obj)}.",
        confidence=confidence,
        valid_from=when,
        source_message_ids=said.ids,
        subject_type="person",
        object_type=rule.object_type,
        object_is_entity=rule.object_is_entity,
    )


def _relation_facts(sentence: str, said: _Said, confidence: float) -> Iterator[ExtractedFact]:
    for match in _MY_RELATION_RE.finditer(sentence):
        name = match["name"]
        if name in _NOT_NAMES or name == said.speaker:
            continue
        relation = _RELATIONS[" ".join(match["rel"].lower().split())]
        predicate = "married_to" if relation == "spouse" else f"has_{relation}"
        yield ExtractedFact(
            subject=said.speaker,
            predicate=predicate,
            object=name,
            content=f"{said.speaker} {predicate_phrase(predicate, name)}.",
            confidence=confidence,
            source_message_ids=said.ids,
            object_type="thing" if relation in _PETS else "person",
        )


def _statement(text: str, said: _Said) -> ExtractedFact:
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

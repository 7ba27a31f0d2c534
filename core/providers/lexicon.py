"""The rule extractor's lexicon: the words its patterns are written in.

Data only, no logic. :mod:`~zep_core.providers.patterns` builds its rules and object
readers from these, and :mod:`~zep_core.providers.rules` checks subjects, relations and
conditions against them:

* **word sets** — words that are never names (``NOT_NAMES``), that end a phrase
  (``PHRASE_BOUNDARIES``), that make a message mere pleasantry (``FILLER_WORDS``),
  that make a clause conditional (``CONDITIONAL_WORDS``), and the like;
* **vocabularies** — professions, things people have, family and pet relations;
* **regex fragments** — strings to splice into patterns: an upper-case letter
  (``UPPER``), a capitalized name (``NAME``), a sentence subject (``SUBJECT``), the
  adverbs allowed between subject and verb (``ADVERBS``), a capitalized word
  (``CAP_WORD``), the words that are not a job (``NOT_A_JOB_RE``); ``WORD_RE``, which
  tokenizes text into words and punctuation, and ``PLACE_CONTEXT``, which tells a
  place left behind from an employer left.

"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache, wraps
from typing import TypeVar

# --- words --------------------------------------------------------------------------

_MONTH_WEEKDAY = (
    "January February March April May June July August September October November December "
    "Monday Tuesday Wednesday Thursday Friday Saturday Sunday"
)
NOT_NAMES = frozenset(
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
PRONOUN_STARTS = frozenset(
    """it that this those these them you him her us me myself yourself how what when where
    why who which whether everything anything something nothing all every each your his
    their our my its there here one ones some any much many more most so such being
    seeing hearing having getting knowing doing making they we he she i both""".split()
)
PHRASE_BOUNDARIES = frozenset(
    """with because since when while so but and or that which who whom whose as if at in
    on for from to about during after before by than until like though although even
    every each whenever where cause cuz now too today yesterday tomorrow tonight last this
    next lately again anymore either really very these nowadays recently sometimes often
    always i we you he she they is are was
    were has have had will would can could should must might may do does did not""".split()
)
CONTEXT_WORDS = frozenset("it them him her us you myself yourself ourselves this that these those".split())
EMPTY_GERUNDS = frozenset(
    "going doing getting being having making taking trying coming keeping putting giving".split()
)
NOT_HOBBY_VERBS = frozenset(
    "think say believe know imagine assume guess mention be have get see hear let keep tell".split()
)
TRAILING_FILLERS = frozenset(
    "too so much lot a well as very now lately really most the anyway also again right".split()
)
FILLER_WORDS = frozenset(
    """ok okay k kk thanks thank thx ty you so much lol haha hahaha hah lmao hi hey hello
    bye goodbye see ya yeah yes yep yup no nope sure alright right wow oh ah hmm sounds
    good great cool nice awesome will do take care night morning np me same totally
    agreed exactly indeed of course definitely too later soon then talk to the a it that
    is was and i sounds perfect love lovely welcome u ur very really""".split()
)
PROFESSIONS = (
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
HAS_HEADS = (
    "dogs?|cats?|pupp(?:y|ies)|pups?|kittens?|pets?|hamsters?|rabbits?|bunn(?:y|ies)|parrots?|"
    "birds?|fish|turtles?|tortoises?|horses?|guinea pigs?|snakes?|lizards?|kids?|child|"
    "children|sons?|daughters?|bab(?:y|ies)|brothers?|sisters?|siblings?|twins?|husband|"
    "wife|boyfriend|girlfriend|partner|fianc[eé]e?|grandchild(?:ren)?|grandkids?|"
    "grandsons?|granddaughters?|cars?|bikes?|bicycles?|motorcycles?|trucks?|boats?|house|"
    "apartment|condo|garden|farm|cabin|pianos?|guitars?|tattoos?|degree"
)
RELATIONS = {
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
PETS = frozenset({"dog", "cat"})
#: What people play, practise or go and do: the objects of ``does`` (an activity that can end).
ACTIVITIES = (
    "tennis|table\\s+tennis|ping\\s+pong|squash|padel|pickleball|badminton|football|soccer|basketball|baseball|"
    "softball|volleyball|handball|golf|hockey|rugby|cricket|lacrosse|chess|poker|bridge|go|yoga|pilates|"
    "crossfit|tai\\s+chi|karate|judo|taekwondo|jiu[\\s-]?jitsu|kickboxing|boxing|fencing|archery|running|jogging|"
    "swimming|cycling|biking|climbing|bouldering|hiking|skiing|snowboarding|surfing|skating|skateboarding|rowing|"
    "kayaking|canoeing|sailing|diving|scuba\\s+diving|dancing|dance|ballet|salsa|tango|weightlifting|"
    "powerlifting|spinning|triathlons?|marathons?|piano|guitar|bass|violin|viola|cello|drums|flute|clarinet|"
    "saxophone|sax|trumpet|trombone|ukulele|harp|banjo|video\\s+games|board\\s+games|the\\s+piano|the\\s+guitar|"
    "the\\s+violin|the\\s+cello|the\\s+drums|the\\s+flute|the\\s+saxophone|the\\s+trumpet|the\\s+bass|"
    "the\\s+ukulele|the\\s+harp|knitting|painting|pottery|gardening|baking|photography|birdwatching|meditation"
)
#: Groups whose size people state: "my team has 4 engineers" (``size``).
GROUPS = ("team|company|startup|family|household|class|department|group|band|crew|staff|squad|office|unit|lab|"
          "choir|orchestra|club")
#: Numbers people write as words.
NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
                "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
                "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
                "forty": 40, "fifty": 50, "hundred": 100, "a dozen": 12, "a couple of": 2}  # fmt: skip
# "a good cook", "a former teacher", "an aspiring writer": not what the speaker works as.
NOT_A_JOB = frozenset(
    """good great bad terrible decent better best natural amazing awful true real proud total
    complete former retired ex aspiring future wannabe amateur hobby horrible lousy little""".split()
)
NOT_A_JOB_RE = "(?:" + "|".join(sorted(NOT_A_JOB)) + r")\b"
FIRST_PERSON_VERBS = frozenset(
    "like love enjoy adore hate dislike detest live work have own study reside come am turn do go".split()
)
THIRD_PERSON_VERBS = frozenset(
    "likes loves enjoys adores hates dislikes detests lives works has owns studies resides comes is turns does".split()
)
BAD_MODIFIERS = (
    PHRASE_BOUNDARIES
    | PRONOUN_STARTS
    | frozenset("a an the no been got had lot lots of any big huge fan kind sort".split())
)
CONDITIONAL_WORDS = frozenset(
    "if unless wish whether hope hoping want wants wanted planning plan plans would could "
    "should imagine dream dreaming pretend not never suppose".split()
)

# --- regex fragments ----------------------------------------------------------------

UPPER = "A-ZÀ-ÖØ-Þ"
NAME = rf"[{UPPER}][a-zß-öø-ÿ]+(?:[-'][{UPPER}][a-zß-öø-ÿ]+)?"
#: "my sister", "my best friend": a relation of the speaker, a subject of its own ("Maya's sister").
MY_RELATION = r"[Mm]y\s+(?:" + "|".join(sorted((re.escape(k) for k in RELATIONS), key=len, reverse=True)) + ")"
SUBJECT = rf"(?P<subj>(?<![\w'’-])(?:[Ii]|{MY_RELATION}|{NAME}(?:\s+{NAME})?)(?![\w'’-]))"
ADVERBS = (
    r"(?:\s+(?i:also|still|now|currently|actually|just|really|recently|finally|already|even|"
    r"both|then|eventually|officially|permanently|happily|basically|literally|totally|"
    r"absolutely|truly|definitely|honestly|mostly|originally|kind\s+of|sort\s+of|kinda|so|"
    r"pretty|quite|genuinely|proudly|probably|usually|always|mainly))*"
)
CAP_WORD = rf"(?:[{UPPER}][\w'’&.-]*|\d+[{UPPER}][\w-]*)"
# Words that make "I left X" about a place ("I left Paris and moved home") rather than an employer.
PLACE_CONTEXT = re.compile(
    r"\b(?i:move[ds]?|moving|relocat\w*|city|town|country|hometown|home|apartment|flat|house|"
    r"neighbou?rhood|village|state|island|abroad|lived?|living|emigrated)\b"
)
WORD_RE = re.compile(r"[\w'’&-]+|[^\w\s]")


_R = TypeVar("_R")
#: Texts up to this long are remembered by :func:`remembered`; a longer one is read each time.
REMEMBERED_CHARS = 2_000


def remembered(read: Callable[..., _R]) -> Callable[..., _R]:
    """``read(text, *args)``, keeping the results of the latest 4,096 short texts.

    The rules of an episode read one sentence many times (its names, its split); ``read`` must
    return what no caller changes (a tuple, a frozenset).
    """
    cached = lru_cache(maxsize=4096)(read)

    @wraps(read)
    def call(text: str, *args: object) -> _R:
        return cached(text, *args) if len(text) <= REMEMBERED_CHARS else read(text, *args)

    return call

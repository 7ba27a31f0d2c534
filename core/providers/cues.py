"""What a claim says of what was said before: its cue, the names of what it is about, what it counts.

A claim that changes, ends or corrects something carries a **cue** (:func:`cue_of`: "switched
to", "got rid of", "it's actually"), and the **names** of the thing it is about (:func:`names_of`,
:func:`change_names`: "corolla", "Biscuit"), by which it finds the earlier statements it retires
(:mod:`zep_core.named`). A statement that **counts** something (:func:`counts_of`: "9 people
report to me") replaces an earlier count of the same thing. Rules only: words, each with its
examples.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

from .lexicon import FILLER_WORDS, remembered
from .talk import SMALL_TALK_WORDS
from .timeparse import find_times

__all__ = ["COMMON_WORDS", "PEOPLE", "change_names", "counts_of", "cue_of", "names_of", "recalled_swap",
           "shared_names", "without_recall"]

# --- cues ---------------------------------------------------------------------------------

#: Who a thing can be given to (and is not itself a thing given); whose news a speaker tells.
PEOPLE = (r"(?:niece|nephew|son|daughter|kid|kids|child|sister|brother|cousin|friend|mom|mum|dad|parents|"
          r"neighbou?r|coworker|roommate|aunt|uncle|grandma|grandpa|husband|wife|partner|boyfriend|girlfriend)")
#: Whom a thing went to (and the name after: "my nephew jonah"), in a change that gives it away: not what changed.
_RECIPIENT = re.compile(rf"(?i)\bto\s+(?:my|our|a)\s+(?:\w+\s+)?{PEOPLE}\b(?:\s+\w+)?")
#: It says something replaced, changed or ended: "switched to", "got rid of", "passed away", "no longer".
_CHANGE = re.compile(
    r"(?i)(?<![\w'])(?:switch(?:ed|ing)\s+(?:from|to|over|me|us|back|jobs|majors|careers)|replac(?:ed|ing)|"
    r"instead|upgrad(?:ed|ing)\s+(?:to|from)|traded(?:\s+it)?\s+in|got\s+rid\s+of|sold(?!\s+(?:\d|a\s+(?:few|lot|couple)|some|several|many|out))|gave\s+away|returned|"
    r"no\s+longer|not\s+\w+\s+any\s?more|any\s?more|no\s+more|passed\s+away|passed\s+in|died|"
    r"put\s+(?:\w+\s+)?down|rehom(?:e|ed|ing)|stole|stolen|lost\s+(?:my|our)|"
    # news of a graduation ("graduated last weekend!!"), not a life story ("graduated with honors from…")
    r"graduated(?=\s*(?:[!.?,;:]|$|\s+(?:last|today|yesterday|this|on\s+\w+day)\b|\s*[^\w\s]))|"
    r"passed\s+(?!away\b|by\b|out\b|on\b|through\b|it\b|that\b|the\s+(?:time|salt|ball)\b)(?:my\s+|the\s+)?\w+|"
    r"broke\s+up|divorc(?:ed|e\s+was\s+finali[sz]ed)|split\s+up|separated|quit|left\s+(?:my|our)|retired|"
    r"fully\s+over|cancel+ed|called\s+off|closed\s+(?:down|for\s+good)|pulled\s+(?:the|his|her|my|our|their)|"
    r"pushed\s+(?:it|back|to)|postponed|rescheduled|moved\s+(?:to|out|back|in\s+with|closer)|relocated|"
    r"went\s+(?:w|with)\s+(?:a|an|the)|plot\s+twist|"
    # a thing given away: "the macbook went to my niece", "gave my old bike to a neighbour"
    r"(?:gave|handed|passed)\s+(?:it|them|(?:the|my|our)\s+(?:old\s+)?\w+)\s+(?:down\s+|on\s+)?to\s+(?:my|our|a)|"
    rf"(?:the|my|our)\s+(?:old\s+)?(?!{PEOPLE}\b)\w+\s+(?:went|is\s+going|goes)\s+to\s+(?:my|our)\s+(?:\w+\s+)?{PEOPLE}|"
    r"(?:raised|dropped|increased|decreased|bumped|jumped|(?:is|'s|went|goes|going|came|comes)\s+(?:up|down))\s+"
    r"(?:\w+\s+)?to\s+[$€£]?\d[\d,.]*[k%]?)"
    r"(?![\w'])")
#: It says something said before was wrong: "it's actually", "I meant", "not the 3rd", "I mixed them up".
_CORRECTION = re.compile(
    r"(?i)(?<![\w'])(?:(?:it|that|she|he|they|this|which)(?:'s|\s+is|\s+was|'re|\s+are)\s+actually|"
    r"actually\s+(?:it'?s|its|is|was)|i\s+meant|meant\s+to\s+say|"
    r"(?:wrong|incorrect)\s+(?:date|number|name|day|year|info|one)|gave\s+you\s+the\s+wrong|correction|"
    r"correct\s+(?:something|that|myself)|mix(?:ed|ing)?\s+(?:them|it|that|those|these)\s+up|mixed\s+up|"
    r"double[\s-]checked|typo|brain\s+glitch|not\s+the\s+\w+|my\s+bad|oops|wait\s+no|scratch\s+that|"
    r"did\s+i\s+say|i\s+misspoke)(?![\w'])")
#: "Actually" that compares with what one expected, not with what one said: "it was actually a lot easier
#: than I expected", "it's actually cheaper than the old one" (the clause after it holds a "than").
_COMPARED = re.compile(r"[^,.;:!?]*\bthan\b", re.IGNORECASE)
#: It reports what the speaker said before: a correction only beside a :data:`_CONTRAST` ("I told you
#: 34, I'm 36"), else a memory of it ("the festival I told you about", "so I said yes").
_RECALLED = re.compile(r"(?i)(?<![\w'])(?:i|i've)\s+(?:said\s+(?!yes\b|no\b|so\b|that\s+i\b)\S+|"
                       r"told\s+you(?!\s+about\b))")
#: What sets a recalled word against the right one: "… but", "actually", ", it's …", "I realized".
_CONTRAST = re.compile(r"(?i)\b(?:but|actually|realized|wrong|meant|not)\b|"
                       r",\s*(?:i'?m|it'?s|its|she'?s|he'?s|they'?re)\b")
#: It says something ended, in so many words.
_ENDED = re.compile(r"(?i)\bend\s+of\s+an\s+era\b")
#: A change said not to happen, or only urged: "don't quit", "I won't give up", "never sold it".
_NEGATED = re.compile(r"(?i)(?:\b(?:don'?t|do\s+not|won'?t|will\s+not|never|not|didn'?t|can'?t|cannot|couldn'?t|"
                      r"wouldn'?t|shouldn'?t|mustn'?t|gonna|going\s+to|want\s+to|hope\s+to|might|may|should|"
                      r"would|could|if)\s+(?:\w+\s+)?)$")
#: A change only weighed, not made: "I'm thinking of wearing the sneakers instead", "I might check out the
#: gallery instead", "considering switching to…".
_CONSIDERED = re.compile(r"(?i)\b(?:thinking\s+(?:of|about)|consider(?:ing)?|plann?ing\s+(?:to|on)|wondering|"
                         r"might|maybe|debating|deciding\s+(?:whether|if)|not\s+sure\s+(?:whether|if))\b")
#: The clause of a change that asks about it: "… - can I use fresh spinach instead of frozen?".
_ASKED = re.compile(r"(?i)(?:^|[,;:]\s+|\s[-–—]+\s+)(?:(?:so|and|but|also|or)\s+)?(?:can|could|should|would|will|do|"
                    r"does|did|is|are|was|were|how|what|which|why|where|when)\s+[^,;:–—]*$")


def cue_of(sentence: str) -> str | None:
    """``"correction"``, ``"change"`` or None: what the sentence says of what was said before.

    Example:
        >>> cue_of("it's actually stripe"), cue_of("finally got rid of the corolla"), cue_of("don't quit!")
        ('correction', 'change', None)
        >>> cue_of("I told you I was 34, I'm 36"), cue_of("remember the festival I told you about?")
        ('correction', None)
        >>> cue_of("it was actually a lot easier than I expected!")  # set against what one expected


    A change asked about ("can I use fresh spinach instead of frozen?") or only weighed ("I'm
    thinking of wearing the sneakers instead") has not happened: no cue.

    """
    if any("actually" not in m.group().lower() or not _COMPARED.match(sentence, m.end())
           for m in _CORRECTION.finditer(sentence)) or (_RECALLED.search(sentence) and _CONTRAST.search(sentence)):
        return "correction"
    found = _CHANGE.search(sentence)
    before = sentence[:found.start()] if found else ""
    asked = bool(_ASKED.search(before)) and sentence.rstrip(" )\"'").endswith("?")
    if (found and not _NEGATED.search(before) and not _CONSIDERED.search(before) and not asked) \
            or _ENDED.search(sentence):
        return "change"
    return None


#: Where a sentence's clauses meet: what a change is of is said in the clause of its cue.
_CLAUSE_BREAK = re.compile(r"[,;:!?]\s+|\s+[-–—]+\s+|\.\.+\s*|\s+(?:and|but|so|because|though|although|while|then)\s+",
                           re.IGNORECASE)


def change_names(sentence: str, *, announced: bool = True) -> frozenset[str]:
    """The names in the clauses of ``sentence`` that say what changed: what the change is of.

    The rest of the sentence says other things ("since I sold the corolla, the commute has
    been tough": the corolla went, not the commute), and the cue's own words are
    :data:`COMMON_WORDS` ("end of an era", "plot twist"), while what sits inside a cue is named
    ("put biscuit down", "raised rent to $2,100"): empty when the sentence names nothing that
    changed ("it"). Without ``announced``, a cue that names nothing in its own clause names
    nothing ("I GRADUATED!!!! nclex is july 18": the graduation, not the exam).

    Example:
        >>> sorted(change_names("since I sold the corolla, the commute has been tough"))
        ['corolla']
        >>> sorted(change_names("plot twist: i actually love running now")), sorted(change_names("end of an era!"))
        (['running'], [])
        >>> sorted(change_names("we had to put biscuit down yesterday")), sorted(change_names("raised rent to $2,100"))
        (['biscuit'], ['rent'])
        >>> sorted(change_names("the macbook went to my niece for school"))
        ['macbook']
        >>> sorted(change_names("I replaced the ceiling fan about three weeks ago"))
        ['fan']
        >>> sorted(change_names("I also replaced the worn-out kitchen mat"))  # the mat, not what is in the kitchen
        ['mat']
        >>> sorted(change_names("sold my Honda Civic"))  # a name written as one says which thing as well
        ['civic', 'honda']
        >>> cue_of("rent went up to $2,100"), cue_of("I was pre-approved for up to $350,000")
        ('change', None)
        >>> cue_of("graduated last weekend 🎓"), cue_of("I graduated with a First-Class distinction from Mumbai")
        ('change', None)

    """
    said = [_untimed(c) for c in _CLAUSE_BREAK.split(sentence) if _CHANGE.search(c) or _ENDED.search(c)]
    names = frozenset().union(*(_heads(_RECIPIENT.sub(" ", c)) for c in said))  # the niece got it: she did not change
    # a cue of its own clause ("plot twist: i love running now") announces the rest of the sentence
    return names or (names_of(sentence) if announced else frozenset())


def _heads(clause: str) -> frozenset[str]:
    """The names of ``clause`` that say which thing: the last word of each run of names, and names written as one.

    In "the worn-out kitchen mat" the mat is the thing and "kitchen" says which kind: a change of
    the mat is not one of the kitchen shelves. A word written with a capital ("Honda Civic") is
    a name wherever it stands.
    """
    out: set[str] = set()
    run: list[tuple[str, bool]] = []  # (name, written as a name) of the names read since the last other word
    last_end = 0

    def close() -> None:
        out.update(w for n, (w, proper) in enumerate(run) if proper or n == len(run) - 1)
        run.clear()

    text = clause.replace("’", "'")
    for token in _TOKEN.finditer(text):
        word = next(iter(names_of(token.group())), None)
        if word is None or text[last_end:token.start()].strip():
            close()
        if word is not None:
            run.append((word, token.group()[:1].isupper()))
        last_end = token.end()
    close()
    return frozenset(out)


#: Any moment will do: only where a time is said matters, not when it resolves to.
_ANY_TIME = datetime(2000, 1, 1, tzinfo=timezone.utc)


def _untimed(clause: str) -> str:
    """``clause`` without the times it says: when something changed is not what changed ("three weeks ago")."""
    for m in reversed(find_times(clause, _ANY_TIME)):
        clause = clause[:m.start] + " " + clause[m.end:]
    return clause


# --- what a correction recalls -----------------------------------------------------------------

#: "remember i said pepper is a beagle?", "oh last time i said denver but": the words said before, recalled.
_RECALL_CLAUSE = re.compile(
    r"(?i)(?:\b(?:remember|so|oh|ok|okay|and|hey|wait|um|also)[\s,]+)*"
    r"(?:\b(?:last\s+time|earlier|before|the\s+other\s+day)[\s,]+)?"
    r"\b(?:i|i've)\s+(?:said|told\s+you|mentioned)\b(?P<said>[^,;?!.]*?)"
    r"(?:\s*[,;?!.]+\s*|\s+(?=but\b)|\s*$)(?:but\s+)?")
#: What is said meant instead, after "actually" or "it's": "she's actually a basset hound mix".
_MEANT = re.compile(r"(?i)\b(?:actually|(?:it|she|he|they)(?:'s|\s+is|'re|\s+are))\s+(?:actually\s+)?"
                    r"(?:(?:a|an|the)\s+)?(?P<right>[a-z][\w'-]*(?:\s+[a-z][\w'-]*){0,3})")
#: Words that end what is meant ("boulder technically", "a lab lol").
_MEANT_END = frozenset("""technically actually lol haha lmao though tho now then btw too really apparently instead and
but so because bc explains which who that i is was""".split())


def without_recall(text: str) -> str:
    """``text`` without the clauses that recall what the speaker said before (the wrong words of a correction).

    Example:
        >>> without_recall("remember i said pepper is a beagle? got her DNA test back, she's a basset hound mix")
        "got her DNA test back, she's a basset hound mix"
        >>> without_recall("oh last time i said denver but it's boulder technically")
        "it's boulder technically"

    """
    kept = _RECALL_CLAUSE.sub("", text).strip()
    return kept if len(kept.split()) >= 2 else text


#: A recalled clause that says one value: "pepper is a beagle" (what follows the verb), "denver".
_RECALLED_VALUE = re.compile(r"(?i)^\s*(?:.*?\b(?:is|was|are|were|'s|'re)\s+)?(?:(?:a|an|the)\s+)?"
                             r"(?P<value>[^\W\d_][\w'-]*(?:\s+[^\W\d_][\w'-]*)?)\s*$")
#: Words after a recalled value that ask or hedge, not name: "i told you denver right?".
_RECALL_TAIL = frozenset("right ok okay lol haha yeah yes no too though tho".split())


def recalled_swap(text: str) -> tuple[str, str] | None:
    """The words a correction recalls as said wrong, and the words it means instead; None unless it says both.

    The wrong words are the one value the recalled clause says (after its verb: "i said pepper is
    a *beagle*"; or the whole clause when it is one or two words: "i said *lactose intolerant*");
    the right ones what follows "actually" or "it's" ("she's actually a *basset hound mix*").

    Example:
        >>> recalled_swap("remember i said pepper is a beagle? turns out she's actually a basset hound mix 😂")
        ('beagle', 'basset hound mix')
        >>> recalled_swap("oh last time i said denver but it's boulder technically"), recalled_swap("i said yes")
        (('denver', 'boulder'), None)
        >>> recalled_swap("wait i told you tues/thurs for soccer right? it's actually mon/wed.") is None
        True

    """
    recalled = _RECALL_CLAUSE.search(text)
    if recalled is None:
        return None
    said = recalled["said"].split()
    while said and said[-1].lower() in _RECALL_TAIL:
        said.pop()
    value = _RECALLED_VALUE.match(" ".join(said))
    meant = _MEANT.search(text, recalled.end())
    if value is None or meant is None:
        return None
    wrong = value["value"].lower()
    words = meant["right"].lower().split()
    for i, word in enumerate(words):
        if word in _MEANT_END:
            words = words[:i]
            break
    right = " ".join(words)
    if not right or right == wrong or right in COMMON_WORDS or all(w in COMMON_WORDS for w in wrong.split()):
        return None
    return wrong, right


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
switching replacing upgrading upgrade rehome rehoming relocating selling put plot end era increased decreased
closed closing closer
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
    return _names(text, values)


@remembered  # the rules of an episode ask the names of one sentence many times
def _names(text: str, values: bool) -> frozenset[str]:
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
#: Where a count may be, in lowercase text: a digit or a number word (every :data:`_COUNT_WORD` holds one).
_ANY_NUMBER = re.compile(rf"\d|\b(?:{_NUMBER_WORDS})\b")  # on lowercase text: 3× faster than (?i)
#: Words that change nothing in what a count is of: "11 people report to me *now*".
_COUNT_FILLER = frozenset("""now currently still just only about around roughly like almost nearly over under approx
approximately exactly already also too so really actually lol haha anymore these days tho though ok okay well
oh yeah""".split())
#: A number after these names one thing of many ("document number 4"), it counts nothing.
_LABEL = frozenset("number no no. # num".split())
#: A clause told of one occasion, or in the past: an event ("I ran 5k today", "we logged sighting
#: number 5", "… and took me 3 weeks"), not a count that holds until another replaces it.
_ONCE = re.compile(r"(?i)^\W*(?:it\s+)?(?:took|lasted)\b|"
                   r"\b(?:today|tonight|yesterday|this\s+(?:morning|afternoon|evening)|"
                   r"last\s+(?:night|week|weekend|month|year|time)|(?:i|we|he|she|they)\s+(?:just\s+)?"
                   r"(?:\w+ed|was|were|had|did|got|went|ran|saw|made|took|gave|came|won|bought|caught|wrote)\b)")
#: A clause that says more of the thing named before it ("a novel, which had 440 pages"): what it counts
#: is that thing's, and another thing has its own ("which had 341 pages"), not a count the speaker holds.
_RELATIVE = re.compile(r"(?i)^\W*(?:which|who|whose)\b")


#: "my fav band is…", "our go-to date night spot": a favorite holds one value at a time.
_FAVORITE = re.compile(r"(?i)\b(?:my|our|his|her)\s+(?:new\s+|all[\s-]time\s+)?(?:fav|fave|favou?rite|go[\s-]to)\s+"
                       r"(?P<what>(?!is\b|thing\b|ever\b)[a-z]+(?:\s+(?!is\b|are\b|was\b|now\b|ever\b|of\b|too\b|"
                       r"lately\b|rn\b)[a-z]+)?)")


def says_a_number(text: str) -> bool:
    """Whether ``text`` says a number, in digits or in words ("10 neon tetras", "three sisters").

    Example:
        >>> says_a_number("my tank has 10 neon tetras"), says_a_number("I have Three sisters")
        (True, True)
        >>> says_a_number("I got a snake plant from my sister")
        False

    """
    return _ANY_NUMBER.search(text.lower()) is not None


def counts_of(text: str) -> dict[str, str]:
    """The counts a text states, by what they count: ``{"# people report to me": "9"}``; and its favorites.

    A count is a number (or a number word) in a clause that is not told of one occasion or in
    the past (:data:`_ONCE`); what it counts is the clause's words around it, the number as
    ``#``, without filler ("now", "like"…). Two statements that count
    the same thing with two values say one replaced the other: "9 people report to me", then
    "11 people report to me now".

    Example:
        >>> counts_of("I work as a nurse and 9 people report to me.")
        {'# people report to me': '9'}
        >>> counts_of("now i have three cats.")
        {'i have # cats': 'three'}
        >>> counts_of("my fav band is twenty one pilots")
        {'favorite band': 'my fav band is twenty one pilots'}
        >>> counts_of("I finished a novel, which had 440 pages and took me around 3 weeks")
        {}
        >>> counts_of("I ran 5k today"), counts_of("test document number 4")
        ({}, {})

    """
    out: dict[str, str] = {}
    for found in _FAVORITE.finditer(text):  # "theyre my favorite band now": one favorite band at a time
        out[f"favorite {found['what'].lower()}"] = text[found.start():].split(".")[0].lower()
    if not says_a_number(text):
        return out  # no number, no count (most of what is said)
    for clause in _COUNT_CLAUSES.split(text):
        if not says_a_number(clause) or _ONCE.search(clause) or _RELATIVE.search(clause):
            continue
        words = [w for w in re.findall(r"[\w$'%.,-]+", clause.lower().replace("’", "'")) if w.strip(".,")]
        words = [w.strip(".,") for w in words if w.strip(".,") not in _COUNT_FILLER]
        found = [i for i, w in enumerate(words) if _COUNT_WORD.match(w) and not (i and words[i - 1] in _LABEL)]
        if len(found) != 1:
            continue  # none, or several: not one count of one thing
        i = found[0]
        window = words[max(0, i - 4):i] + ["#"] + words[i + 1:i + 5]
        if not [w for w in window if w != "#" and w not in _COUNT_EMPTY]:
            continue  # "it's been # years" counts nothing in particular
        out[" ".join(window)] = words[i]
    return out

"""Synthetic users and short conversations for the scale benchmark, from a seed.

Each user has a name, a home city, an employer and job, pets, relatives, friends
and tastes. An episode is one to three short first-person user messages (and a short
unnamed assistant reply) about one of them: where they live, where they work, what
they like, what they did. Some episodes move the user or change their job, so the
``lives_in`` / ``works_at`` rules supersede older facts as they would in real use.
Everything is drawn from a :class:`random.Random` seeded by the caller, so a size is
the same data on every run.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

__all__ = ["SynthUser", "episodes", "make_users", "queries"]

FIRST = ("Alice Bruno Chloe Dmitri Elena Farid Greta Hiro Ines Jonas Kavya Liam Maya Nikolai Olga Pedro "
         "Quinn Rosa Sami Tara Umar Vera Wen Ximena Yusuf Zoe Amara Boris Camila Dario Esme Felix Gita "
         "Hugo Ingrid Javier Keiko Lars Mina Noah Oren Priya Rafael Sofia Tomas Uma Viktor Wanda Yara Zane").split()
LAST = ("Novak Silva Ortega Petrov Rossi Haddad Berg Tanaka Costa Weber Iyer Murphy Cohen Volkov Ivanova "
        "Lopez Reed Marin Aziz Kaur Malik Stone Li Ramos Demir Adler Okafor Horvat Duarte Ferri Blake").split()
CITIES = ("Lisbon Berlin Paris Madrid Rome Vienna Prague Warsaw Dublin Oslo Stockholm Helsinki Copenhagen "
          "Amsterdam Brussels Zurich Geneva Munich Hamburg Milan Naples Porto Seville Valencia Krakow "
          "Budapest Athens Istanbul Toronto Vancouver Montreal Boston Chicago Denver Seattle Austin Portland "
          "Melbourne Sydney Auckland Tokyo Osaka Seoul Singapore Mumbai Nairobi Lagos Cairo").split()
COMPANIES = ("Acme Globex Initech Umbrella Hooli Vandelay Stark Wayne Tyrell Cyberdyne Aperture Soylent "
             "Wonka Oscorp Gringotts Monarch Nakatomi Pied Piper Massive Dynamic Blue Sun Virtucon").split()
JOBS = ("teacher nurse engineer designer architect lawyer accountant writer journalist chef baker pilot "
        "mechanic pharmacist therapist photographer librarian analyst consultant developer").split()
PETS = ("dog cat rabbit parrot hamster turtle").split()
PET_NAMES = ("Biscuit Pepper Luna Milo Olive Ziggy Mochi Nala Otis Pixel Rocket Tofu").split()
RELATIONS = ("sister brother cousin friend colleague neighbor").split()
LIKES = ("hiking jazz sushi chess climbing gardening board games sci-fi novels pottery running yoga "
         "baking sourdough vinyl records street photography birdwatching kayaking salsa dancing "
         "Korean dramas cycling woodworking espresso tennis painting podcasts camping").split(" ")
PLACES = ("the farmers market", "a jazz club", "the science museum", "a pottery class", "the beach",
          "a bookshop", "the climbing gym", "a street food festival", "the botanical garden",
          "a concert", "the old town", "a cooking workshop", "the lake", "a board game cafe")
WHEN = ("yesterday", "last weekend", "on Saturday", "this morning", "last night", "on Sunday")
REPLIES = ("Got it, thanks for telling me.", "That sounds lovely!", "Noted.", "Good to know.",
           "Thanks for sharing that.", "How exciting!")
TOPIC_WORDS = ("food", "music", "weekends", "work", "family", "pets", "travel", "sports", "books", "home",
               "friends", "hobbies", "plans", "city", "job", "evenings", "holidays", "cooking", "health")


@dataclass
class SynthUser:
    """A synthetic user and what is currently true about them."""

    id: str
    name: str
    city: str
    company: str
    job: str
    likes: list[str] = field(default_factory=list)
    people: list[tuple[str, str]] = field(default_factory=list)


def make_users(n: int, seed: int = 7) -> list[SynthUser]:
    """``n`` users with distinct full names."""
    rng = random.Random(seed)
    names = [f"{f} {last}" for f in FIRST for last in LAST]
    rng.shuffle(names)
    if n > len(names):
        raise ValueError(f"at most {len(names)} synthetic users")
    return [SynthUser(f"user-{i:04d}", names[i], rng.choice(CITIES), rng.choice(COMPANIES), rng.choice(JOBS),
                      rng.sample(LIKES, 3)) for i in range(n)]


def _statements(user: SynthUser, rng: random.Random) -> list[str]:
    """One to three sentences on one topic; may move the user or change their job."""
    kind = rng.choices(("move", "job", "like", "person", "pet", "outing", "plan", "intro"),
                       weights=(8, 6, 18, 14, 8, 26, 12, 8))[0]
    when = rng.choice(WHEN)
    if kind == "move":
        old, user.city = user.city, rng.choice([c for c in CITIES if c != user.city])
        return [f"I moved to {user.city} {rng.choice(('last month', 'last week', 'recently'))}.",
                f"I used to live in {old} but the rent got too high."][: rng.randint(1, 2)]
    if kind == "job":
        user.company, user.job = rng.choice(COMPANIES), rng.choice(JOBS)
        return [f"I started a new job at {user.company}.", f"I work as a {user.job} now."][: rng.randint(1, 2)]
    if kind == "like":
        thing = rng.choice(LIKES)
        if thing not in user.likes:
            user.likes.append(thing)
        return [f"I really like {thing}.", f"I got into {thing} a while ago and I try to do it every week."][
            : rng.randint(1, 2)]
    if kind == "person":
        rel, name = rng.choice(RELATIONS), rng.choice(FIRST)
        user.people.append((rel, name))
        return [f"My {rel} {name} lives in {rng.choice(CITIES)}.",
                f"{name} and I are going to {rng.choice(PLACES)} {rng.choice(('next week', 'soon'))}."][
            : rng.randint(1, 2)]
    if kind == "pet":
        return [f"I have a {rng.choice(PETS)} called {rng.choice(PET_NAMES)}.",
                f"We walk to {rng.choice(PLACES)} together {when}."][: rng.randint(1, 2)]
    if kind == "outing":
        who = user.people[-1][1] if user.people and rng.random() < 0.5 else "a friend"
        return [f"I went to {rng.choice(PLACES)} in {user.city} {when} with {who}.",
                f"It was {rng.choice(('great', 'too crowded', 'relaxing', 'a bit expensive', 'really fun'))}."]
    if kind == "plan":
        return [f"I am planning a trip to {rng.choice(CITIES)} in "
                f"{rng.choice(('May', 'June', 'August', 'October', 'December'))}.",
                f"I want to try {rng.choice(LIKES)} while I am there."][: rng.randint(1, 2)]
    return [f"I live in {user.city} and I work at {user.company} as a {user.job}."]


def episodes(users: list[SynthUser], seed: int, start: datetime | None = None) -> Iterator[
        tuple[SynthUser, str, list[dict]]]:
    """Endless ``(user, session_id, messages)`` episodes, round-robin over shuffled users."""
    rng = random.Random(seed)
    when = start or datetime(2024, 1, 1, tzinfo=timezone.utc)
    n = 0
    while True:
        order = list(users)
        rng.shuffle(order)
        for user in order:
            when += timedelta(minutes=rng.randint(1, 30))
            msgs = [{"role": "user", "name": user.name, "content": s, "timestamp": when + timedelta(seconds=i)}
                    for i, s in enumerate(_statements(user, rng))]
            msgs.append({"role": "assistant", "content": rng.choice(REPLIES),
                         "timestamp": when + timedelta(seconds=len(msgs))})
            n += 1
            yield user, f"s{n}", msgs


def queries(users: list[SynthUser], n: int, seed: int) -> list[tuple[SynthUser, str]]:
    """``n`` distinct ``(user, question)`` pairs, some naming the user, some in the first person."""
    rng = random.Random(seed)
    seen: set[str] = set()
    out: list[tuple[SynthUser, str]] = []
    templates = (
        "Where does {name} live now?", "What does {name} do for work these days?",
        "Which {t} things does {first} enjoy?", "Who is {first}'s {rel}?",
        "What did {first} do in {city} recently?", "Remind me what I said about {t} and {t2}.",
        "Do I have any pets, and what about {t}?", "Where am I travelling to next, and any {t} plans?",
        "What do I like doing on {t}?", "Tell me about {first}'s {t} and {like}.",
        "Has {name} been to {place}?", "What happened with my {t} in {city}?",
    )
    attempts = 0
    while len(out) < n:
        attempts += 1
        if attempts > n * 200:
            raise ValueError(f"cannot draw {n} distinct queries from the templates")
        u = rng.choice(users)
        t, t2 = rng.sample(TOPIC_WORDS, 2)
        text = rng.choice(templates).format(name=u.name, first=u.name.split()[0], t=t, t2=t2,
                                            rel=rng.choice(RELATIONS), city=rng.choice(CITIES),
                                            like=rng.choice(LIKES), place=rng.choice(PLACES))
        if text not in seen:
            seen.add(text)
            out.append((u, text))
    return out

"""What is true now, from ordinary chat, with the offline extractor: what a later message retires, and what it leaves.

A later message that says something changed ("finally got rid of the corolla") or was wrong
("I told you I was 34, I'm 36") retires the earlier statements about that thing, and only those:
long chatty messages share plenty of words with earlier ones ("crazy", "tough", "stuck"), and a
word shared outside the clause that says what changed retires nothing.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from zep_core import Message

T = datetime(2024, 3, 1, tzinfo=timezone.utc)


def _tell(memory, *sessions: str, user: str = "sam", name: str = "Sam") -> None:
    for i, text in enumerate(sessions):
        memory.conversation_end(f"s{i}", [Message(text, name=name, timestamp=T + timedelta(days=30 * i))],
                                user_id=user)


def _current(memory, user: str = "sam") -> list[str]:
    return [f.content for f in memory.facts(user) if f.is_current]


def _said(facts: list[str], words: str) -> bool:
    return any(words in f for f in facts)


def test_a_thing_got_rid_of_retires_what_was_said_of_it_and_keeps_the_new_one(memory):
    _tell(memory, "my corolla is making this grinding noise when i brake, like metal on metal",
          "finally got rid of the corolla lol, traded it in for a 2019 civic EX. how often should i change the oil?")
    now = _current(memory)
    assert not _said(now, "grinding noise")
    assert _said(now, "2019 civic EX")


def test_a_correction_puts_the_wrong_value_right(memory):
    _tell(memory, "I'm 34 and just started running, any tips for a first 5k?",
          "also fyi I told you I was 34 a while back, I'm 36 lol")
    now = _current(memory)
    assert _said(now, "I'm 36 and just started running")
    assert not _said(now, "I'm 34")


def test_a_memory_of_what_was_said_corrects_nothing(memory):
    _tell(memory, "I went to a charity event with Harry Potter trivia, Anthony won the quiz.",
          "Last August I told you about my fun time at a charity event with Harry Potter trivia. "
          "Did you dress up as any character?")
    assert _said(_current(memory), "Anthony won the quiz")


def test_a_count_said_again_replaces_the_old_count(memory):
    _tell(memory, "9 people report to me at the moment, how do I run a good 1:1?",
          "11 people report to me now after the reorg")
    now = _current(memory)
    assert not _said(now, "9 people report to me")
    assert _said(now, "11 people report to me")


def test_a_word_shared_outside_the_clause_that_changed_retires_nothing(memory):
    _tell(memory, "The school trip to the science museum was crazy, the kids loved the planetarium.",
          "Crazy thing happened since we last talked. I lost my job at the bakery, so I'm looking for work.")
    assert _said(_current(memory), "planetarium")


def test_a_change_said_again_keeps_its_first_telling(memory):
    _tell(memory, "Unfortunately, I also lost my job at Door Dash last week.",
          "Since I lost my job at Door Dash, things have been tough. But I have some good news to share!")
    assert _said(_current(memory), "also lost my job at Door Dash")


def test_an_urged_change_is_no_change(memory):
    _tell(memory, "I play guitar in a small band with two friends from work.",
          "Some days I want to quit guitar, but don't quit is what my teacher says!")
    assert _said(_current(memory), "guitar in a small band")


def test_a_change_that_names_nothing_is_of_what_was_said_just_before(memory):
    _tell(memory, "our go-to date night spot is tavola, best cacio e pepe in the city",
          "tavola closed 😭 end of an era. we've switched to this little thai place, kin khao, going every friday now")
    now = _current(memory)
    assert not _said(now, "go-to date night spot is tavola")
    assert _said(now, "kin khao")


def test_small_talk_and_condolences_are_not_facts(memory):
    _tell(memory, "hey! sorry to hear that, so sorry!! thanks for asking, have a great weekend")
    assert _current(memory) == []


def test_a_change_whose_words_hold_the_name_retires_what_was_said_of_it(memory):
    _tell(memory, "my hamster nibbles is 3 and sleeps all day, is that normal?",
          "we had to put nibbles down last night. the cage looks so empty")
    assert not _said(_current(memory), "sleeps all day")


def test_an_amount_raised_retires_the_old_amount(memory):
    _tell(memory, "my gym membership is $45 a month and i barely go, worth keeping?",
          "the gym raised membership to $60 so i'm finally cancelling")
    now = _current(memory)
    assert not _said(now, "$45")
    assert _said(now, "$60")


def test_a_money_value_corrected_in_its_message_keeps_what_follows_the_correction(memory):
    _tell(memory, "my budget for the new laptop is $900. make that $1,100, i need the bigger screen for design work")
    now = _current(memory)
    assert _said(now, "$1,100")
    assert not _said(now, "$900")
    assert _said(now, "bigger screen for design work")


def test_a_number_said_to_be_actually_another_replaces_it(memory):
    memory.conversation_end("s0", [
        Message("my son is 4 and loves trucks, any birthday party ideas?", name="Sam", timestamp=T),
        Message("A truck-themed party is always a hit!", role="assistant", timestamp=T + timedelta(minutes=1)),
        Message("oh he's 5 actually, his birthday was in june. the party is for his friends from preschool",
                name="Sam", timestamp=T + timedelta(minutes=2)),
    ], user_id="sam")
    now = _current(memory)
    assert not _said(now, "son is 4")
    assert _said(now, "5")


def test_a_recalled_value_corrected_later_puts_the_statement_right_and_keeps_its_name(memory):
    _tell(memory, "my cat luna is a siamese and she yells at 5am every day",
          "remember i said luna is a siamese? the vet says she's actually a tonkinese lol. still yelling though")
    now = _current(memory)
    assert not _said(now, "is a siamese")
    assert _said(now, "luna is a tonkinese")


def test_wait_its_puts_right_a_value_of_its_own_message(memory):
    _tell(memory, "my 2016 forester needs new brakes. wait its a 2017, i always forget. what pads should i get?")
    now = _current(memory)
    assert _said(now, "2017 forester")
    assert not _said(now, "2016")


def test_a_joked_number_taken_back_keeps_the_real_number_with_what_it_counts(memory):
    _tell(memory, "we have 40 chickens lol not really, just 4. any tips for keeping them warm in winter?")
    now = _current(memory)
    assert _said(now, "4 chickens")
    assert not _said(now, "40")


def test_the_real_answer_after_a_joke_replaces_the_joked_value(memory):
    memory.conversation_end("s0", [
        Message("my height? im 7 feet tall obviously 😎", name="Sam", timestamp=T),
        Message("Ha, basketball material! What can I help with?", role="assistant", timestamp=T + timedelta(minutes=1)),
        Message("ok real answer is 5, i round up. need a bike frame size", name="Sam",
                timestamp=T + timedelta(minutes=2)),
    ], user_id="sam")
    now = _current(memory)
    assert not _said(now, "7 feet")


def test_graduating_ends_the_studies_said_before(memory):
    _tell(memory, "i'm a sophomore at uc davis studying chemistry. any tips for organic chem?",
          "graduated last month!! now i'm applying to lab tech jobs, can you look at my cover letter?")
    assert not _said(_current(memory), "sophomore at uc davis")


def test_an_exam_passed_ends_what_was_said_of_it_beside_another_change(memory):
    _tell(memory, "I GRADUATED!!! the cpa exam is april 3rd, wish me luck",
          "passed the cpa exam first try!! starting at deloitte monday")
    now = _current(memory)
    assert not _said(now, "cpa exam is april 3rd")
    assert _said(now, "deloitte")


def test_a_thing_given_away_ends_what_was_said_of_it_not_of_whom_it_went_to(memory):
    _tell(memory, "my old ipad keeps crashing when i draw. my nephew jonah is obsessed with minecraft",
          "bought a surface pro for drawing, the ipad went to my nephew jonah")
    now = _current(memory)
    assert not _said(now, "ipad keeps crashing")
    assert _said(now, "jonah is obsessed with minecraft") and _said(now, "surface pro")


def test_a_change_asked_about_or_only_weighed_retires_nothing(memory):
    _tell(memory, "my bialetti moka pot makes bitter coffee, maybe the grind is too fine?",
          "question about coffee - can I use a french press instead of the bialetti?",
          "I'm thinking of getting rid of the bialetti and buying an espresso machine. what's a good budget one?",
          "I might try a pour-over instead of the bialetti this weekend.")
    assert _said(_current(memory), "bialetti moka pot makes bitter coffee")
    _tell(memory, "ok I finally replaced the bialetti with a breville bambino", user="kim", name="Kim")
    assert _said(_current(memory, "kim"), "breville bambino")


def test_the_change_said_after_weighing_it_still_retires(memory):
    _tell(memory, "my bialetti moka pot makes bitter coffee, maybe the grind is too fine?",
          "I'm thinking of getting rid of the bialetti and buying an espresso machine. what's a good budget one?",
          "ok I finally replaced the bialetti with a breville bambino")
    now = _current(memory)
    assert not _said(now, "bialetti moka pot makes bitter coffee")
    assert _said(now, "breville bambino")


def test_goods_sold_at_a_stall_are_no_change_of_the_sellers_things(memory):
    _tell(memory, "I make beeswax candles at home and sell them at the craft fair on saturdays.",
          "Good weekend: I sold 30 candles at the craft fair and 12 jars of honey.")
    assert _said(_current(memory), "make beeswax candles at home")


def test_a_time_that_could_work_is_not_a_claim_about_work(memory):
    _tell(memory, "I think Thursday afternoon at 3 pm could work well. I go to the pool at 6 pm after the call.",
          "big news, I quit my job at the bakery and start as a paralegal at a law firm downtown!")
    now = _current(memory)
    assert _said(now, "go to the pool at 6 pm")
    assert _said(now, "paralegal")


def test_a_past_role_or_a_wish_is_not_what_holds_now_and_a_new_value_leaves_it(memory):
    # "my previous role…", "I used to…", "I'd love to…" say what was or what is wished for: history that stays true
    _tell(memory, "In my previous role as a nurse I worked a lot of night shifts, so odd hours don't scare me.",
          "I used to live in a tiny studio in Brooklyn.",
          "I'd love to move to a little house by the sea.",
          "Big news: I work as a pharmacist now! And I live in Hoboken with my partner.")
    now = _current(memory)
    assert _said(now, "previous role as a nurse")
    assert _said(now, "tiny studio in Brooklyn") and _said(now, "little house by the sea")
    assert _said(now, "pharmacist") and _said(now, "Hoboken")


def test_the_assistant_speaking_of_itself_in_a_long_reply_is_still_read(memory):
    # the rules read only the sentences of a reply that speak of its speaker ("I", "my", its name):
    # advice in the second person states nothing of the assistant, and what it says of itself is kept
    reply = ("Great question! Start with two short runs a week. Keep the pace easy enough to talk. "
             "Stretch after each run. Hydrate well. My name is Coach Ada, by the way.")
    memory.conversation_end("s", [Message("any tips for a first 5k?", name="Sam", timestamp=T),
                                  Message(reply, role="assistant", timestamp=T)], user_id="sam")
    facts = memory.facts("sam")
    assert ("Assistant", "is_named", "Coach Ada") in {(f.subject, f.predicate, f.object) for f in facts}
    assert any(f.predicate == "statement" and "two short runs a week" in f.content for f in facts)


def test_words_said_as_a_role_are_quoted_and_say_nothing_of_the_speaker(memory):
    # a recruiter's message pasted under "act as bailey:" is bailey's: it is not where Sam works
    _tell(memory, "I'm a data analyst at a bank these days.",
          "act as bailey and reply to this: Hi Dr. Scott, I work at Televero Health and we are recruiting "
          "for psychiatry positions. Best regards, Bailey",
          "I act as the treasurer of our chess club, which takes a few hours a month.")
    facts = memory.facts("sam")
    now = [f.content for f in facts if f.is_current]
    assert _said(now, "data analyst") and _said(now, "act as bailey")
    assert not [f for f in facts if "Televero" in f.content and f.predicate != "statement"]
    assert _said(now, "treasurer of our chess club")


def test_a_quote_split_from_a_message_keeps_its_own_claim_and_a_new_job_leaves_the_home(memory):
    # "I work as X! And I live in Y": each clause is quoted on its own, the second about one's home
    _tell(memory, "Big news: I work as a pharmacist now! And I live in Hoboken with my partner.",
          "I work as a teacher now.")
    now = _current(memory)
    assert _said(now, "live in Hoboken with my partner") and _said(now, "works as a teacher")
    assert not _said(now, "works as a pharmacist")


def test_a_job_taken_up_replaces_the_job_said_before(memory):
    # "I just landed a job as…", "started a new job as…": the work one does now, said as the event of taking it
    _tell(memory, "I work as a barista at a coffee shop downtown.", "Great news, I just landed a job as a paralegal!")
    now = _current(memory)
    assert _said(now, "works as a paralegal") and not _said(now, "works as a barista")
    _tell(memory, "I'm a dental hygienist.", "I started a new job as a pharmacist last week.", user="kim", name="Kim")
    now = _current(memory, "kim")
    assert _said(now, "works as a pharmacist") and not _said(now, "works as a dental hygienist")


def test_actually_set_against_what_one_expected_corrects_nothing(memory):
    _tell(memory, "I started playing along to my favorite songs on my old keyboard today, so much fun!",
          "As for playing along to my favorite songs, it was actually a lot easier than I expected!")
    assert _said(_current(memory), "my old keyboard today")


def test_a_correction_in_a_long_message_names_what_its_own_sentences_name(memory):
    _tell(memory, "My sister Maya is visiting in June, she wants to see the coast.",
          "Maya loved the pottery class we took together last time. Anyway, work has been busy and I barely "
          "see anyone these days. I told you the dentist was on Tuesday, it's actually Thursday.")
    now = _current(memory)
    assert _said(now, "My sister Maya is visiting in June, she wants to see the coast.")
    assert _said(now, "it's actually Thursday")


def test_what_one_book_counts_is_not_replaced_by_another_books_count(memory):
    # "which had 440 pages" counts the book's pages, not something the speaker holds: a second book has its own
    _tell(memory, 'I just finished "The Nightingale" by Kristin Hannah, which had 440 pages and took me 3 weeks.',
          'I just finished a 416-page novel, but before that I read "The Power", which had 341 pages and took me '
          "5 weeks to finish.")
    now = _current(memory)
    assert _said(now, "which had 440 pages") and _said(now, "which had 341 pages")


def test_a_thing_replaced_retires_what_was_said_of_it_not_of_another_thing_of_the_same_room(memory):
    _tell(memory, "Any quick veggie recipes? By the way, I finally fixed the kitchen shelves last weekend.",
          "My kitchen mat is worn out, it slides on the tiles.",
          "By the way, I also replaced the worn-out kitchen mat in front of the sink with a new one from IKEA.")
    now = _current(memory)
    assert _said(now, "fixed the kitchen shelves")
    assert not _said(now, "it slides on the tiles") and _said(now, "replaced the worn-out kitchen mat")


def test_a_friends_wedding_does_not_end_the_speakers_own_wedding_plans(memory):
    _tell(memory, "I'm planning my own wedding and wondering how to choose a venue. By the way, I just got back "
                  "from a friend's wedding last weekend - the bride, Jen, looked stunning.",
          "For the readings, I was thinking of asking my friend from my book club, Jen, who just got married last "
          "weekend, to read a poem during the ceremony.")
    assert _said(_current(memory), "planning my own wedding")

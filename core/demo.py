"""The README's main job: a fact changes across two sessions, and memory keeps up.

Run it with ``python -m zep_core.demo [DATA_DIR]`` (default: a fresh temporary
folder). Everything runs offline on the embedded defaults.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from . import Memory, Message

UTC = timezone.utc

SESSION_1 = [
    Message("Hi! I'm Alice. I live in Paris and I work at Acme as a designer.", name="Alice",
            id="s1-1", timestamp=datetime(2023, 5, 8, 13, 56, tzinfo=UTC)),
    Message("Nice to meet you, Alice!", role="assistant", id="s1-2",
            timestamp=datetime(2023, 5, 8, 13, 57, tzinfo=UTC)),
    Message("I love jazz and I have a dog called Rex.", name="Alice",
            id="s1-3", timestamp=datetime(2023, 5, 8, 13, 58, tzinfo=UTC)),
]
SESSION_2 = [
    Message("Big news: I moved to Berlin last month.", name="Alice",
            id="s2-1", timestamp=datetime(2024, 3, 12, 9, 30, tzinfo=UTC)),
    Message("Congratulations on the move!", role="assistant", id="s2-2",
            timestamp=datetime(2024, 3, 12, 9, 31, tzinfo=UTC)),
]


def run(data_dir: str | Path, out=sys.stdout) -> None:
    """Ingest the two sessions into ``data_dir`` and print what memory knows."""
    def say(text: str = "") -> None:
        print(text, file=out)

    with Memory.open(data_dir) as memory:
        for session_id, messages in (("session-1", SESSION_1), ("session-2", SESSION_2)):
            result = memory.conversation_end(session_id, messages, user_id="alice", episode_id=session_id)
            say(f"== {session_id}: {result.status}, {len(result.added)} facts added, "
                f"{len(result.reinforced)} reinforced, {len(result.superseded)} superseded, "
                f"{len(result.discarded)} discarded")
            said_now = {f.id: f.content for f in result.added}
            for fact in result.superseded:
                say(f"   superseded: {fact.content} (valid {fact.valid_from.date()} .. {fact.valid_until.date()}, "
                    f"replaced by {said_now.get(fact.superseded_by, 'a later fact')!r})")
            for dropped in result.discarded:
                say(f"   discarded: {dropped.fact.content} ({dropped.reason})")
            for reason in result.invalid:
                say(f"   dropped: {reason}")
        memory.refresh_entities()
        question = "Where does Alice live now?"
        say(f"\n== get_context({question!r})")
        say("   score (fused ranks of: cosine, BM25 over the words, graph hop)  fact")
        for fact in memory.get_context(question, user_id="alice", limit=5):
            say(f"   {fact.score:.3f} ({fact.semantic_score:.2f}, {fact.lexical_score:.2f}, {fact.graph_score:.1f})"
                f"  {fact.content}")
        say("\n== context_block (what an agent's prompt receives)")
        say(memory.context_block(question, user_id="alice", limit=5))
        say("\n== entity_history('Alice'), oldest first, superseded facts too")
        for fact in memory.entity_history("Alice", user_id="alice"):
            if fact.predicate == "statement":
                continue
            until = fact.valid_until.date().isoformat() if fact.valid_until else "now"
            mark = "  (superseded)" if fact.superseded_by else ""
            say(f"   {fact.valid_from.date()} .. {until:10}  {fact.content}{mark}")
        say("\n== related_entities('Alice')")
        say("   " + ", ".join(e.name for e in memory.related_entities("Alice", user_id="alice")))


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m zep_core.demo [DATA_DIR]``."""
    parser = argparse.ArgumentParser(prog="python -m zep_core.demo", description=__doc__.splitlines()[0])
    parser.add_argument("data_dir", nargs="?", help="keep the memory here (default: a fresh temporary folder)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.data_dir:
        run(args.data_dir)
    else:
        with tempfile.TemporaryDirectory(prefix="zep-demo-") as tmp:
            run(tmp)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

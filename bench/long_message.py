"""One long message: seconds per message length, against the embedder reading the same text in the same run.

Issue 44's message — ``". ".join(f"I like thing{i}" for i in range(9000))[:N]``, one
message of one episode — cost 0.5 s at 5k characters, 11.6 s at 20k, 72 s at 50k and 365 s
at 100k through ``conversation_end``: the offline extractor compared every clause with
every value. Here it is read at 5k, 20k, 50k and 100k characters by the extractor alone
and by ``conversation_end`` on a fresh memory, and the same text's sentences are embedded
(the local model, batch 32) as the baseline: a pass that is linear by construction. The
extractor and the embedder are timed in CPU seconds (the best of three), which a busy
machine disturbs far less than the wall clock; ``conversation_end`` in wall seconds. Linear
growth shows as a flat µs per character, a time ratio to 5k equal to the length ratio, and
a flat ratio to the embedder. A second table reads each shape that was quadratic at 25k
and 100k characters: 4x the length should cost about 4x the time.

Run: ``python -m bench.long_message [--quick] [--out DIR]`` (quick: up to 50k, one repeat).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .common import write_result

__all__ = ["LENGTHS", "SHAPES", "issue_44", "main", "run"]

LENGTHS = (5_000, 20_000, 50_000, 100_000)
#: The seconds issue 44 measured through conversation_end before the extractor read a message in one pass.
BEFORE_S = {5_000: 0.5, 20_000: 11.6, 50_000: 72.0, 100_000: 365.0}


def issue_44(chars: int, variant: int = 0) -> str:
    """The message of issue 44, cut at ``chars``; another ``variant`` numbers its things from ``variant`` million."""
    first = variant * 1_000_000
    return ". ".join(f"I like thing{i}" for i in range(first, first + 20_000))[:chars]


def _repeated(sentence: str) -> Callable[[int, int], str]:
    def make(chars: int, variant: int = 0) -> str:
        out, size, i = [], 0, variant * 1_000_000
        while size < chars:
            out.append(sentence.format(i=i))
            size += len(out[-1]) + 1
            i += 1
        return " ".join(out)[:chars]

    return make


#: The shapes that were super-linear, each as a function of the length (and of a variant: other sentences).
SHAPES: dict[str, Callable[[int, int], str]] = {
    "issue 44 (a value per clause)": issue_44,
    "corrections finding nothing": _repeated("I like tea. Actually, {i}."),
    "one sentence, no full stop": _repeated("i like thing{i} and i work at place{i} since 2019"),
    "several facts per clause": _repeated("I like x{i}, y{i} and z{i}; and I work at W{i}"),
}


def _best(call: Callable[[int], Any], repeats: int, clock: Callable[[], float] = time.thread_time) -> float:
    """The least seconds of ``repeats`` calls ``call(variant)``, by ``clock``.

    CPU seconds of this thread by default, which other processes on a shared machine
    disturb far less than the wall clock. Each repeat reads another variant of the text
    (other sentences): the extractor's caches of sentences it has read would otherwise
    make every repeat of a short text after the first nearly free.
    """
    times = []
    for variant in range(repeats):
        start = clock()
        call(variant)
        times.append(clock() - start)
    return min(times)


def run(lengths: Sequence[int] = LENGTHS, repeats: int = 3, out_dir: Path | None = None) -> dict[str, Any]:
    """Measure every length and shape; write ``long_message.json``; return the figures."""
    from zep_core import Memory, MemoryConfig, Message
    from zep_core.providers.base import ExtractionContext
    from zep_core.providers.extractive import split_sentences
    from zep_core.providers.local import LocalEmbedder
    from zep_core.providers.rules import RuleExtractor

    context = ExtractionContext("u", "s", now=datetime(2024, 5, 1, tzinfo=timezone.utc))
    extractor, embedder = RuleExtractor(), LocalEmbedder()
    embedder.embed(["warm up"])
    rows = []
    with tempfile.TemporaryDirectory() as folder, Memory(MemoryConfig(data_dir=folder, embedder=embedder)) as memory:
        memory.conversation_end("warm", [Message("I live in Paris.", name="Ann")], user_id="warm")
        for chars in lengths:
            extract_s = _best(lambda v, n=chars: extractor.extract([Message(issue_44(n, v + 1), name="Ann")], context),
                              repeats)
            text = issue_44(chars)
            sentences = [s for s in split_sentences(text) if s.strip()]
            embed_s = _best(lambda v, s=sentences: embedder.embed(s), 1, time.process_time)  # its threads too
            start = time.perf_counter()
            result = memory.conversation_end("s", [Message(text, name="Ann")], user_id=f"u{chars}")
            rows.append({"chars": chars, "extract_s": round(extract_s, 4), "embed_s": round(embed_s, 4),
                         "conversation_end_s": round(time.perf_counter() - start, 3), "facts_added": len(result.added),
                         "before_s": BEFORE_S.get(chars)})
    def read(make: Callable[[int, int], str], chars: int) -> float:
        return _best(lambda v: extractor.extract([Message(make(chars, v + 1), name="Ann")], context), repeats)

    shapes = []
    for name, make in SHAPES.items():
        short, long = read(make, 25_000), read(make, 100_000)
        shapes.append({"shape": name, "extract_25k_s": round(short, 4), "extract_100k_s": round(long, 4),
                       "ratio": round(long / short, 2)})
    result = {"lengths": rows, "shapes": shapes}
    write_result("long_message", result, out_dir)
    return result


def print_result(result: dict[str, Any]) -> None:
    """The two tables, as the issue compares them."""
    rows = result["lengths"]
    first = rows[0]
    print(f"{'chars':>8} {'extract s':>10} {'µs/char':>8} {'x first':>8} {'(length x)':>10} {'embed s':>8} "
          f"{'extract/embed':>13} {'conv_end s':>10} {'before s':>9}")
    for r in rows:
        print(f"{r['chars']:>8,} {r['extract_s']:>10.3f} {r['extract_s'] / r['chars'] * 1e6:>8.2f} "
              f"{r['extract_s'] / first['extract_s']:>8.1f} {r['chars'] / first['chars']:>10.1f} "
              f"{r['embed_s']:>8.3f} {r['extract_s'] / r['embed_s']:>13.2f} {r['conversation_end_s']:>10.2f} "
              f"{r['before_s'] if r['before_s'] is not None else '':>9}")
    print(f"\n{'shape':<32} {'25k s':>8} {'100k s':>8} {'ratio (4 = linear)':>19}")
    for s in result["shapes"]:
        print(f"{s['shape']:<32} {s['extract_25k_s']:>8.3f} {s['extract_100k_s']:>8.3f} {s['ratio']:>19.2f}")


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Command line: ``python -m bench.long_message [--quick] [--out DIR]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="up to 50k characters, one repeat")
    parser.add_argument("--out", type=Path, help="results folder (default: bench/results)")
    args = parser.parse_args(argv)
    lengths = LENGTHS[:3] if args.quick else LENGTHS
    result = run(lengths, repeats=1 if args.quick else 3, out_dir=args.out)
    print_result(result)
    return result


if __name__ == "__main__":
    main()

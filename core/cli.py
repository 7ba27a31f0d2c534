"""The ``zep-memory`` command: a thin shell over :class:`zep_core.Memory`.

Every command takes ``--data DIR`` (the data folder, default ``./data``), ``--user ID``
and, where it prints results, ``--json``. Library errors become one line,
``error: ...``, and exit code 2; ``maintain`` exits 1 while episodes stay pending and
``doctor`` exits 1 when the stores disagree, so both fit cron jobs and CI.

Run ``zep-memory --help`` or ``zep-memory COMMAND --help`` for the details; docs/cli.md
has a walk-through.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

from . import __version__
from .errors import ConfigError, ValidationError, ZepMemoryError

__all__ = ["build_parser", "main"]

PROG = "zep-memory"


# -- entry point -------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code (0 ok, 1 work left or problems found, 2 error).

    Example:
        >>> main(["stats", "--data", "./data", "--json"])                 # doctest: +SKIP
        0

    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except ZepMemoryError as exc:
        return _fail(exc)
    except OSError as exc:  # files named on the command line: unreadable, unwritable…
        return _fail(exc)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _fail(exc: BaseException) -> int:
    message = " ".join(str(exc).split()) or type(exc).__name__
    print(f"error: {message}", file=sys.stderr)
    return 2


# -- the parser ---------------------------------------------------------------------------------


def _common(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """Options every command takes, before or after its name (``SUPPRESS`` keeps the top-level value)."""
    default = None if top else argparse.SUPPRESS
    group = parser.add_argument_group("common options")
    group.add_argument("--data", metavar="DIR", default=default,
                       help="data folder holding zep.db, chroma/ and graph/ (default: ./data)")
    group.add_argument("--user", metavar="ID", default=default,
                       help="the user (tenant) to read or write (default: 'default')")
    group.add_argument("--json", action="store_true", default=False if top else argparse.SUPPRESS,
                       help="print machine-readable JSON instead of text")
    group.add_argument("--chroma-url", metavar="URL", default=default,
                       help="use a Chroma server (`chroma run`) at URL instead of the embedded index")
    group.add_argument("--config", metavar="MODULE:NAME", default=default,
                       help="a MemoryConfig, or a function returning one, to use your own embedder or "
                            "extractor (e.g. myapp.memory:config, or zep_core:MemoryConfig.from_env when "
                            "available); --data and --chroma-url override it")


def _command(sub: Any, name: str, handler: Callable[[argparse.Namespace], int | None], summary: str,
             description: str, examples: str = "") -> argparse.ArgumentParser:
    parser = sub.add_parser(name, help=summary, description=description,
                            epilog=f"examples:\n{examples}" if examples else None,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.set_defaults(handler=handler)
    _common(parser, top=False)
    return parser


def build_parser() -> argparse.ArgumentParser:
    """The ``zep-memory`` argument parser (every command and option)."""
    parser = argparse.ArgumentParser(
        prog=PROG, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="zep-memory: a temporal knowledge-graph memory for LLM agents.\n\n"
                    "Facts learned from conversations are kept with time in SQLite (records), Chroma "
                    "(vectors)\nand Kùzu (graph). These commands ingest, query, inspect and maintain a "
                    "data folder.",
        epilog="examples:\n"
               "  zep-memory demo                              the README's two-session demo, offline\n"
               "  zep-memory ingest chats.jsonl --user alice   learn from conversation files\n"
               "  zep-memory context 'Where does Alice live?' --user alice\n"
               "  zep-memory maintain || echo 'episodes still pending'\n\n"
               "exit codes: 0 done, 1 work left or problems found (maintain, doctor), 2 error.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    _common(parser, top=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    _command(sub, "demo", cmd_demo, "run the README's demo: a fact changes across two sessions",
             "Ingest two sessions in which Alice moves from Paris to Berlin, then print what memory\n"
             "knows: the current context, her history with the superseded fact, related entities.\n"
             "Without --data it runs in a temporary folder; with --data the result stays there\n"
             "(user 'alice') for you to explore with the other commands.",
             "  zep-memory demo\n"
             "  zep-memory demo --data ./demo && zep-memory history Alice --data ./demo --user alice")

    p = _command(sub, "ingest", cmd_ingest, "learn from conversation files (JSON, JSONL, LoCoMo)",
                 "Store every conversation in FILE as an episode and extract its facts.\n\n"
                 "Formats (JSON, or JSONL with one object per line):\n"
                 "  conversations  {\"session_id\": \"s1\", \"messages\": [{\"role\": \"user\", \"content\": \"...\",\n"
                 "                 \"name\": \"Alice\", \"id\": \"m1\", \"timestamp\": \"2024-05-08T13:56:00Z\"}],\n"
                 "                 \"user_id\"?: \"alice\", \"timestamp\"?: ...}  — alone, in a list, or under\n"
                 "                 \"conversations\"\n"
                 "  messages       one message object per line (or a JSON list); lines with \"session_id\"\n"
                 "                 (and \"user_id\") are grouped into one episode per session\n"
                 "  LoCoMo         samples with \"sample_id\" and \"conversation\" (speaker_a, speaker_b,\n"
                 "                 session_N turns, session_N_date_time): one episode per session, dated,\n"
                 "                 each turn's dia_id kept as its message id; the user is the sample_id\n\n"
                 "--user puts everything under one user. Episode ids come from the user, the session\n"
                 "and the messages, so running the same file again stores nothing new. Progress goes\n"
                 "to stderr.",
                 "  zep-memory ingest locomo_dev.json --data ./locomo\n"
                 "  cat chats.jsonl | zep-memory ingest - --user alice --json")
    p.add_argument("file", metavar="FILE", help="the JSON/JSONL file, or - for standard input")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")

    p = _command(sub, "context", cmd_context, "the facts relevant to a query now (GetContext)",
                 "The spec's GetContext: current facts that match QUERY semantically or sit within two\n"
                 "hops of an entity it names, ranked by 0.7·semantic + 0.3·graph.",
                 "  zep-memory context 'Where does Alice live?' --user alice\n"
                 "  zep-memory context 'Where did Alice live?' --user alice --as-of 2023-12-31 --block")
    p.add_argument("query", metavar="QUERY")
    p.add_argument("--limit", type=int, default=None, help="how many facts (default: the config's 10)")
    p.add_argument("--as-of", metavar="DATE", default=None, help="what was true at DATE (ISO 8601) instead of now")
    p.add_argument("--block", action="store_true", help="print the prompt-ready context block")

    p = _command(sub, "history", cmd_history, "every fact about an entity, oldest first (EntityHistory)",
                 "The spec's EntityHistory: every fact whose subject or object is ENTITY (or one of its\n"
                 "aliases), superseded ones too, by valid_from.",
                 "  zep-memory history Alice --user alice")
    p.add_argument("entity", metavar="ENTITY")

    p = _command(sub, "related", cmd_related, "entities 1..2 hops from an entity (RelatedEntities)",
                 "The spec's RelatedEntities: distinct entities within two hops in the graph.",
                 "  zep-memory related Alice --user alice --json")
    p.add_argument("entity", metavar="ENTITY")
    p.add_argument("--limit", type=int, default=10, help="at most this many (default 10)")

    p = _command(sub, "cypher", cmd_cypher, "run a read-only Cypher query over a user's graph",
                 "Run QUERY against the Kùzu graph: (:Entity {id, user_id, name, entity_type}) nodes and\n"
                 "[:FACT {fact_id, predicate, valid_from, valid_until, current}] relationships. Every\n"
                 "Entity pattern is scoped to --user; write clauses are refused.",
                 "  zep-memory cypher 'MATCH (a:Entity {name: $n})-[r:FACT]->(b) RETURN b.name, r.predicate' \\\n"
                 "      --param n=Alice --user alice")
    p.add_argument("query", metavar="QUERY")
    p.add_argument("--param", metavar="KEY=VALUE", action="append", default=[],
                   help="a query parameter; VALUE is read as JSON when it parses (42, true, \"x\"), "
                        "else as text; repeatable")

    _command(sub, "stats", cmd_stats, "counts per store, pending work, disk use, embedder",
             "Counts of records in SQLite, vectors in Chroma and nodes/edges in Kùzu, pending episodes\n"
             "and index writes, disk use of the data folder, and the embedder it was built with.\n"
             "With --user, that user's counts too.",
             "  zep-memory stats --json")

    _command(sub, "maintain", cmd_maintain, "retry pending extractions, refresh stale entity summaries",
             "Replay index writes a crash left behind, retry episodes whose extraction failed, and\n"
             "refresh the summaries of entities that changed (the spec's `every 6h`). Meant for cron:\n"
             "exit 0 when all is done, 1 when episodes are still pending, 2 on error.",
             "  */30 * * * * zep-memory maintain --data /srv/memory || true")

    p = _command(sub, "rebuild", cmd_rebuild, "recreate the Chroma and Kùzu indexes from SQLite",
                 "Drop and recreate the vector and graph indexes from the SQLite records, using the\n"
                 "stored vectors. --reembed embeds the stored texts again with the current embedder\n"
                 "(after changing the model).",
                 "  zep-memory rebuild\n  zep-memory rebuild --reembed --config myapp.memory:config")
    p.add_argument("--reembed", action="store_true", help="embed the stored texts again")

    p = _command(sub, "export", cmd_export, "write a user's memory as JSONL",
                 "Write the user's episodes (with messages), entities (summaries, aliases), facts (every\n"
                 "field) and chat turns as JSONL, in a fixed order. `import` restores them exactly.",
                 "  zep-memory export --user alice --out alice.jsonl --embeddings")
    p.add_argument("--out", metavar="FILE", default="-", help="output file (default: standard output)")
    p.add_argument("--embeddings", action="store_true",
                   help="include the stored vectors (base64 float32) so an import needs no embedding")

    p = _command(sub, "import", cmd_import, "restore a user's memory from an export",
                 "Write an export back as it was, without extracting again. Vectors in the file are\n"
                 "reused when they come from the same embedder; otherwise the texts are embedded again.\n"
                 "A user that already has memory is refused unless --replace.",
                 "  zep-memory import alice.jsonl\n  zep-memory import alice.jsonl --replace --data ./other")
    p.add_argument("file", metavar="FILE", help="the export, or - for standard input")
    p.add_argument("--replace", action="store_true", help="replace the user's existing memory")

    p = _command(sub, "forget", cmd_forget, "delete everything stored for a user",
                 "Remove every episode, fact, entity, vector and graph node of USER, in all three stores.",
                 "  zep-memory forget alice")
    p.add_argument("forget_user", metavar="USER")

    _command(sub, "doctor", cmd_doctor, "check that SQLite, Chroma and Kùzu agree",
             "Compare the derived indexes with the SQLite records (for --user, or every user) and say\n"
             "how to repair what disagrees. Exit 0 when they agree, 1 when they do not.",
             "  zep-memory doctor || zep-memory rebuild")

    p = _command(sub, "graph", cmd_graph, "draw a user's entity graph as interactive HTML",
                 "Write a self-contained HTML page (no network needed to open it) showing the user's\n"
                 "entities and the facts between them: current facts solid, superseded ones dashed;\n"
                 "hover for dates, drag nodes, scroll to zoom.",
                 "  zep-memory graph --user alice --html alice.html")
    p.add_argument("--html", metavar="OUT", required=True, help="the HTML file to write")

    p = _command(sub, "timeline", cmd_timeline, "draw an entity's facts over time as a PNG",
                 "Draw every fact about ENTITY as a bar from valid_from to valid_until (or now), the\n"
                 "superseded ones hatched and marked. Needs matplotlib: pip install 'zep-memory[viz]'.",
                 "  zep-memory timeline Alice --user alice --png alice.png")
    p.add_argument("entity", metavar="ENTITY")
    p.add_argument("--png", metavar="OUT", required=True, help="the PNG file to write")
    p.add_argument("--statements", action="store_true", help="draw free-text 'statement' facts too")
    return parser


# -- shared plumbing -------------------------------------------------------------------------------


def _config(args: argparse.Namespace) -> Any:
    from .config import MemoryConfig

    config = _load_config(args.config) if args.config else MemoryConfig()
    changes: dict[str, Any] = {}
    if args.data is not None:
        changes["data_dir"] = args.data
    elif not args.config:
        changes["data_dir"] = "./data"
    if args.chroma_url is not None:
        changes["chroma_url"] = args.chroma_url
    return config.with_(**changes) if changes else config


def _load_config(ref: str) -> Any:
    """Import ``MODULE:NAME``: a MemoryConfig, or a function returning one."""
    from .config import MemoryConfig

    module_name, _, attr = ref.partition(":")
    if not module_name or not attr:
        raise ConfigError(f"--config {ref!r} must look like MODULE:NAME, e.g. myapp.memory:config")
    try:
        obj = importlib.import_module(module_name)
        for part in attr.split("."):  # dotted names reach class methods: zep_core:MemoryConfig.from_env
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"--config {ref!r} cannot be loaded: {exc}") from exc
    config = obj() if callable(obj) and not isinstance(obj, MemoryConfig) else obj
    if not isinstance(config, MemoryConfig):
        raise ConfigError(f"--config {ref!r} gave a {type(config).__name__}, not a MemoryConfig")
    return config


@contextlib.contextmanager
def _memory(args: argparse.Namespace, **changes: Any) -> Iterator[Any]:
    from .memory import Memory

    config = _config(args)
    if changes:
        config = config.with_(**changes)
    with Memory(config) as memory:
        yield memory


def _user(args: argparse.Namespace) -> str:
    return args.user or "default"


def _emit(args: argparse.Namespace, payload: Any, text: Callable[[], str] | str) -> None:
    """Print JSON with --json, else the human-readable text."""
    if args.json:
        print(json.dumps(payload, indent=2, ensure_ascii=False, default=str))
    else:
        out = text() if callable(text) else text
        if out:
            print(out)


def _day(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d") if value else "now"


# -- commands ---------------------------------------------------------------------------------------


def cmd_demo(args: argparse.Namespace) -> int:
    """Run the README's demo."""
    from .demo import run

    if args.data:
        run(args.data)
        return 0
    with tempfile.TemporaryDirectory(prefix="zep-demo-") as tmp:
        run(tmp)
    return 0


def cmd_ingest(args: argparse.Namespace) -> int:
    """Ingest a conversation file."""
    from .ingest_files import ingest, iter_episodes, parse_text, read_file

    data = parse_text(sys.stdin.read(), "standard input") if args.file == "-" else read_file(args.file)
    episodes = list(iter_episodes(data, user_id=args.user))
    if not episodes:
        raise ValidationError(f"{args.file} holds no conversations")
    progress = None if args.quiet or len(episodes) < 2 else _Progress(len(episodes), sys.stderr)
    with _memory(args) as memory:
        totals = ingest(memory, episodes, progress=progress)
    users = sorted({e.user_id for e in episodes})
    payload = {**asdict(totals), "users": users}
    _emit(args, payload, lambda: (
        f"ingested {totals.episodes} episodes ({totals.messages} messages) for {', '.join(users)}: "
        f"{totals.done} new, {totals.duplicate} already stored, {totals.pending} pending\n"
        f"facts: {totals.facts_added} added, {totals.facts_reinforced} reinforced, "
        f"{totals.facts_superseded} superseded, {totals.facts_discarded} discarded"
        + ("\nsome extractions failed: run `zep-memory maintain` to retry them" if totals.pending else "")))
    return 0


class _Progress:
    """``ingested 12/95 episodes`` on stderr: redrawn in place on a terminal, else about every 5%."""

    def __init__(self, total: int, stream: TextIO) -> None:
        self.total, self.stream = total, stream
        self.tty = stream.isatty()
        self.every = max(1, total // 20)

    def __call__(self, i: int, episode: Any, result: Any) -> None:
        line = f"ingested {i}/{self.total} episodes ({episode.user_id} {episode.session_id}: {result.status})"
        if self.tty:
            self.stream.write("\r\x1b[K" + line + ("\n" if i == self.total else ""))
        elif i % self.every == 0 or i == self.total:
            self.stream.write(line + "\n")
        self.stream.flush()


def cmd_context(args: argparse.Namespace) -> int:
    """Print GetContext's facts or the context block."""
    from .serialize import fact_to_dict

    with _memory(args) as memory:
        if args.block:
            block = memory.context_block(args.query, user_id=_user(args), limit=args.limit, as_of=args.as_of)
            _emit(args, {"block": block}, block)
            return 0
        facts = memory.get_context(args.query, user_id=_user(args), limit=args.limit, as_of=args.as_of)
    _emit(args, [fact_to_dict(f, scores=True) for f in facts], lambda: "\n".join(
        f"{f.score:.3f}  {f.content}  ({_day(f.valid_from)} .. {_day(f.valid_until)})" for f in facts)
        or "no relevant facts")
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    """Print an entity's facts, oldest first."""
    from .serialize import fact_to_dict

    with _memory(args) as memory:
        facts = memory.entity_history(args.entity, user_id=_user(args))
    _emit(args, [fact_to_dict(f) for f in facts], lambda: "\n".join(
        f"{_day(f.valid_from)} .. {_day(f.valid_until):10}  {f.content}"
        + ("  (superseded)" if f.superseded_by else "") for f in facts) or f"no facts about {args.entity}")
    return 0


def cmd_related(args: argparse.Namespace) -> int:
    """Print related entities."""
    from .serialize import entity_to_dict

    with _memory(args) as memory:
        entities = memory.related_entities(args.entity, user_id=_user(args), limit=args.limit)
    _emit(args, [entity_to_dict(e) for e in entities], lambda: "\n".join(
        f"{e.name} ({e.entity_type})" + (f": {e.summary}" if e.summary else "") for e in entities)
        or f"nothing related to {args.entity}")
    return 0


def cmd_cypher(args: argparse.Namespace) -> int:
    """Run a read-only Cypher query."""
    params = dict(_param(p) for p in args.param)
    with _memory(args) as memory:
        rows = memory.cypher(args.query, params, user_id=_user(args))
    _emit(args, rows, lambda: _table(rows))
    return 0


def _param(text: str) -> tuple[str, Any]:
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise ValidationError(f"--param {text!r} must look like KEY=VALUE")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key.strip(), value


def _table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "(no rows)"
    columns = list(rows[0])

    def cell(v: Any) -> str:
        return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)

    lines = ["\t".join(columns)]
    lines += ["\t".join(cell(r.get(c)) for c in columns) for r in rows]
    return "\n".join(lines)


def cmd_stats(args: argparse.Namespace) -> int:
    """Print counts, pending work, disk use and the embedder."""
    with _memory(args) as memory:
        stats = memory.stats(args.user)
        stats["chroma"] = {"url": stats.pop("chroma_url"), **stats.pop("vectors")}
        stats["disk_bytes"] = _disk_use(memory.data_dir)
    _emit(args, stats, lambda: _stats_text(stats))
    return 0


def _disk_use(root: Path) -> dict[str, int]:
    def size(path: Path) -> int:
        if path.is_file():
            return path.stat().st_size
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0

    sqlite = sum(size(root / f"zep.db{suffix}") for suffix in ("", "-wal", "-shm"))
    out = {"sqlite": sqlite, "chroma": size(root / "chroma"), "graph": size(root / "graph")}
    out["total"] = size(root)
    return out


def _human(n: int) -> str:
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def _stats_text(s: dict[str, Any]) -> str:
    r, d, c = s["records"], s["disk_bytes"], s["chroma"]
    lines = [
        f"data folder   {s['data_dir']} ({_human(d['total'])}: SQLite {_human(d['sqlite'])}, "
        f"Chroma {_human(d['chroma'])}, Kùzu {_human(d['graph'])})",
        f"embedder      {s['embedder']['name']} ({s['embedder']['dimension']}-d)",
        f"users         {s['users']}",
        f"SQLite        {r['episodes']} episodes, {r['messages']} messages, {r['facts']} facts "
        f"({s['facts']['current']} current, {s['facts']['superseded']} superseded), {r['entities']} entities, "
        f"{r['session_messages']} chat turns",
        f"Chroma        {c['current']} current + {c['history']} superseded fact vectors, {c['entity']} entity "
        f"vectors" + (f" (server {c['url']})" if c["url"] else ""),
        f"Kùzu          {s['graph']['entities']} entity nodes, {s['graph']['facts']} FACT edges",
        f"pending       {s['pending_episodes']} episodes to extract, {s['pending_index_writes']} index writes",
    ]
    if "user" in s:
        u = s["user"]
        lines.append(f"user {u['user_id']:8} {u['episodes']} episodes, {u['facts']['current']} current + "
                     f"{u['facts']['superseded']} superseded facts, {u['entities']} entities")
    return "\n".join(lines)


def cmd_maintain(args: argparse.Namespace) -> int:
    """Retry pending episodes and refresh entities; exit 1 while some stay pending."""
    with _memory(args) as memory:
        report = memory.maintain()
    payload = asdict(report)
    payload["still_pending"] = list(report.still_pending)
    _emit(args, payload, lambda: (
        f"retried {report.retried} pending episodes: {report.completed} done, "
        f"{len(report.still_pending)} still pending\n"
        f"refreshed {report.entities_refreshed} entity summaries; replayed {report.index_writes_replayed} "
        "index writes"))
    return 1 if report.still_pending else 0


def cmd_rebuild(args: argparse.Namespace) -> int:
    """Recreate the indexes from SQLite."""
    try:
        with _memory(args) as memory:
            counts = memory.rebuild(reembed=args.reembed)
    except ConfigError:
        if not args.reembed:
            raise
        with _memory(args, on_embedder_mismatch="reembed") as memory:  # opening re-embeds and rebuilds
            records = memory.stats()["records"]
            counts = {"facts": records["facts"], "entities": records["entities"]}
    _emit(args, {**counts, "reembedded": args.reembed}, lambda: (
        f"rebuilt the Chroma and Kùzu indexes from SQLite: {counts['facts']} facts, {counts['entities']} entities"
        + (" (re-embedded)" if args.reembed else "")))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """Export a user's memory as JSONL."""
    from .transfer import export_user

    with _memory(args) as memory:
        if args.out == "-":
            counts = export_user(memory, _user(args), sys.stdout, embeddings=args.embeddings)
        else:
            counts = _export_to_file(memory, _user(args), Path(args.out), args.embeddings)
    summary = (f"exported {counts.episodes} episodes, {counts.entities} entities, {counts.facts} facts and "
               f"{counts.chat_messages} chat turns of {_user(args)}")
    if args.out == "-":
        print(summary, file=sys.stderr)
    else:
        _emit(args, {**asdict(counts), "user_id": _user(args), "file": args.out}, f"{summary} to {args.out}")
    return 0


def _export_to_file(memory: Any, user: str, path: Path, embeddings: bool) -> Any:
    """Write through a temporary file, so a failed export never leaves half a file behind."""
    from .transfer import export_user

    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "w", encoding="utf-8", newline="\n") as out:
            counts = export_user(memory, user, out, embeddings=embeddings)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return counts


def cmd_import(args: argparse.Namespace) -> int:
    """Import a user's memory from an export."""
    from .transfer import import_user

    with _memory(args) as memory:
        if args.file == "-":
            report = import_user(memory, sys.stdin, replace=args.replace, user_id=args.user)
        else:
            with open(args.file, encoding="utf-8") as lines:
                report = import_user(memory, lines, replace=args.replace, user_id=args.user)
    _emit(args, asdict(report), lambda: (
        f"imported {report.episodes} episodes, {report.entities} entities, {report.facts} facts and "
        f"{report.chat_messages} chat turns of {report.user_id}"
        + (" (replacing the previous memory)" if report.replaced else "")
        + ("; texts embedded again" if report.reembedded else "; stored vectors reused")))
    return 0


def cmd_forget(args: argparse.Namespace) -> int:
    """Forget a user everywhere."""
    with _memory(args) as memory:
        memory.forget_user(args.forget_user)
    _emit(args, {"forgotten": args.forget_user},
          f"forgot {args.forget_user}: every episode, fact, entity, vector and graph node is gone")
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    """Check that the three stores agree."""
    with _memory(args) as memory:
        problems = memory.check_consistency(args.user)
        pending = len(memory.episode_ids(user_id=args.user, status="pending"))
        data_dir = memory.data_dir
    repair = f"zep-memory rebuild --data {data_dir}"
    payload = {"ok": not problems, "problems": problems, "pending_episodes": pending,
               "repair": repair if problems else None}

    def text() -> str:
        if not problems:
            lines = ["ok: SQLite, Chroma and Kùzu agree"]
        else:
            lines = ["the stores disagree:"]
            for kind, ids in sorted(problems.items()):
                more = f" … and {len(ids) - 3} more" if len(ids) > 3 else ""
                lines.append(f"  {kind.replace('_', ' ')}: {len(ids)} ({', '.join(ids[:3])}{more})")
            lines.append(f"repair: {repair}   (recreates Chroma and Kùzu from SQLite, the system of record)")
        if pending:
            lines.append(f"note: {pending} episodes are pending extraction; `zep-memory maintain` retries them")
        return "\n".join(lines)

    _emit(args, payload, text)
    return 1 if problems else 0


def cmd_graph(args: argparse.Namespace) -> int:
    """Write the entity graph as HTML."""
    from .viz import graph_data, render_graph_html

    with _memory(args) as memory:
        data = graph_data(memory, _user(args))
    Path(args.html).write_text(render_graph_html(data, title=f"zep-memory: {_user(args)}"), encoding="utf-8")
    counts = {"file": args.html, "entities": len(data["nodes"]), "facts": len(data["edges"])}
    _emit(args, counts, f"wrote {args.html}: {counts['entities']} entities, {counts['facts']} facts between them")
    return 0


def cmd_timeline(args: argparse.Namespace) -> int:
    """Write an entity's timeline as PNG."""
    from .viz import timeline_png

    with _memory(args) as memory:
        facts = memory.entity_history(args.entity, user_id=_user(args))
    drawn = timeline_png(facts, args.png, entity=args.entity, now=datetime.now(timezone.utc),
                         include_statements=args.statements)
    _emit(args, {"file": args.png, "facts": drawn}, f"wrote {args.png}: {drawn} facts about {args.entity}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

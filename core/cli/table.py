"""The command table: every ``zep-memory`` command declared once, as data, and the loop that builds the parser.

A :class:`Command` holds what a user sees of a command (its name, summary,
description, examples and arguments) and the handler that runs it;
:func:`build_parser` turns :data:`COMMANDS` into the argparse parser. Every command
also takes the :data:`COMMON` options, before or after its name.

Example:
    >>> build_parser().parse_args(["history", "Alice", "--user", "alice"]).entity
    'Alice'

"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .. import ScoringSettings, __version__
from ..server.limits import DEFAULT_LIMITS
from .commands import (
    cmd_context,
    cmd_cypher,
    cmd_demo,
    cmd_doctor,
    cmd_export,
    cmd_forget,
    cmd_graph,
    cmd_history,
    cmd_import,
    cmd_ingest,
    cmd_maintain,
    cmd_mcp,
    cmd_rebuild,
    cmd_related,
    cmd_serve,
    cmd_stats,
    cmd_timeline,
)

__all__ = ["COMMANDS", "COMMON", "PROG", "Arg", "Command", "arg", "build_parser"]

PROG = "zep-memory"


def _context_ranking() -> str:
    """How GetContext ranks, with the default configuration's numbers (so the help cannot drift from them)."""
    s = ScoringSettings()
    return ("The spec's GetContext: the facts true now that match QUERY by meaning (cosine of their\n"
            "vectors), by their words (BM25) or through the graph (within "
            f"{s.graph_hops} hops of an entity it names),\n"
            f"ranked by reciprocal rank fusion: the sum of weight / ({s.rrf_k} + rank) over the rankings, with\n"
            f"weights {s.semantic_weight:g} meaning, {s.lexical_weight:g} words and {s.graph_weight:g} graph "
            f"({s.asker_weight:g} for the asker's own facts\n"
            "in a first-person question); the graph only lifts facts that also match by meaning or\n"
            "words. Every number is a MemoryConfig.scoring field (--config sets your own).")


_CONTEXT_RANKING = _context_ranking()


@dataclass(frozen=True)
class Arg:
    """One argument: the names and keywords passed to ``ArgumentParser.add_argument``."""

    names: tuple[str, ...]
    options: dict[str, Any] = field(default_factory=dict)


def arg(*names: str, **options: Any) -> Arg:
    """An :class:`Arg`, written like the ``add_argument`` call it stands for."""
    return Arg(names, options)


@dataclass(frozen=True)
class Command:
    """One command: its handler and everything ``zep-memory COMMAND --help`` shows."""

    name: str
    handler: Callable[[argparse.Namespace], int | None]
    summary: str  # the line in ``zep-memory --help``
    description: str
    examples: str = ""
    args: tuple[Arg, ...] = ()


DESCRIPTION = (
    "zep-memory: a temporal knowledge-graph memory for LLM agents.\n\n"
    "Facts learned from conversations are kept with time in a data folder (SQLite records,\n"
    "Chroma vectors, a Kùzu graph) or in PostgreSQL (--database-url). These commands ingest,\n"
    "query, inspect and maintain a memory.")

EPILOG = (
    "examples:\n"
    "  zep-memory demo                              the README's two-session demo, offline\n"
    "  zep-memory ingest chats.jsonl --user alice   learn from conversation files\n"
    "  zep-memory context 'Where does Alice live?' --user alice\n"
    "  zep-memory maintain || echo 'episodes still pending'\n\n"
    "exit codes: 0 done, 1 work left or problems found (maintain, doctor), 2 error.")

#: Options every command takes, before or after its name; the defaults shown are the top level's.
COMMON: tuple[Arg, ...] = (
    arg("--data", metavar="DIR", default=None,
        help="data folder holding zep.db, chroma/ and graph/ (default: ./data)"),
    arg("--user", metavar="ID", default=None,
        help="the user (tenant) to read or write (default: 'default')"),
    arg("--json", action="store_true", default=False,
        help="print machine-readable JSON instead of text"),
    arg("--chroma-url", metavar="URL", default=None,
        help="use a Chroma server (`chroma run`) at URL instead of the embedded index"),
    arg("--database-url", metavar="URL", default=None,
        help="keep the memory in PostgreSQL (postgresql://user@host:port/db; the password from PGPASSWORD or "
             "~/.pgpass) instead of the data folder; default: $ZEP_DATABASE_URL if set"),
    arg("--config", metavar="MODULE:NAME", default=None,
        help="a MemoryConfig, or a function returning one, to use your own embedder or extractor "
             "(e.g. myapp.memory:config, or zep_core:MemoryConfig.from_env when available); "
             "--data and --chroma-url override it"),
)

COMMANDS: tuple[Command, ...] = (
    Command(
        "demo", cmd_demo, "run the README's demo: a fact changes across two sessions",
        "Ingest two sessions in which Alice moves from Paris to Berlin, then print what memory\n"
        "knows: the current context, her history with the superseded fact, related entities.\n"
        "Without --data it runs in a temporary folder; with --data the result stays there\n"
        "(user 'alice') for you to explore with the other commands.",
        "  zep-memory demo\n"
        "  zep-memory demo --data ./demo && zep-memory history Alice --data ./demo --user alice"),
    Command(
        "ingest", cmd_ingest, "learn from conversation files (JSON, JSONL, LoCoMo)",
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
        "  cat chats.jsonl | zep-memory ingest - --user alice --json",
        args=(arg("file", metavar="FILE", help="the JSON/JSONL file, or - for standard input"),
              arg("--quiet", action="store_true", help="no progress on stderr"))),
    Command(
        "context", cmd_context, "the facts relevant to a query now (GetContext)",
        _CONTEXT_RANKING,
        "  zep-memory context 'Where does Alice live?' --user alice\n"
        "  zep-memory context 'Where do I live?' --user alice --speaker Alice\n"
        "  zep-memory context 'Where did Alice live?' --user alice --as-of 2023-12-31 --block",
        args=(arg("query", metavar="QUERY"),
              arg("--speaker", metavar="NAME", default=None,
                  help="who asks: 'I' and 'my' in QUERY mean NAME (default: the config's default_speaker)"),
              arg("--limit", type=int, default=None, help="how many facts (default: the config's 10)"),
              arg("--as-of", metavar="DATE", default=None, help="what was true at DATE (ISO 8601) instead of now"),
              arg("--block", action="store_true", help="print the prompt-ready context block"))),
    Command(
        "history", cmd_history, "every fact about an entity, oldest first (EntityHistory)",
        "The spec's EntityHistory: every fact whose subject or object is ENTITY (or one of its\n"
        "aliases), superseded ones too, by valid_from.",
        "  zep-memory history Alice --user alice",
        args=(arg("entity", metavar="ENTITY"),)),
    Command(
        "related", cmd_related, "entities 1..2 hops from an entity (RelatedEntities)",
        "The spec's RelatedEntities: distinct entities within two hops in the graph.",
        "  zep-memory related Alice --user alice --json",
        args=(arg("entity", metavar="ENTITY"),
              arg("--limit", type=int, default=10, help="at most this many (default 10)"))),
    Command(
        "cypher", cmd_cypher, "run a read-only Cypher query over a user's graph",
        "Run QUERY against the Kùzu graph: (:Entity {id, user_id, name, entity_type}) nodes and\n"
        "[:FACT {fact_id, predicate, valid_from, valid_until, current}] relationships. Every\n"
        "Entity pattern is scoped to --user; write clauses are refused.",
        "  zep-memory cypher 'MATCH (a:Entity {name: $n})-[r:FACT]->(b) RETURN b.name, r.predicate' \\\n"
        "      --param n=Alice --user alice",
        args=(arg("query", metavar="QUERY"),
              arg("--param", metavar="KEY=VALUE", action="append", default=[],
                  help="a query parameter; VALUE is read as JSON when it parses (42, true, \"x\"), "
                       "else as text; repeatable"))),
    Command(
        "stats", cmd_stats, "counts per store, pending work, disk use, embedder",
        "Counts of records, vectors and graph nodes/edges, pending episodes and index writes,\n"
        "the disk the memory takes (the data folder's files, or the database's tables), and the\n"
        "embedder it was built with; each named as the memory's backend has it.\n"
        "With --user, that user's counts too.",
        "  zep-memory stats --json"),
    Command(
        "maintain", cmd_maintain, "retry pending extractions, refresh stale entity summaries",
        "Replay index writes a crash left behind, retry episodes whose extraction failed, and\n"
        "refresh the summaries of entities that changed (the spec's `every 6h`). Meant for cron:\n"
        "exit 0 when all is done, 1 when episodes are still pending, 2 on error.",
        "  */30 * * * * zep-memory maintain --data /srv/memory || true"),
    Command(
        "rebuild", cmd_rebuild, "recreate the indexes from the records",
        "Drop and recreate the lexical, vector and graph indexes from the records, using the\n"
        "stored vectors. --reembed embeds the stored texts again with the current embedder\n"
        "(after changing the model).",
        "  zep-memory rebuild\n"
        "  zep-memory rebuild --reembed --config myapp.memory:config",
        args=(arg("--reembed", action="store_true", help="embed the stored texts again"),)),
    Command(
        "export", cmd_export, "write a user's memory as JSONL",
        "Write the user's episodes (with messages), entities (summaries, aliases), facts (every\n"
        "field) and chat turns as JSONL, in a fixed order. `import` restores them exactly.",
        "  zep-memory export --user alice --out alice.jsonl --embeddings",
        args=(arg("--out", metavar="FILE", default="-", help="output file (default: standard output)"),
              arg("--embeddings", action="store_true",
                  help="include the stored vectors (base64 float32) so an import needs no embedding"))),
    Command(
        "import", cmd_import, "restore a user's memory from an export",
        "Write an export back as it was, without extracting again. Vectors in the file are\n"
        "reused when they come from the same embedder; otherwise the texts are embedded again.\n"
        "A user that already has memory is refused unless --replace.",
        "  zep-memory import alice.jsonl\n"
        "  zep-memory import alice.jsonl --replace --data ./other",
        args=(arg("file", metavar="FILE", help="the export, or - for standard input"),
              arg("--replace", action="store_true", help="replace the user's existing memory"))),
    Command(
        "forget", cmd_forget, "delete everything stored for a user",
        "Remove every episode, fact, entity, vector and graph node of USER, in all three stores.\n"
        "It asks first on a terminal; elsewhere (a script, a pipe) it needs --yes.",
        "  zep-memory forget alice\n"
        "  zep-memory forget alice --yes",
        args=(arg("forget_user", metavar="USER"),
              arg("--yes", action="store_true", help="delete without asking"))),
    Command(
        "doctor", cmd_doctor, "check that the indexes agree with the records",
        "Compare the indexes with the records (for --user, or every user) and say\n"
        "how to repair what disagrees. Exit 0 when they agree, 1 when they do not.",
        "  zep-memory doctor || zep-memory rebuild"),
    Command(
        "graph", cmd_graph, "draw a user's entity graph as interactive HTML",
        "Write a self-contained HTML page (no network needed to open it) showing the user's\n"
        "entities and the facts between them: current facts solid, superseded ones dashed;\n"
        "hover for dates, drag nodes, scroll to zoom.",
        "  zep-memory graph --user alice --html alice.html",
        args=(arg("--html", metavar="OUT", required=True, help="the HTML file to write"),)),
    Command(
        "timeline", cmd_timeline, "draw an entity's facts over time as a PNG",
        "Draw every fact about ENTITY as a bar from valid_from to valid_until (or now), the\n"
        "superseded ones hatched and marked. Needs matplotlib: pip install -e '.[viz]' in a clone\n"
        "(a wheel or a git URL: docs/install.md).",
        "  zep-memory timeline Alice --user alice --png alice.png",
        args=(arg("entity", metavar="ENTITY"),
              arg("--png", metavar="OUT", required=True, help="the PNG file to write"),
              arg("--statements", action="store_true", help="draw free-text 'statement' facts too"))),
    Command(
        "serve", cmd_serve, "serve the memory over HTTP to many processes (RemoteMemory)",
        "Run the memory server: one process that owns the data folder, answering every Memory verb\n"
        "as JSON under /v1 (OpenAPI docs at /docs) to zep_core.server.RemoteMemory clients.\n\n"
        "API keys come from --keys FILE, or the environment: ZEP_MEMORY_API_KEYS (the JSON itself)\n"
        "or ZEP_MEMORY_KEYS_FILE (a path) — never from a command-line value. The format:\n"
        "  {\"keys\": [{\"key\": \"<secret>\", \"users\": [\"alice\", \"bob\"]},\n"
        "            {\"key\": \"<secret>\", \"admin\": true}]}\n"
        "A key may read and write only its users; an admin key any user, and maintain/stats of all.\n"
        "Without keys every request may use every user, so the server then listens on loopback\n"
        "only and refuses any other --host. SIGTERM or Ctrl-C stops it cleanly: requests in flight get\n"
        "--shutdown-timeout seconds to finish, then the memory is closed; the process exits within\n"
        "--shutdown-timeout + --close-timeout seconds (40 by default). Connections that stall are closed\n"
        "(--head-timeout, --body-timeout, --keep-alive-timeout). Needs the server extra:\n"
        "pip install -e '.[server]' in a clone (a wheel or a git URL: docs/install.md).",
        "  zep-memory serve --data ./data\n"
        "  ZEP_MEMORY_KEYS_FILE=/etc/zep/keys.json zep-memory serve --data /srv/memory --host 0.0.0.0",
        args=(arg("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)"),
              arg("--port", type=int, default=8765, help="the port (default 8765; 0 picks a free one)"),
              arg("--keys", metavar="FILE", default=None, help="the API keys file (JSON, see above)"),
              arg("--max-body-bytes", metavar="N", type=int, default=None,
                  help="refuse request bodies over N bytes with 413 (default 16 MiB)"),
              arg("--head-timeout", metavar="S", type=float, default=DEFAULT_LIMITS.head_timeout,
                  help="close a connection that has not sent a whole request head within S seconds, from its "
                       f"opening or the next request's first byte (default {DEFAULT_LIMITS.head_timeout:g})"),
              arg("--body-timeout", metavar="S", type=float, default=DEFAULT_LIMITS.body_timeout,
                  help="close a connection whose request body is not whole S seconds after its head "
                       f"(default {DEFAULT_LIMITS.body_timeout:g})"),
              arg("--keep-alive-timeout", metavar="S", type=float, default=DEFAULT_LIMITS.keep_alive_timeout,
                  help=f"close a connection idle S seconds between requests (default "
                       f"{DEFAULT_LIMITS.keep_alive_timeout:g})"),
              arg("--max-connections", metavar="N", type=int, default=DEFAULT_LIMITS.max_connections,
                  help=f"answer 503 to connections past N open at once (default {DEFAULT_LIMITS.max_connections})"),
              arg("--shutdown-timeout", metavar="S", type=float, default=DEFAULT_LIMITS.shutdown_timeout,
                  help=f"on SIGTERM, give requests in flight S seconds to finish (default "
                       f"{DEFAULT_LIMITS.shutdown_timeout:g})"),
              arg("--close-timeout", metavar="S", type=float, default=DEFAULT_LIMITS.close_timeout,
                  help="then give closing the memory S seconds; past both the process exits at once, with "
                       f"status 1 (default {DEFAULT_LIMITS.close_timeout:g})"),
              arg("--log-level", default="info", choices=("critical", "error", "warning", "info", "debug"),
                  help="the server's log level (default info)"),
              arg("--access-log", action="store_true", help="log every request"))),
    Command(
        "mcp", cmd_mcp, "serve one user's memory to an MCP host (stdio or streamable HTTP)",
        "Run a Model Context Protocol server whose tools search and grow one user's memory:\n"
        "search_memory, entity_history, related_entities, add_conversation, and forget with\n"
        "--allow-forget. Every tool is scoped to --user; no tool takes a user id. It works on a\n"
        "data folder (--data) or on the memory service (--url, its key in ZEP_MEMORY_API_KEY).\n\n"
        "Over stdio the host that starts it is its only client: no key. Over streamable HTTP every\n"
        "request must send 'Authorization: Bearer <key>' with one of the API keys `serve` takes\n"
        "(--keys FILE, ZEP_MEMORY_API_KEYS or ZEP_MEMORY_KEYS_FILE; same format), bound to --user\n"
        "or admin: no key or an unknown one is 401, another user's key 403. Without keys it listens\n"
        "on loopback only; with --url it needs keys even there (else any local process would use\n"
        "the service key it holds).\n"
        "Needs the mcp extra: pip install -e '.[mcp]' in a clone (a wheel or a git URL: docs/install.md).\n"
        "Host configuration: docs/mcp.md.",
        "  zep-memory mcp --data ./data --user alice --user-name Alice\n"
        "  ZEP_MEMORY_KEYS_FILE=keys.json zep-memory mcp --data ./data --user alice \\\n"
        "      --transport streamable-http --port 8766\n"
        "  ZEP_MEMORY_API_KEY=... zep-memory mcp --url http://127.0.0.1:8765 --user alice",
        args=(arg("--user-name", metavar="NAME", default=None, help="who 'I' is in the user's messages and searches"),
              arg("--url", metavar="URL", default=None, help="a zep-memory serve URL instead of --data"),
              arg("--transport", default="stdio", choices=("stdio", "streamable-http"),
                  help="stdio (default: what desktop hosts start) or streamable-http"),
              arg("--host", default="127.0.0.1", help="streamable-http: the address (default 127.0.0.1)"),
              arg("--port", type=int, default=8766,
                  help="streamable-http: the port (default 8766; 0 picks a free one)"),
              arg("--keys", metavar="FILE", default=None,
                  help="streamable-http: the API keys file (the format of `serve`); each request sends one"),
              arg("--allow-forget", action="store_true", help="register the forget tool (deletes the user)"))),
)


def build_parser() -> argparse.ArgumentParser:
    """The ``zep-memory`` argument parser (every command and option), built from :data:`COMMANDS`."""
    parser = argparse.ArgumentParser(prog=PROG, description=DESCRIPTION, epilog=EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    _add_common(parser, top=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        p = sub.add_parser(command.name, help=command.summary, description=command.description,
                           epilog=f"examples:\n{command.examples}" if command.examples else None,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        p.set_defaults(handler=command.handler)
        _add_common(p, top=False)
        for a in command.args:
            p.add_argument(*a.names, **a.options)
    return parser


def _add_common(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """Add :data:`COMMON`; after a command's name ``SUPPRESS`` keeps a value given before it."""
    group = parser.add_argument_group("common options")
    for a in COMMON:
        group.add_argument(*a.names, **(a.options if top else {**a.options, "default": argparse.SUPPRESS}))

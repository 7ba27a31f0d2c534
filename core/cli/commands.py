"""The commands: each takes the parsed arguments, calls the library, prints, returns its exit code.

They use the public API only (:class:`zep_core.Memory` and the public modules
:mod:`zep_core.ingest_files`, :mod:`zep_core.serialize`, :mod:`zep_core.transfer`,
:mod:`zep_core.viz`) and let library errors through: :func:`zep_core.cli.main` turns
them into ``error: ...`` and exit code 2. The table in :mod:`.table` says which
arguments each one takes. The commands that look after a data folder (stats, maintain,
rebuild, doctor, forget) are written in :mod:`.upkeep` and re-exported here.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

from .. import ConfigError, NotFoundError, ValidationError, ZepMemoryError
from ..errors import install_hint
from ..stores.backends import backend_for
from .options import api_keys, emit, open_memory, user_of
from .upkeep import cmd_doctor, cmd_forget, cmd_maintain, cmd_rebuild, cmd_stats

__all__ = [
    "cmd_context", "cmd_cypher", "cmd_demo", "cmd_doctor", "cmd_export", "cmd_forget", "cmd_graph", "cmd_history",
    "cmd_import", "cmd_ingest", "cmd_maintain", "cmd_mcp", "cmd_rebuild", "cmd_related", "cmd_serve", "cmd_stats",
    "cmd_timeline",
]


def cmd_demo(args: argparse.Namespace) -> int:
    """Run the README's demo."""
    from ..demo import run

    if args.data:
        run(args.data)
        return 0
    with tempfile.TemporaryDirectory(prefix="zep-demo-") as tmp:
        run(tmp)
    return 0


def cmd_ingest(args: argparse.Namespace) -> int:
    """Ingest a conversation file."""
    from ..ingest_files import ingest, iter_episodes, parse_text, read_file

    name = "standard input" if args.file == "-" else str(args.file)
    with _readable(name):
        data = parse_text(sys.stdin.read(), name) if args.file == "-" else read_file(args.file)
        episodes = list(iter_episodes(data, user_id=args.user))
    if not episodes:
        raise ValidationError(f"{args.file} holds no conversations")
    progress = None if args.quiet or len(episodes) < 2 else _Progress(len(episodes), sys.stderr)
    dropped: list[dict[str, str]] = []

    def on_result(i: int, episode: Any, result: Any) -> None:
        dropped.extend(_dropped(episode.session_id, result))
        if progress is not None:
            progress(i, episode, result)

    with open_memory(args, create=True) as memory:
        totals = ingest(memory, episodes, progress=on_result)
    users = sorted({e.user_id for e in episodes})
    payload = {**asdict(totals), "users": users, "dropped": dropped}
    emit(args, payload, lambda: (
        f"ingested {totals.episodes} episodes ({totals.messages} messages) for {', '.join(users)}: "
        f"{totals.done} new, {totals.duplicate} already stored, {totals.pending} pending\n"
        f"facts: {totals.facts_added} added, {totals.facts_reinforced} reinforced, "
        f"{totals.facts_superseded} superseded, {totals.facts_discarded} discarded"
        + _dropped_lines(dropped)
        + ("\nsome extractions failed: run `zep-memory maintain` to retry them" if totals.pending else "")))
    return 0


_MAX_DROPPED_LINES = 20


def _dropped(session_id: str, result: Any) -> list[dict[str, str]]:
    """Every proposed fact an ingest result did not store, with its reason."""
    out = [{"session": session_id, "fact": d.fact.content, "reason": d.reason} for d in result.discarded]
    return out + [{"session": session_id, "fact": "", "reason": reason} for reason in result.invalid]


def _dropped_lines(dropped: list[dict[str, str]]) -> str:
    lines = [f"\n  {d['session']}: " + (f"discarded {d['fact']!r}: " if d["fact"] else "dropped: ") + d["reason"]
             for d in dropped[:_MAX_DROPPED_LINES]]
    if len(dropped) > _MAX_DROPPED_LINES:
        lines.append(f"\n  … and {len(dropped) - _MAX_DROPPED_LINES} more (--json lists them all)")
    return "".join(lines)


@contextmanager
def _readable(name: str) -> Iterator[None]:
    """Input nested too deeply for Python, or not UTF-8, is a one-line error (the library's checks come first)."""
    try:
        yield
    except RecursionError:
        raise ValidationError(f"{name} is nested too deeply to be read; nothing was written") from None
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{name} is not UTF-8 text ({exc.reason}); nothing was written") from None


class _Progress:
    """``ingested 12/95 episodes`` on stderr: redrawn in place on a terminal, else about every 5%."""

    def __init__(self, total: int, stream: TextIO) -> None:
        self.total, self.stream = total, stream
        self.tty = stream.isatty()
        self.every = max(1, total // 20)
        self.done = 0  # counted here: batches group each user's episodes, so positions come out of order

    def __call__(self, position: int, episode: Any, result: Any) -> None:
        self.done += 1
        i = self.done
        line = f"ingested {i}/{self.total} episodes ({episode.user_id} {episode.session_id}: {result.status})"
        if self.tty:
            self.stream.write("\r\x1b[K" + line + ("\n" if i == self.total else ""))
        elif i % self.every == 0 or i == self.total:
            self.stream.write(line + "\n")
        self.stream.flush()


def _day(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d") if value else "now"


def cmd_context(args: argparse.Namespace) -> int:
    """Print GetContext's facts or the context block."""
    from ..serialize import fact_to_dict

    with open_memory(args) as memory:
        if not memory.has_user(user_of(args)):  # the library answers "no facts"; on the command line, a typo
            raise NotFoundError(f"unknown user {user_of(args)!r}: nothing is stored for it")
        if args.block:
            block = memory.context_block(args.query, user_id=user_of(args), limit=args.limit, as_of=args.as_of,
                                         speaker=args.speaker)
            emit(args, {"block": block}, block)
            return 0
        facts = memory.get_context(args.query, user_id=user_of(args), limit=args.limit, as_of=args.as_of,
                                   speaker=args.speaker)
    emit(args, [fact_to_dict(f, scores=True) for f in facts], lambda: "\n".join(
        f"{f.score:.3f}  {f.content}  ({_day(f.valid_from)} .. {_day(f.valid_until)})" for f in facts)
        or "no relevant facts")
    return 0


def cmd_history(args: argparse.Namespace) -> int:
    """Print an entity's facts, oldest first."""
    from ..serialize import fact_to_dict

    with open_memory(args) as memory:
        facts = memory.entity_history(args.entity, user_id=user_of(args))
    emit(args, [fact_to_dict(f) for f in facts], lambda: "\n".join(
        f"{_day(f.valid_from)} .. {_day(f.valid_until):10}  {f.content}"
        + ("  (taken back: a correction)" if f.taken_back else "  (superseded)" if f.superseded_by else "")
        for f in facts) or f"no facts about {args.entity}")
    return 0


def cmd_related(args: argparse.Namespace) -> int:
    """Print related entities."""
    from ..serialize import entity_to_dict

    with open_memory(args) as memory:
        entities = memory.related_entities(args.entity, user_id=user_of(args), limit=args.limit)
    emit(args, [entity_to_dict(e) for e in entities], lambda: "\n".join(
        f"{e.name} ({e.entity_type})" + (f": {e.summary}" if e.summary else "") for e in entities)
        or f"nothing related to {args.entity}")
    return 0


def cmd_cypher(args: argparse.Namespace) -> int:
    """Run a read-only Cypher query."""
    params = dict(_param(p) for p in args.param)
    with open_memory(args) as memory:
        rows = memory.cypher(args.query, params, user_id=user_of(args))
    emit(args, rows, lambda: _table(rows))
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


def cmd_export(args: argparse.Namespace) -> int:
    """Export a user's memory as JSONL."""
    from ..transfer import export_user

    with open_memory(args) as memory:
        if args.out == "-":
            counts = export_user(memory, user_of(args), sys.stdout, embeddings=args.embeddings)
        else:
            counts = _export_to_file(memory, user_of(args), Path(args.out), args.embeddings)
    summary = (f"exported {counts.episodes} episodes, {counts.entities} entities, {counts.facts} facts and "
               f"{counts.chat_messages} chat turns of {user_of(args)}")
    if args.out == "-":
        print(summary, file=sys.stderr)
    else:
        emit(args, {**asdict(counts), "user_id": user_of(args), "file": args.out}, f"{summary} to {args.out}")
    return 0


def _export_to_file(memory: Any, user: str, path: Path, embeddings: bool) -> Any:
    """Write through a temporary file, so a failed export never leaves half a file behind."""
    from ..transfer import export_user

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
    from ..transfer import import_user

    with open_memory(args, create=True) as memory, _readable("standard input" if args.file == "-" else str(args.file)):
        if args.file == "-":
            report = import_user(memory, sys.stdin, replace=args.replace, user_id=args.user)
        else:
            with open(args.file, encoding="utf-8") as lines:
                report = import_user(memory, lines, replace=args.replace, user_id=args.user)
    emit(args, asdict(report), lambda: (
        f"imported {report.episodes} episodes, {report.entities} entities, {report.facts} facts and "
        f"{report.chat_messages} chat turns of {report.user_id}"
        + (" (replacing the previous memory)" if report.replaced else "")
        + ("; texts embedded again" if report.reembedded else "; stored vectors reused")))
    return 0


def cmd_graph(args: argparse.Namespace) -> int:
    """Write the entity graph as HTML."""
    from ..viz import graph_data, render_graph_html

    with open_memory(args) as memory:
        data = graph_data(memory, user_of(args))
    Path(args.html).write_text(render_graph_html(data, title=f"zep-memory: {user_of(args)}"), encoding="utf-8")
    counts = {"file": args.html, "entities": len(data["nodes"]), "facts": len(data["edges"])}
    emit(args, counts, f"wrote {args.html}: {counts['entities']} entities, {counts['facts']} facts between them")
    return 0


def cmd_timeline(args: argparse.Namespace) -> int:
    """Write an entity's timeline as PNG."""
    from ..viz import timeline_png

    with open_memory(args) as memory:
        facts = memory.entity_history(args.entity, user_id=user_of(args))
    drawn = timeline_png(facts, args.png, entity=args.entity, now=datetime.now(timezone.utc),
                         include_statements=args.statements)
    emit(args, {"file": args.png, "facts": drawn}, f"wrote {args.png}: {drawn} facts about {args.entity}")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve the memory over HTTP until SIGTERM or Ctrl-C (:func:`zep_core.server.app.run_server`).

    The keys and the host are checked before the data folder is opened, so a refused
    start leaves the folder free.
    """
    try:
        import uvicorn  # noqa: F401  (run_server imports it; missing, it is this one-line error)

        from ..server.app import DEFAULT_MAX_BODY_BYTES, ServerLimits, StopDeadline, run_server
        from ..server.listening import refuse_without_keys
    except ModuleNotFoundError as exc:
        raise ConfigError(f"zep-memory serve needs {exc.name}, which is not installed: "
                          f"{install_hint('server')}") from None

    keys = api_keys(args)
    refuse_without_keys(args.host, keys)
    if not 0 <= args.port <= 65535:
        raise ValidationError(f"--port must be in 0..65535, got {args.port}")
    limit = DEFAULT_MAX_BODY_BYTES if args.max_body_bytes is None else args.max_body_bytes
    if limit < 1:
        raise ValidationError(f"--max-body-bytes must be >= 1, got {limit}")
    limits = ServerLimits(head_timeout=args.head_timeout, body_timeout=args.body_timeout,
                          keep_alive_timeout=args.keep_alive_timeout, max_connections=args.max_connections,
                          shutdown_timeout=args.shutdown_timeout, close_timeout=args.close_timeout)

    def listening(url: str) -> None:
        who = f"{len(keys)} API keys" if keys else "no API keys: every request may use every user (loopback only)"
        where = backend_for(memory.config).where(memory.config)  # a database's URL is shown without its password
        print(f"zep-memory: serving {where} at {url} ({who}); docs at {url}/docs", file=sys.stderr, flush=True)

    deadline = StopDeadline(limits.stop_s)  # from SIGTERM to exit, the memory's close included
    try:
        with open_memory(args, create=True, end_left_sessions=True) as memory:
            run_server(memory, keys, host=args.host, port=args.port, max_body_bytes=limit, log_level=args.log_level,
                       access_log=args.access_log, limits=limits, on_listening=listening, on_stopping=deadline.start)
    finally:
        deadline.cancel()
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    """Serve one user's memory to an MCP host over stdio or streamable HTTP (:mod:`zep_core.mcp_server`).

    On a data folder (``--data``) or on the memory service (``--url``, key in
    ``ZEP_MEMORY_API_KEY``). Over stdio, stdout carries only the protocol, and no key is
    asked (the host that starts the server is its only client). Over HTTP every request
    needs one of the API keys ``serve`` takes (:mod:`zep_core.mcp_http`): on a
    non-loopback ``--host``, and in ``--url`` mode on any, the server will not start
    without them. The keys and the host are checked before the memory is opened.
    """
    from ..mcp_server import create_mcp_server

    if not args.user:
        raise ValidationError("zep-memory mcp serves one user: give --user ID (every tool is scoped to it)")
    if args.url and args.data:
        raise ValidationError("give --data DIR or --url URL, not both")
    if not 0 <= args.port <= 65535:
        raise ValidationError(f"--port must be in 0..65535, got {args.port}")
    keys = None
    if args.transport == "streamable-http":
        from ..mcp_http import check_listener, run_mcp_http

        keys = api_keys(args)
        check_listener(keys, user_id=args.user, host=args.host, keys_required=bool(args.url))
    elif args.keys:
        raise ValidationError("--keys is for --transport streamable-http: over stdio the host that starts this "
                              "server is its only client, and needs no key")

    def listening(url: str) -> None:
        who = f"{len(keys)} API keys" if keys else "no API keys: any local client may use it (loopback only)"
        print(f"zep-memory: MCP for user {args.user!r} at {url} ({who})", file=sys.stderr, flush=True)

    def serve(memory: Any) -> None:
        server = create_mcp_server(memory, user_id=args.user, user_name=args.user_name,
                                   allow_forget=args.allow_forget)
        if args.transport == "stdio":
            server.run("stdio")
        else:
            run_mcp_http(server, keys, user_id=args.user, host=args.host, port=args.port,
                         keys_required=bool(args.url), on_listening=listening)

    if args.url:
        from ..mcp_server import Unavailable
        from ..server import RemoteMemory

        with RemoteMemory(args.url, api_key=os.environ.get("ZEP_MEMORY_API_KEY")) as remote:
            try:  # the key and the user, checked once: a host's client only sees what the tools answer
                remote.has_user(args.user)
            except ZepMemoryError as exc:
                reason = (f"the memory service at {args.url} will not serve user {args.user!r}: "
                          f"{' '.join(str(exc).split())}. Set ZEP_MEMORY_API_KEY (in the host's MCP config, under "
                          f"\"env\") to a key that may use {args.user!r}, then restart this MCP server.")
                print(f"zep-memory: {reason}", file=sys.stderr, flush=True)
                serve(Unavailable(type(exc)(reason)))
            else:
                serve(remote)
    else:
        with open_memory(args, create=True, end_left_sessions=True) as memory:
            serve(memory)
    return 0

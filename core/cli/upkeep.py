"""The commands that look after a memory: stats, maintain, rebuild, doctor, forget.

Like the rest of :mod:`zep_core.cli.commands` (which re-exports them), each takes the
parsed arguments, calls the public API of :class:`zep_core.Memory`, prints, and returns
its exit code; library errors go through to :func:`zep_core.cli.main`. What holds the
memory — its parts and their size, what ``doctor`` compares, what ``rebuild`` recreates —
its backend says (:func:`~zep_core.stores.backends.backend_for`).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from typing import Any

from .. import ConfigError, NotFoundError, ValidationError
from ..stores.backends import Backend, backend_for
from .options import emit, open_memory

__all__ = ["cmd_doctor", "cmd_forget", "cmd_maintain", "cmd_rebuild", "cmd_stats"]

#: The options that name a memory, by the key of its saved reference (:meth:`Backend.reference`).
_OPTIONS = (("data_dir", "--data"), ("database_url", "--database-url"))


def cmd_stats(args: argparse.Namespace) -> int:
    """Print counts, pending work, disk use and the embedder."""
    with open_memory(args) as memory:
        backend = backend_for(memory.config)
        stats = memory.stats(args.user)
        stats["chroma"] = {"url": stats.pop("chroma_url"), **stats.pop("vectors")}
        stats["disk_bytes"] = backend.disk_use(memory.config)
    emit(args, stats, lambda: _stats_text(stats, backend))
    return 0


def _human(n: int) -> str:
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def _stats_text(s: dict[str, Any], backend: Backend) -> str:
    """The stats as a person reads them; what holds the memory is the backend's to say."""
    r, d, c, own = s["records"], s["disk_bytes"], s["chroma"], s["own_vector_index"]
    parts = [f"no {label} folder" if d[key] is None else f"{label} {_human(d[key])}" for key, label in backend.parts]
    lines = [
        f"{backend.place:14}{s['database'] or s['data_dir']} ({_human(d['total'])}"
        + (f": {', '.join(parts)})" if len(parts) > 1 else ")"),
        f"embedder      {s['embedder']['name']} ({s['embedder']['dimension']}-d)",
        f"users         {s['users']}",
        f"{backend.records:14}{r['episodes']} episodes, {r['messages']} messages, {r['facts']} facts "
        f"({s['facts']['current']} current, {s['facts']['superseded']} superseded), {r['entities']} entities, "
        f"{r['session_messages']} chat turns",
        f"vectors       {c['current']} (one per current fact): {c['current'] - own['current']} searched exactly in "
        f"{backend.records}, {own['current']} in {backend.own_vector_index.format(users=own['users'])}"
        + (f" (Chroma server {c['url']})" if c["url"] else ""),
        f"{backend.graph:14}{s['graph']['entities']} entity nodes, {s['graph']['facts']} FACT edges",
        f"pending       {s['pending_episodes']} episodes to extract, {s['pending_index_writes']} index writes",
    ]
    if s.get("failed_episodes") or s.get("quarantined_index_writes"):
        lines.append(f"set aside     {s['failed_episodes']} failed episodes, {s['quarantined_index_writes']} "
                     "quarantined index writes (see `zep-memory doctor`)")
    if "user" in s:
        u = s["user"]
        lines.append(f"user {u['user_id']:8} {u['episodes']} episodes, {u['facts']['current']} current + "
                     f"{u['facts']['superseded']} superseded facts, {u['entities']} entities")
    return "\n".join(lines)


def cmd_maintain(args: argparse.Namespace) -> int:
    """Retry pending episodes and refresh entities; exit 1 while some stay pending."""
    with open_memory(args, end_left_sessions=True) as memory:
        report = memory.maintain()
    payload = asdict(report)
    payload["still_pending"] = list(report.still_pending)
    emit(args, payload, lambda: (
        f"retried {report.retried} pending episodes: {report.completed} done, "
        f"{len(report.still_pending)} still pending\n"
        f"refreshed {report.entities_refreshed} entity summaries; replayed {report.index_writes_replayed} "
        f"index writes; ended {report.sessions_ended} idle chat sessions"
        + (f"\n{len(report.failed)} episodes failed for good (see `zep-memory doctor`)"
                          if report.failed else "")))
    return 1 if report.still_pending else 0


def cmd_rebuild(args: argparse.Namespace) -> int:
    """Recreate the indexes from the record store."""
    try:
        with open_memory(args, on_missing_index="ignore") as memory:  # rebuilt once, here, not also on open
            counts = memory.rebuild(reembed=args.reembed)
    except ConfigError:
        if not args.reembed:
            raise
        with open_memory(args, on_embedder_mismatch="reembed") as memory:  # opening re-embeds and rebuilds
            records = memory.stats()["records"]
            counts = {"facts": records["facts"], "entities": records["entities"]}
    rebuilt = backend_for(memory.config).rebuilt
    emit(args, {**counts, "reembedded": args.reembed}, lambda: (
        f"{rebuilt}: {counts['facts']} facts, {counts['entities']} entities"
        + (" (re-embedded)" if args.reembed else "")))
    return 0


def cmd_forget(args: argparse.Namespace) -> int:
    """Forget a user everywhere."""
    with open_memory(args) as memory:
        if not memory.has_user(args.forget_user):
            raise NotFoundError(f"unknown user {args.forget_user!r}: nothing is stored for it in {memory.data_dir}")
        if not args.yes and not _confirmed(f"Delete everything stored for user {args.forget_user!r} in "
                                           f"{memory.data_dir}? This cannot be undone. [y/N] "):
            print("not deleted", file=sys.stderr)
            return 1
        memory.forget_user(args.forget_user)
    emit(args, {"forgotten": args.forget_user},
         f"forgot {args.forget_user}: every episode, fact, entity, vector and graph node is gone")
    return 0


def _confirmed(question: str) -> bool:
    """Ask on the terminal; without one (a script, a pipe) refuse, naming ``--yes``."""
    if not sys.stdin.isatty():
        raise ValidationError("forget deletes a user for good and there is no terminal to ask on; "
                              "pass --yes to confirm")
    try:
        return input(question).strip().casefold() in {"y", "yes"}
    except EOFError:
        return False


def cmd_doctor(args: argparse.Namespace) -> int:
    """Check that the indexes agree with the record store; report quarantined index writes and failed episodes.

    The memory is opened with ``on_missing_index="ignore"``: the doctor reports a missing
    index instead of rebuilding it on the way in. Failed episodes are listed but do not
    change the exit code (the stores agree; their messages are kept).
    """
    with open_memory(args, on_missing_index="ignore") as memory:
        problems = memory.check_consistency(args.user)
        pending = len(memory.episode_ids(user_id=args.user, status="pending"))
        failed = [memory.get_episode(i, user_id=args.user) for i in memory.episode_ids(user_id=args.user,
                                                                                       status="failed")]
        backend = backend_for(memory.config)
        reference = backend.reference(memory.config)
    quarantined = problems.get("quarantined_index_writes", [])
    disagree = {kind: ids for kind, ids in problems.items() if kind != "quarantined_index_writes"}
    repair = " ".join(["zep-memory rebuild", *(f"{option} {reference[key]}" for key, option in _OPTIONS
                                               if key in reference)])
    payload = {"ok": not problems, "problems": problems, "pending_episodes": pending,
               "failed_episodes": [{"episode_id": e.id, "user_id": e.user_id, "session_id": e.session_id,
                                    "error": e.error} for e in failed],
               "repair": repair if disagree else None}

    def text() -> str:
        lines = [] if problems else [f"ok: {backend.agree}"]
        if disagree:
            lines.append("the stores disagree:")
            for kind, ids in sorted(disagree.items()):
                more = f" … and {len(ids) - 3} more" if len(ids) > 3 else ""
                lines.append(f"  {kind.replace('_', ' ')}: {len(ids)} ({', '.join(ids[:3])}{more})")
            lines.append(f"repair: {repair}   ({backend.rebuilds})")
        if quarantined:
            lines.append(f"quarantined index writes: {len(quarantined)} (set aside so they could not block the "
                         f"memory; {backend.records} keeps the records)")
            lines += [f"  {item}" for item in quarantined[:5]]
            lines += [f"  … and {len(quarantined) - 5} more"] if len(quarantined) > 5 else []
        if failed:
            lines.append(f"failed episodes: {len(failed)} (extraction gave up; the messages are kept and "
                         "`maintain` no longer retries them; send them again once the cause is fixed)")
            lines += [f"  {e.id} of {e.user_id}: {e.error}" for e in failed[:5]]
            lines += [f"  … and {len(failed) - 5} more"] if len(failed) > 5 else []
        if pending:
            lines.append(f"note: {pending} episodes are pending extraction; `zep-memory maintain` retries them")
        return "\n".join(lines)

    emit(args, payload, text)
    return 1 if problems else 0

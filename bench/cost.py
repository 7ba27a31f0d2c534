"""LLM cost per episode: zep-memory's one call per episode against per-message extraction.

Every LoCoMo session is one episode. All pipelines talk, through the real ``openai``
client, to the same local OpenAI-compatible server (``zep_core.providers.fake_openai``),
which logs every request and **estimates** tokens as ``ceil(chars / 4)`` of each
message's content plus 4 per message (plus the JSON schema when one is sent) for the
prompt, and ``ceil(chars / 4)`` of the reply for the completion. Request counts are
exact; token counts are estimates of the right order, not tokenizer counts.

The pipelines:

* **zep-memory** — a real ``Memory`` (SQLite + Chroma + Kùzu) configured only by
  ``openai_base_url``: ``OpenAIExtractor`` (one structured call per episode, with the
  known facts of the entities involved) and ``OpenAIEmbedder`` (one request per batch).
  At the end, one ``refresh_entities()`` pass writes every entity summary (25 per call).
* **per-message + per-item resolution** (Graphiti style), simulated honestly against the
  same server with the same client and output format: for every message, one extraction
  call (the same system prompt as ours, the message plus the 4 before it as context),
  then one resolution call per extracted entity (with up to 10 existing entity names
  as candidates) and one per extracted fact (with up to 10 existing facts of the same
  subject), and one embeddings request for the message's new items. Real Graphiti
  prompts are longer than these, and it also writes node summaries: this is a lower bound.
* **per-message + one update call** (mem0 style): one extraction call per message and,
  when it found facts, one update call with all of them and up to 10 related facts.

The model's answers are scripted by a deterministic stand-in (the server cannot think):
each message's first declarative sentence of 6+ words becomes one fact of its speaker,
with the first other capitalized name in it as the object entity. Every pipeline gets
the same facts for the same messages; the stand-in's rates are printed with the results.

Run: ``python bench/cost.py [PATH] [--episodes 60]``; writes ``bench/results/cost.json``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from zep_core import Memory, MemoryConfig, Message
from zep_core.providers.extractive import split_sentences
from zep_core.providers.fake_openai import CHARS_PER_TOKEN, FakeOpenAI
from zep_core.providers.openai import StructuredCall
from zep_core.providers.openai_client import OpenAIClient, Usage
from zep_core.providers.openai_prompts import EXTRACTION_SYSTEM, EpisodeExtraction

from bench.common import LOCOMO_DEV, Progress, write_result
from bench.locomo import Turn, load

DEFAULT_DATA = str(LOCOMO_DEV)
CONTEXT_TURNS = 4
CANDIDATES = 10
_NAME = re.compile(r"\b([A-Z][a-z]+(?:\s[A-Z][a-z]+)*)\b")
_RESOLVE_ENTITY = ("You resolve entities. Given a NEW entity extracted from a message and EXISTING entities, "
                   "reply with JSON {\"duplicate_of\": str|null}: the existing name it refers to, or null.")
_RESOLVE_FACT = ("You resolve facts. Given a NEW fact and EXISTING facts about the same subject, reply with JSON "
                 "{\"duplicate_of\": str|null, \"contradicts\": [str]}: the id of an existing fact it restates, "
                 "and the ids of existing facts it makes no longer true.")
_UPDATE = ("You maintain a memory. Given NEW facts and EXISTING related facts, reply with JSON "
           "{\"memory\": [{\"id\": str, \"text\": str, \"event\": \"ADD\"|\"UPDATE\"|\"DELETE\"|\"NONE\"}]}.")


# -- the scripted model: the same facts for every pipeline ------------------------------------


def message_fact(turn: Turn) -> dict[str, Any] | None:
    """The stand-in model's fact for one message: its first declarative sentence of 6+ words."""
    for sentence in split_sentences(turn.text):
        if sentence.endswith("?") or len(sentence.split()) < 6:
            continue
        names = [n for n in _NAME.findall(sentence) if n != turn.speaker and not sentence.startswith(n)]
        obj = names[0] if names else " ".join(sentence.rstrip(".!").split()[-3:])
        return {"subject": turn.speaker, "predicate": "said_about" if names else "states", "object": obj,
                "object_is_entity": bool(names), "content": f"{turn.speaker} says: {sentence}",
                "confidence": 0.8, "valid_from": None, "valid_until": None, "sources": []}
    return None


def entities_of(facts: Sequence[dict[str, Any]]) -> list[str]:
    """Distinct entity names of some facts: subjects, and objects that are entities."""
    names = [f["subject"] for f in facts] + [f["object"] for f in facts if f["object_is_entity"]]
    return list(dict.fromkeys(names))


def episode_answer(turns: Sequence[Turn]) -> dict[str, Any]:
    """The extraction answer for a whole episode, message refs m1, m2…"""
    facts = []
    for i, turn in enumerate(turns):
        found = message_fact(turn)
        if found:
            facts.append({**found, "sources": [f"m{i + 1}"]})
    summary = " ".join(split_sentences(turns[0].text)[:1] + split_sentences(turns[-1].text)[:1])[:300]
    return {"summary": summary, "entities": [{"name": n, "type": "person"} for n in entities_of(facts)],
            "facts": facts, "contradicted": []}


def summaries_answer(body: dict[str, Any]) -> Any:
    """Default chat answer: entity summaries when asked for them, else an empty extraction."""
    fmt = (body.get("response_format") or {}).get("json_schema", {}).get("name")
    if fmt != "EntitySummaries":
        return {"summary": "", "entities": [], "facts": [], "contradicted": []}
    refs = re.findall(r"^(e\d+): (.+?) \(", body["messages"][1]["content"], re.MULTILINE)
    return {"summaries": [{"id": r, "summary": f"{n} is someone the user talks about; recent facts say what "
                                               "they do, like and plan."} for r, n in refs]}


# -- counting ---------------------------------------------------------------------------


@dataclass
class Tally:
    """Requests and tokens of one pipeline, per episode."""

    chat: list[int] = field(default_factory=list)
    embeddings: list[int] = field(default_factory=list)
    prompt: list[int] = field(default_factory=list)
    completion: list[int] = field(default_factory=list)
    embedding_tokens: list[int] = field(default_factory=list)

    def add(self, requests: Sequence[Any]) -> None:
        """Count the logged requests of one episode."""
        chat = [r for r in requests if r.path.endswith("/chat/completions")]
        emb = [r for r in requests if r.path.endswith("/embeddings")]
        self.chat.append(len(chat))
        self.embeddings.append(len(emb))
        usage = [r.usage for r in chat]
        self.prompt.append(sum(u["prompt_tokens"] for u in usage))
        self.completion.append(sum(u["completion_tokens"] for u in usage))
        self.embedding_tokens.append(sum(r.usage["prompt_tokens"] for r in emb))

    def summary(self) -> dict[str, float]:
        """Means per episode, and totals."""
        n = max(len(self.chat), 1)

        def mean(xs: list[int]) -> float:
            return round(sum(xs) / n, 2)

        return {"episodes": len(self.chat), "chat_requests_per_episode": mean(self.chat),
                "embedding_requests_per_episode": mean(self.embeddings),
                "prompt_tokens_per_episode": mean(self.prompt),
                "completion_tokens_per_episode": mean(self.completion),
                "llm_tokens_per_episode": round((sum(self.prompt) + sum(self.completion)) / n, 2),
                "embedding_tokens_per_episode": mean(self.embedding_tokens),
                "chat_requests_total": sum(self.chat), "llm_tokens_total": sum(self.prompt) + sum(self.completion)}


def since(server: FakeOpenAI, mark: int) -> list[Any]:
    """Requests logged after the first ``mark``."""
    return server.requests[mark:]


# -- the pipelines ----------------------------------------------------------------------


def run_zep(server: FakeOpenAI, episodes: list[tuple[str, str, list[Turn]]], data_dir: Path,
            progress: Progress) -> tuple[Tally, dict[str, Any]]:
    """zep-memory: a real Memory configured by settings only, one conversation_end per episode."""
    tally = Tally()
    config = MemoryConfig(data_dir=data_dir, openai_base_url=server.url, embedding_dimensions=256)
    reported = {"prompt_tokens": 0, "completion_tokens": 0, "requests": 0}
    facts = 0
    with Memory(config) as memory:
        for i, (user, session, turns) in enumerate(episodes):
            server.push_chat(episode_answer(turns))
            mark = len(server.requests)
            result = memory.conversation_end(session, [Message(t.text, name=t.speaker, id=t.id,
                                                               timestamp=t.timestamp) for t in turns],
                                             user_id=user, episode_id=f"{user}:{session}")
            if result.status != "done":
                raise RuntimeError(f"episode {user}/{session} ended {result.status}: {result.error}")
            tally.add(since(server, mark))
            facts += len(result.added) + len(result.reinforced)
            for key in reported:
                reported[key] += result.usage.get(key, 0)
            if (i + 1) % 20 == 0:
                progress(f"zep-memory: {i + 1}/{len(episodes)} episodes")
        mark = len(server.requests)
        refreshed = memory.refresh_entities(max_age=timedelta(0))
        refresh = since(server, mark)
    maintenance = {"entities_refreshed": refreshed, "chat_requests": len(refresh),
                   "llm_tokens": sum(r.usage["prompt_tokens"] + r.usage["completion_tokens"] for r in refresh)}
    checks = {"usage_reported_by_ingest_results": reported, "facts_stored": facts}
    return tally, {"maintenance_refresh_entities": maintenance, **checks}


def run_per_message(server: FakeOpenAI, client: OpenAIClient, episodes: list[tuple[str, str, list[Turn]]],
                    style: str) -> Tally:
    """The per-message baselines: extraction per message, then resolution per item or one update."""
    tally = Tally()
    extract = StructuredCall(client, "gpt-4o-mini", EpisodeExtraction)
    free = StructuredCall(client, "gpt-4o-mini", EpisodeExtraction)
    free.format = "json_object"  # resolution answers are small free-form JSON
    entities: dict[str, list[str]] = {}
    facts: dict[str, dict[str, list[str]]] = {}
    for user, _, turns in episodes:
        mark = len(server.requests)
        known_entities = entities.setdefault(user, [])
        known_facts = facts.setdefault(user, {})
        for i, turn in enumerate(turns):
            found = message_fact(turn)
            answer = {"summary": "", "entities": [], "facts": [], "contradicted": []}
            if found:
                answer = {**answer, "facts": [{**found, "sources": ["m1"]}],
                          "entities": [{"name": n, "type": "person"} for n in entities_of([found])]}
            server.push_chat(answer)
            extract(_message_prompt(turns[max(0, i - CONTEXT_TURNS):i], turn), lambda d: d, Usage())
            if not found:
                continue
            new_entities = entities_of([found])
            subject_facts = known_facts.setdefault(found["subject"], [])
            if style == "per_item":
                for name in new_entities:
                    server.push_chat({"duplicate_of": name if name in known_entities else None})
                    free(_resolve(_RESOLVE_ENTITY, f"NEW: {name}", known_entities[-CANDIDATES:]), lambda d: d, Usage())
                server.push_chat({"duplicate_of": None, "contradicts": []})
                free(_resolve(_RESOLVE_FACT, f"NEW: {found['content']}", subject_facts[-CANDIDATES:]),
                     lambda d: d, Usage())
            else:
                server.push_chat({"memory": [{"id": "new", "text": found["content"], "event": "ADD"}]})
                free(_resolve(_UPDATE, f"NEW: {found['content']}", subject_facts[-CANDIDATES:]), lambda d: d,
                     Usage())
            client.embeddings(model="text-embedding-3-small", inputs=new_entities + [found["content"]],
                              dimensions=256)
            known_entities += [n for n in new_entities if n not in known_entities]
            subject_facts.append(found["content"])
        tally.add(since(server, mark))
    return tally


def _message_prompt(context: Sequence[Turn], turn: Turn) -> list[dict[str, str]]:
    lines = ["Previous messages (context only):"] + [f"{t.speaker}: {t.text}" for t in context]
    lines += [f"Current message ({turn.timestamp:%Y-%m-%d %H:%M}):", f"m1 {turn.speaker}: {turn.text}"]
    return [{"role": "system", "content": EXTRACTION_SYSTEM}, {"role": "user", "content": "\n".join(lines)}]


def _resolve(instruction: str, new: str, existing: Sequence[str]) -> list[dict[str, str]]:
    listed = "\n".join(f"x{i + 1}: {e}" for i, e in enumerate(existing)) or "(none)"
    return [{"role": "system", "content": instruction}, {"role": "user", "content": f"{new}\nEXISTING:\n{listed}"}]


# -- the run ----------------------------------------------------------------------------


def episodes_of(path: str | Path, limit: int) -> list[tuple[str, str, list[Turn]]]:
    """The first ``limit`` LoCoMo sessions, in order, as (user, session, turns)."""
    out = [(c.sample_id, session, turns) for c in load(path) for session, turns in c.sessions]
    return out[:limit]


def run(path: str | Path = DEFAULT_DATA, *, episodes: int = 60, quiet: bool = False) -> dict[str, Any]:
    """Measure the three pipelines over the first ``episodes`` sessions; returns the result."""
    if episodes < 1:
        raise ValueError("episodes must be >= 1")
    progress = Progress("cost", quiet=quiet)
    chosen = episodes_of(path, episodes)
    messages = sum(len(t) for _, _, t in chosen)
    with FakeOpenAI(dimension=256, chat_default=summaries_answer) as server, \
            tempfile.TemporaryDirectory(prefix="zep-cost-") as tmp:
        zep, extra = run_zep(server, chosen, Path(tmp) / "data", progress)
        progress("zep-memory done; per-message baselines next")
        client = OpenAIClient(base_url=server.url, max_retries=0, max_concurrency=1)
        per_item = run_per_message(server, client, chosen, "per_item")
        progress("per-message + per-item resolution done")
        batched = run_per_message(server, client, chosen, "batched")
    model_facts = sum(1 for _, _, turns in chosen for t in turns if message_fact(t))
    model_entities = sum(len(entities_of([f])) for _, _, turns in chosen for t in turns if (f := message_fact(t)))
    systems = {"zep-memory (one call per episode)": zep.summary(),
               "per-message + per-item resolution (Graphiti style)": per_item.summary(),
               "per-message + one update call (mem0 style)": batched.summary()}
    ours = systems["zep-memory (one call per episode)"]
    return {
        "data": str(path), "episodes": len(chosen), "messages": messages,
        "token_method": f"estimated: ceil(chars / {CHARS_PER_TOKEN}) per message content + 4 per message "
                        "(+ the JSON schema when sent) for prompts, ceil(chars / 4) of the reply for completions",
        "stand_in_model": {"facts_per_message": round(model_facts / messages, 3),
                           "entity_mentions_per_message": round(model_entities / messages, 3),
                           "rule": "first declarative sentence of 6+ words per message -> one fact"},
        "systems": systems,
        "ratios_vs_zep": {name: {"chat_requests": round(s["chat_requests_per_episode"]
                                                        / ours["chat_requests_per_episode"], 1),
                                 "llm_tokens": round(s["llm_tokens_per_episode"] / ours["llm_tokens_per_episode"], 2)}
                          for name, s in systems.items()},
        **extra,
    }


def format_table(result: dict[str, Any]) -> str:
    """The result as a plain-text table."""
    head = (f"LLM cost per episode over {result['episodes']} LoCoMo sessions ({result['messages']} messages); "
            f"local fake endpoint, tokens {result['token_method'].split(':')[0]} (chars/4)")
    rows = [head, f"{'pipeline':<52}{'chat req':>9}{'emb req':>9}{'prompt tok':>12}{'compl tok':>11}"
                  f"{'LLM tok':>9}{'x reqs':>8}{'x tok':>7}"]
    for name, s in result["systems"].items():
        ratio = result["ratios_vs_zep"][name]
        rows.append(f"{name:<52}{s['chat_requests_per_episode']:>9.2f}{s['embedding_requests_per_episode']:>9.2f}"
                    f"{s['prompt_tokens_per_episode']:>12.0f}{s['completion_tokens_per_episode']:>11.0f}"
                    f"{s['llm_tokens_per_episode']:>9.0f}{ratio['chat_requests']:>8.1f}{ratio['llm_tokens']:>7.2f}")
    m = result["maintenance_refresh_entities"]
    rows.append(f"zep-memory maintenance: refresh_entities wrote {m['entities_refreshed']} summaries in "
                f"{m['chat_requests']} requests ({m['llm_tokens']} tokens), "
                f"{m['chat_requests'] / result['episodes']:.2f} requests per episode amortized")
    rows.append(f"stand-in model: {result['stand_in_model']['facts_per_message']} facts and "
                f"{result['stand_in_model']['entity_mentions_per_message']} entity mentions per message")
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Command line: ``python bench/cost.py [PATH] [--episodes N] [--quiet]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", default=DEFAULT_DATA, help="LoCoMo json (default: %(default)s)")
    parser.add_argument("--episodes", type=int, default=60, help="sessions to ingest (default: %(default)s)")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--out", help="results folder (default: bench/results)")
    args = parser.parse_args(argv)
    result = run(args.path, episodes=args.episodes, quiet=args.quiet)
    out = write_result("cost", result, Path(args.out) if args.out else None)
    print(format_table(result))
    print(f"written: {out}")
    if not args.quiet:
        print(json.dumps(result["systems"], indent=2), file=sys.stderr)
    return result


if __name__ == "__main__":
    main()

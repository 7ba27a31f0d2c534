"""Smoke tests of the benchmark harness (bench/): the metric and one tiny LoCoMo run.

The benchmarks themselves are not tests; these only check that the harness counts
right and runs end to end in seconds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from zep_core import SPEC_SCORING

from bench.baselines import Hit
from bench.common import LOCOMO_DEV
from bench.locomo import Variant, ablation, load, normalise_evidence, run
from bench.recall import coverage

LOCOMO = LOCOMO_DEV


def _mini_locomo(path: Path) -> Path:
    """A two-session conversation in LoCoMo's format, with one malformed evidence string."""
    turns1 = [
        {"speaker": "Ana", "dia_id": "D1:1", "text": "I adopted a greyhound called Comet last week."},
        {"speaker": "Ben", "dia_id": "D1:2", "text": "Lovely! I have been learning the cello since spring."},
        {"speaker": "Ana", "dia_id": "D1:3", "text": "My sister Rita lives in Porto and teaches chemistry."},
    ]
    turns2 = [
        {"speaker": "Ben", "dia_id": "D2:1", "text": "I played my first cello recital at the town hall."},
        {"speaker": "Ana", "dia_id": "D2:2", "text": "Comet ran on the beach in Porto when we visited Rita."},
    ]
    data = [{
        "sample_id": "mini-1",
        "conversation": {"speaker_a": "Ana", "speaker_b": "Ben",
                         "session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": turns1,
                         "session_2_date_time": "10:04 am on 2 June, 2023", "session_2": turns2,
                         "session_3_date_time": "9:00 am on 1 July, 2023"},
        "qa": [
            {"question": "What is the name of Ana's greyhound?", "answer": "Comet", "evidence": ["D1:1"],
             "category": 4},
            {"question": "Which instrument does Ben play at recitals?", "answer": "cello",
             "evidence": ["D1:2; D2:1"], "category": 1},
            {"question": "Where does Ana's sister live?", "answer": "Porto", "evidence": ["D:1:3"], "category": 4},
            {"question": "What did Ben say about his dog?", "evidence": ["D9:9"], "category": 5},
        ],
    }]
    path.write_text(json.dumps(data))
    return path


def test_coverage_counts_all_share_and_any():
    hits = [Hit(("D1:1",), "a"), Hit(("D2:5", "D2:6"), "b"), Hit(("D3:1",), "c")]
    assert coverage(hits, ["D1:1", "D2:6"], 2) == (1.0, 1.0, 1.0)
    assert coverage(hits, ["D1:1", "D3:1"], 2) == (0.0, 0.5, 1.0)
    assert coverage(hits, ["D9:9"], 3) == (0.0, 0.0, 0.0)


def test_malformed_evidence_is_split_repaired_or_dropped():
    known = {"D8:6", "D9:17", "D11:26"}
    assert normalise_evidence(["D8:6; D9:17"], known) == (("D8:6", "D9:17"), 0)
    assert normalise_evidence(["D:11:26", "D", "D1:1"], known) == (("D11:26",), 2)


def test_loader_reads_dates_ids_and_drops_unanswerable_questions(tmp_path):
    (conv,) = load(_mini_locomo(tmp_path / "mini.json"))
    assert [key for key, _ in conv.sessions] == ["session_1", "session_2"]
    first = conv.sessions[0][1]
    assert first[0].timestamp.isoformat() == "2023-05-08T13:56:00+00:00"
    assert first[1].timestamp.isoformat() == "2023-05-08T13:56:01+00:00"
    assert [q.evidence for q in conv.questions] == [("D1:1",), ("D1:2", "D2:1"), ("D1:3",)]
    assert conv.dropped_questions == 1


def test_tiny_locomo_run_reports_every_system_and_category(tmp_path, embedder):
    variants = (Variant("defaults"), ablation("lexical off", lexical_weight=0.0),
                ablation("spec", scoring=SPEC_SCORING))
    result = run(_mini_locomo(tmp_path / "mini.json"), variants=variants, embedder=embedder,
                 data_dir=tmp_path / "data", out_dir=tmp_path / "results")
    assert set(result["systems"]) >= {"bm25-turns", "dense-turns", "zep: defaults", "zep: lexical off", "zep: spec"}
    assert result["systems"]["zep: spec"]["settings"]["fusion"] == "weighted"
    assert result["systems"]["zep: lexical off"]["settings"]["lexical_weight"] == 0.0
    zep = result["systems"]["zep: defaults"]["recall"]
    assert zep["k10"]["1-4"]["n"] == 3
    assert zep["k10"]["4"]["any"] == 1.0  # the two single-hop questions find their turn
    for system in result["systems"].values():
        for row in system["recall"]["k5"].values():
            assert 0.0 <= row["all"] <= row["frac"] <= row["any"] <= 1.0
    assert json.loads(Path(result["path"]).read_text())["questions"] == 3


@pytest.mark.skipif(not LOCOMO.is_file(), reason="the LoCoMo evaluation data is not on this machine")
def test_locomo_bench_runs_on_one_real_conversation(tmp_path, embedder):
    result = run(LOCOMO, conversations=["conv-30"], max_sessions=2, max_questions=8,
                 variants=(Variant("defaults"),), embedder=embedder, save=False)
    assert result["questions"] >= 1
    assert result["winner"] == "zep: defaults"
    assert result["systems"]["bm25-turns"]["recall"]["k10"]


def test_tiny_scale_run_reports_every_figure_against_its_same_run_baseline(tmp_path):
    from bench import scale

    result = scale.run(sizes=[120], users=4, sample_episodes=12, bulk_episodes=20, n_queries=8, profile=False,
                       save=False, data_dir=tmp_path / "data")
    [row] = result["sizes"]
    assert row["facts"] >= 120 and row["users"] == 4
    bulk = row["bulk"]
    assert bulk["episodes"] == 20 and bulk["embedded_texts"] > 0 and bulk["embed_calls"] >= 1
    speed = bulk["ingest_texts_per_s"] / bulk["embedder_texts_per_s"]  # the ingest's pace over the embedder's
    assert bulk["ratio_to_embedder"] == pytest.approx(speed, abs=0.02) and speed > 0
    alone = row["bulk_one_thread"]  # the same again with the embedder on one thread
    assert alone["episodes"] == 20 and alone["embedder_threads"] == 1 and alone["ratio_to_embedder"] > 0
    assert row["ingest"]["latency_episodes"] > 0 and row["ingest"]["episode_latency_ms"]["p95"] > 0
    for key in ("get_context_ms", "floor_ms", "context_block_cached_ms", "get_context_as_of_cached_ms"):
        assert set(row[key]) == {"p50", "p95", "p99"}
    ours, floor = row["get_context_ms"]["p95"], row["floor_ms"]["p95"]
    assert row["ratio_to_floor"]["p95"] == pytest.approx(ours / floor, abs=0.01)
    assert "bulk x" in scale.format_table(result)


def test_a_bulk_sample_on_one_embedding_thread_runs_ingest_and_replay_on_one_and_then_gives_it_back(tmp_path):
    from zep_core import Memory, MemoryConfig
    from zep_core.providers.local import LocalEmbedder

    from bench.scale import RecordingEmbedder, _Loader
    from bench.synth import make_users

    class Watched(LocalEmbedder):  # the real embedder, noting how many threads each call ran on
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.seen: list[int] = []

        def embed(self, texts):
            self.seen.append(self.threads)
            return super().embed(texts)

    inner = Watched(threads=2)
    embedder = RecordingEmbedder(inner)
    with Memory(MemoryConfig(data_dir=tmp_path / "data", embedder=embedder)) as memory:
        loader = _Loader(memory, make_users(3, seed=2), seed=2)
        out = loader.bulk(episodes=6, embedder=embedder, embedder_threads=1)
        assert out["episodes"] == 6 and out["embed_calls"] >= 1 and out["embedder_threads"] == 1
        assert inner.seen and set(inner.seen) == {1}  # the ingest's calls and their replay alike
        assert inner.threads == 2  # back to its own
        inner.seen.clear()
        loader.bulk(episodes=3, embedder=embedder)
        assert set(inner.seen) == {2}


def test_chroma_rss_reports_memory_per_collection():
    from bench.chroma_rss import measure

    row = measure(3, 5)
    assert row["collections"] == 3 and row["vectors_each"] == 5
    assert row["mb_per_collection"] == pytest.approx(row["grown_mb"] / 3, abs=0.05)  # both rounded
    assert row["vector_mb_per_collection"] == round(5 * 384 * 4 / 2**20, 3)


def test_tiny_server_run_compares_the_served_memory_with_the_in_process_one(tmp_path):
    pytest.importorskip("uvicorn", reason="the server extra is not installed")
    from bench import server
    from bench.report import render

    result = server.run(users=3, episodes_n=12, n_queries=6, writes=2, save=False, data_dir=tmp_path)
    assert result["get_context"]["calls"] == 6 and result["conversation_end"]["calls"] == 2
    assert result["get_context"]["same_answers"] == 6  # both sides hold copies of the same data
    assert result["conversation_end"]["same_results"] == 2
    for name in ("get_context", "conversation_end"):
        row = result[name]
        ours, served = row["in_process_ms"], row["server_ms"]
        assert row["overhead_ms"]["p50"] == pytest.approx(served["p50"] - ours["p50"], abs=0.01)
        assert row["ratio"]["p95"] == pytest.approx(served["p95"] / ours["p95"], abs=0.01)
    assert result["target"]["met"] == (result["get_context"]["overhead_ms"]["p50"] <= 2.0)
    inside = result["get_context"]["in_server_ms"]  # each answer's Server-Timing: the verb alone
    assert 0 < inside["p50"] < result["get_context"]["server_ms"]["p50"]
    assert 0 < result["conversation_end"]["in_server_ms"]["p50"] < result["conversation_end"]["server_ms"]["p50"]
    assert "inside the server" in server.format_table(result)
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "server.json").write_text(json.dumps(result))
    page = render(tmp_path / "results")
    assert "through `zep-memory serve` vs in process" in page and "Inside the server" in page
    assert "`get_context` through the server: overhead p50 ≤ 2 ms" in page  # a row of the targets table


def test_a_tiny_long_user_run_is_reported_with_its_floor_target(tmp_path):
    from bench.long_user import run_long_user
    from bench.report import render

    result = run_long_user(150, sample_episodes=10, bulk_episodes=10, n_queries=8, profile=False,
                           data_dir=tmp_path / "data", out_dir=tmp_path / "results")
    [row] = result["sizes"]
    assert result["users"] == 1 and row["facts"] >= 150
    page = render(tmp_path / "results")
    assert f"one user of {row['facts']} facts: get_context p95 ≤ 2×" in page
    assert "## One user of many facts" in page


def test_the_tenants_bench_builds_and_measures_every_size(tmp_path):
    from bench.tenants import format_table
    from bench.tenants import run as run_tenants

    keep = tmp_path / "folders"
    result = run_tenants(sizes=(12,), baseline=6, quiet=True, out_dir=tmp_path, keep=keep)
    base, row = result["sizes"]
    assert (base["tenants"], row["tenants"]) == (6, 12)
    for measured in (base, row):
        assert measured["facts_per_tenant_sampled"] > 5  # each tenant holds facts, learned through the bulk API
        assert measured["embedder_cpu_s"] > 0 and measured["build_cpu_s"] > 0
        assert measured["open_ms"] > 0 and measured["cold_first_query_ms"]["p95"] > 0
        assert measured["warm_queries"] > 0 and measured["rss_after_touching"]["rss_mb"] > 0
    assert base["warm_p95_over_baseline"] == 1.0
    assert json.loads(Path(result["path"]).read_text())["sizes"][1]["tenants"] == 12
    assert "12 tenants" in format_table(result)
    (keep / "tenants-12" / "built.json").unlink()  # as a build cut short leaves it: built again, not reused
    again = run_tenants(sizes=(12,), baseline=6, quiet=True, out_dir=tmp_path, keep=keep)["sizes"]
    assert again[0]["reused"] and again[0]["build_s"] == base["build_s"]
    assert "reused" not in again[1] and again[1]["facts_per_tenant_sampled"] == row["facts_per_tenant_sampled"]


def test_a_kept_long_user_folder_is_measured_again_with_the_same_questions(tmp_path):
    from bench.long_user import run_long_user
    from bench.scale import remeasure

    built = run_long_user(150, sample_episodes=10, bulk_episodes=10, n_queries=8, profile=False,
                          data_dir=tmp_path / "data", out_dir=tmp_path / "results")
    again = remeasure(tmp_path / "data", size=150, users=1, n_queries=8, out_dir=tmp_path / "results",
                      name="long_user_remeasured")
    [first], [row] = built["sizes"], again["sizes"]
    assert row["facts"] >= first["facts"] and row["queries"] == 8 and row["ratio_to_floor"]["p95"] > 0
    # the time line of every episode stored (the build's last sample came after its measures): not earlier
    assert row["as_of"] >= first["as_of"] and row["get_context_as_of_cached_ms"]["p95"] > 0
    assert json.loads(Path(again["path"]).read_text())["mode"] == "remeasured"


def test_past_its_threshold_the_tenants_bench_replays_a_sample_of_the_embedder_calls(tmp_path, monkeypatch):
    import bench.tenants as tenants
    from bench.common import Progress

    monkeypatch.setattr(tenants, "REPLAY_ALL_UP_TO", 4)
    row = tenants.build(tmp_path / "data", 12, 7, Progress("t", quiet=True))
    assert row["embedder_replay"] == "1 call in 3, scaled by the texts" and row["embedder_cpu_s"] > 0


def test_the_benchmarks_build_their_memories_with_the_settings_given(tmp_path, embedder):
    import sqlite3

    run(_mini_locomo(tmp_path / "mini.json"), variants=(Variant("defaults"),), embedder=embedder,
        data_dir=tmp_path / "data", save=False, settings={"vector_exact_below": 0})
    with sqlite3.connect(tmp_path / "data" / "zep.db") as db:  # every user in Chroma: promoted at the first write
        assert db.execute("SELECT user_id, state FROM vector_tiers").fetchall() == [("mini-1", "ready")]


def test_the_pg_vectors_bench_times_both_searches_and_what_the_indexes_cost_others(pg_url):
    pytest.importorskip("psycopg", reason="PostgreSQL benchmarks need the test extra: pip install -e '.[test]'")
    from bench.pg_vectors import measure

    result = measure(pg_url, (40, 120), queries=6, crowd=2)
    assert [r["facts"] for r in result["rows"]] == [40, 120]
    for row in result["rows"]:
        assert row["exact_ms"]["p50"] > 0 and row["hnsw_ms"]["p50"] > 0 and 0 <= row["recall_at_10"] <= 1
    assert result["others_after_crowd"]["small_tenant_search_ms"]["p50"] > 0
    assert result["threshold"] in (None, 40, 120)


def test_the_backends_bench_puts_the_same_facts_in_both_and_times_them_alternately(tmp_path, pg_server):
    pytest.importorskip("psycopg", reason="PostgreSQL benchmarks need the test extra: pip install -e '.[test]'")
    from bench.backends import format_table, run

    result = run(facts=40, tenant_count=3, skip=("retrieval",), database_url=pg_server.get_uri(), out_dir=tmp_path)
    latency, tenants = result["latency"], result["tenants_compared"]
    assert latency["sqlite_facts"] == latency["postgres_facts"] and latency["sqlite_facts"]["current"] > 0
    assert latency["postgres_p95_over_sqlite_p95"] > 0 and tenants["postgres_open_ms"] > 0
    assert latency["postgres_settle_s"] >= 0  # vacuumed and checkpointed before the timed questions
    assert json.loads((tmp_path / "backends.json").read_text())["tenants_compared"]["tenants"] == 3
    assert "PostgreSQL" in format_table(result) and "3 tenants" in format_table(result)

"""bench/cost.py on a two-session conversation: the counts it reports are the server's."""

from __future__ import annotations

import json

from bench.cost import format_table, run

CONVERSATION = [{
    "sample_id": "conv-test", "qa": [],
    "conversation": {
        "speaker_a": "Ann", "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I started a new job at Acme Robotics last week."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Congrats! What do you do there?"},
            {"speaker": "Ann", "dia_id": "D1:3", "text": "I build the control software for their warehouse arms."},
        ],
        "session_2_date_time": "10:00 am on 20 May, 2023",
        "session_2": [
            {"speaker": "Ben", "dia_id": "D2:1", "text": "My sister Carla is visiting from Lisbon this weekend."},
            {"speaker": "Ann", "dia_id": "D2:2", "text": "Have fun!"},
        ],
    },
}]


def test_cost_bench_counts_one_request_per_episode_against_per_message_baselines(tmp_path):
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(CONVERSATION))
    result = run(path, episodes=2, quiet=True)
    zep = result["systems"]["zep-memory (one call per episode)"]
    per_item = result["systems"]["per-message + per-item resolution (Graphiti style)"]
    assert (result["episodes"], result["messages"]) == (2, 5)
    assert zep["chat_requests_total"] == 2 and zep["chat_requests_per_episode"] == 1.0
    # 5 extraction calls (one per message); the 3 declarative messages give 3 facts with 5 entity
    # mentions (Ann + Acme Robotics, Ann, Ben + Carla): one resolution call each
    assert per_item["chat_requests_total"] == 5 + 5 + 3
    assert result["usage_reported_by_ingest_results"]["requests"] == 2
    assert result["usage_reported_by_ingest_results"]["prompt_tokens"] + \
        result["usage_reported_by_ingest_results"]["completion_tokens"] == zep["llm_tokens_total"]
    assert "one call per episode" in format_table(result)

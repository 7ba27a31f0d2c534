"""MemoryConfig: grouped, frozen and hashable settings that still take and give flat names."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest
from zep_core import ConfigError, Memory, MemoryConfig
from zep_core.config import (
    SPEC_SCORING,
    LimitSettings,
    ProviderSettings,
    ScoringSettings,
    StorageSettings,
)

KEY = "sk-very-secret-key"


def test_flat_keywords_are_routed_to_their_group():
    config = MemoryConfig(semantic_threshold=0.5, chroma_url="http://x", openai_api_key="k", max_message_chars=9)
    assert config.scoring == ScoringSettings(semantic_threshold=0.5)
    assert config.storage == StorageSettings(chroma_url="http://x")
    assert config.providers == ProviderSettings(openai_api_key="k")
    assert config.limits == LimitSettings(max_message_chars=9)


def test_a_flat_keyword_replaces_one_field_of_a_given_group():
    scoring = ScoringSettings(graph_hops=1, context_limit=5)
    config = MemoryConfig(scoring=scoring, semantic_threshold=0.4)
    assert config.scoring == ScoringSettings(graph_hops=1, context_limit=5, semantic_threshold=0.4)
    assert scoring.semantic_threshold == 0.1  # the given group is not changed


def test_flat_names_read_through_to_the_groups():
    config = MemoryConfig(index_writes="sync", strict_timezones=True, openai_api_key=KEY, graph_hops=1,
                          hop_scores=[1, 0.25])
    assert (config.index_writes, config.strict_timezones, config.openai_api_key) == ("sync", True, KEY)
    assert (config.graph_hops, config.hop_scores) == (1, (1.0, 0.25))
    assert (config.max_message_chars, config.request_timeout, config.busy_timeout_ms) == (100_000, 60.0, 5_000)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        config.nope  # noqa: B018


def test_top_level_settings_keep_their_defaults_and_coercions():
    config = MemoryConfig(single_valued_predicates=["lives_in"])
    assert config.single_valued_predicates == frozenset({"lives_in"})
    assert (config.data_dir, config.entity_refresh_interval, config.default_speaker) == ("./data",
                                                                                        timedelta(hours=6), "User")
    assert not hasattr(config, "extra")


def test_an_unknown_keyword_is_a_config_error_suggesting_the_closest_name():
    with pytest.raises(ConfigError, match=r"'semantic_treshold' \(did you mean 'semantic_threshold'\?\)"):
        MemoryConfig(semantic_treshold=0.5)
    with pytest.raises(ConfigError, match="unknown MemoryConfig settings: 'zzz', 'chroma' .*'chroma_url'"):
        MemoryConfig(zzz=1, chroma=2)


def test_memory_open_with_an_unknown_option_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="unknown_option"):
        Memory.open(tmp_path / "data", unknown_option=1)


def test_a_group_of_the_wrong_class_is_a_config_error():
    with pytest.raises(ConfigError, match="scoring must be a ScoringSettings, got dict"):
        MemoryConfig(scoring={"semantic_threshold": 0.5})


def test_configs_are_frozen_hashable_and_equal_when_their_settings_are():
    a = MemoryConfig(semantic_threshold=0.5, openai_api_key=KEY)
    b = MemoryConfig(scoring=ScoringSettings(semantic_threshold=0.5), providers=ProviderSettings(openai_api_key=KEY))
    assert a == b and hash(a) == hash(b) and hash(MemoryConfig()) == hash(MemoryConfig())
    assert a != MemoryConfig(semantic_threshold=0.6)
    assert {a: "cached"}[b] == "cached"
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.data_dir = "elsewhere"
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.scoring.semantic_threshold = 0.9


def test_with_changes_flat_and_group_names_and_refuses_unknown_ones():
    base = MemoryConfig(data_dir="/tmp/x", context_limit=5)
    changed = base.with_(semantic_threshold=0.6, chroma_url="http://c")
    assert (changed.semantic_threshold, changed.context_limit, changed.chroma_url) == (0.6, 5, "http://c")
    assert str(changed.data_dir) == "/tmp/x" and base.semantic_threshold == 0.1
    grouped = base.with_(storage=StorageSettings(index_writes="sync"), limits=LimitSettings(max_message_chars=7))
    assert (grouped.index_writes, grouped.max_message_chars, grouped.context_limit) == ("sync", 7, 5)
    assert base.with_() == base
    with pytest.raises(ConfigError, match="'sematic_weight' .*did you mean 'semantic_weight'"):
        base.with_(sematic_weight=1.0)


def test_spec_scoring_gives_the_same_config_both_ways():
    assert isinstance(SPEC_SCORING, ScoringSettings)
    assert (SPEC_SCORING.semantic_threshold, SPEC_SCORING.semantic_weight, SPEC_SCORING.graph_weight,
            SPEC_SCORING.graph_hops, SPEC_SCORING.context_limit) == (0.6, 0.7, 0.3, 2, 10)
    assert MemoryConfig(**SPEC_SCORING) == MemoryConfig(scoring=SPEC_SCORING)
    assert MemoryConfig(**SPEC_SCORING).scoring is not None and MemoryConfig(**SPEC_SCORING).semantic_threshold == 0.6
    assert dict(SPEC_SCORING)["hop_scores"] == (1.0, 0.5)
    with pytest.raises(KeyError):
        SPEC_SCORING["data_dir"]


def test_repr_never_shows_the_api_key():
    config = MemoryConfig(openai_api_key=KEY, semantic_threshold=0.5)
    assert KEY not in repr(config) and KEY not in str(config) and KEY not in repr(config.providers)
    assert "semantic_threshold=0.5" in repr(config)


def test_from_env_still_sets_the_endpoint_and_overrides_win():
    config = MemoryConfig.from_env({"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": "http://llm/v1"}, context_limit=3)
    assert (config.openai_api_key, config.openai_base_url, config.context_limit) == (KEY, "http://llm/v1", 3)
    assert config.providers == ProviderSettings(openai_api_key=KEY, openai_base_url="http://llm/v1")
    assert MemoryConfig.from_env({}) == MemoryConfig()


_WEIGHTS = "lexical_weight, lexical_context_weight, asker_weight, time_weight and count_weight must be >= 0"


@pytest.mark.parametrize(("bad", "message"), [
    ({"semantic_threshold": 1.5}, r"semantic_threshold must be in \[0, 1\], got 1.5"),
    ({"semantic_threshold": "0.5"}, "semantic_threshold must be in"),
    ({"graph_weight": -1}, "semantic_weight and graph_weight must be >= 0"),
    ({"graph_hops": 4}, "graph_hops must be 0..3, got 4"),
    ({"graph_hops": 3}, r"hop_scores needs one score per hop \(3\)"),
    ({"hop_scores": "12"}, "hop_scores must be a sequence of numbers"),
    ({"context_limit": 0}, "context_limit must be an integer >= 1, got 0"),
    ({"graph_candidates": "500"}, "graph_candidates must be an integer >= 1, got '500'"),
    ({"semantic_candidates": float("nan")}, "semantic_candidates must be an integer >= 1"),
    ({"max_messages_per_episode": True}, "max_messages_per_episode must be an integer >= 1"),
    ({"index_writes": "later"}, "index_writes must be 'background' or 'sync'"),
    ({"on_embedder_mismatch": "ignore"}, "on_embedder_mismatch must be 'error' or 'reembed'"),
    ({"chroma_url": 8000}, "chroma_url must be a string or None"),
    ({"extractor_provider": "qdrant"}, "extractor_provider must be 'auto', 'local' or 'openai'"),
    ({"request_timeout": "slow"}, "request_timeout must be > 0 seconds"),
    ({"max_retries": -1}, "max_retries must be >= 0, got -1"),
    ({"max_concurrency": 0}, "max_concurrency must be >= 1, got 0"),
    ({"embedding_dimensions": 0}, "embedding_dimensions must be >= 1, got 0"),
    ({"single_valued_predicates": "lives_in"}, "single_valued_predicates must be a collection"),
    ({"fusion": "max"}, "fusion must be 'rrf' or 'weighted', got 'max'"),
    ({"graph_mode": "flood"}, "graph_mode must be 'boost' or 'candidates'"),
    ({"graph_fit": "loud"}, "graph_fit must be 'auto', 'words' or 'cosine', got 'loud'"),
    ({"lexical_weight": -0.1}, _WEIGHTS),
    ({"asker_weight": "3"}, _WEIGHTS),
    ({"time_weight": -1}, _WEIGHTS),
    ({"count_weight": -2}, _WEIGHTS),
    ({"long_history_candidates": 0}, "long_history_candidates must be an integer >= 1, got 0"),
    ({"newer_first_similarity": 1.2}, r"newer_first_similarity must be in \[0, 1\]"),
    ({"rrf_k": 0}, "rrf_k must be an integer >= 1, got 0"),
    ({"lexical_candidates": 2.5}, "lexical_candidates must be an integer >= 1"),
    ({"assistant_speaker": ""}, "assistant_speaker must be a non-empty string or None"),
    ({"assistant_speaker": 7}, "assistant_speaker must be a non-empty string or None"),
])
def test_bad_values_are_config_errors_whichever_way_they_are_given(bad, message):
    with pytest.raises(ConfigError, match=message):
        MemoryConfig(**bad)
    with pytest.raises(ConfigError, match=message):
        MemoryConfig().with_(**bad)


def test_a_bad_api_key_type_is_refused_without_showing_it():
    with pytest.raises(ConfigError, match="openai_api_key must be a string or None, got a bytes") as caught:
        ProviderSettings(openai_api_key=KEY.encode())
    assert KEY not in str(caught.value)


def test_groups_validate_on_their_own_and_take_keywords_only():
    with pytest.raises(ConfigError, match="max_message_chars must be an integer >= 1"):
        LimitSettings(max_message_chars=0)
    with pytest.raises(TypeError):
        ScoringSettings(0.5)  # type: ignore[misc]


def test_chroma_process_is_a_yes_or_no_and_defaults_to_yes():
    assert MemoryConfig().chroma_process is True and MemoryConfig(chroma_process=False).storage.chroma_process is False
    with pytest.raises(ConfigError, match="chroma_process must be True or False, got 'no'"):
        MemoryConfig(chroma_process="no")

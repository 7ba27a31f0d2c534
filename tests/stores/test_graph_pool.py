"""Kùzu's buffer pool fits the graph: sized from it at open, and a write refused before the graph outgrows it.

Kùzu 0.11.3 fails a write ("the buffer pool is full"), or kills the process with a general
protection fault, once its graph outgrows its buffer pool (a 256 MB pool crashed a 100,000-tenant
build at a 300 MB graph; a 16 MB pool at 16 MB). The index sizes the pool from the graph when it
opens, and refuses a write with a StoreUnavailableError (the index writes stay queued) when the
graph has grown past most of it: a clear error and nothing lost, never a crash.
"""

from __future__ import annotations

import logging

import pytest
from zep_core import ConfigError, MemoryConfig
from zep_core.errors import StoreUnavailableError
from zep_core.stores.base import EntityNode
from zep_core.stores.graph import POOL_PER_GRAPH, KuzuGraphIndex, buffer_pool_for, default_buffer_pool_mb


def test_the_pool_is_raised_to_fit_a_graph_larger_than_asked(tmp_path, caplog):
    graph = tmp_path / "graph"
    with open(graph, "wb") as f:
        f.truncate(100 << 20)  # a 100 MB graph file (sparse: no disk used)
    with caplog.at_level(logging.WARNING, logger="zep_core"):
        assert buffer_pool_for(graph, 64) == POOL_PER_GRAPH * 100 + 1
    assert "its buffer pool is raised from 64 to 401 MB" in caplog.text
    assert buffer_pool_for(graph, 1024) == 1024  # enough already: as asked
    assert buffer_pool_for(tmp_path / "none", None) == default_buffer_pool_mb() >= 256


def test_a_write_past_most_of_the_pool_is_refused_and_the_next_open_makes_room(tmp_path):
    graph = KuzuGraphIndex(tmp_path / "graph", buffer_pool_mb=16)
    refused = None
    try:
        for batch in range(300):
            try:
                graph.upsert_entities(EntityNode(f"n{batch}-{i}", "u", f"name {batch} {i} " + "x" * 40, "thing")
                                      for i in range(2000))
            except StoreUnavailableError as exc:
                refused = (batch, str(exc))
                break
        assert refused is not None, "the graph never came near its pool"
        assert "near its buffer pool of 16 MB" in refused[1] and "index writes stay queued" in refused[1]
        nodes = len(graph.snapshot()[0])
    finally:
        graph.close()
    again = KuzuGraphIndex(tmp_path / "graph", buffer_pool_mb=16)  # the open raises the pool to fit
    try:
        assert again.buffer_pool_mb > 16
        again.upsert_entities([EntityNode("later", "u", "Later", "thing")])
        assert len(again.snapshot()[0]) == nodes + 1
    finally:
        again.close()


def test_the_setting_takes_megabytes_or_none():
    assert MemoryConfig().graph_buffer_pool_mb is None
    with pytest.raises(ConfigError, match="graph_buffer_pool_mb must be an integer >= 16"):
        MemoryConfig(graph_buffer_pool_mb=4)

"""The MCP server's tests run on both backends (their memories come from ``make_memory``)."""

from __future__ import annotations


def pytest_generate_tests(metafunc):
    from tests.pg import both_backends

    both_backends(metafunc)

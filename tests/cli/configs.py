"""Configurations loaded by `zep-memory --config tests.cli.configs:NAME` in the tests."""

from __future__ import annotations

from zep_core import MemoryConfig


class BrokenExtractor:
    """An extractor whose model endpoint is down: every episode stays pending."""

    needs_known_facts = False

    def extract(self, messages, context):
        raise ConnectionError("the extraction endpoint is unreachable")


def broken_extractor() -> MemoryConfig:
    return MemoryConfig(extractor=BrokenExtractor())


not_a_config = 42

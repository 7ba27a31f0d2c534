"""The examples in the docstrings of the rule modules run as written (they are the rules' documentation)."""

from __future__ import annotations

import doctest

import pytest
from zep_core import aio, names, resolve, temporal
from zep_core.providers import talk, timeparse
from zep_core.stores import backends


@pytest.mark.parametrize("module", [talk, temporal, resolve, timeparse, aio, names, backends], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0

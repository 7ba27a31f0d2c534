"""The core behaviour suites of :data:`tests.backends.ON_THE_DOUBLE` run on SQLite and on the store seam's double.

The double (:mod:`tests.stores.memory_backend`) reaches Memory through ``stores=``, the seam
real code uses. The suites about the real stores' own files and processes (recovery, the
stores, shared opens, Cypher isolation, the lexical index, Chroma's indexer, imports checked
against the files) are not listed there and run on the real stores only, as does a test marked
``data_folder``.
"""

from __future__ import annotations

from tests.backends import with_the_double


def pytest_generate_tests(metafunc):
    with_the_double(metafunc)

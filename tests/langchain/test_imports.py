import sys

import zep_langchain

EXPECTED_ALL = [
    "EndPolicy",
    "ZepChatMemory",
    "ZepChatMessageHistory",
    "ZepContext",
    "ZepEntityHistoryTool",
    "ZepMemoryMiddleware",
    "ZepRelatedEntitiesTool",
    "ZepRetriever",
    "ZepSearchMemoryTool",
    "ZepStore",
    "create_memory_tools",
]


def test_all_imports_are_pinned():
    assert sorted(zep_langchain.__all__) == EXPECTED_ALL
    for name in EXPECTED_ALL:
        assert getattr(zep_langchain, name) is not None


def test_core_does_not_import_langchain():
    import subprocess

    code = "import sys, zep_core; print(sorted(m for m in sys.modules if m.startswith('langchain')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"

import zep_llamaindex

EXPECTED_ALL = ["ZepMemory", "ZepMemoryBlock", "ZepRetriever", "create_memory_tools"]


def test_all_imports():
    assert sorted(zep_llamaindex.__all__) == sorted(EXPECTED_ALL)
    for name in EXPECTED_ALL:
        assert getattr(zep_llamaindex, name) is not None


def test_zep_core_does_not_import_llamaindex():
    import subprocess
    import sys

    code = "import sys, zep_core; print(any(m.startswith('llama_index') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

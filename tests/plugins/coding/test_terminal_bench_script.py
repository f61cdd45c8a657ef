"""Which sandbox a Terminal-Bench task gets when its test script installs what its tests import:
the bubblewrap path never runs the script, so such a task needs the container
(``plugins.coding.terminal_bench.script``). The published tasks of ../shared/data/terminal-bench
(skipped when absent) are the real cases: the two SPARQL tasks' ``run-tests.sh`` installs rdflib."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from core import eval as ev
from core.errors import UserError
from plugins.coding import terminal_bench as tb
from plugins.coding.terminal_bench.container import bwrap_refusal
from plugins.coding.terminal_bench.script import script_refusal

PUBLISHED = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "terminal-bench"


def need_published() -> None:
    if not (PUBLISHED / "tb1-core" / "sparql-university" / "run-tests.sh").is_file():
        pytest.skip(f"the published Terminal-Bench tasks are not at {PUBLISHED} (../shared/data is not present)")


@pytest.mark.parametrize("script, why", [
    (("apt-get update\napt-get install -y curl\ncurl -LsSf https://astral.sh/uv/0.7.13/install.sh | sh\nsource $HOME/.local/bin/env\n"
      "uv venv .tbench-testing\nuv pip install pytest==8.4.1\nuv run pytest $TEST_DIR/test_outputs.py -rA\n"), None),
    ("uvx \\\n  --with pytest==8.4.1 \\\n  --with pytest-json-ctrf==0.3.5 \\\n  pytest --ctrf /logs/verifier/ctrf.json /tests/test_state.py -rA\n", None),
    ("uv init\nuv add pytest==8.4.1\n# uv pip install rdflib==7.1.4 (a comment)\n", None),
    ("uv pip install pytest==8.4.1\n\nuv pip install rdflib==7.1.4\n", ":3: its tests need rdflib==7.1.4 (pip install rdflib==7.1.4 installs what Horizon's Python does not have)"),
    ("uvx \\\n  --with pytest==8.4.1 \\\n  --with surely-not-installed-horizon-pkg \\\n  pytest /tests\n", ":1: its tests need surely-not-installed-horizon-pkg"),
    ("set -e\nsudo apt-get install -y --no-install-recommends curl sqlite3 && pytest\n", ":2: its tests need the Debian packages sqlite3"),
    ("cd /app; python3 -m pip install -q -r /tests/requirements.txt\n", ":1: its tests need /tests/requirements.txt (pip install -r installs from files"),
    ("pip install numpy==0.0.1 pytest\n", ":1: its tests need numpy==0.0.1 (pip install numpy==0.0.1; Horizon's Python has numpy"),
])  # fmt: skip
def test_what_a_test_script_installs_for_its_tests_is_read(tmp_path, script, why):
    path = tmp_path / "run-tests.sh"
    path.write_text("#!/bin/bash\n" + script)
    found = script_refusal(path)
    if why is None:
        assert found is None, found
    else:
        assert found is not None and found.startswith(f"{path}:"), found
        line, _, rest = why.partition(":")[2].partition(":")
        assert found.startswith(f"{path}:{int(line) + 1}:{rest}"), found  # + 1: the #! line
        assert found.endswith("which its test script installs (only a container runs it)")


def test_bubblewrap_refuses_a_task_whose_test_script_installs_what_horizon_lacks(tmp_path, monkeypatch):
    folder = tmp_path / "tb1"
    (folder / "tests").mkdir(parents=True)
    (folder / "task.yaml").write_text("instruction: Write the answer to /app/answer.txt.\n")
    (folder / "Dockerfile").write_text("FROM ghcr.io/laude-institute/t-bench/ubuntu-24-04:20250624\nWORKDIR /app\n")
    (folder / "run-tests.sh").write_text(textwrap.dedent("""\
        #!/bin/bash
        uv venv .tbench-testing
        source .tbench-testing/bin/activate
        uv pip install pytest==8.4.1 surely-not-installed-horizon-pkg==1.0
        uv run pytest $TEST_DIR/test_outputs.py -rA
    """))
    (folder / "tests" / "test_outputs.py").write_text("def test_answer():\n    assert open('/app/answer.txt').read() == '42\\n'\n")
    task = tb.read_task(folder)
    assert task.refusal is None  # the Dockerfile alone would suit the bubblewrap sandbox
    assert bwrap_refusal(task) == (f"{folder / 'run-tests.sh'}:4: its tests need surely-not-installed-horizon-pkg==1.0 "
                                   "(pip install surely-not-installed-horizon-pkg==1.0 installs what Horizon's Python does not have), "
                                   "which its test script installs (only a container runs it)")  # fmt: skip
    monkeypatch.setenv(tb.SANDBOX_VARIABLE, "bwrap")
    with pytest.raises(UserError, match=r"run-tests.sh:4: its tests need surely-not-installed-horizon-pkg==1.0 .*: it needs a container"):
        ev.load_task(folder)
    (folder / "run-tests.sh").write_text("#!/bin/bash\nuv pip install pytest==8.4.1\nuv run pytest $TEST_DIR/test_outputs.py -rA\n")
    assert bwrap_refusal(tb.read_task(folder)) is None  # pytest alone: Horizon's pytest grades it
    assert ev.load_task(folder).metadata["terminal_bench"]["sandbox"] == "bwrap"


def test_the_published_tasks_that_need_a_container_for_their_tests_get_one():
    need_published()
    for name in ("sparql-university", "sparql-professors-universities"):
        why = bwrap_refusal(tb.read_task(PUBLISHED / "tb1-core" / name))
        assert why is not None and "run-tests.sh:" in why and "its tests need rdflib==7.1.4" in why, why
    for folder in [PUBLISHED / "harbor-cookbook" / "simple-task", PUBLISHED / "tb1-core" / "regex-log", *sorted((PUBLISHED / "evoeval").iterdir())]:
        if folder.is_dir():
            assert bwrap_refusal(tb.read_task(folder)) is None, folder  # they install pytest only


def test_a_multi_step_harbor_task_is_refused_as_such(tmp_path):
    folder = tmp_path / "multi"
    (folder / "environment").mkdir(parents=True)
    (folder / "steps" / "scaffold").mkdir(parents=True)
    (folder / "task.toml").write_text('schema_version = "1.1"\n[environment]\nworkdir = "/app"\n')
    (folder / "environment" / "Dockerfile").write_text("FROM ubuntu:24.04\nWORKDIR /app\n")
    (folder / "steps" / "scaffold" / "instruction.md").write_text("Make greet.sh.\n")
    assert tb.detect_layout(folder) == tb.LAYOUT_TB2  # not read as a Horizon task.toml missing its instruction
    with pytest.raises(UserError, match=r"multi/steps: a multi-step task .* its steps are not run by Horizon"):
        ev.load_task(folder)


def test_a_terminal_bench_1_report_is_read_from_its_short_test_summary_only():
    """The published jupyter-notebook-server's report: its server logs an ERROR line that pytest
    shows under "Captured log"; it is no test (Terminal-Bench 1's parser reads the summary only)."""
    from plugins.coding.terminal_bench.verify import pytest_summary_outcomes

    report = textwrap.dedent("""\
        ============================= test session starts ==============================
        collected 2 items

        ../tests/test_outputs.py ..                                              [100%]

        ==================================== PASSES ====================================
        ____________________________ test_jupyter_server_running _______________________
        ------------------------------ Captured log call -------------------------------
        ERROR    traitlets:__init__.py:98 Config option `token` not recognized by `ServerApp`.
        PASSED   not-a-test: a log line in PASSES
        =========================== short test summary info ============================
        PASSED ../tests/test_outputs.py::test_jupyter_server_running
        FAILED ../tests/test_outputs.py::test_password_authentication - AssertionError: no
        ============================== 1 failed, 1 passed in 3.10s =====================
    """)
    assert pytest_summary_outcomes(report) == {
        "../tests/test_outputs.py::test_jupyter_server_running": "PASSED",
        "../tests/test_outputs.py::test_password_authentication": "FAILED",
    }
    assert pytest_summary_outcomes(report.split("=========================== short")[0]) == {}  # no summary: no tests

"""The loop end to end on the real coding plugin, where the subject is coding behaviour: a scripted
fix that is verified by the repository's tests and applied (``agent apply``), a test edit the
reward refuses, and ``view_file`` fitting its output to the call budget. Moved unchanged from
``tests/core/test_loop.py``, which tests the loop itself on the test plugin (``notes``)."""

import shutil
from contextlib import closing
from pathlib import Path

import pytest

from core.plugin import Task
from core.policy import ScriptedPolicy, load_script
from core.runner import Run, RunResult, apply_run, open_store
from core.state import ExitStatus, Limits, Pricing

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
FINISH = {"tool": "finish", "arguments": {"summary": "done"}}


@pytest.fixture
def java_repo(tmp_path) -> Path:
    """A private copy of examples/java-user-service (a path: this folder's conftest gives a ``Repo``)."""
    return Path(shutil.copytree(EXAMPLES / "java-user-service", tmp_path / "java-user-service"))


@pytest.fixture
def python_repo(tmp_path) -> Path:
    """A private copy of examples/python-user-service (a path: this folder's conftest gives a ``Repo``)."""
    return Path(shutil.copytree(EXAMPLES / "python-user-service", tmp_path / "python-user-service"))


def run(repo: Path, turns: list[dict], pricing: Pricing | None = None, **limits) -> RunResult:
    started = Run.start(
        Task(plugin="coding", instruction="fix NPE in user module", repo=repo), ScriptedPolicy(turns),
        policy_config={"kind": "scripted", "script": "inline"}, limits=Limits(**limits), pricing=pricing or Pricing(),
    )
    try:
        return started.execute()
    finally:
        started.close()


def tool_outputs(run_id: str) -> list[str]:
    with closing(open_store(run_id)) as store:
        return [m.content for m in store.messages() if m.role == "tool"]


def test_scripted_java_fix_is_verified_and_applies(java_repo):
    result = run(java_repo, load_script(EXAMPLES / "scripts" / "fix-java-npe.jsonl"))
    assert result.status == "finished"
    assert result.exit_status == ExitStatus.SUBMITTED
    assert result.reward == 1.0
    patch = result.patch_path.read_text()
    assert "UserService.java" in patch and "getNickname() == null" in patch
    source = java_repo / "src/main/java/com/example/users/UserService.java"
    assert "getNickname().trim();" in source.read_text()  # untouched until applied
    with closing(open_store(result.run_id)) as store:
        rewards = store.rewards()
        steps = store.steps()
        row = store.run()
    assert rewards["fail_to_pass"]["value"] == 1.0
    after = rewards["fail_to_pass"]["detail"]["after"]
    assert after["com.example.users.UserServiceTest#displayNameFallsBackToFullNameWhenNicknameMissing"] == "passed"
    assert all(outcome == "passed" for outcome in after.values()) and len(after) >= 10
    assert [s["step"] for s in steps] == [1, 2, 3, 4, 5, 6]
    assert [c["tool"] for s in steps for c in s["tool_calls"]] == [
        "search_code", "view_file", "run_tests", "edit_file", "run_tests", "finish"]
    assert row["exit_status"] == "submitted" and row["steps"] == 6
    apply_run(result.run_id)
    assert "getNickname() == null" in source.read_text()


def test_scripted_python_fix(python_repo):
    result = run(python_repo, load_script(EXAMPLES / "scripts" / "fix-python-npe.jsonl"))
    assert (result.exit_status, result.reward) == (ExitStatus.SUBMITTED, 1.0)


def test_editing_a_test_file_gives_no_reward(python_repo):
    edit = {"tool": "edit_file", "arguments": {
        "path": "tests/test_service.py", "old_text": "def test_display_name_falls_back_to_full_name_when_nickname_missing",
        "new_text": "def skip_display_name_falls_back_to_full_name_when_nickname_missing"}}
    result = run(python_repo, [edit, FINISH])
    assert result.exit_status == ExitStatus.SUBMITTED
    assert result.reward == 0.0
    with closing(open_store(result.run_id)) as store:
        assert store.rewards()["tests_untouched"]["detail"]["edited"] == ["tests/test_service.py"]


def test_view_file_fits_its_output_to_the_call_budget_on_whole_lines(python_repo):
    (python_repo / "big.txt").write_text("".join(f"line {i:04d} " + "x" * 90 + "\n" for i in range(1, 201)))
    view = {"tool": "view_file", "arguments": {"path": "big.txt", "start_line": 1, "end_line": 200}}
    result = run(python_repo, [view, FINISH])
    lines = tool_outputs(result.run_id)[0].split("\n\n[")[0].splitlines()  # the budget note follows a blank line
    assert sum(len(line) + 1 for line in lines) <= 8000
    shown = int(lines[0].split("-")[1].split(" ")[0])
    assert lines[0] == f"big.txt (lines 1-{shown} of 200)" and 60 < shown < 200
    assert lines[-2] == f"{shown:>3}\tline {shown:04d} " + "x" * 90
    # lines of one length: the next call fits as many again, and the note says it will not show all the rest
    assert lines[-1] == (f"[lines {shown + 1}-200 of 200 not shown (this call's output is limited to 8,000 characters); "
                         f"view_file path=big.txt start_line={shown + 1} end_line={2 * shown} shows the next {shown} of them]")  # fmt: skip
    assert not (result.patch_path.parent / "workspace" / ".horizon" / "observations").exists()  # nothing for the loop to cut

"""The loop end to end with a scripted policy, the real sandbox and run store: limits, malformed
output, stuck detection and resume on the test plugin (``notes``); fixes that are verified, test
edits that are refused and ``view_file``'s budget on the real coding plugin."""

import json
import re
from contextlib import closing
from pathlib import Path

from core.plugin import Task
from core.policy import ScriptedPolicy, load_script
from core.runner import Run, RunResult, apply_run, open_store
from core.state import ExitStatus, Limits, Pricing, ToolCall

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
VIEW = {"tool": "view_file", "arguments": {"path": "users/service.py", "start_line": 1, "end_line": 5}}
#: The same call for the notes plugin (``tests/notes_plugin``).
NOTE_VIEW = {"tool": "view_file", "arguments": {"path": "log.md", "start_line": 1, "end_line": 2}}
FINISH = {"tool": "finish", "arguments": {"summary": "done"}}


def run(repo: Path, turns: list[dict], pricing: Pricing | None = None, plugin: str = "coding", **limits) -> RunResult:
    started = Run.start(
        Task(plugin=plugin, instruction="fix NPE in user module", repo=repo), ScriptedPolicy(turns),
        policy_config={"kind": "scripted", "script": "inline"}, limits=Limits(**limits), pricing=pricing or Pricing(),
    )
    try:
        return started.execute()
    finally:
        started.close()


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


def test_step_limit(notes_folder, notes_plugin):
    result = run(notes_folder, [NOTE_VIEW] * 5, max_steps=3, plugin=notes_plugin)
    assert result.exit_status == ExitStatus.STEP_LIMIT and result.steps == 3
    assert result.reward == 0.0  # verified: ANSWER.txt still says todo
    assert "3 steps" in result.exit_detail


def test_token_limit(notes_folder, notes_plugin):
    turn = {**NOTE_VIEW, "usage": {"prompt_tokens": 500, "completion_tokens": 100}}
    result = run(notes_folder, [turn] * 5, max_tokens=1000, plugin=notes_plugin)
    assert result.exit_status == ExitStatus.TOKEN_LIMIT and result.steps == 2
    assert result.state.usage.total_tokens == 1200


def test_cost_limit(notes_folder, notes_plugin):
    turn = {**NOTE_VIEW, "usage": {"prompt_tokens": 1000, "cached_prompt_tokens": 500, "completion_tokens": 100}}
    pricing = Pricing(input_per_mtok=1000.0, cached_input_per_mtok=100.0, output_per_mtok=2000.0)
    result = run(notes_folder, [turn] * 5, pricing=pricing, max_cost=1.5, plugin=notes_plugin)
    # per step: 500 uncached * 1000 + 500 cached * 100 + 100 out * 2000, per million = 0.75
    assert result.exit_status == ExitStatus.COST_LIMIT and result.steps == 2
    assert abs(result.state.cost - 1.5) < 1e-9


def test_time_limit(notes_folder, notes_plugin):
    result = run(notes_folder, [NOTE_VIEW] * 5, max_wall_s=0.000001, plugin=notes_plugin)
    assert result.exit_status == ExitStatus.TIME_LIMIT and result.steps == 1


def test_malformed_outputs_become_observations_and_are_capped(notes_folder, notes_plugin):
    turns = [
        {"tool": "no_such_tool", "arguments": {}},
        {"tool": "view_file", "raw_arguments": "{\"path\": "},
        {"content": "I will look at the code"},
        NOTE_VIEW,
    ]
    result = run(notes_folder, turns, max_format_errors=3, plugin=notes_plugin)
    assert result.exit_status == ExitStatus.FORMAT_ERRORS and result.steps == 3
    with closing(open_store(result.run_id)) as store:
        observations = [m.content for m in store.messages() if m.role in ("tool", "user")][1:]
    assert "unknown tool 'no_such_tool'" in observations[0] and "view_file" in observations[0]
    assert "not valid JSON" in observations[1]
    assert "no tool call" in observations[2]


def test_a_valid_call_resets_the_malformed_count(notes_folder, notes_plugin):
    bad = {"tool": "nope", "arguments": {}}
    result = run(notes_folder, [bad, bad, NOTE_VIEW, bad, bad, FINISH], max_format_errors=3, plugin=notes_plugin)
    assert result.exit_status == ExitStatus.SUBMITTED and result.steps == 6


def test_editing_a_test_file_gives_no_reward(python_repo):
    edit = {"tool": "edit_file", "arguments": {
        "path": "tests/test_service.py", "old_text": "def test_display_name_falls_back_to_full_name_when_nickname_missing",
        "new_text": "def skip_display_name_falls_back_to_full_name_when_nickname_missing"}}
    result = run(python_repo, [edit, FINISH])
    assert result.exit_status == ExitStatus.SUBMITTED
    assert result.reward == 0.0
    with closing(open_store(result.run_id)) as store:
        assert store.rewards()["tests_untouched"]["detail"]["edited"] == ["tests/test_service.py"]


def test_dead_policy_stops_resumably_and_resume_finishes(notes_folder, notes_plugin, tmp_path):
    script = tmp_path / "s.jsonl"
    script.write_text(json.dumps(NOTE_VIEW) + "\n")
    started = Run.start(
        Task(plugin=notes_plugin, instruction="fix", repo=notes_folder), ScriptedPolicy.from_file(script),
        policy_config={"kind": "scripted", "script": str(script)}, limits=Limits(), pricing=Pricing(),
    )
    first = started.execute()
    started.close()
    assert first.status == "model_error" and first.exit_status == ExitStatus.MODEL_ERROR
    assert "agent resume" in first.exit_detail and first.reward is None
    with script.open("a") as f:
        f.write(json.dumps(FINISH) + "\n")  # the "server" is back
    from core.config import load_settings

    reopened = Run.open(first.run_id, settings=load_settings())
    second = reopened.execute()
    reopened.close()
    assert second.status == "finished" and second.exit_status == ExitStatus.SUBMITTED and second.steps == 2
    with closing(open_store(first.run_id)) as store:
        assert [s["step"] for s in store.steps()] == [1, 2]


def tool_outputs(run_id: str) -> list[str]:
    with closing(open_store(run_id)) as store:
        return [m.content for m in store.messages() if m.role == "tool"]


def test_a_long_output_is_cut_on_lines_naming_the_missing_ones_and_the_call_that_shows_them(python_repo):
    script = "for i in $(seq 1 400); do printf 'line %04d %s\\n' $i xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; done"
    result = run(python_repo, [{"tool": "shell", "arguments": {"command": script}}, FINISH])
    observation = tool_outputs(result.run_id)[0]
    assert len(observation) < 8200 and ".horizon/observations/call-1.txt" in observation
    note = re.search(r"\[lines (\d+)-(\d+) of (\d+) not shown \(one call's output is cut at 8,000 characters\); "
                     r"view_file path=\.horizon/observations/call-1\.txt start_line=(\d+) end_line=(\d+) shows them\]", observation)
    assert note, observation[3000:5000]
    first, last, total = int(note[1]), int(note[2]), int(note[3])
    assert (int(note[4]), int(note[5])) == (first, last) and total == 402  # exit code, "--- stdout ---", 400 lines
    kept = observation.splitlines()
    assert all(len(line) < 200 for line in kept)  # whole lines, never a line cut in its middle
    numbered = {int(line[5:9]) for line in kept if line.startswith("line ")}
    assert numbered == set(range(1, first - 2)) | set(range(last - 1, 401))  # output line n is "line n-2"
    full = result.patch_path.parent / "workspace" / ".horizon" / "observations" / "call-1.txt"
    from plugins.coding.files import view_file

    shown = view_file(full.parents[2], full, first, last).splitlines()
    assert shown[1] == f"{first:>3}\tline {first - 2:04d} " + "x" * 50  # the named call shows exactly the missing lines
    assert ".horizon" not in result.patch_path.read_text()  # never part of the patch


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


def test_every_call_of_a_reply_has_its_own_output_budget(python_repo):
    for name in ("a", "b", "c"):
        (python_repo / f"{name}.txt").write_text("".join(f"{name} {i:03d} " + "y" * 90 + "\n" for i in range(1, 71)))
    views = [{"tool": "view_file", "arguments": {"path": f"{name}.txt"}} for name in ("a", "b", "c")]
    result = run(python_repo, [{"tool_calls": views}, FINISH])
    outputs = tool_outputs(result.run_id)[:3]
    assert sum(map(len, outputs)) > 20_000  # three calls, each about 7,000 characters: more than one budget
    for name, output in zip(("a", "b", "c"), outputs, strict=True):
        assert output.startswith(f"{name}.txt (lines 1-70 of 70)") and f"70\t{name} 070" in output
        assert "not shown" not in output


def test_calls_with_missing_or_repeated_ids_each_get_their_own_observation(notes_folder, notes_plugin):
    from core.policy.base import PolicyResponse
    from core.state import Message, ToolCall

    class SameIds:
        """A server that reuses one empty id for every call."""

        name = "same-ids"

        def complete(self, messages, tools):
            n = sum(1 for m in messages if m["role"] == "assistant")
            name = "finish" if n == 1 else "view_file"
            args = '{"summary": "x"}' if n == 1 else '{"path": "log.md", "end_line": 2}'
            return PolicyResponse(message=Message(role="assistant", tool_calls=[ToolCall(id="", name=name, arguments=args)] * (1 if n else 2)))

    started = Run.start(Task(plugin=notes_plugin, instruction="x", repo=notes_folder), SameIds(), policy_config={"kind": "test"},
                        limits=Limits(), pricing=Pricing())
    result = started.execute()
    started.close()
    assert result.exit_status == ExitStatus.SUBMITTED and result.steps == 2
    with closing(open_store(result.run_id)) as store:
        tool_messages = [m for m in store.messages() if m.role == "tool"]
        calls = [c for m in store.messages() if m.role == "assistant" for c in m.tool_calls]
    assert len(tool_messages) == 3 and len({m.tool_call_id for m in tool_messages}) == 3
    assert [m.tool_call_id for m in tool_messages] == [c.id for c in calls]


def test_a_stuck_agent_is_warned_then_stopped(notes_folder, notes_plugin):
    result = run(notes_folder, [NOTE_VIEW] * 8 + [FINISH], plugin=notes_plugin)
    assert result.exit_status == ExitStatus.STUCK and result.steps == 5, result.exit_detail
    assert "same call with the same result 5 times" in result.exit_detail
    with closing(open_store(result.run_id)) as store:
        observations = [m.content for m in store.messages() if m.role == "tool"]
    assert "Warning: the same call with the same result 3 times" in observations[2]
    assert all("Warning" not in o for o in observations[:2] + observations[3:4])
    assert observations[0].endswith("\n\n[29 steps and 2,000,000 tokens left]")  # the budget closes each step
    assert observations[1].endswith("\n\n[28 steps and 2,000,000 tokens left]")


def test_alternating_between_two_actions_is_stopped(notes_folder, notes_plugin):
    other = {"tool": "view_file", "arguments": {"path": "log.md", "start_line": 2, "end_line": 2}}
    result = run(notes_folder, [NOTE_VIEW, other] * 8 + [FINISH], max_steps=30, plugin=notes_plugin)
    assert result.exit_status == ExitStatus.STUCK and "alternating" in result.exit_detail and result.steps == 10


def test_a_reply_cut_at_the_token_limit_is_named_as_such(notes_folder, notes_plugin):
    from core.policy.base import PolicyResponse
    from core.state import Message

    class CutOff:
        name = "cut-off"

        def complete(self, messages, tools):
            if sum(m["role"] == "assistant" for m in messages) == 0:
                return PolicyResponse(message=Message(role="assistant", content='{"name": "apply_patch", "arguments": {"patch": "--- a'),
                                      finish_reason="length")
            return PolicyResponse(message=Message(role="assistant", tool_calls=[ToolCall(id="f", name="finish", arguments="{}")]))

    started = Run.start(Task(plugin=notes_plugin, instruction="x", repo=notes_folder), CutOff(), policy_config={"kind": "test"},
                        limits=Limits(), pricing=Pricing())
    result = started.execute()
    started.close()
    with closing(open_store(result.run_id)) as store:
        nudge = [m for m in store.messages() if m.role == "user"][1].content
    assert nudge.startswith("Your reply was cut off at the completion-token limit")

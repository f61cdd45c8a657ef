"""The loop end to end with a scripted policy, the real sandbox and run store on the test plugin
(``notes``, ``tests/notes_plugin``): limits, malformed output, stuck detection, resume and the cap on
one call's output. What is coding behaviour (a fix verified by the repository's tests and applied,
a test edit the reward refuses, ``view_file`` fitting its own output to the budget) is tested in
``tests/plugins/coding/test_coding_loop.py``."""

import json
import re
from contextlib import closing
from pathlib import Path

from core.plugin import Task
from core.policy import ScriptedPolicy
from core.runner import Run, RunResult, open_store
from core.state import ExitStatus, Limits, Pricing, ToolCall
from core.tools import ToolContext

#: A read of the notes folder's ``log.md`` (``notes_folder`` fixture).
NOTE_VIEW = {"tool": "view_file", "arguments": {"path": "log.md", "start_line": 1, "end_line": 2}}
FINISH = {"tool": "finish", "arguments": {"summary": "done"}}


def run(repo: Path, turns: list[dict], pricing: Pricing | None = None, plugin: str = "notes", **limits) -> RunResult:
    started = Run.start(
        Task(plugin=plugin, instruction="write done in ANSWER.txt", repo=repo), ScriptedPolicy(turns),
        policy_config={"kind": "scripted", "script": "inline"}, limits=Limits(**limits), pricing=pricing or Pricing(),
    )
    try:
        return started.execute()
    finally:
        started.close()


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


def test_a_long_output_is_cut_on_lines_naming_the_missing_ones_and_the_call_that_shows_them(notes_folder, notes_plugin):
    script = "for i in $(seq 1 400); do printf 'line %04d %s\\n' $i xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; done"
    result = run(notes_folder, [{"tool": "shell", "arguments": {"command": script}}, FINISH], plugin=notes_plugin)
    observation = tool_outputs(result.run_id)[0]
    assert len(observation) < 8200 and ".horizon/observations/call-1.txt" in observation
    note = re.search(r"\[lines (\d+)-(\d+) of (\d+) not shown \(one call's output is cut at 8,000 characters\); "
                     r"view_file path=\.horizon/observations/call-1\.txt start_line=(\d+) end_line=(\d+) shows them\]", observation)
    assert note, observation[3000:5000]
    first, last, total = int(note[1]), int(note[2]), int(note[3])
    assert (int(note[4]), int(note[5])) == (first, last) and total == 401  # 400 lines, then notes' "[exit 0]"
    kept = observation.splitlines()
    assert all(len(line) < 200 for line in kept)  # whole lines, never a line cut in its middle
    numbered = {int(line[5:9]) for line in kept if line.startswith("line ")}
    assert numbered == set(range(1, first)) | set(range(last + 1, 401))  # output line n is "line n"
    workspace = result.patch_path.parent / "workspace"
    from horizon_notes import view_file  # the plugin's reads_lines tool, which the note names

    ctx = ToolContext(workspace=workspace, sandbox=None, scratch=workspace)  # type: ignore[arg-type]
    shown = view_file.fn(view_file.parse(json.dumps({"path": ".horizon/observations/call-1.txt", "start_line": first, "end_line": last})), ctx)
    shown_lines = str(shown).splitlines()
    assert len(shown_lines) == last - first + 1  # the named call shows exactly the missing lines
    assert shown_lines[0] == f"{first}: line {first:04d} " + "x" * 50 and shown_lines[-1].startswith(f"{last}: line {last:04d} ")
    assert ".horizon" not in result.patch_path.read_text()  # never part of the patch


def test_every_call_of_a_reply_has_its_own_output_budget(notes_folder, notes_plugin):
    for name in ("a", "b", "c"):
        (notes_folder / f"{name}.txt").write_text("".join(f"{name} {i:03d} " + "y" * 90 + "\n" for i in range(1, 71)))
    views = [{"tool": "view_file", "arguments": {"path": f"{name}.txt"}} for name in ("a", "b", "c")]
    result = run(notes_folder, [{"tool_calls": views}, FINISH], plugin=notes_plugin)
    outputs = tool_outputs(result.run_id)[:3]
    assert sum(map(len, outputs)) > 20_000  # three calls, each about 7,000 characters: more than one budget
    for name, output in zip(("a", "b", "c"), outputs, strict=True):
        assert output.startswith(f"1: {name} 001") and f"\n70: {name} 070" in output
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


def test_a_small_model_is_offered_the_plugins_short_tool_list(notes_folder, notes_plugin):
    """Issue 30: a policy marked ``small_model`` (the embedded 135M model) gets the plugin's
    ``small_model_tools``; any other policy gets every tool; a short list naming no tool is refused."""
    import pytest

    from core.errors import PluginContractError
    from core.plugin import check_plugin, load_plugin

    class Recording(ScriptedPolicy):
        small_model = True

        def __init__(self, turns):
            super().__init__(turns)
            self.offered: list[list[str]] = []

        def complete(self, messages, tools):
            self.offered.append([t["function"]["name"] for t in tools])
            return super().complete(messages, tools)

    plugin = load_plugin(notes_plugin)
    plugin.small_model_tools = ("view_file", "finish")
    check_plugin(plugin, "notes")  # the contract accepts it
    turns = [{"tool": "view_file", "arguments": {"path": "log.md"}}, {"tool": "finish", "arguments": {"summary": "x"}}]
    for small, expected in ((True, ["view_file", "finish"]), (False, ["view_file", "write_file", "edit_file", "shell", "finish"])):
        policy = Recording(turns)
        policy.small_model = small
        started = Run.start(Task(plugin=notes_plugin, instruction="x", repo=notes_folder), policy, policy_config={"kind": "test"},
                            limits=Limits(), pricing=Pricing(), plugin=plugin)
        result = started.execute()
        started.close()
        assert result.exit_status == ExitStatus.SUBMITTED
        assert policy.offered == [expected, expected], (small, policy.offered)
    plugin.small_model_tools = ("view_file", "grep")
    with pytest.raises(PluginContractError, match=r"small_model_tools.*names no tool of the plugin: \['grep'\]"):
        check_plugin(plugin, "notes")

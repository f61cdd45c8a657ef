"""History compaction in a real run: the prefix stays stable between compactions, and resumes rebuild it."""

import json
from contextlib import closing
from pathlib import Path

from core import compaction
from core.config import load_settings
from core.plugin import Task
from core.policy import ScriptedPolicy
from core.runner import Run, open_store
from core.state import ExitStatus, Limits, Message, Pricing, ToolCall


class Recording(ScriptedPolicy):
    """The scripted policy, keeping a copy of every request it was sent."""

    def __init__(self, turns):
        super().__init__(turns)
        self.requests: list[list[dict]] = []

    def complete(self, messages, tools):
        self.requests.append(json.loads(json.dumps(messages)))
        return super().complete(messages, tools)


def script(n_edits: int) -> list[dict]:
    turns = []
    for i in range(n_edits):
        turns.append({"content": f"Adding entry {i} to the log.",
                      "tool": "edit_file", "arguments": {"path": "log.md", "old_text": "<!-- end -->", "new_text": f"entry {i}\n<!-- end -->"}})
        turns.append({"tool": "view_file", "arguments": {"path": "log.md"}})
    turns.append({"tool": "finish", "arguments": {"summary": "done"}})
    return turns


def make_repo(root: Path) -> Path:
    root.mkdir()
    (root / "log.md").write_text("# Log\n" + "padding line to make the views long enough\n" * 20 + "<!-- end -->\n")
    return root


def test_a_long_episode_is_compacted_and_the_prefix_changes_only_at_compactions(tmp_path, notes_plugin):
    turns = script(14)
    policy = Recording(turns)
    script_file = tmp_path / "script.jsonl"
    script_file.write_text("".join(json.dumps(t) + "\n" for t in turns))
    started = Run.start(Task(plugin=notes_plugin, instruction="keep a log", repo=make_repo(tmp_path / "repo")), policy,
                        policy_config={"kind": "scripted", "script": str(script_file)},
                        limits=Limits(max_steps=40, compact_at_tokens=2500), pricing=Pricing(), home=tmp_path / "home")
    result = started.execute()
    started.close()
    assert result.exit_status == ExitStatus.SUBMITTED and result.steps == len(turns)  # the script replayed in order
    assert (started.folder / "workspace" / "log.md").read_text().count("entry ") == 14

    with closing(open_store(result.run_id, home=tmp_path / "home")) as store:
        history = store.messages()
    summaries = [i for i, m in enumerate(history) if compaction.is_compaction(m)]
    assert len(summaries) >= 2  # recorded in the trajectory, and more than once in 29 steps

    changes = 0
    for before, after in zip(policy.requests, policy.requests[1:]):
        if after[: len(before)] != before:  # not an append: only a compaction may do that
            changes += 1
            assert after[2]["content"].startswith("[Compacted: steps 1-")
            assert after[:2] == before[:2]  # system prompt and task never change
    assert changes == len(summaries)
    for request in policy.requests:
        assert compaction.estimate_tokens(request) < 2500 + 1500  # bounded: budget plus one step's growth

    last = history[summaries[-1]].content
    assert "Files changed so far: log.md" in last and "edit_file(" in last and "Adding entry" in last
    covered = compaction.compacted_steps(last)
    assert 0 < covered < result.steps

    # a resumed run sends exactly what the uninterrupted one sent
    reopened = Run.open(result.run_id, settings=load_settings(), home=tmp_path / "home")
    wire = reopened.episode._wire
    reopened.close()
    final_request = policy.requests[-1]
    assert wire[: len(final_request)] == final_request


def test_summary_keeps_paths_and_notes_and_respects_its_bound():
    history = [Message(role="system", content="s"), Message(role="user", content="task")]
    for step in range(1, 41):
        call = ToolCall(id=f"c{step}", name="edit_file", arguments=json.dumps({"path": f"src/m{step}.py", "old_text": "a", "new_text": "b"}))
        history.append(Message(role="assistant", content=f"Decision {step}: patch module {step}.", tool_calls=[call]))
        history.append(Message(role="tool", content="edited\n" * 50, tool_call_id=f"c{step}", name="edit_file"))
    kept = compaction.keep_from(history, keep_steps=4, previous=2)
    assert history[kept].role == "assistant" and sum(m.role == "assistant" for m in history[kept:]) == 4
    text = compaction.summarize(history, kept, max_chars=3000)
    assert len(text) <= 3000 and compaction.compacted_steps(text) == 36
    assert "src/m36.py" in text  # the most recent summarised action survives the bound
    assert "Files changed so far: src/m1.py" in text  # every changed path, oldest first
    assert compaction.keep_from(history[:10], keep_steps=4, previous=2) is None  # nothing to drop yet

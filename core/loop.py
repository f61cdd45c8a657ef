"""The long-horizon loop as a LangGraph ``StateGraph``.

    START -> model -> tools -> check --(not done)--> model
                                    \\--(done)-----> verify -> END

- ``model``: one policy call; the assistant turn is written to the run store before the node ends.
- ``tools``: runs the turn's tool calls in order, each observation written to the run store as
  soon as its call returns; malformed calls (unknown tool, bad arguments, no call at all)
  become observations that say what was wrong, and are counted.
- ``check``: the termination check: finish called, or a step, token, time, cost or
  malformed-output limit reached; each sets its own ``ExitStatus``. The stuck detector
  (``core.stuck``) warns the model in an observation, then ends the episode as ``stuck``.
- ``verify``: the plugin's reward judges the episode (``core.reward``); the verdict is stored.

The graph state (``EpisodeState``) is checkpointed after every node by LangGraph's checkpointer
(one thread per run id). The history is not in the state: it is the run store, append-only.
Every node first looks in the history for what it is about to produce, so a run killed after a
store write but before the checkpoint resumes without calling the model or a tool twice.
"""

from __future__ import annotations

import hashlib
import re
import time
import traceback
from collections.abc import Callable
from typing import Any

from langgraph.graph import END, START, StateGraph

from core import compaction
from core.errors import ToolError
from core.observation import cut_lines
from core.plugin import Plugin, Task
from core.policy.base import Policy
from core.reward import Trajectory, evaluate
from core.safe_io import make_dirs, write_new
from core.state import EpisodeState, ExitStatus, Limits, Message, Pricing, ToolCall
from core.store import RunStore
from core.stuck import StuckDetector, action_key
from core.text import utf8_safe
from core.tools import ToolContext, ToolResult
from core.workspace import CallJournal


class StopRequested(Exception):
    """Raised at a node boundary after the user asked the run to stop (first Ctrl-C)."""


NO_TOOL_CALL = "Your reply contained no tool call. Act by calling exactly one of the tools; call finish when done."
CUT_OFF = ("Your reply was cut off at the completion-token limit before it held a complete tool call. Make smaller "
           "calls: edit a few lines at a time with edit_file, or split a long patch.")
EventSink = Callable[[str, dict[str, Any]], None]


class Episode:
    """What one run needs while it runs, besides the checkpointed state.

    Args:
        run_id: the run's id (also the checkpoint thread id).
        task: what the user asked for.
        plugin: the domain plugin.
        policy: the model (or script) that chooses actions.
        store: the run's trajectory database; the history is loaded from it.
        ctx: the tool context (workspace, sandbox, scratch).
        limits: the episode's budgets.
        pricing: prices for cost accounting.
        on_event: called with ``("model", {...})``, ``("tool", {...})``, ``("end", {...})`` as
            the run progresses (the CLI's live display).
        max_observation_chars: each tool call's own output budget, in characters (the calls of
            one reply do not share it); longer outputs are cut on line boundaries to head and
            tail, naming the lines left out, and saved whole under
            ``<workspace>/.horizon/observations/`` (excluded from the patch). Tools see it as
            ``ctx.output_limit`` and may fit their output to it (``view_file`` does).
        journal: saves the workspace before each call that may change it, so a call cut short
            by a crash is undone before it runs again (None: no undo).
        keep_steps: steps kept verbatim when the history is compacted (``core.compaction``).
    """

    def __init__(
        self,
        run_id: str,
        task: Task,
        plugin: Plugin,
        policy: Policy,
        store: RunStore,
        ctx: ToolContext,
        *,
        limits: Limits,
        pricing: Pricing,
        on_event: EventSink | None = None,
        max_observation_chars: int = 8000,
        journal: CallJournal | None = None,
        keep_steps: int = 4,
    ) -> None:
        self.run_id = run_id
        self.task = task
        self.plugin = plugin
        self.policy = policy
        self.store = store
        self.ctx = ctx
        self.limits = limits
        self.pricing = pricing
        self.on_event = on_event or (lambda kind, data: None)
        self.max_observation_chars = max_observation_chars
        ctx.output_limit = max_observation_chars  # each call's own budget, told to the tools
        self.journal = journal
        self.keep_steps = keep_steps
        self.stop_requested = False  # set by the runner's Ctrl-C handler; checked between nodes
        tools = plugin.tools()
        self.tools = {t.name: t for t in tools}
        self.tool_schemas = [t.schema() for t in tools]
        self.history: list[Message] = store.messages()
        self._wire: list[dict[str, Any]] = self._build_wire()
        self._answered_ids = {m.tool_call_id for m in self.history if m.role == "tool"}  # ids already used
        # The detector sees each call's observation before notes are added, by digest; a resumed
        # run replays the stored digests, so it warns and stops exactly where the first run did.
        self.stuck = StuckDetector()
        self._stuck_stops: dict[str, str] = {}
        for record in store.tool_call_records():
            verdict = self.stuck.observe(action_key(record["tool"], record["arguments"]), record["data"].get("observation_sha256", ""),
                                         record["is_error"])
            if verdict.level == "stop":
                self._stuck_stops[record["tool_call_id"]] = verdict.reason

    def append(self, message: Message) -> int:
        """Add an already-stored message to the in-memory history; return its position."""
        self.history.append(message)
        self._wire.append(message.to_openai())
        if message.role == "tool":
            self._answered_ids.add(message.tool_call_id)
        return len(self.history) - 1

    def _build_wire(self) -> list[dict[str, Any]]:
        """What the model is sent: the history, with each compaction replacing the turns it summarises.

        A summary covering steps 1..n keeps the turns from step n+1's assistant message on.
        """
        wire = [m.to_openai() for m in self.history[:2]]
        body: list[dict[str, Any]] = []
        turns = [i for i, m in enumerate(self.history) if m.role == "assistant"]
        for i, message in enumerate(self.history[2:], start=2):
            if compaction.is_compaction(message):
                covered = compaction.compacted_steps(message.content or "")
                kept = turns[covered] if covered < len(turns) else i
                body = [message.to_openai()] + [m.to_openai() for m in self.history[kept:i] if not compaction.is_compaction(m)]
            else:
                body.append(message.to_openai())
        return wire + body

    def _compact_if_needed(self, index: int, step: int) -> int:
        """Before a model call: reuse a stored compaction at ``index`` or make one if the wire is too long.

        Returns:
            The index the assistant turn goes to (``index`` + 1 after a compaction).
        """
        if index < len(self.history) and compaction.is_compaction(self.history[index]):
            return index + 1  # stored before a crash; the wire was built with it
        budget = self.limits.compact_at_tokens
        if not budget or index != len(self.history) or compaction.estimate_tokens(self._wire) < budget:
            return index
        previous = max((i for i, m in enumerate(self.history) if compaction.is_compaction(m)), default=2)
        kept = compaction.keep_from(self.history, self.keep_steps, previous)
        if kept is None:
            return index
        text = compaction.summarize(self.history, kept, max_chars=budget * compaction.CHARS_PER_TOKEN // 4)
        # utf8_safe: arguments like "\ud800" decode to lone surrogates, which no server accepts
        summary = utf8_safe(Message(role="user", content=text, name=compaction.COMPACTION_NAME))
        self.store.append_message(index, step, summary)
        self.history.append(summary)
        before = compaction.estimate_tokens(self._wire)
        self._wire = self._build_wire()
        self.on_event("compaction", {"step": step, "tokens_before": before, "tokens_after": compaction.estimate_tokens(self._wire)})
        return index + 1

    def observation(self, call: ToolCall, result: ToolResult) -> str:
        """Cap one call's output at ``max_observation_chars`` (its own budget, whatever else the reply called).

        A longer output is saved whole under ``<workspace>/.horizon/observations/`` and cut on
        line boundaries (``core.observation.cut_lines``), keeping head and tail; the line in the
        gap names the lines left out and the call that shows them (the plugin's ``reads_lines``
        tool on the saved file).
        """
        text = result.output
        limit = self.max_observation_chars
        if len(text) <= limit:
            return text
        folder = self.ctx.workspace / ".horizon" / "observations"
        make_dirs(folder, self.ctx.workspace)  # the agent could have planted links here
        full = folder / f"{_file_stem(call.id)}.txt"
        write_new(full, text)
        rel = full.relative_to(self.ctx.workspace).as_posix()
        reader = next((t.name for t in self.tools.values() if t.reads_lines), None)

        def note(first: int, last: int, total: int) -> str:
            if not first:
                return f"[long lines were shortened (one call's output is cut at {limit:,} characters); the whole output is in {rel}]"
            how = (f"{reader} path={rel} start_line={first} end_line={last} shows them" if reader
                   else f"they are lines {first}-{last} of {rel}")  # fmt: skip
            return f"[lines {first}-{last} of {total} not shown (one call's output is cut at {limit:,} characters); {how}]"

        return cut_lines(text, limit, note)

    def budget_note(self, state: EpisodeState) -> str:
        """The remaining budget, shown to the model at the end of each step's observations.

        Steps and tokens only: both are the same when a run is replayed or resumed, so the
        trajectory is too (time left would differ from run to run).
        """
        steps = self.limits.max_steps - state.step
        tokens = max(0, self.limits.max_tokens - state.usage.total_tokens)
        return f"\n\n[{steps} step{'s' * (steps != 1)} and {tokens:,} tokens left]"

    def _stop_if_requested(self) -> None:
        if self.stop_requested:
            raise StopRequested

    # -- nodes ------------------------------------------------------------------------------

    def model_node(self, state: EpisodeState) -> dict[str, Any]:
        """Call the policy once (or reuse a turn stored before a crash) and record it."""
        self._stop_if_requested()
        start = time.perf_counter()
        step = state.step + 1
        index = self._compact_if_needed(state.n_messages, step)
        if len(self.history) > index and self.history[index].role == "assistant":
            message = self.history[index]  # stored before the crash; never call twice
            usage = self.store.model_call_usage(step)
        else:
            response = self.policy.complete(self._wire, self.tool_schemas)
            # lone surrogates cannot be stored (DuckDB), checkpointed (they become "?") or sent back
            # to a server, so the turn is made UTF-8-safe before anything else sees it
            message, usage = self._with_unique_call_ids(utf8_safe(response.message), step), response.usage
            self.store.append_model_turn(
                index, step, message, usage,
                model=response.model, latency_s=response.latency_s, finish_reason=response.finish_reason,
                prompt_token_ids=response.prompt_token_ids, completion_token_ids=response.completion_token_ids,
                completion_logprobs=response.completion_logprobs,
            )
            self.append(message)
        total = state.usage + usage
        self.on_event("model", {"step": step, "message": message, "usage": usage, "total": total})
        return {
            "step": step,
            "n_messages": index + 1,
            "usage": total,
            "cost": state.cost + self.pricing.cost(usage),
            "pending": message.tool_calls,
            "active_s": state.active_s + time.perf_counter() - start,
        }

    def _with_unique_call_ids(self, message: Message, step: int) -> Message:
        """Give calls with a missing or already-used id a fresh one; observations are matched by id."""
        seen = set(self._answered_ids) if message.tool_calls else set()
        calls = []
        for i, call in enumerate(message.tool_calls):
            if not call.id or call.id in seen:
                fresh, n = f"call_{step}_{i}_h", 0
                while fresh in seen:  # the model may have used this very id before
                    n += 1
                    fresh = f"call_{step}_{i}_h{n}"
                call = call.model_copy(update={"id": fresh})
            seen.add(call.id)
            calls.append(call)
        return message.model_copy(update={"tool_calls": calls}) if calls != message.tool_calls else message

    def _stored_followup(self, index: int, call_id: str | None) -> Message | None:
        """The message at ``index`` if it is the stored follow-up for ``call_id`` (None: the nudge)."""
        if index >= len(self.history):
            return None
        m = self.history[index]
        if call_id is None:
            return m if m.role == "user" else None
        return m if m.role == "tool" and m.tool_call_id == call_id else None

    def tools_node(self, state: EpisodeState) -> dict[str, Any]:
        """Run the pending tool calls in order, storing each observation as soon as it exists."""
        self._stop_if_requested()
        start = time.perf_counter()
        index = state.n_messages
        malformed = 0
        finished = False
        stuck = ""
        if not state.pending:
            malformed = 1
            if self._stored_followup(index, None) is None:
                cut = self.store.model_call_finish_reason(state.step) == "length"
                nudge = Message(role="user", content=(CUT_OFF if cut else NO_TOOL_CALL) + self.budget_note(state))
                self.store.append_message(index, state.step, nudge)
                self.append(nudge)
            self.on_event("tool", {"step": state.step, "call": None, "output": self.history[index].content, "is_error": True,
                                   "duration_s": 0.0})
            index += 1
        for call in state.pending:
            stored = self._stored_followup(index, call.id)
            if stored is not None:  # executed before a crash: reuse, never run twice
                done, bad = self.store.tool_call_outcome(call.id)
                finished |= done
                malformed += int(bad)
                index += 1
                stuck = self._stuck_stops.get(call.id, "")
                if done or stuck:
                    break
                continue
            t0 = time.perf_counter()
            result, bad = self._execute(call)
            result = utf8_safe(result)  # outputs may echo undecodable bytes or the model's own lone surrogates
            malformed += int(bad)
            finished |= result.done
            duration = time.perf_counter() - t0
            content = self.observation(call, result)
            digest = hashlib.sha256(content.encode()).hexdigest()
            verdict = self.stuck.observe(action_key(call.name, call.arguments), digest, result.is_error)
            if verdict.level != "ok":
                content += f"\n\n[{verdict.reason}]"
            if verdict.level == "stop":
                stuck = self._stuck_stops[call.id] = verdict.reason
            elif call is state.pending[-1] and not result.done:  # the step's last observation says what is left
                content += self.budget_note(state)
            message = Message(role="tool", content=content, tool_call_id=call.id, name=call.name)
            self.store.append_observation(
                index, state.step, message, call, is_error=result.is_error,
                data={**result.data, "done": result.done, "malformed": bad, "observation_sha256": digest}, duration_s=duration,
            )
            self.append(message)
            self.on_event(
                "tool",
                {"step": state.step, "call": call, "output": result.output, "is_error": result.is_error, "duration_s": duration},
            )
            index += 1
            if result.done or stuck:
                break  # calls after finish (or after the stuck detector's stop) in the same turn are not run
        update: dict[str, Any] = {
            "n_messages": index,
            "pending": [],
            "format_errors": state.format_errors + 1 if malformed else 0,
            "active_s": state.active_s + time.perf_counter() - start,
        }
        if finished:
            update.update(done=True, exit_status=ExitStatus.SUBMITTED, exit_detail="the agent called finish")
        elif stuck:
            update.update(done=True, exit_status=ExitStatus.STUCK, exit_detail=stuck)
        return update

    def _execute(self, call: ToolCall) -> tuple[ToolResult, bool]:
        """Run one call. Returns the result and whether the call itself was malformed."""
        tool = self.tools.get(call.name)
        if tool is None:
            names = ", ".join(self.tools)
            return ToolResult(output=f"unknown tool {call.name!r}; the tools are: {names}", is_error=True), True
        try:
            args = tool.parse(call.arguments)
        except ToolError as exc:
            return ToolResult(output=str(exc), is_error=True), True
        if self.journal is not None and not tool.read_only:
            self.journal.before(call.id)
        try:
            result = tool.fn(args, self.ctx)
        except ToolError as exc:
            return ToolResult(output=str(exc), is_error=True), False
        except (OSError, ValueError) as exc:  # arguments the tool did not check: a NUL byte or a 300-byte name in a path
            return ToolResult(output=f"{call.name} failed: {type(exc).__name__}: {exc}", is_error=True,
                              data={"exception": traceback.format_exc()}), False
        return (result if isinstance(result, ToolResult) else ToolResult(output=str(result))), False

    def check_node(self, state: EpisodeState) -> dict[str, Any]:
        """Termination check: the first limit reached ends the episode with its reason."""
        if state.done:
            return {}
        lim = self.limits
        reasons = [
            (state.format_errors >= lim.max_format_errors, ExitStatus.FORMAT_ERRORS,
             f"{state.format_errors} malformed model outputs in a row (limit {lim.max_format_errors})"),
            (state.step >= lim.max_steps, ExitStatus.STEP_LIMIT, f"step limit reached ({lim.max_steps} steps)"),
            (state.usage.total_tokens >= lim.max_tokens, ExitStatus.TOKEN_LIMIT,
             f"token limit reached ({state.usage.total_tokens:,} of {lim.max_tokens:,} tokens)"),
            (state.active_s >= lim.max_wall_s, ExitStatus.TIME_LIMIT,
             f"time limit reached ({state.active_s:.1f} s of {lim.max_wall_s:.0f} s)"),
            (state.cost >= lim.max_cost > 0, ExitStatus.COST_LIMIT, f"cost limit reached ({state.cost:.4f} of {lim.max_cost})"),
        ]
        for hit, status, detail in reasons:
            if hit:
                return {"done": True, "exit_status": status, "exit_detail": detail}
        return {}

    def verify_node(self, state: EpisodeState) -> dict[str, Any]:
        """Judge the episode with the plugin's reward (``core.reward``) and store the whole verdict."""
        self._stop_if_requested()
        start = time.perf_counter()
        self.store.update_run(exit_status=state.exit_status.value if state.exit_status else None, exit_detail=state.exit_detail)
        trajectory = Trajectory.from_store(self.store, self.ctx.scratch.parent, context=self.ctx)
        result = evaluate(self.plugin.reward, self.task, trajectory)
        self.store.set_reward(result)
        self.on_event("verify", {"reward": result})
        return {"verified": True, "reward": result.reward, "correct": result.correct,
                "active_s": state.active_s + time.perf_counter() - start}  # fmt: skip


def build_graph(episode: Episode, checkpointer: Any) -> Any:
    """Compile the loop for ``episode`` with ``checkpointer`` (a LangGraph checkpoint saver)."""
    graph = StateGraph(EpisodeState)
    graph.add_node("model", episode.model_node)
    graph.add_node("tools", episode.tools_node)
    graph.add_node("check", episode.check_node)
    graph.add_node("verify", episode.verify_node)
    graph.add_edge(START, "model")
    graph.add_edge("model", "tools")
    graph.add_edge("tools", "check")
    graph.add_conditional_edges("check", lambda s: "verify" if s.done else "model", ["verify", "model"])
    graph.add_edge("verify", END)
    return graph.compile(checkpointer=checkpointer)


def recursion_limit(limits: Limits) -> int:
    """LangGraph super-steps an episode may need: three nodes a step, plus verification."""
    return 3 * limits.max_steps + 10


def _file_stem(call_id: str) -> str:
    """A file name for a call's full output: the id itself when it is a plain word, else a hash of it.

    Call ids come from the model server and may hold ``/``, ``..``, NUL bytes or 1,000 characters.
    """
    if re.fullmatch(r"[A-Za-z0-9_-]{1,64}", call_id):
        return call_id
    return "call-" + hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]

"""The long-horizon loop as a LangGraph ``StateGraph``.

    START -> model -> tools -> check --(not done)--> model
                                    \\--(done)-----> verify -> END

- ``model``: one policy call; the assistant turn is written to the run store before the node ends.
- ``tools``: runs the turn's tool calls in order through the episode's ``Environment``
  (``core.environment``: one error policy, output cap, stuck detector, journal), each
  observation written to the run store as soon as its call returns, the last one of the step
  with the budget left; malformed calls (unknown tool, bad arguments, no call at all) become
  observations that say what was wrong, and are counted.
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

import time
from collections.abc import Callable
from typing import Any

from langgraph.graph import END, START, StateGraph

from core import compaction
from core.critic import critique
from core.environment import Environment
from core.plugin import Plugin, Task
from core.policy.base import Policy
from core.reward import Trajectory
from core.state import EpisodeState, ExitStatus, Limits, Message, Pricing
from core.store import RunStore
from core.text import utf8_safe
from core.tools import ToolContext


class StopRequested(Exception):
    """Raised at a node boundary after the user asked the run to stop (first Ctrl-C)."""


NO_TOOL_CALL = "Your reply contained no tool call. Act by calling exactly one of the tools; call finish when done."
CUT_OFF = ("Your reply was cut off at the completion-token limit before it held a complete tool call. Make smaller "
           "calls: edit a few lines at a time with edit_file, or split a long patch.")
EventSink = Callable[[str, dict[str, Any]], None]


class Episode:
    """What one run needs while it runs, besides the checkpointed state.

    The episode itself (tools, sandbox, observations, reward) is the ``Environment``
    (``core.environment``); this drives it with the policy and records every step in the store.

    Args:
        run_id: the run's id (also the checkpoint thread id).
        task: what the user asked for.
        env: the episode's environment (already open; ``reset`` is the runner's step 0).
        policy: the model (or script) that chooses actions.
        store: the run's trajectory database; the history is loaded from it.
        limits: the episode's budgets.
        pricing: prices for cost accounting.
        on_event: called with ``("model", {...})``, ``("tool", {...})``, ``("end", {...})`` as
            the run progresses (the CLI's live display).
        keep_steps: steps kept verbatim when the history is compacted (``core.compaction``).
        critic: after a tool call that returns images, ask the policy to judge them against the
            task and append its verdict to the observation (``core.critic``).
    """

    def __init__(
        self,
        run_id: str,
        task: Task,
        env: Environment,
        policy: Policy,
        store: RunStore,
        *,
        limits: Limits,
        pricing: Pricing,
        on_event: EventSink | None = None,
        keep_steps: int = 4,
        critic: bool = False,
    ) -> None:
        self.run_id = run_id
        self.task = task
        self.env = env
        self.policy = policy
        self.store = store
        self.limits = limits
        self.pricing = pricing
        self.on_event = on_event or (lambda kind, data: None)
        self.keep_steps = keep_steps
        self.critic = critic
        self.stop_requested = False  # set by the runner's Ctrl-C handler; checked between nodes
        self.tool_schemas = env.tool_schemas
        short = getattr(env.plugin, "small_model_tools", None)
        if short and getattr(policy, "small_model", False):  # the embedded model: the plugin's short list (core.plugin)
            self.tool_schemas = [s for s in env.tool_schemas if s["function"]["name"] in short]
        self.history: list[Message] = store.messages()
        records = store.tool_call_records()
        # A tool observation's images (paths relative to the run folder, kept in its data): sent
        # as a "images" key of its wire message to a policy that can look at them (``_wire_message``).
        self.sees_images = bool(getattr(policy, "vision", False))
        self._images: dict[str, list[str]] = {r["tool_call_id"]: r["data"]["images"] for r in records if r["data"].get("images")}
        self._wire: list[dict[str, Any]] = self._build_wire()
        self._answered_ids = {m.tool_call_id for m in self.history if m.role == "tool"}  # ids already used
        # The detector sees each call's observation before notes are added, by digest; a resumed
        # run replays the stored digests, so it warns and stops exactly where the first run did.
        self._stuck_stops: dict[str, str] = env.replay(records)

    @property
    def plugin(self) -> Plugin:
        """The environment's plugin."""
        return self.env.plugin

    @property
    def ctx(self) -> ToolContext:
        """The environment's tool context (workspace, sandbox, scratch)."""
        return self.env.ctx

    def append(self, message: Message) -> int:
        """Add an already-stored message to the in-memory history; return its position."""
        self.history.append(message)
        self._wire.append(self._wire_message(message))
        if message.role == "tool":
            self._answered_ids.add(message.tool_call_id)
        return len(self.history) - 1

    def _wire_message(self, message: Message) -> dict[str, Any]:
        """``message.to_openai()``, plus, for a policy that can look at images (its ``vision``
        attribute is true) and a tool observation that has some, ``"images"``: their absolute
        paths. That key is Horizon's, not the chat format's: the policy turns it into image parts
        or drops it (``core.policy.images.attach_images``). Other policies get plain text."""
        out = message.to_openai()
        images = self._images.get(message.tool_call_id or "") if message.role == "tool" and self.sees_images else None
        if images:
            folder = self.ctx.scratch.parent
            out["images"] = [str(folder / p) for p in images]
        return out

    def _build_wire(self) -> list[dict[str, Any]]:
        """What the model is sent: the history, with each compaction replacing the turns it summarises.

        A summary covering steps 1..n keeps the turns from step n+1's assistant message on.
        """
        wire = [self._wire_message(m) for m in self.history[:2]]
        body: list[dict[str, Any]] = []
        turns = [i for i, m in enumerate(self.history) if m.role == "assistant"]
        for i, message in enumerate(self.history[2:], start=2):
            if compaction.is_compaction(message):
                covered = compaction.compacted_steps(message.content or "")
                kept = turns[covered] if covered < len(turns) else i
                body = [message.to_openai()] + [self._wire_message(m) for m in self.history[kept:i] if not compaction.is_compaction(m)]
            else:
                body.append(self._wire_message(message))
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
        self.on_event("model", {"step": step, "message": message, "usage": usage, "total": total,
                                "model_s": time.perf_counter() - start})
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
            seen = self.env.step(call)
            result = seen.result
            malformed += int(seen.malformed)
            finished |= result.done
            content = seen.content
            images = [p.relative_to(self.ctx.scratch.parent).as_posix() for p in seen.images]
            extra: dict[str, Any] = {"images": images} if images else {}  # the store keeps the paths, never the pixels
            if images:
                self._images[call.id] = images
                if self.critic:
                    note, extra["critic"] = critique(self.policy, self.task.instruction, call, content, [str(p) for p in seen.images])
                    content += note
            if seen.stop:
                stuck = self._stuck_stops[call.id] = seen.stop
            elif call is state.pending[-1] and not result.done:  # the step's last observation says what is left
                content += self.budget_note(state)
            message = Message(role="tool", content=content, tool_call_id=call.id, name=call.name)
            self.store.append_observation(
                index, state.step, message, call, is_error=result.is_error,
                data={**result.data, "done": result.done, "malformed": seen.malformed, "observation_sha256": seen.digest, **extra},
                duration_s=seen.duration_s,
            )  # fmt: skip
            self.append(message)
            self.on_event(
                "tool",
                {"step": state.step, "call": call, "output": result.output, "is_error": result.is_error, "duration_s": seen.duration_s},
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
        self.store.sync_catalog()  # the step's end: the runs catalog lists its steps (core.catalog)
        return update

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
        result = self.env.reward(trajectory)
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


"""An MCP session's runs: the MCP client plays the policy, the real loop runs every call.

``McpSession.call(name, arguments)`` is what an MCP ``tools/call`` does. The first call starts a
run (``Run.start`` through the factory the session was given: the repository copied, the plugin
set up, the run recorded); its loop runs in a thread of its own and asks ``McpPolicy`` for each
turn. A call is handed to the loop as that turn, and its answer comes back when the loop asks for
the next one (the observation is then stored) or when the run ends (the reward and patch are
then known). Calls are taken one at a time, as the loop runs one step at a time.

A run ends as any run does: ``finish`` (the plugin's reward judges it), a limit, the stuck
detector. The call after that starts a new run from the original files, so a client that lives
across conversations (a desktop app) gets a fresh run per task. When the server stops (the client
went away), a run still waiting for its next call stops ``interrupted``, resumable with
``agent mcp PLUGIN --resume RUN_ID``.
"""

from __future__ import annotations

import json
import queue
import secrets
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from core.loop import StopRequested
from core.policy.base import PolicyResponse
from core.state import Message, ToolCall

if TYPE_CHECKING:
    from core.plugin import Task
    from core.reward import RewardResult
    from core.runner import Run, RunResult
    from core.tools import ToolContext

#: The model name an MCP session's turns are stored under (the store's ``model`` column).
MODEL_NAME = "mcp-client"
#: How long ``close`` waits for a run's thread to stop (seconds): a tool call may be running.
CLOSE_WAIT_S = 30.0

#: A note on a tool call for the MCP client from a plugin's MCP extension (``McpExtension.after_tool``):
#: ``(text appended to the call's result, whether it makes the result an error)``.
CallNote = tuple[str, bool]


class McpExtension(Protocol):
    """What a plugin adds to ``agent mcp PLUGIN`` through its optional hook
    ``mcp_extension(options: list[str]) -> McpExtension`` (``options``: the command line's
    arguments ``agent mcp`` does not know, e.g. the 3D plugin's ``--blender PORT`` to drive the
    artist's open Blender). The hook raises ``UserError`` for options it does not take either.
    """

    def start(self) -> str:
        """Check what the extension connects to, once, before serving; return a line for the log
        (a problem is said there, never raised: the client may start before the application)."""
        ...

    def prepare(self, task: Task) -> Task:
        """The task a new run (not a resumed one) starts on, e.g. on a copy of an open document;
        called in the run's thread. Raises ``HorizonError`` saying what to do: the client's call
        is answered "the run could not start: ..."."""
        ...

    def after_tool(self, ctx: ToolContext, event: dict[str, Any]) -> CallNote | None:
        """Called after each tool call with the loop's ``tool`` event (``step``, ``call``,
        ``is_error``, ``output``, ``duration_s``); a note is added to what the client reads."""
        ...


RunFactory = Callable[["McpPolicy"], "Run"]
"""Makes the run a session's calls go to: ``policy -> Run``, e.g. ``Run.start`` or ``Run.open``
with that policy (and the caller's own event sink, which the session wraps). Called in the run's
own thread, which then owns the run's store and checkpoint connections."""


@dataclass
class Answer:
    """What the run thread hands back for one call.

    Attributes:
        observation: the call's observation exactly as stored (what a model would read), or None
            when the call was never run (the run ended or could not start first).
        is_error: the loop's verdict on the call (a refusal, a failure, a malformed call).
        opening: the run's task message (the task and what set-up found), on the run's first call only.
        ended: how the run ended, when this call ended it (or found it ended).
        verdict: the plugin reward's verdict, when the run ended through the loop's verify node.
        problem: why the call could not be handed to a run (the run could not start, or crashed).
        note: the MCP extension's note on the call (``CallNote``), if any.
    """

    observation: str | None = None
    is_error: bool = False
    opening: str | None = None
    ended: RunResult | None = None
    verdict: RewardResult | None = None
    problem: str | None = None
    note: CallNote | None = None


@dataclass
class CallOutcome:
    """What an MCP client gets for one tool call.

    Attributes:
        text: the observation, preceded on a run's first call by its task message and followed,
            when the call ended the run, by how it ended (reward, patch, how to apply it).
        is_error: True for a refused or failed call (MCP's ``isError``), and when no run could take it.
        run_id: the run the call went to (None when none could start).
        ended: the run's result when this call ended it.
    """

    text: str
    is_error: bool
    run_id: str | None
    ended: RunResult | None = None


_CLOSE = object()  # put on the call queue: the server is stopping


class McpPolicy:
    """The policy of an MCP session's run: each turn is the MCP client's next tool call.

    ``complete`` first answers the previous call (its observation is now the newest tool message
    of ``messages``), then waits for the next call from ``submit``. The loop's events tell it
    each call's error flag (``observe``); ``settle`` answers what is left when the run ends.

    Args:
        stop_detail: the exit detail when the server stops while the run waits (how to resume it).
    """

    name = "mcp"

    def __init__(self, stop_detail: str = "the MCP server stopped before the client called finish") -> None:
        self.stop_detail = stop_detail
        self._calls: queue.Queue[Any] = queue.Queue()
        self._lock = threading.Lock()  # submit and settle: no call can be queued after the run ended
        self._answering: tuple[ToolCall, Future[Answer]] | None = None
        self._errors: dict[str, bool] = {}
        self._notes: dict[str, CallNote] = {}
        self._opening: str | None = None
        self._opening_shown = False
        self._ended = False
        self.verdict: RewardResult | None = None

    @property
    def ended(self) -> bool:
        """Whether the run is over (``settle`` was called): no call is taken any more."""
        return self._ended

    def submit(self, name: str, arguments: dict[str, Any]) -> Future[Answer]:
        """Queue a tool call as the next assistant turn; the future resolves to its ``Answer``.

        Args:
            name: the tool's name as the client sent it (an unknown name is the loop's to refuse).
            arguments: the client's arguments (validated by the loop with the tool's pydantic model).
        """
        # a random id: a resumed run already answered ids of its earlier sessions (the loop renames repeats)
        call = ToolCall(id=f"mcp_{secrets.token_hex(6)}", name=name, arguments=json.dumps(arguments, ensure_ascii=False))
        future: Future[Answer] = Future()
        with self._lock:
            if self._ended:
                future.set_result(Answer(problem="the run has ended"))
            else:
                self._calls.put((call, future))
        return future

    def close(self, detail: str | None = None) -> None:
        """Stop waiting for calls: a run waiting in ``complete`` stops ``interrupted`` with ``detail``."""
        if detail:
            self.stop_detail = detail
        self._calls.put(_CLOSE)

    def note(self, call_id: str, note: CallNote) -> None:
        """Attach the MCP extension's note to call ``call_id`` (its answer carries it)."""
        self._notes[call_id] = note

    def observe(self, kind: str, data: dict[str, Any]) -> None:
        """The loop's event sink (``Episode.on_event``): keeps each call's error flag and the reward's verdict."""
        if kind == "tool" and data.get("call") is not None:
            self._errors[data["call"].id] = bool(data["is_error"])
        elif kind == "verify":
            self.verdict = data["reward"]

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyResponse:
        """Answer the previous call from ``messages``, then return the client's next call as the turn.

        Raises:
            StopRequested: the server is stopping (``close``); the run stops resumably.
        """
        if self._opening is None:
            self._opening = next((m.get("content") for m in messages if m.get("role") == "user"), None) or ""
        self._answer_pending(messages)
        item = self._calls.get()
        if item is _CLOSE:
            raise StopRequested(self.stop_detail)
        call, future = item
        self._answering = (call, future)
        message = Message(role="assistant", tool_calls=[call])
        return PolicyResponse(message=message, model=MODEL_NAME, finish_reason="tool_calls")

    def settle(self, history: list[Message], ended: RunResult | None, problem: str | None = None) -> None:
        """The run is over: answer the call in flight from ``history`` and every queued one.

        Args:
            history: the run's messages (``Episode.history``), or [] when the run never started.
            ended: the run's result, or None when it could not start or crashed outside the loop.
            problem: why, when ``ended`` is None.
        """
        with self._lock:
            self._ended = True
        if self._opening is None and len(history) > 1:
            self._opening = history[1].content  # ended before the loop asked for a turn (set-up crashed)
        self._answer_pending([m.to_openai() for m in history], ended=ended, problem=problem)
        while True:
            try:
                item = self._calls.get_nowait()
            except queue.Empty:
                return
            if item is not _CLOSE:
                item[1].set_result(self._with_opening(Answer(ended=ended, verdict=self.verdict, problem=problem or "the run has ended")))

    def _answer_pending(self, messages: list[dict[str, Any]], *, ended: RunResult | None = None, problem: str | None = None) -> None:
        if self._answering is None:
            return
        call, future = self._answering
        self._answering = None
        observation = next((m.get("content") for m in reversed(messages) if m.get("role") == "tool" and m.get("tool_call_id") == call.id),
                           None)  # fmt: skip
        answer = Answer(observation=observation, is_error=self._errors.get(call.id, observation is None), ended=ended,
                        verdict=self.verdict if ended else None, problem=problem, note=self._notes.pop(call.id, None))  # fmt: skip
        future.set_result(self._with_opening(answer))

    def _with_opening(self, answer: Answer) -> Answer:
        """The run's first answer carries its task message: the client never saw it otherwise."""
        if not self._opening_shown and self._opening:
            answer.opening, self._opening_shown = self._opening, True
        return answer


class McpSession:
    """The runs of one MCP server: started on demand, fed one call at a time.

    Args:
        start_run: makes a new run (``RunFactory``); used for the first run, and again after each
            run ends.
        resume_run: makes the first run instead, continuing an existing one (``agent mcp --resume``).
        plugin: the plugin's name, for the resume hint stored with a run the client left.
        extension: the plugin's MCP extension, whose ``after_tool`` notes join the calls' answers
            (its ``prepare`` is the run factory's to call).
    """

    def __init__(self, start_run: RunFactory, *, resume_run: RunFactory | None = None, plugin: str = "PLUGIN",
                 extension: McpExtension | None = None) -> None:
        self._extension = extension
        self._start_run = start_run
        self._next_factory = resume_run or start_run
        self._plugin = plugin
        self._calls = threading.Lock()  # one call at a time: the loop runs one step at a time
        self._policy: McpPolicy | None = None
        self._thread: threading.Thread | None = None
        self._run_id: str | None = None
        self._closed = False
        self.run_ids: list[str] = []  # every run this session started or resumed, in order

    @property
    def run_id(self) -> str | None:
        """The current (or last) run's id; None before the first call."""
        return self._run_id

    def call(self, name: str, arguments: dict[str, Any] | None) -> CallOutcome:
        """Run one tool call through the current run's loop (starting a run first when none is open).

        Blocks until the loop has run the call: seconds for a read, minutes for a test run, and on
        a run's first call also the repository copy and the plugin's set-up.

        Args:
            name: the tool's name.
            arguments: its arguments (None: none).

        Returns:
            The ``CallOutcome``; a run that cannot start, or a server that is stopping, is an error
            outcome saying so (never an exception: the MCP client reads it like a refusal).
        """
        with self._calls:
            if self._closed:
                return CallOutcome("the Horizon MCP server is stopping; no tool call is taken", True, self._run_id)
            if self._policy is None or not self._thread or not self._thread.is_alive() or self._policy.ended:
                problem = self._begin_run()
                if problem is not None:
                    return CallOutcome(problem, True, None)
            assert self._policy is not None
            answer = self._policy.submit(name, arguments or {}).result()
            return self._outcome(answer)

    def _begin_run(self) -> str | None:
        """Start the next run's thread and wait until its run exists; return why it could not, or None."""
        policy = McpPolicy()
        created: Future[str] = Future()
        factory, self._next_factory = self._next_factory, self._start_run
        thread = threading.Thread(target=self._run_thread, args=(factory, policy, created), name="horizon-mcp-run", daemon=True)
        thread.start()
        try:
            run_id = created.result()
        except Exception as exc:  # noqa: BLE001 - any failure to make the run is told to the client, whole
            thread.join()
            return f"the run could not start: {exc}"
        self._policy, self._thread, self._run_id = policy, thread, run_id
        self.run_ids.append(run_id)
        return None

    def _run_thread(self, factory: RunFactory, policy: McpPolicy, created: Future[str]) -> None:
        """The run's own thread: make the run (its store and checkpoints belong to this thread), run
        the loop until the episode ends or the server stops, answer what is left, close the run."""
        try:
            run = factory(policy)
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting call
            created.set_exception(exc)
            return
        sink = run.episode.on_event

        def events(kind: str, data: dict[str, Any]) -> None:  # the policy learns each call's error flag and the verdict
            policy.observe(kind, data)
            sink(kind, data)
            if kind == "tool" and data.get("call") is not None and self._extension is not None:
                try:
                    note = self._extension.after_tool(run.episode.ctx, data)
                except Exception as exc:  # noqa: BLE001 - the call ran; its answer says what the extension could not do
                    note = (f"[{self._plugin} MCP extension failed after this call: {type(exc).__name__}: {exc}]", True)
                if note is not None:
                    policy.note(data["call"].id, note)

        run.episode.on_event = events
        policy.stop_detail = (f"the MCP client left before calling finish; continue the run with: agent mcp {self._plugin} "
                              f"--resume {run.run_id}")  # fmt: skip
        created.set_result(run.run_id)
        try:
            result = run.execute()  # a crash inside the loop is a RunResult ("crashed"), never raised
            policy.settle(list(run.episode.history), result)
        except BaseException as exc:  # noqa: BLE001 - outside the loop (writing the patch): answer, then close
            policy.settle(list(run.episode.history), None, problem=f"the run failed: {type(exc).__name__}: {exc}")
        finally:
            run.close()

    def _outcome(self, answer: Answer) -> CallOutcome:
        parts = []
        if answer.opening:
            parts.append(f"[Horizon run {self._run_id}: its task, as the run's model is given it]\n{answer.opening}")
        if answer.observation is not None:
            parts.append(f"[result]\n{answer.observation}" if answer.opening else answer.observation)
        elif answer.problem:
            parts.append(f"this call was not run: {answer.problem}")
        if answer.note is not None:
            parts.append(answer.note[0])
        if answer.ended is not None:
            parts.append(_ending(answer.ended, answer.verdict))
        elif answer.observation is None and not answer.problem:
            parts.append("this call was not run: the run stopped first")
        is_error = answer.is_error if answer.observation is not None else True
        is_error = is_error or (answer.note is not None and answer.note[1])
        return CallOutcome("\n\n".join(parts), is_error, self._run_id, answer.ended)

    def close(self, detail: str | None = None) -> None:
        """Stop taking calls; a run waiting for its next call stops ``interrupted`` (resumable) and
        is closed. Waits up to ``CLOSE_WAIT_S`` seconds for a tool call in flight to end.

        Args:
            detail: the run's exit detail (default: the client left; how to resume it).
        """
        self._closed = True
        if self._policy is not None:
            self._policy.close(detail)
        if self._thread is not None:
            self._thread.join(CLOSE_WAIT_S)


def _ending(result: RunResult, verdict: RewardResult | None) -> str:
    """The lines an MCP client reads when its call ended the run: outcome, reward, patch, what next."""
    if result.reward is not None:
        reward = f"reward {result.reward:.3f}"
    else:
        reward = "reward not applicable" if verdict is not None and not verdict.applicable else "not judged"
    judged = f" ({verdict.version}: {verdict.summary})" if verdict is not None else ""
    size = result.patch_path.stat().st_size if result.patch_path.exists() else 0
    patch = f"{result.patch_path} ({size:,} bytes); review and apply it with: agent apply {result.run_id}" if size else "empty"
    return (f"[run {result.run_id} ended: {result.exit_status.value}: {result.exit_detail}. {reward}{judged}. Patch: {patch}. "
            "The next tool call starts a new run from the original files.]")

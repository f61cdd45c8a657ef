"""``Environment``: one episode of a plugin on a task, in Gymnasium's shape (reset, step, reward, close).

Every driver of an episode drives this one object, so what a policy sees while it is trained is
what it sees while it is evaluated, by construction:

* the LangGraph loop (``core.loop``, used by ``agent run``, ``agent resume`` and ``agent eval``):
  its ``tools`` node calls ``step`` for each tool call of the model's turn and its ``verify``
  node calls ``reward``; ``core.runner`` opens and closes it;
* the verl adapter (``core.trainers.verl.HorizonTool``): ``execute`` calls ``step``, the
  ending call ``reward``.

``reset()`` runs the plugin's set-up and returns the opening messages (system prompt, task).
``step(call)`` runs one tool call with one error policy (an unknown tool, bad arguments, a
``ToolError`` or an ``OSError``/``ValueError`` the tool did not check are error observations,
the first two counted as malformed), saves the workspace first when the tool may change it (the
``journal``: a call cut short by a crash is undone before it runs again), caps the output at
``max_observation_chars`` (its own budget; a longer output is saved whole in the workspace and
cut on line boundaries, naming the lines left out and the tool that shows them), and shows it to
the stuck detector (``core.stuck``), whose warning is appended and whose stop ends the episode.
What a step returns is the observation exactly as the model sees it, but for the budget note:
that is the driver's (``core.loop.Episode.budget_note``: steps and tokens left under
``agent run``'s limits); verl's rollout has its own turn and length limits and adds none.

The source of truth for an episode is the run store (``core.store.RunStore``, DuckDB): the
messages, each model call and each tool call with its observation and data, and the verdict.
LangGraph's checkpoints hold only counters and flags (``core.state.EpisodeState``) that the
store's rows could rebuild, and the loop consults the store before acting, so a run killed
between a store write and its checkpoint resumes without repeating the call. ``inflight.json``
(``core.workspace.CallJournal``) holds the workspace's state before the one call in flight; it
is derived from the workspace and deleted when the call returns. The verl adapter keeps no store
(verl records its own rollouts), only the workspace.
"""

from __future__ import annotations

import hashlib
import os
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core import workspace as ws
from core.errors import ToolError, UserError
from core.observation import cut_lines
from core.plugin import Plugin, Task, load_plugin
from core.reward import RewardResult, Trajectory, aevaluate, evaluate
from core.safe_io import make_dirs, write_new
from core.sandbox import Sandbox, open_container, open_sandbox
from core.state import Message, ToolCall
from core.stuck import StuckDetector, action_key
from core.text import utf8_safe
from core.tools import ToolContext, ToolResult
from core.workspace import CallJournal

if TYPE_CHECKING:
    from core.mcp.client import McpToolset

__all__ = ["MAX_OBSERVATION_CHARS", "Environment", "Observation", "SandboxFactory"]

#: Makes an episode's sandbox from its workspace and scratch folders (``Environment.open``'s ``make_sandbox``).
SandboxFactory = Callable[[Path, Path], Sandbox]

#: Each tool call's own output budget, in characters (the calls of one reply do not share it).
MAX_OBSERVATION_CHARS = 8000


@dataclass(frozen=True)
class Observation:
    """What one tool call gave back.

    Attributes:
        content: the text the model sees (capped, with the stuck detector's warning or stop
            reason appended); the driver may add its budget note.
        result: the tool's own result (UTF-8-safe; ``output`` uncut, ``data`` for the reward).
        malformed: the call itself was malformed (unknown tool, arguments that do not validate).
        digest: SHA-256 (hex) of the capped output before any note: what the stuck detector saw.
        stop: why the stuck detector ended the episode; "" when it did not.
        duration_s: seconds the call took, capping included.
        images: the environment's copies of the call's images (``ToolResult.images``), in
            ``scratch/images/`` (absolute paths); what a vision model is shown of this call.
    """

    content: str
    result: ToolResult
    malformed: bool
    digest: str
    stop: str = ""
    duration_s: float = 0.0
    images: tuple[Path, ...] = ()

    @property
    def done(self) -> bool:
        """The call ended the episode (``finish``)."""
        return self.result.done


def tree_size(root: Path) -> tuple[int, int]:
    """Files and bytes under ``root`` (``lstat`` sizes; links not followed; a ``.git`` folder and
    what cannot be read are left out): how big a copy will be, counted before it is made."""
    files = size = 0
    stack = [root]
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name != ".git":
                            stack.append(Path(entry.path))
                        continue
                    files += 1
                    try:
                        size += entry.stat(follow_symlinks=False).st_size
                    except OSError:
                        pass
        except OSError:
            continue
    return files, size


class Environment:
    """One episode of ``plugin`` on ``task`` in the workspace and sandbox of ``ctx`` (module docstring).

    Args:
        task: what the user asked for.
        plugin: the domain plugin (its tools, set-up, reward and teardown).
        ctx: the tool context (workspace, sandbox, scratch, baseline).
        max_observation_chars: each call's output budget, in characters; tools see it as
            ``ctx.output_limit`` and may fit their output to it (``view_file`` does).
        journal: saves the workspace before each call that may change it (None: no undo).
    """

    def __init__(self, task: Task, plugin: Plugin, ctx: ToolContext, *, max_observation_chars: int = MAX_OBSERVATION_CHARS,
                 journal: CallJournal | None = None) -> None:  # fmt: skip
        self.task = task
        self.plugin = plugin
        self.ctx = ctx
        self.max_observation_chars = max_observation_chars
        ctx.output_limit = max_observation_chars
        self.journal = journal
        tools = plugin.tools()
        # External MCP servers named by the task (core.mcp.client): their tools join the list.
        self.mcp: McpToolset | None = None
        if task.metadata.get("mcp_servers"):
            from core.mcp.client import McpToolset, parse_servers  # imported here: core.mcp imports the loop

            servers = parse_servers(task.metadata["mcp_servers"], "the task's mcp_servers")
            self.mcp = McpToolset(servers, ctx.sandbox)
            clashes = {t.name for t in tools} & {t.name for t in self.mcp.tools}
            if clashes:
                self.mcp.close()
                raise UserError(f"MCP tools {', '.join(sorted(clashes))} have the names of the plugin's own tools; rename their server")
            tools = [*tools, *self.mcp.tools]
        self.tools = {t.name: t for t in tools}
        self.tool_schemas = [t.schema() for t in tools]
        self.stuck = StuckDetector()
        self.setup_text = ""
        self.calls = 0  # tool calls run so far (replayed ones included): names each call's saved output

    @staticmethod
    def prepare(task: Task, folder: Path, progress: Callable[[str], None] | None = None) -> None:
        """Lay out a new episode's files in ``folder``: ``workspace/`` (a copy of ``task.repo``,
        or empty), ``scratch/`` and ``baseline.git`` (the starting files, for the patch).

        Args:
            progress: told one line before and after the copy and the snapshot (the repository's
                size first, so a big one's wait is known before it happens); None: silent.

        Raises:
            UserError: the repository is not a folder or cannot be copied (``core.workspace.copy_repository``).
        """
        say = progress or (lambda text: None)
        (folder / "scratch").mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        if task.repo is not None:
            files, size = tree_size(task.repo)
            say(f"copying the repository: {files:,} files, {size / 2**20:,.1f} MiB ({task.repo})")
            tracked = ws.copy_repository(task.repo, folder / "workspace")
            say(f"copied in {time.monotonic() - started:.1f} s; saving the starting files (snapshot)")
        else:
            (folder / "workspace").mkdir()
            tracked = []
        started = time.monotonic()
        ws.snapshot(folder / "workspace", folder / "baseline.git", tracked)
        if task.repo is not None:
            say(f"snapshot of the starting files in {time.monotonic() - started:.1f} s")

    @classmethod
    def open(cls, task: Task, folder: Path, *, isolated: bool = True, plugin: Plugin | None = None, journal: bool = False,
             max_observation_chars: int = MAX_OBSERVATION_CHARS, make_sandbox: SandboxFactory | None = None) -> Environment:  # fmt: skip
        """The environment of an episode whose files are in ``folder`` (``workspace/``,
        ``scratch/``, ``baseline.git``: ``prepare``).

        A task whose metadata has ``container`` runs in a container of that image (``open_container``:
        a Terminal-Bench task), with the workspace at its working folder. Otherwise the sandbox
        shows the workspace a second time at ``task.metadata["workspace_alias"]``
        (a Terminal-Bench task's working folder, ``/app``) and hides the folders of
        ``task.metadata["sandbox_hidden"]`` (an evaluation's suite and hidden tests).

        Args:
            isolated: run commands in the bwrap sandbox (False: ``--no-sandbox``).
            plugin: the plugin, when the caller has loaded it already (default ``load_plugin(task.plugin)``).
            journal: keep ``folder/inflight.json`` (``CallJournal``), so that a run resumed after
                a crash undoes the call that was cut short.
            make_sandbox: ``make_sandbox(workspace, scratch)`` gives the episode's sandbox instead of
                ``open_sandbox`` (``isolated`` and the alias are then its own business): Horizon as
                a Harbor agent runs commands in Harbor's container (``plugins.coding.harbor``).

        Raises:
            PluginNotFound: no plugin of that name.
            UserError: the sandbox cannot be made here (a working folder it cannot show).
            SandboxUnavailable: isolation was asked for and bwrap cannot start here.
        """
        plugin = plugin or load_plugin(task.plugin)
        workspace, scratch = folder / "workspace", folder / "scratch"
        try:
            if make_sandbox is not None:
                sandbox = make_sandbox(workspace, scratch)
            elif task.metadata.get("container"):  # a Terminal-Bench task's own image (core.sandbox.container)
                sandbox = open_container(task.metadata["container"], workspace, scratch)
            else:
                sandbox = open_sandbox(workspace, scratch, isolated=isolated, alias=task.metadata.get("workspace_alias"),
                                       hide=[Path(p) for p in task.metadata.get("sandbox_hidden", [])])  # fmt: skip
        except ValueError as exc:  # e.g. a working folder the sandbox cannot show at its path here
            raise UserError(f"the episode's sandbox cannot be made: {exc}") from None
        ctx = ToolContext(workspace=workspace, sandbox=sandbox, scratch=scratch, baseline=folder / "baseline.git")
        keeper = CallJournal(workspace, folder / "baseline.git", folder / "inflight.json") if journal else None
        return cls(task, plugin, ctx, max_observation_chars=max_observation_chars, journal=keeper)

    # -- the episode --------------------------------------------------------------------------

    def reset(self) -> list[Message]:
        """Run the plugin's set-up (e.g. the baseline test run) and return the opening messages:
        the system prompt and the task with what set-up found (``setup_text``), UTF-8-safe."""
        self.setup_text = self.plugin.setup(self.task, self.ctx)
        opening = [
            Message(role="system", content=self.plugin.system_prompt(self.task)),
            Message(role="user", content=self.task.instruction + (f"\n\n{self.setup_text}" if self.setup_text else "")),
        ]
        return [utf8_safe(m) for m in opening]  # a task typed in a non-UTF-8 terminal

    def replay(self, records: list[dict[str, Any]]) -> dict[str, str]:
        """Show the stuck detector the calls of an earlier part of this episode (a resumed run),
        so it warns and stops exactly where the first run did.

        Args:
            records: ``RunStore.tool_call_records()``: ``tool``, ``arguments``, ``is_error``,
                ``tool_call_id`` and ``data["observation_sha256"]``, in order.

        Returns:
            ``{tool call id: reason}`` for the calls after which the detector stopped the episode.
        """
        stops = {}
        self.calls += len(records)
        for record in records:
            verdict = self.stuck.observe(action_key(record["tool"], record["arguments"]), record["data"].get("observation_sha256", ""),
                                         record["is_error"])  # fmt: skip
            if verdict.level == "stop":
                stops[record["tool_call_id"]] = verdict.reason
        return stops

    def step(self, call: ToolCall) -> Observation:
        """Run one tool call and shape what the model sees of it (module docstring).

        Args:
            call: the call as the model wrote it (``arguments``: JSON text, validated here).

        Returns:
            The ``Observation``; nothing about the call raises (a tool's bug that is not an
            ``OSError``/``ValueError`` does: it is Horizon's or the plugin's, and the run records it).
        """
        started = time.perf_counter()
        self.calls += 1
        result, malformed = self._execute(call)
        result = utf8_safe(result)  # outputs may echo undecodable bytes or the model's own lone surrogates
        images, refused = self.keep_images(result)
        content = self.observation(call, result) + "".join(f"\n[{why}]" for why in refused)
        digest = hashlib.sha256(content.encode()).hexdigest()
        verdict = self.stuck.observe(action_key(call.name, call.arguments), digest, result.is_error)
        if verdict.level != "ok":
            content += f"\n\n[{verdict.reason}]"
        return Observation(content=content, result=result, malformed=malformed, digest=digest,
                           stop=verdict.reason if verdict.level == "stop" else "", duration_s=time.perf_counter() - started,
                           images=images)  # fmt: skip

    def reward(self, trajectory: Trajectory) -> RewardResult:
        """The plugin's verdict on the episode (``core.reward.evaluate``)."""
        return evaluate(self.plugin.reward, self.task, trajectory)

    async def areward(self, trajectory: Trajectory, *, in_thread: bool = True) -> RewardResult:
        """``reward`` for an asyncio driver: a synchronous reward (the coding reward runs the
        tests) runs in a worker thread when ``in_thread``, so other episodes go on meanwhile."""
        import asyncio
        import inspect

        if not in_thread:
            return await aevaluate(self.plugin.reward, self.task, trajectory)
        fn = self.plugin.reward

        async def call(task: Task, traj: Trajectory) -> Any:
            result = await asyncio.to_thread(fn, task, traj)
            return await result if inspect.isawaitable(result) else result

        call.__qualname__ = getattr(fn, "__qualname__", "reward")
        return await aevaluate(call, self.task, trajectory)

    def close(self) -> None:
        """Release what the plugin started for the episode (its optional ``teardown``: the 3D
        plugin's Blender worker); safe to call twice."""
        if self.mcp is not None:
            self.mcp.close()
        teardown = getattr(self.plugin, "teardown", None)
        if teardown is not None:
            teardown(self.ctx)
        stop = getattr(self.ctx.sandbox, "close", None)  # a container sandbox's container
        if stop is not None:
            stop()

    # -- one call ------------------------------------------------------------------------------

    def _execute(self, call: ToolCall) -> tuple[ToolResult, bool]:
        """Run one call. Returns the result and whether the call itself was malformed."""
        tool = self.tools.get(call.name)
        if tool is None:
            return ToolResult(output=f"unknown tool {call.name!r}; the tools are: {', '.join(self.tools)}", is_error=True), True
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
                              data={"exception": traceback.format_exc()}), False  # fmt: skip
        return (result if isinstance(result, ToolResult) else ToolResult(output=str(result))), False

    def keep_images(self, result: ToolResult) -> tuple[tuple[Path, ...], list[str]]:
        """Copy the call's images (``ToolResult.images``) to ``scratch/images/call-<n>-<i>.<ext>``.

        A copy, because the file the tool wrote may be overwritten by a later call (every
        ``render_preview`` writes ``renders/preview.png`` by default) or by the agent's commands,
        and the observation must keep showing what this call produced. Scratch is outside the
        agent's reach. Only PNG and JPEG files (by suffix and signature) of at most
        ``MAX_IMAGE_BYTES`` inside the workspace or scratch are kept.

        Returns:
            The copies, and for each image refused a note saying why (appended to the observation).
        """
        kept: list[Path] = []
        refused: list[str] = []
        if not result.images:
            return (), refused
        folder = self.ctx.scratch / "images"
        folder.mkdir(parents=True, exist_ok=True)
        roots = [self.ctx.workspace.resolve(), self.ctx.scratch.resolve()]
        for i, image in enumerate(result.images):
            why = _unusable_image(Path(image), roots)
            if why:
                refused.append(f"image {Path(image).name} not attached: {why}")
                continue
            copy = folder / f"call-{self.calls}-{i}{Path(image).suffix.lower()}"
            copy.write_bytes(Path(image).read_bytes())
            kept.append(copy)
        return tuple(kept), refused

    def observation(self, call: ToolCall, result: ToolResult) -> str:
        """Cap one call's output at ``max_observation_chars`` (its own budget, whatever else the reply called).

        A longer output is saved whole as ``<workspace>/.horizon/observations/call-<n>.txt``, ``n``
        the call's number in the episode (never its id, which the model server chose: it may hold
        ``/`` or ``..``, and a number is the same for every driver), and cut on line boundaries
        (``core.observation.cut_lines``), keeping head and tail; the line in the gap names the
        lines left out and the call that shows them (the plugin's ``reads_lines`` tool on the
        saved file).
        """
        text = result.output
        limit = self.max_observation_chars
        if len(text) <= limit:
            return text
        folder = self.ctx.workspace / ".horizon" / "observations"
        make_dirs(folder, self.ctx.workspace)  # the agent could have planted links here
        full = folder / f"call-{self.calls}.txt"
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


#: The largest image file a tool result may attach, in bytes (a data URL grows it by a third).
MAX_IMAGE_BYTES = 8 * 1024 * 1024
#: Image kinds a tool result may attach: suffix -> the file's first bytes (PNG and JPEG signatures).
IMAGE_SIGNATURES = {".png": b"\x89PNG\r\n\x1a\n", ".jpg": b"\xff\xd8\xff", ".jpeg": b"\xff\xd8\xff"}


def _unusable_image(path: Path, roots: list[Path]) -> str:
    """Why ``path`` cannot be attached to an observation ("" when it can)."""
    signature = IMAGE_SIGNATURES.get(path.suffix.lower())
    if signature is None:
        return "only .png, .jpg and .jpeg files are shown to the model"
    try:
        real = path.resolve()
        if not any(real == root or root in real.parents for root in roots):
            return "it is outside the workspace and scratch"
        if not real.is_file() or real.stat().st_size > MAX_IMAGE_BYTES:
            return f"not a file of at most {MAX_IMAGE_BYTES:,} bytes"
        with real.open("rb") as f:
            if f.read(len(signature)) != signature:
                return f"its contents are not {path.suffix.lower()[1:].upper()}"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    return ""

"""External MCP servers' tools in an episode: Horizon as an MCP client.

A task (``task.json``'s ``mcp_servers``) or the config (``[[mcp_servers]]`` in ``horizon.toml``)
names servers, each started over stdio (``command``) or reached over streamable HTTP (``url``).
When the episode's ``Environment`` is made, ``McpToolset`` connects to each with the official
``mcp`` SDK's ``Client``, lists its tools and wraps each as a ``Tool`` named
``<server>__<tool>``, whose schema is the server's own input schema. From there an external tool
is one more tool of the episode: the model sees it in the same list, its calls go through
``Environment.step`` (one error policy, the output cap, the stuck detector, the journal) and
land in the run store like any call, so they are recorded, exported and resumed the same way.

- **Sandbox**: a stdio server is started through the episode's sandbox
  (``Sandbox.command_line``): it sees the workspace as the agent's commands do, loopback-only
  network unless the sandbox allows more, no host environment variables but those the spec
  names. An HTTP server is someone else's process; it never sees the workspace, so its tools are
  marked read-only (no snapshot before each call).
- **Resource limits**: a stdio server runs under the episode's sandbox limits
  (``SandboxLimits``: CPU time, memory, processes, file size), for its whole life, through
  ``Confinement.launcher`` (``core.sandbox.launch``): the rlimits, and a cgroup of its own where
  the sandbox uses cgroups, apply before its first instruction. A spec's ``limits`` may lower
  them for one server, never raise them. A server that runs into its memory or process limit
  (the cgroup says so: an OOM kill, ``pids.max``), or is killed by the CPU-time limit, is stopped
  (everything in its cgroup killed): the call that was running and every later call of its tools
  becomes an error observation saying which limit stopped it, and the episode goes on without
  it; the line is also appended to its stderr log. Without a cgroup the kernel still enforces
  the rlimits (an allocation past ``RLIMIT_AS`` fails, a fork past ``RLIMIT_NPROC`` fails) but the
  server is not stopped for it. The wall-clock limit of a server is the episode's: it lives
  until the episode's end, and each call has its own ``timeout_s``.
- **Time limits**: each call waits at most the server's ``timeout_s``; a call past it is
  cancelled and becomes an error observation naming the server and the limit. A server that
  dies or returns ``isError`` gives an error observation too; the episode goes on.
- **Logs**: a stdio server's stderr goes to ``scratch/mcp-<name>.stderr.log`` (its last lines
  are quoted in the error when it fails to start: that run is removed, its scratch with it).
- **Threads**: the SDK is asynchronous and its connection must be opened and closed in one
  task, so each toolset runs one event loop in a thread of its own, holding each connection in
  a task that lives until ``close``; a tool call is a coroutine submitted to that loop.

Arguments are checked against the server's JSON schema (``jsonschema``, which the SDK already
depends on) before the call, so a malformed call is an observation listing the problems, as
for Horizon's own tools.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import signal
import threading
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from core.errors import ToolError, UserError
from core.sandbox.base import Sandbox, SandboxLimits
from core.sandbox.limits import Confinement
from core.sandbox.process import shell_status_to_exit_code
from core.tools import Tool, ToolContext, ToolResult

__all__ = ["McpServerSpec", "McpToolset", "parse_servers"]

#: OpenAI's limit on a function name's length, and the characters it allows.
_NAME_LIMIT = 64
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")


class McpLimits(BaseModel):
    """Lower limits for one stdio server than the episode's sandbox gives (``SandboxLimits``'s
    fields; each one the smaller of the two applies)."""

    model_config = ConfigDict(extra="forbid")

    cpu_s: int | None = Field(None, gt=0)
    memory_bytes: int | None = Field(None, gt=0)
    max_processes: int | None = Field(None, gt=0)
    file_size_bytes: int | None = Field(None, gt=0)

    def within(self, limits: SandboxLimits) -> SandboxLimits:
        """``limits`` with each field given here lowered to it (never raised)."""
        lowered = {k: min(v, getattr(limits, k)) for k, v in self.model_dump().items() if v is not None}
        return limits.model_copy(update=lowered)


class McpServerSpec(BaseModel):
    """One external MCP server, as a task file or the config names it.

    Attributes:
        name: a short identifier (letters, digits, ``_``, ``-``); its tools are ``<name>__<tool>``.
        command: for stdio, the program and its arguments (no shell), started in the episode's sandbox.
        url: for streamable HTTP, the server's endpoint (``http://host:port/mcp``).
        env: environment variables for a stdio server (the host's are not passed).
        timeout_s: seconds one tool call may take.
        start_timeout_s: seconds the server may take to start and list its tools.
        tools: the server's tools to offer (its own names); None: all of them.
        limits: lower resource limits for a stdio server than the episode's (``McpLimits``).
    """

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,32}$")
    command: list[str] | None = Field(None, min_length=1)
    url: str | None = Field(None, pattern=r"^https?://")
    env: dict[str, str] = {}
    timeout_s: float = Field(60.0, gt=0, le=3600)
    start_timeout_s: float = Field(60.0, gt=0, le=3600)
    tools: list[str] | None = None
    limits: McpLimits = McpLimits()

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerSpec:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of command (a stdio server) or url (a streamable HTTP server)")
        return self

    def where(self) -> str:
        """How the server is reached, for messages: its URL or its command line."""
        return self.url or " ".join(self.command or [])


def parse_servers(raw: Any, source: str) -> list[McpServerSpec]:
    """Read a list of server specs (dicts) from a task's metadata or the config.

    Args:
        raw: a list of dicts (``McpServerSpec``'s fields); None or empty: no servers.
        source: where the list came from, for the error ("task.json", "horizon.toml").

    Returns:
        The specs, in order.

    Raises:
        UserError: not a list, a spec that does not validate, or two servers of one name.
    """
    if not raw:
        return []
    if not isinstance(raw, list):
        raise UserError(f"{source}: mcp_servers must be a list of tables (name, command or url, ...)")
    specs = []
    for i, item in enumerate(raw):
        try:
            specs.append(McpServerSpec.model_validate(item))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'server'}: {e['msg']}" for e in exc.errors())
            raise UserError(f"{source}: mcp_servers[{i}] is not a server: {problems}") from None
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise UserError(f"{source}: two MCP servers share a name ({', '.join(sorted({n for n in names if names.count(n) > 1}))}); names must differ")
    return specs


class _Arguments(BaseModel):
    """Any JSON object: an external tool's arguments, checked against its server's schema instead."""

    model_config = ConfigDict(extra="allow")


@dataclass(frozen=True)
class ExternalTool(Tool):
    """A tool of an external MCP server: the server's schema, arguments checked with ``jsonschema``."""

    input_schema: dict[str, Any] = field(default_factory=dict)

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-calling schema with the server's input schema as parameters."""
        return {"type": "function", "function": {"name": self.name, "description": self.description, "parameters": self.input_schema}}

    def parse(self, arguments: dict[str, Any] | str) -> BaseModel:
        """Validate the raw arguments against the server's schema.

        Raises:
            ToolError: not a JSON object, or each place where it breaks the schema.
        """
        import jsonschema

        args = super().parse(arguments)  # JSON text and object shape, as for every tool
        values = args.model_dump()
        try:
            validator = jsonschema.validators.validator_for(self.input_schema)(self.input_schema)
            errors = sorted(validator.iter_errors(values), key=lambda e: list(e.absolute_path))
        except jsonschema.SchemaError as exc:  # the server's fault, not the model's: call it anyway
            errors = []
            del exc
        if errors:
            problems = "; ".join(f"{'.'.join(map(str, e.absolute_path)) or 'arguments'}: {e.message}" for e in errors[:10])
            raise ToolError(f"invalid arguments for {self.name}: {problems}")
        return args


class McpToolset:
    """Connections to external MCP servers for one episode, and their tools (module docstring).

    Args:
        specs: the servers.
        sandbox: the episode's sandbox; stdio servers are started through it.

    Raises:
        UserError: a server cannot be started or reached, does not answer within its
            ``timeout_s``, or one of its tools' names collides with another tool (the message names
            the server, how it is reached and what to check).
    """

    def __init__(self, specs: list[McpServerSpec], sandbox: Sandbox) -> None:
        self.specs = specs
        self.tools: list[Tool] = []
        self._clients: dict[str, Any] = {}
        self._stops: list[asyncio.Event] = []
        self._holders: list[Future[Any]] = []
        self._logs: list[Any] = []  # open stderr files of stdio servers
        self._confined: dict[str, _Confined] = {}  # stdio servers: their limits and how they ended
        self._stopped: dict[str, str] = {}  # server -> why Horizon stopped it (a limit)
        self._stop_lock = threading.Lock()
        self._calling: dict[str, str] = {}  # server -> the tool being called now
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="horizon-mcp-client", daemon=True)
        self._thread.start()
        try:
            for spec in specs:
                self._connect(spec, sandbox)
        except BaseException:
            self.close()
            raise
        if self._confined:
            self._watcher = asyncio.run_coroutine_threadsafe(self._watch(), self._loop)

    def _connect(self, spec: McpServerSpec, sandbox: Sandbox) -> None:
        from mcp import Client, StdioServerParameters
        from mcp.client.stdio import stdio_client

        log = None
        if spec.url is not None:
            target: Any = spec.url
        else:
            try:
                argv, env = sandbox.command_line(list(spec.command or []), env=spec.env)
            except ValueError as exc:
                raise UserError(f"MCP server {spec.name!r}: {exc}") from None
            # Its stderr goes to a file in scratch (kept with the run), not over Horizon's screen.
            log = sandbox.scratch / f"mcp-{spec.name}.stderr.log"
            self._logs.append(stream := log.open("a", encoding="utf-8"))
            limits = spec.limits.within(sandbox.limits)
            confined = _Confined(Confinement(limits, use_cgroups=getattr(sandbox, "use_cgroups", True)), limits,
                                 sandbox.scratch / f"mcp-{spec.name}.exit.json", log, stream)  # fmt: skip
            self._confined[spec.name] = confined
            argv = confined.confinement.launcher(argv, confined.status)
            target = stdio_client(StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=str(sandbox.workspace)), errlog=stream)
        ready: Future[Any] = Future()
        stop = asyncio.Event()

        async def hold() -> None:
            try:
                async with Client(target, read_timeout_seconds=max(spec.timeout_s, spec.start_timeout_s)) as client:
                    listed, cursor = [], None
                    while True:
                        page = await client.list_tools(cursor=cursor)
                        listed += page.tools
                        cursor = page.next_cursor
                        if not cursor:
                            break
                    ready.set_result((client, listed))
                    await stop.wait()
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread, which says what failed
                # After start-up a server that goes away is left to its next call to report.
                if not ready.done():
                    ready.set_exception(exc)

        self._stops.append(stop)
        self._holders.append(asyncio.run_coroutine_threadsafe(hold(), self._loop))
        try:
            client, listed = ready.result(timeout=spec.start_timeout_s)
        except FutureTimeout:
            raise UserError(f"MCP server {spec.name!r} ({spec.where()}) did not answer within {spec.start_timeout_s:g} s; "
                            "check that it starts and speaks MCP, or raise its start_timeout_s") from None  # fmt: skip
        except Exception as exc:  # noqa: BLE001 - any failure to start or reach the server is the user's to fix
            if (why := self._limit_reason(spec.name)) is not None:
                raise UserError(f"MCP server {spec.name!r} ({spec.where()}) was stopped while starting: it ran into {why}; "
                                "lower what it needs, or give the episode's sandbox more") from None  # fmt: skip
            said = _tail(log) if log is not None else ""
            under_tmp = [a for a in spec.command or [] if a == "/tmp" or a.startswith("/tmp/")]
            raise UserError(f"MCP server {spec.name!r} ({spec.where()}) could not be reached: {_reason(exc)}"
                            + (f"; it said: {said}" if said else "")  # the log's folder goes with the run that could not start
                            + (f"; {under_tmp[0]} is under /tmp, which the sandbox replaces with a /tmp of its own: move the "
                               "server into the workspace or a folder outside /tmp" if under_tmp else "")
                            + "; check its command or url (a stdio server runs in the episode's sandbox: it sees the "
                            "workspace and loopback only)") from None  # fmt: skip
        self._clients[spec.name] = client
        wanted = set(spec.tools) if spec.tools is not None else None
        if wanted is not None and (missing := wanted - {t.name for t in listed}):
            raise UserError(f"MCP server {spec.name!r} has no tool(s) {', '.join(sorted(missing))}; it offers: {', '.join(t.name for t in listed)}")
        for listed_tool in listed:
            if wanted is None or listed_tool.name in wanted:
                self.tools.append(self._wrap(spec, listed_tool))

    def _wrap(self, spec: McpServerSpec, listed: Any) -> ExternalTool:
        name = _NAME_CHARS.sub("_", f"{spec.name}__{listed.name}")[:_NAME_LIMIT]
        description = f"(MCP server {spec.name}) " + (listed.description or listed.title or listed.name).strip()

        def call(args: BaseModel, ctx: ToolContext) -> ToolResult:
            return self.call(spec, listed.name, args.model_dump())

        schema = dict(listed.input_schema or {"type": "object"})
        return ExternalTool(name=name, description=description, args_model=_Arguments, fn=call, read_only=spec.url is not None, input_schema=schema)

    def call(self, spec: McpServerSpec, tool: str, arguments: dict[str, Any]) -> ToolResult:
        """Call one tool of a server and turn its result into a ``ToolResult``.

        Args:
            spec: the server.
            tool: the tool's name on the server.
            arguments: the (validated) arguments.

        Returns:
            The text of the result's content parts (an image part as a one-line note of its type
            and size, structured content as JSON when there is no text); ``data`` has the server,
            the tool and the structured content.

        Raises:
            ToolError: the call took longer than ``timeout_s`` (cancelled), the connection failed,
                or the server answered ``isError`` (its text is the message).
        """
        if spec.name in self._stopped:
            raise ToolError(self._stopped[spec.name])
        client = self._clients[spec.name]
        self._calling[spec.name] = tool  # named by the watcher's message if the server is stopped meanwhile
        future = asyncio.run_coroutine_threadsafe(client.call_tool(tool, arguments), self._loop)
        try:
            result = self._wait(spec, future)
        except FutureTimeout:
            future.cancel()
            if self._check(spec.name, tool):
                raise ToolError(self._stopped[spec.name]) from None
            raise ToolError(f"the MCP server {spec.name} did not answer {tool} within {spec.timeout_s:g} s; the call was cancelled") from None
        except Exception as exc:  # noqa: BLE001 - a dead server or a protocol error is an observation, not a crash
            if self._check(spec.name, tool, ended=True):
                raise ToolError(self._stopped[spec.name]) from None
            raise ToolError(f"the MCP server {spec.name} failed on {tool}: {_reason(exc)}") from None
        finally:
            self._calling.pop(spec.name, None)
        if self._check(spec.name, tool):  # it answered, but ran into a limit meanwhile: it is stopped now
            raise ToolError(self._stopped[spec.name])
        text = _content_text(result)
        if result.is_error:
            raise ToolError(f"{spec.name}__{tool} failed: {text or 'the server gave no reason'}")
        data = {"mcp_server": spec.name, "mcp_tool": tool}
        if result.structured_content is not None:
            data["structured_content"] = result.structured_content
        return ToolResult(output=text or "(no output)", data=data)

    def _wait(self, spec: McpServerSpec, future: Future[Any]) -> Any:
        """The call's result; gives up early (``FutureTimeout``) once the server was stopped."""
        deadline = time.monotonic() + spec.timeout_s
        while True:
            try:
                return future.result(timeout=max(0.0, min(_WATCH_S, deadline - time.monotonic())))
            except FutureTimeout:
                if spec.name in self._stopped or time.monotonic() >= deadline:
                    raise

    def _limit_reason(self, name: str, *, ended: bool = False) -> str | None:
        """Which limit a stdio server ran into (the cgroup's record, or the signal it died of), or
        None; ``ended``: its connection just ended, so wait a moment for the launcher's record."""
        confined = self._confined.get(name)
        if confined is None:
            return None
        why = confined.confinement.exceeded()
        if why is None:
            code = confined.exit_code(wait_s=2.0 if ended else 0.0)
            # bwrap reports its command's death by signal n as 128 + n; an unconfined server's is -n
            code = shell_status_to_exit_code(code) if code is not None else None
            if code == -signal.SIGXCPU:
                why = "its CPU-time limit"
            elif code == -signal.SIGXFSZ:
                why = "its file-size limit"
        if why is None:
            return None
        detail = {"its memory limit": f"{confined.limits.memory_bytes:,} bytes",
                  "its process limit": f"{confined.limits.max_processes} processes",
                  "its CPU-time limit": f"{confined.limits.cpu_s} s",
                  "its file-size limit": f"{confined.limits.file_size_bytes:,} bytes"}[why]  # fmt: skip
        return f"{why} ({detail})"

    def _check(self, name: str, tool: str | None = None, *, ended: bool = False) -> bool:
        """Stop server ``name`` if it ran into a limit (once); True when it is stopped.
        ``ended``: its call failed as a dead connection does (see ``_limit_reason``)."""
        if name in self._stopped:
            return True
        why = self._limit_reason(name, ended=ended)
        if why is None:
            return False
        with self._stop_lock:
            if name in self._stopped:
                return True
            tool = tool or self._calling.get(name)
            during = f" during {tool}" if tool else ""
            message = (f"the MCP server {name} was stopped{during}: it ran into {why}; its tools are unavailable "
                       "for the rest of the episode")  # fmt: skip
            self._stopped[name] = message
        confined = self._confined[name]
        confined.confinement.kill()
        with suppress(OSError, ValueError):
            confined.stream.write(f"horizon: {message}\n")
            confined.stream.flush()
        return True

    async def _watch(self) -> None:
        """Stop a server the moment its cgroup records a limit (a fork bomb would otherwise spin
        until its call times out)."""
        while True:
            for name in self._confined:
                if name not in self._stopped:
                    with suppress(Exception):  # a cgroup file that went away: the next look, or the call, tells
                        await asyncio.to_thread(self._check, name)
            await asyncio.sleep(_WATCH_S)

    def stopped(self) -> dict[str, str]:
        """The servers Horizon stopped for a limit, each with the message its calls get."""
        return dict(self._stopped)

    def close(self) -> None:
        """Close every connection (a stdio server's process ends with it), remove the servers'
        cgroups and stop the thread; safe to call twice."""
        if not self._thread.is_alive():
            return
        watcher = getattr(self, "_watcher", None)
        if watcher is not None:
            watcher.cancel()
        for stop in self._stops:
            self._loop.call_soon_threadsafe(stop.set)
        for holder in self._holders:
            with suppress(Exception):
                holder.result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self._loop.close()
        for confined in self._confined.values():
            confined.confinement.close()
        for stream in self._logs:
            stream.close()


#: Seconds between two looks at the servers' cgroups.
_WATCH_S = 0.2


@dataclass
class _Confined:
    """A stdio server's limits: its confinement, the limits it was given, where the launcher
    writes its exit status, and its stderr log (path and open stream)."""

    confinement: Confinement
    limits: SandboxLimits
    status: Path
    log: Path
    stream: Any

    def exit_code(self, wait_s: float = 0.0) -> int | None:
        """The server's exit status once it has ended (negative: a signal), else None; waits up
        to ``wait_s`` seconds for the launcher to write it."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                return int(json.loads(self.status.read_text(encoding="utf-8"))["exit_code"])
            except (OSError, ValueError, KeyError, TypeError):
                if time.monotonic() >= deadline:
                    return None
            time.sleep(0.05)



def _content_text(result: Any) -> str:
    """The text of a ``CallToolResult``'s content parts, in order."""
    parts = []
    for part in result.content or []:
        kind = getattr(part, "type", "")
        if kind == "text":
            parts.append(part.text)
        elif kind in ("image", "audio"):
            size = len(base64.b64decode(part.data, validate=False)) if part.data else 0
            parts.append(f"[{kind} {part.mime_type}, {size:,} bytes]")
        elif kind == "resource":
            resource = part.resource
            parts.append(getattr(resource, "text", None) or f"[resource {resource.uri}]")
        elif kind == "resource_link":
            parts.append(f"[resource {part.uri}]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)


def _tail(log: Path, lines: int = 3) -> str:
    """The last lines of a server's stderr log, joined (empty when there is none)."""
    try:
        text = log.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""
    return " | ".join(text.splitlines()[-lines:])[-600:]


def _reason(exc: BaseException) -> str:
    """One line for an exception, unwrapping anyio's exception groups to the first real cause."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__

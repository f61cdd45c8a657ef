"""The ``agent`` command line (typer + rich).

    agent run PLUGIN "TASK" [--repo PATH] [--policy auto|embedded|openai|scripted|human] [--apply]
    agent resume RUN_ID      continue an interrupted run
    agent runs               list runs
    agent show RUN_ID        print a trajectory
    agent apply RUN_ID [--dry-run] [--yes] [--undo]   review a run's patch, apply it atomically (or undo it)
    agent plugins            list installed plugins
    agent eval PLUGIN SUITE [--attempts k] [--workers n] [--policy ...] [--backend ray|processes]   pass@k over a suite of tasks
    agent export RUNS... --format F --out PATH   RL/SFT training data (--all, --plugin NAME)
    agent human wait DIR / agent human answer DIR ...   answer a --policy human run's model requests
    agent mcp PLUGIN [--repo PATH] [--transport stdio|http] [--port N]   serve the tools to MCP clients, each session a run
    agent ui [--host H] [--port N]   a local web page over runs (live) and evaluations
    agent server [--workers N] [--address RAY] [--repo-root DIR]... [--max-queued N] [--no-sandbox]   an HTTP API that queues runs and runs them on Ray; /metrics
    agent trust PATH | --list | --revoke PATH   trust a repository's horizon.toml or task.json (its SHA-256)
"""

from __future__ import annotations

import json
import logging
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from typer.core import TyperGroup

from core import defaults
from core.errors import HorizonError, UserError
from core.text import terminal_safe

if TYPE_CHECKING:
    from core.config import Settings
    from core.runner import Run, RunResult

# The run machinery (LangGraph, DuckDB, llama.cpp) takes seconds to import: commands import it
# when they need it, so `agent --help` is instant and Ctrl-C while starting is a clean exit.


class _PluginCommands(TyperGroup):
    """``agent NAME ...`` for one ``horizon.commands`` entry point, as ``agent --help`` lists it:
    from the entry point's metadata alone, nothing imported. ``_AgentCommands`` swaps in the
    plugin's own commands (``load``) when one of them is invoked."""

    entry: Any = None  # the importlib.metadata.EntryPoint (set on the subclass made per entry point)

    @classmethod
    def load(cls) -> Any:
        """The plugin's click group; a module that does not import gives a stand-in that says why
        whatever is asked of it (the rest of the CLI still works)."""
        try:
            sub = cls.entry.load()
            if not isinstance(sub, typer.Typer):
                raise TypeError(f"{cls.entry.value} is a {type(sub).__name__}, not a typer.Typer")
        except Exception as exc:  # noqa: BLE001 - a broken plugin must not take the whole CLI down
            sub = _broken_commands(f"the {cls.entry.name!r} commands ({cls.entry.value}) could not be loaded: {type(exc).__name__}: {exc}")
        return typer.main.get_group(sub)


class _AgentCommands(TyperGroup):
    """The ``agent`` group: a plugin's commands are imported only when one of them is invoked, so
    every other command starts without loading any plugin (``agent --help`` included)."""

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        name, command, rest = super().resolve_command(ctx, args)
        if isinstance(command, _PluginCommands):
            command = command.load()
        return name, command, rest


# typer's own traceback printer would show raw file names and values: main() prints crashes sanitised
app = typer.Typer(cls=_AgentCommands, add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Horizon: long-horizon agents for coding, 3D and finance.")
# soft_wrap: long lines (code, diffs, paths) are never broken at the terminal's width;
# emoji=False: ":smile:" in a tool's output is printed as written, not as an emoji
console = Console(highlight=False, soft_wrap=True, emoji=False)
EXIT_INTERRUPTED = 130  # the shell's convention for a run stopped by Ctrl-C
#: The limits a run gets when no flag says otherwise: the CLI's defaults are ``Limits``'s own
#: (``core/defaults.py``, one owner), read without importing pydantic.
#: The embedded model's step limit when --max-steps is not given: it is a demonstration (a step
#: takes tens of seconds on 2 cores), not a model that fixes bugs.
EMBEDDED_MAX_STEPS = 6


def _safe(text: object) -> str:
    """``text`` ready for rich markup: control and escape sequences removed (``terminal_safe``: a
    tool's output cannot clear the screen or write the clipboard) and markup escaped (``[red]`` in
    it is printed, not interpreted). Every piece of text the CLI prints that a model, a tool, a
    repository, a run folder or a server produced goes through here."""
    return escape(terminal_safe("" if text is None else str(text)))


def _short(text: str | None, width: int = 90) -> str:
    """``text`` on one line, cut to ``width`` characters (made terminal-safe first, so the width
    counts what is shown); still to be escaped for markup (``_safe``)."""
    one_line = " ".join(terminal_safe(text or "").split())
    return one_line if len(one_line) <= width else one_line[: width - 1] + "…"


class _SafeStderrHandler(logging.Handler):
    """Python's last-resort log handler (warnings of a library with no logging set up), but with
    each record made terminal-safe: a model server's error text reaches stderr in them."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(terminal_safe(self.format(record)) + "\n")
        except Exception:  # noqa: BLE001 - logging must never raise; the stdlib reports it
            self.handleError(record)


logging.lastResort = _SafeStderrHandler(logging.WARNING)


class StepPrinter:
    """Prints one live line per tool call: step, tool, arguments, observation, tokens, seconds.

    Args:
        out: the console to print on (default: the CLI's, on stdout); ``agent mcp`` gives one on
            stderr, since its stdout may be the MCP transport.
    """

    def __init__(self, out: Console | None = None) -> None:
        from core.state import Usage

        self.usage = Usage()
        self.model_s = 0.0  # the step's model call, shown on its first tool line
        self.console = out or console

    def __call__(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "model":
            self.usage = data["total"]
            self.model_s = data.get("model_s", 0.0)
            if data["message"].content and not data["message"].tool_calls:
                self.console.print(f"[dim]step {data['step']:>3}[/]  [yellow]text[/] {_safe(_short(data['message'].content))}")
        elif kind == "tool":
            call = data["call"]
            head = "(no tool call)" if call is None else f"{_short(call.name, 60)}({_short(call.arguments, 60)})"
            colour = "red" if data["is_error"] else "green"
            # a model call of a tenth of a second or more is named beside the tool's own seconds
            # (an embedded model's step is mostly the model: 30-60 s on 2 cores)
            model = f"  model {self.model_s:.1f}s +" if self.model_s >= 0.1 else ""
            self.model_s = 0.0
            self.console.print(
                f"[dim]step {data['step']:>3}[/]  [bold]{_safe(head)}[/]  [{colour}]→ {_safe(_short(data['output'], 70))}[/]"
                f"  [dim]{self.usage.total_tokens:,} tok{model}  {data['duration_s']:.1f}s[/]"
            )
        elif kind == "verify":
            r = data["reward"]
            verdict = f"reward {r.reward:.3f}" if r.applicable else "reward not applicable"
            self.console.print(f"[bold]verify[/]  {_safe(r.summary)}  [dim]{verdict}, {_safe(r.version)}[/]")
        elif kind == "setup":  # the first paragraph of what set-up found (the rest is in agent show)
            lines = terminal_safe(data["text"] or "").strip().split("\n\n", 1)[0].splitlines()
            for line in lines[:8]:
                self.console.print(f"[dim]setup      {_safe(line)}[/]")
            if len(lines) > 8:
                self.console.print(f"[dim]setup      … {len(lines) - 8} more lines (agent show RUN_ID)[/]")
        elif kind == "progress":  # a long set-up step (copy, snapshot, environment, baseline tests) as it goes
            self.console.print(f"[dim]setup      {_safe(_short(data['text'], 140))}[/]")
        elif kind == "compaction":
            self.console.print(f"[dim]step {data['step']:>3}  history compacted: ~{data['tokens_before']:,} → ~{data['tokens_after']:,} tokens[/]")
        elif kind == "stopping":
            self.console.print("[yellow]stopping after the current step (Ctrl-C again to stop at once)[/]")


def _maybe(value: float | None, spec: str) -> str:
    """``value`` formatted, or "n/a" for a mean over nothing (every episode not applicable)."""
    return "n/a" if value is None else format(value, spec)


def _reward_text(reward: float | None, status: str | None, digits: int = 3) -> str:
    """A run's reward for a table: the value, "n/a" when the plugin's reward had nothing to judge
    (``not_applicable``), "-" when the run was not judged."""
    if status == "not_applicable":
        return "n/a"
    return "-" if reward is None else f"{reward:.{digits}f}"


def _summary(result: RunResult) -> None:
    s = result.state
    table = Table.grid(padding=(0, 2))
    table.add_row("run", _safe(result.run_id))
    table.add_row("outcome", f"{result.exit_status.value}: {_safe(result.exit_detail)}")
    judged_na = s.verified and result.reward is None
    table.add_row("reward", "n/a (not applicable: nothing to judge)" if judged_na else _reward_text(result.reward, None))
    table.add_row("steps", str(result.steps))
    table.add_row(
        "tokens",
        f"{s.usage.prompt_tokens:,} prompt ({s.usage.cached_prompt_tokens:,} cached), {s.usage.completion_tokens:,} completion",
    )
    table.add_row("cost", f"{s.cost:.4f}")
    table.add_row("time", f"{s.active_s:.1f} s")
    size = result.patch_path.stat().st_size if result.patch_path.exists() else 0
    table.add_row("patch", f"{_safe(result.patch_path)} ({size:,} bytes)" if size else f"{_safe(result.patch_path)} (empty)")
    console.print(table)


def _run_and_report(run: Run, apply: bool, *, embedded: bool = False) -> None:
    """Execute a run, print its summary, apply its patch if asked; exit with the run's status.
    An embedded-model run ends with a line saying what it showed and how to get a capable model."""
    try:
        result = run.execute()
    finally:
        run.close()
    _summary(result)
    if embedded:
        verdict = "and fixed it" if result.reward == 1.0 else "without a fix, as expected of a model this small"
        steps = f"{result.steps} real step{'' if result.steps == 1 else 's'}"
        console.print(f"[bold]the embedded model ran {steps} of the loop {verdict}.[/] For real work, point "
                      "agent run at a model server: --base-url http://localhost:8000/v1 --model NAME (agent serve MODEL starts one; README)")
    if result.status != "finished":
        console.print(f"[yellow]the run stopped before it ended; continue it with: agent resume {result.run_id}[/]")
        raise typer.Exit(EXIT_INTERRUPTED if result.status == "interrupted" else 1)
    if apply and result.patch_path.stat().st_size:
        _apply_patch_of(result.run_id, yes=True)  # --apply is the consent; links out and .git are still refused
    elif apply:
        console.print("the patch is empty: nothing to apply")


def _mcp_metadata(settings: Settings) -> dict[str, Any]:
    """The task metadata that names the config's external MCP servers (none: empty), checked now
    so that a bad ``[[mcp_servers]]`` table fails before anything is copied."""
    if not settings.mcp_servers:
        return {}
    from core.mcp.client import parse_servers

    parse_servers(settings.mcp_servers, f"mcp_servers from {settings.source_of('mcp_servers')}")
    return {"mcp_servers": settings.mcp_servers}


def _served_model(policy: str, settings: Any) -> None:
    """``--base-url`` without ``--model``: take the one model the server lists (``GET /models``;
    vLLM, SGLang and llama.cpp's server serve one), as ``settings.model``, and say so.

    Raises:
        ModelServerUnreachable: the server did not answer (``core.policy.probe``).
        ConfigError: it lists several models, or none: the message lists them and says to pass ``--model``.
    """
    if policy not in ("auto", "openai") or not settings.base_url or settings.model:
        return
    from core.errors import ConfigError
    from core.policy.probe import probe_model_server

    ids = probe_model_server(settings.base_url, api_key=settings.api_key, source=settings.source_of("base_url"))
    if len(ids) != 1:
        listed = f"lists {len(ids)} models ({', '.join(ids[:10])}{', ...' if len(ids) > 10 else ''})" if ids else "lists no model"
        raise ConfigError(f"the model server {settings.base_url} {listed}: say which with --model NAME (or HORIZON_MODEL)")
    settings.model = ids[0]
    settings._sources["model"] = f"GET {settings.base_url.rstrip('/')}/models"
    console.print(f"[dim]model {_safe(ids[0])}: the one model {_safe(settings.base_url)} serves (--model NAME picks another)[/]")


def _probe_server(spec: dict[str, Any], settings: Any) -> None:
    """Check a model server policy's server answers ``GET /models`` (``core.policy.probe``) before
    anything is set up; with a fallback endpoint configured, a dead primary is a warning if the
    fallback answers.

    Raises:
        ModelServerUnreachable: the server (and the fallback, if any) did not answer.
    """
    if spec.get("kind") != "openai":
        return
    from core.policy.probe import ModelServerUnreachable, probe_model_server

    try:
        probe_model_server(spec["base_url"], api_key=settings.api_key, source=settings.source_of("base_url"))
    except ModelServerUnreachable as exc:
        if not settings.fallback_base_url:
            raise
        probe_model_server(settings.fallback_base_url, api_key=settings.fallback_api_key or settings.api_key)
        console.print(f"[yellow]warning: the model server did not answer GET {_safe(exc.url)} ({_safe(exc.what)}); the fallback {_safe(settings.fallback_base_url)} answers, so the run starts on it[/]")


def _fail(exc: HorizonError) -> None:
    console.print(f"[red]error:[/] {_safe(exc)}")
    raise typer.Exit(2 if isinstance(exc, UserError) else 1)


@app.command()
def run(
    plugin: str = typer.Argument(..., help="plugin name, e.g. coding"),
    task: str = typer.Argument(..., help='what to do, e.g. "fix NPE in user module"'),
    repo: Path = typer.Option(Path("."), "--repo", help="repository to work on (copied; your files change only with --apply)"),
    policy: str = typer.Option("auto", "--policy", help="auto (server if configured, else embedded), embedded, openai, scripted, human"),
    script: Path | None = typer.Option(None, "--script", help="JSON Lines of tool calls for --policy scripted"),
    exchange: Path | None = typer.Option(None, "--exchange", help="--policy human: the folder its requests and answers pass through"),
    base_url: str | None = typer.Option(None, "--base-url", help="OpenAI-compatible server, e.g. http://localhost:8000/v1"),
    model: str | None = typer.Option(None, "--model", help="model name on the server"),
    tool_format: str | None = typer.Option(None, "--tool-format", help="native (the server's tool calling) or text (<tool_call> blocks, for servers without it)"),
    vision: bool | None = typer.Option(None, "--vision/--no-vision", help="the server's model sees images: renders go to it as image parts (default: config's vision, false)"),
    critic: bool | None = typer.Option(None, "--critic/--no-critic", help="after each render, a model call judges it against the task; its verdict is added to the observation"),
    max_steps: int | None = typer.Option(None, "--max-steps", min=1,
                                         help=f"model calls before the run stops (default {defaults.MAX_STEPS}; the embedded model: {EMBEDDED_MAX_STEPS})"),
    max_tokens: int = typer.Option(defaults.MAX_TOKENS, "--max-tokens", min=1, help="prompt+completion tokens before the run stops"),
    max_wall_s: float = typer.Option(defaults.MAX_WALL_S, "--max-time", min=0.001, help="seconds of running before the run stops"),
    max_cost: float = typer.Option(defaults.MAX_COST, "--max-cost", min=0.0, help="spend before the run stops (config prices; 0: no limit)"),
    compact_at: int = typer.Option(defaults.COMPACT_AT_TOKENS, "--compact-at", min=0, help="prompt tokens (estimated) at which old turns are summarised (0: never)"),
    apply: bool = typer.Option(False, "--apply", help="apply the final patch to --repo when the run ends"),
    no_sandbox: bool = typer.Option(False, "--no-sandbox", help="run commands WITHOUT isolation (only if bwrap cannot work here)"),
) -> None:
    """Start a run of PLUGIN on TASK; prints a line per step and a summary."""
    from core.plugin import Task
    from core.runner import Run, make_policy, policy_spec
    from core.state import Limits

    try:
        if not task.strip():
            raise UserError('the task is empty; say what to do, e.g. agent run coding "fix the failing test"')
        from core.config import load_settings
        settings = load_settings(base_url=base_url, model=model, tool_format=tool_format, vision=vision, critic=critic)
        _served_model(policy, settings)  # --base-url alone: the server's one model
        spec = policy_spec(policy, settings, script, exchange)  # auto: settings.auto_policy (a --base-url is in settings)
        if max_steps is None:  # the embedded model demonstrates the loop: a short episode, not a long wait
            max_steps = EMBEDDED_MAX_STEPS if spec["kind"] == "embedded" else defaults.MAX_STEPS
        limits = Limits(max_steps=max_steps, max_tokens=max_tokens, max_wall_s=max_wall_s, max_cost=max_cost, compact_at_tokens=compact_at)
        _probe_server(spec, settings)  # a dead server is found now, before the repository is copied and its tests run
        the_policy = make_policy(spec, settings)
        started = Run.start(
            Task(plugin=plugin, instruction=task, repo=repo.resolve(), metadata=_mcp_metadata(settings)), the_policy, policy_config=spec, limits=limits,
            pricing=settings.pricing_for(spec["kind"]), isolated=not no_sandbox, keep_checkpoints=settings.keep_checkpoints, on_event=StepPrinter(),
        )
        console.print(f"[bold]{_safe(plugin)}[/]: {_safe(task)}  [dim]({_safe(the_policy.name)}, repo {_safe(repo.resolve())})[/]")
        if spec["kind"] == "openai":  # who chose where the code and the key go
            console.print(f"[dim]model server {_safe(settings.base_url)} (set by {_safe(settings.source_of('base_url'))})[/]")
        console.print(f"[dim]run {_safe(started.run_id)}  workspace {_safe(started.episode.ctx.workspace)}[/]")
        if spec["kind"] == "embedded":
            console.print(f"[dim]the embedded model (135M parameters, in-process) shows the loop working, at most {max_steps} steps; "
                          "it is far too small to fix real bugs (a model server: --base-url URL --model NAME)[/]")
        if no_sandbox:
            console.print("[yellow]warning: --no-sandbox: the agent's commands run WITHOUT isolation, as you[/]")
        if spec["kind"] == "human":
            folder = _safe(spec["exchange"])
            console.print(f"[bold]you play the model[/]: in another terminal, [bold]agent human wait {folder}[/] shows each "
                          f"request and [bold]agent human answer {folder} --tool NAME --args JSON[/] answers it")  # fmt: skip
        _run_and_report(started, apply, embedded=spec["kind"] == "embedded")
    except HorizonError as exc:
        _fail(exc)


@app.command()
def resume(
    run_id: str = typer.Argument(..., help="the run to continue (see: agent runs)"),
    apply: bool = typer.Option(False, "--apply", help="apply the final patch when the run ends"),
    base_url: str | None = typer.Option(None, "--base-url", help="the model server moved: continue against this URL"),
    model: str | None = typer.Option(None, "--model", help="continue with this model name on the server"),
) -> None:
    """Continue an interrupted run from its last checkpoint; completed tool calls are not repeated."""
    from core.runner import Run

    overrides = {k: v for k, v in {"base_url": base_url, "model": model}.items() if v}
    try:
        from core.config import load_settings
        opened = Run.open(run_id, settings=load_settings(), policy_overrides=overrides, on_event=StepPrinter())
        state = opened.state()
        if state is not None and state.verified:
            console.print(f"run {_safe(run_id)} has already finished")
        else:
            done = state.step if state else 0
            console.print(f"resuming {_safe(run_id)} from its checkpoint at step {done} (a step cut short runs again)")
        _run_and_report(opened, apply)
    except HorizonError as exc:
        _fail(exc)


@app.command()
def runs(
    limit: int = typer.Option(50, "--limit", "-n", min=1, help="newest runs to list"),
    every: bool = typer.Option(False, "--all", help="list every run"),
) -> None:
    """List runs, newest first ("killed": its process died; continue it with agent resume)."""
    from core.catalog import list_runs  # the runs catalog: no run store is opened (issue 31)

    rows = list_runs()
    shown = rows if every else rows[:limit]

    # Fixed columns at their natural widths; the task gets what is left (on 80 columns, a few words).
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    widths = {"run": 20, "plugin": 7, "status": 8, "exit": 9, "reward": 6, "steps": 5}
    for name, width in widths.items():
        table.add_column(name, no_wrap=True, min_width=width)
    room = max(8, console.width - sum(widths.values()) - 3 * len(widths) - 4)
    table.add_column("task", no_wrap=True, overflow="ellipsis", max_width=room)
    for r in shown:
        table.add_row(
            _safe(r["run_id"]), _safe(r.get("plugin")), _safe(r.get("status")), _safe(r.get("exit_status")),
            _reward_text(r.get("reward"), r.get("reward_status"), 2), str(r.get("steps") or 0), _safe(_short(r.get("task"), 50)),
        )
    console.print(table)
    if len(shown) < len(rows):  # a terminal shows a screenful, not a thousand rows (like gh run list's 20)
        console.print(f"[dim]… {len(rows) - len(shown):,} older runs not listed: agent runs --all, or -n N for the newest N[/]")


@app.command()
def show(run_id: str = typer.Argument(..., help="the run to print"),
         as_json: bool = typer.Option(False, "--json", help="print the messages as JSON")) -> None:
    """Print a run's trajectory: each message, tool call and observation, and the rewards."""
    from core.runs import reading_store

    try:
        with reading_store(run_id, live=True) as store:
            row, messages, rewards, live = store.run(), store.messages(), store.rewards(), store.live
    except HorizonError as exc:
        _fail(exc)
        return
    if as_json:
        print(json.dumps({"run": row, "messages": [m.to_openai() for m in messages], "rewards": rewards}, default=str, indent=1))
        return
    console.print(f"[bold]{_safe(row['run_id'])}[/]  {_safe(row['plugin'])}: {_safe(row['task'])}  [dim]{_safe(row['policy'])}[/]")
    for m in messages:
        if m.role == "assistant":
            for c in m.tool_calls:
                console.print(f"[cyan]assistant[/] → {_safe(c.name)}({_safe(c.arguments)})")
            if m.content:
                console.print(f"[cyan]assistant[/] {_safe(m.content)}")
        else:
            console.print(f"[magenta]{_safe(m.role)}[/]{' ' + _safe(m.name) if m.name else ''}: {_safe(m.content)}")
    for name, r in rewards.items():
        console.print(f"[bold]reward[/] {_safe(name)} = {r['value']:.3f} (weight {r['weight']})")
    if live:  # another process is writing it: what it wrote so far, read from its live mirror (core.store_mirror)
        console.print(f"[magenta]running[/]: {len(messages)} messages so far (another process is writing this run)")
        return
    console.print(f"outcome: {_safe(row['exit_status'])} ({_safe(row['exit_detail'])}), patch {_safe(row['patch_path'])}")
    from core.config import runs_dir

    container = runs_dir() / row["run_id"] / "container.diff"  # a container task's changes outside its working folder
    if container.is_file():
        console.print(f"container changes outside the working folder: {_safe(container)}")
        _print_diff(container.read_bytes(), container)
    if row.get("reward_version"):  # judged by the plugin's reward (core.reward)
        console.print(f"reward {_reward_text(row['reward'], row['reward_status'])} ({_safe(row['reward_version'])}, "
                      f"{_safe(row['reward_status'])}): {_safe(row.get('reward_summary'))}")
    else:
        console.print(f"reward {_reward_text(row['reward'], None)}")


#: Diff lines ``agent apply`` prints before it asks; a longer patch says where the rest is.
DIFF_LINES_SHOWN = 400


def _print_diff(data: bytes, whole: Path, limit: int = DIFF_LINES_SHOWN) -> None:
    """Print a patch's lines as a reviewer reads them (additions green, removals red, hunk heads
    cyan), terminal-safe, the first ``limit`` of them (then where ``whole``, the patch file, is)."""
    lines = data.decode("utf-8", "replace").splitlines()
    for line in lines[:limit]:
        style = ("bold" if line.startswith(("diff --git", "+++ ", "--- ")) else "green" if line.startswith("+")
                 else "red" if line.startswith("-") else "cyan" if line.startswith("@@") else "")
        console.print(f"[{style}]{_safe(line)}[/]" if style else _safe(line))
    if len(lines) > limit:
        console.print(f"[dim]... {len(lines) - limit:,} more diff lines: the whole patch is {_safe(whole)}[/]")


def _apply_patch_of(run_id: str, *, yes: bool, dry_run: bool = False, allow_outside_links: bool = False,
                    allow_git_dir: bool = False) -> None:
    """Print the review of a run's patch, ask (or take ``yes``), apply it (``core.apply``), and say
    honestly what state the repository is in; a non-interactive call without ``yes`` refuses."""
    from core import apply as transaction

    review = transaction.review_run(run_id)
    for note in review.notes:
        console.print(f"[yellow]{_safe(note)}[/]")
    console.print(f"[bold]the patch of run {_safe(transaction.printable(run_id))}[/]")
    for line in transaction.format_review(review, allow_outside_links=allow_outside_links, allow_git_dir=allow_git_dir):
        style = "red" if line.startswith("x ") else "yellow" if line.startswith("! ") else ""
        console.print(f"[{style}]{_safe(line)}[/]" if style else _safe(line))
    from core.config import runs_dir

    _print_diff(review.data, runs_dir() / run_id / "patch.diff")
    refused = review.refusals(allow_outside_links=allow_outside_links, allow_git_dir=allow_git_dir)
    if dry_run:
        verdict = "would be refused (see the x lines)" if refused else "would apply"
        console.print(f"dry run: {verdict}; your files are unchanged")
        return
    if refused:
        raise UserError("not applied: " + "; ".join(refused) + "; your files are unchanged")
    if not yes:
        if not sys.stdin.isatty():
            console.print(f"[yellow]not applied:[/] no terminal to ask for confirmation; your files are unchanged. "
                          f"Apply with: agent apply {_safe(run_id)} --yes")
            raise typer.Exit(2)
        if not typer.confirm(f"apply these changes to {transaction.printable(str(review.repo))}?", default=False):
            console.print("not applied; your files are unchanged")
            raise typer.Exit(1)
    try:
        outcome = transaction.apply_run_patch(run_id, review=review, allow_outside_links=allow_outside_links,
                                              allow_git_dir=allow_git_dir)
    except KeyboardInterrupt:  # only staging can be interrupted: the swap holds Ctrl-C back
        console.print("[yellow]stopped before the swap: your files are unchanged[/]")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    _print_outcome(outcome)


def _print_outcome(outcome: Any) -> None:
    from core.apply import printable

    for note in outcome.notes:
        console.print(f"[yellow]{_safe(note)}[/]")
    repo, run = _safe(printable(str(outcome.repo))), _safe(printable(outcome.run_id))
    how = "in one atomic swap" if outcome.swap == "exchange" else "by two renames (this filesystem cannot swap atomically)"
    if outcome.state == "applied":
        console.print(f"[green]applied the patch[/] of run {run} to {repo}: {outcome.files:,} paths changed, {how}")
        console.print(f"the old versions are kept in {_safe(printable(str(outcome.backup)))}; undo with: agent apply --undo {run}")
    else:
        console.print(f"[green]restored[/] the {outcome.files:,} paths of {repo} that the patch of run {run} changed, as they "
                      f"were before it ({how}); other files are as you left them")
    console.print(f"[dim]a shell or editor already inside {repo} still sees the old folder: run 'cd .' there, or reopen it[/]")


@app.command("apply")
def apply_cmd(
    run_id: str = typer.Argument(..., help="the run whose patch to apply (or, with --undo, to take back)"),
    yes: bool = typer.Option(False, "--yes", "-y", help="do not ask (required when stdin is not a terminal)"),
    dry_run: bool = typer.Option(False, "--dry-run", help="print the review (or what --undo would restore); change nothing"),
    undo: bool = typer.Option(False, "--undo", help="put back the files the run's apply changed, as they were before it"),
    allow_outside_links: bool = typer.Option(False, "--allow-outside-links", help="apply symbolic links that point outside the repository"),
    allow_git_dir: bool = typer.Option(False, "--allow-git-dir", help="apply changes inside .git"),
) -> None:
    """Review a run's final patch, then apply it to its repository in one atomic step (the old files kept for --undo)."""
    try:
        if not undo:
            _apply_patch_of(run_id, yes=yes, dry_run=dry_run, allow_outside_links=allow_outside_links, allow_git_dir=allow_git_dir)
            return
        from core import apply as transaction
        from core.config import runs_dir

        for note in transaction.recover_run(run_id):  # a killed apply or undo is finished first
            console.print(f"[yellow]{_safe(note)}[/]")
        record = transaction.undo_summary(runs_dir() / run_id / "apply.json")
        files = record["files"]
        console.print(f"undo the apply of run {_safe(transaction.printable(run_id))} ({_safe(str(record['applied_at']))}) "
                      f"in {_safe(transaction.printable(record['repo']))}: {record['paths']:,} paths go back "
                      f"({len(files['added'])} added files removed, {len(files['modified'])} modified and "
                      f"{len(files['deleted'])} deleted restored, {len(files['renamed'])} renames reversed)")
        if dry_run:
            console.print("dry run: your files are unchanged")
            return
        if not yes:
            if not sys.stdin.isatty():
                console.print(f"[yellow]not undone:[/] no terminal to ask for confirmation; your files are unchanged. "
                              f"Undo with: agent apply --undo {_safe(run_id)} --yes")
                raise typer.Exit(2)
            if not typer.confirm("undo it?", default=False):
                console.print("not undone; your files are unchanged")
                raise typer.Exit(1)
        try:
            outcome = transaction.undo_run(run_id)
        except KeyboardInterrupt:
            console.print("[yellow]stopped before the swap: your files are unchanged[/]")
            raise typer.Exit(EXIT_INTERRUPTED) from None
        _print_outcome(outcome)
    except HorizonError as exc:
        _fail(exc)


@app.command()
def serve(
    model: str = typer.Argument(..., help="Hugging Face id or local folder (vLLM, SGLang), or a .gguf file (llama.cpp)"),
    engine: str | None = typer.Option(None, "--engine", help="vllm, sglang or llama.cpp (default: llama.cpp for .gguf, else vllm)"),
    fast: bool = typer.Option(False, "--fast", help="speculative decoding (n-gram, or EAGLE-3 with --draft-model) and an FP8/8-bit KV cache"),
    port: int = typer.Option(8000, "--port", help="TCP port"),
    host: str = typer.Option("127.0.0.1", "--host", help="address to bind"),
    draft_model: str | None = typer.Option(None, "--draft-model", help="EAGLE/EAGLE-3 draft head for --fast"),
    spec: str | None = typer.Option(None, "--spec", help="speculative method for --fast: ngram, eagle, eagle3, mtp, suffix"),
    tool_parser: str | None = typer.Option(None, "--tool-parser", help="override the tool-call parser chosen from the model family"),
    dry_run: bool = typer.Option(False, "--dry-run", help="print the engine command and exit"),
    timeout: float = typer.Option(900.0, "--timeout", min=1.0, help="seconds to wait for the server to answer"),
) -> None:
    """Start a local model server for agents and point Horizon's config at it (Ctrl-C stops it)."""
    import shlex

    from core.serve import check_engine, engine_command, serve_options, start_server, stop_server, write_config

    try:
        opts = serve_options(model=model, engine=engine, fast=fast, port=port, host=host, draft_model=draft_model,
                             spec=spec, tool_parser=tool_parser)
        command = shlex.join(engine_command(opts))
        if dry_run:
            print(command)
            return
        check_engine(opts.chosen_engine)
        from core.config import horizon_home, make_data_folder
        log = make_data_folder(horizon_home() / "serve") / f"{opts.chosen_engine}-{opts.port}.log"
        console.print(f"starting {_safe(command)}\n[dim]log: {_safe(log)}; waiting for {_safe(opts.base_url)}/models[/]")
        process = start_server(opts, log=log, timeout_s=timeout)
        config = write_config(opts.base_url, opts.name)
        console.print(f"[green]serving[/] {_safe(opts.name)} at [bold]{_safe(opts.base_url)}[/]; wrote {_safe(config)}, "
                      "so agent run uses it. Ctrl-C stops the server.")
        import signal

        signal.signal(signal.SIGTERM, signal.default_int_handler)  # `kill` stops the server too, like Ctrl-C
        try:
            process.wait()
        except KeyboardInterrupt:
            pass
        finally:
            stop_server(process)
    except HorizonError as exc:
        _fail(exc)


EVAL_SCRIPTED = ("reference", "finish-only", "edit-tests")


@app.command("eval")
def eval_cmd(
    plugin: str = typer.Argument(..., help="plugin name, e.g. coding; auto: each task's own (suite of suites)"),
    suite: Path = typer.Argument(..., help="folder of task folders, e.g. suites/coding, or of suites, e.g. suites"),
    attempts: int = typer.Option(1, "--attempts", "-k", min=1, help="attempts per task (k of pass@k)"),
    workers: int = typer.Option(2, "--workers", "-n", min=1, help="episodes run at once (Ray CPUs or processes)"),
    policy: str = typer.Option("auto", "--policy", help="reference, finish-only, edit-tests (scripted from each task), or auto, embedded, openai"),
    tasks: list[str] | None = typer.Option(None, "--task", help="run only this task or pattern, e.g. 'threed/*' (repeatable)"),
    base_url: str | None = typer.Option(None, "--base-url", help="OpenAI-compatible server, e.g. http://localhost:8000/v1"),
    model: str | None = typer.Option(None, "--model", help="model name on the server"),
    max_steps: int = typer.Option(defaults.MAX_STEPS, "--max-steps", min=1, help="model calls per episode"),
    json_out: Path | None = typer.Option(None, "--json", help="also write the JSON summary to this file"),
    no_sandbox: bool = typer.Option(False, "--no-sandbox", help="run commands WITHOUT isolation (only if bwrap cannot work here)"),
    backend: str | None = typer.Option(None, "--backend", help="ray or processes (default: ray when installed)"),
    ray_address: str | None = typer.Option(None, "--ray-address", help="an existing Ray cluster, e.g. ray://head:10001 (default: a local Ray)"),
    time_limit: float = typer.Option(defaults.MAX_WALL_S, "--time-limit", min=1.0, help="seconds per episode (the scheduler kills it 300 s later)"),
    retries: int = typer.Option(2, "--retries", min=0, help="restarts of an episode after an infrastructure failure (Ray)"),
    baseline_runs: int = typer.Option(1, "--baseline-runs", min=1, max=2,
                                      help="2: run each coding task's tests twice at set-up, to flag flaky environments"),
    fetch_only: bool = typer.Option(False, "--fetch-only", help="only download and build the tasks' starting trees into the "
                                    "sources cache (for offline runs later), then exit"),
) -> None:
    """Run every task of SUITE with PLUGIN, k attempts each, in parallel; print pass@1, pass@k, reward and cost."""
    from core.eval import episode_specs, load_suite, new_eval_dir, run_eval
    from core.eval.ray_backend import ray_available
    from core.runner import policy_spec
    from core.state import Limits

    try:
        backend = backend or ("ray" if ray_available() else "processes")
        if backend not in ("ray", "processes"):
            raise UserError(f"--backend must be ray or processes, not {backend!r}")
        chosen = load_suite(suite.resolve(), tasks)  # builds the starting trees that task files give as recipes
        if fetch_only:
            for task in chosen:
                console.print(f"{_safe(task.name)}  [dim]{_safe(task.repo)}[/]")
            console.print(f"{len(chosen)} tasks ready")
            return
        from core.config import load_settings
        settings = load_settings(base_url=base_url, model=model)
        config = None
        if policy not in EVAL_SCRIPTED:
            _served_model(policy, settings)
            config = policy_spec(policy, settings)  # auto: settings.auto_policy
            _probe_server(config, settings)
        pricing = settings.pricing_for(config["kind"] if config else "scripted")
        from core.config import horizon_home, make_data_folder
        make_data_folder(horizon_home() / "evals")  # an unwritable HORIZON_HOME: one line, not a traceback
        out_dir = new_eval_dir(plugin=plugin, suite=str(suite), policy=policy, attempts=attempts, tasks=len(chosen),
                               model=config.get("model") if config else None)
        skipped: dict[str, str] = {}

        def skip(name: str, why: str) -> None:
            skipped[name] = why
            console.print(f"  [yellow]skipped[/] {_safe(name)}: {_safe(why)}")

        specs = episode_specs(
            chosen, plugin=plugin, attempts=attempts, policy=policy, policy_config=config,
            limits=Limits(max_steps=max_steps, max_wall_s=time_limit).model_dump(), pricing=pricing.model_dump(), isolated=not no_sandbox,
            home=out_dir.parents[1], scripts_dir=out_dir / "scripts", baseline_runs=baseline_runs, on_skip=skip,
        )  # fmt: skip
    except HorizonError as exc:
        _fail(exc)
        return
    where = f"Ray at {ray_address}" if backend == "ray" and ray_address else f"{backend}, {workers} workers"
    twice = ", tests run twice at set-up" if baseline_runs > 1 else ""
    left_out = f" ({len(skipped)} skipped)" if skipped else ""
    console.print(f"[bold]eval[/] {_safe(plugin)} on {len(chosen) - len(skipped)} tasks of {_safe(suite)}{left_out} x {attempts} attempts, "
                  f"policy {_safe(policy)}, {_safe(where)}{twice}")
    console.print(f"[dim]results stream to {_safe(out_dir / 'results.jsonl')}[/]")

    def line(r: Any) -> None:
        mark = "[green]resolved[/]" if r.resolved else "[red]not resolved[/]"
        reward = _reward_text(r.reward, r.reward_status, 2)
        retried = f"  tries {r.tries}" if r.tries > 1 else ""
        infra = f"  [yellow]infrastructure: {_safe(r.infra_failure)}[/]" if r.infra_failure else ""
        console.print(f"  {_safe(r.task)} #{r.attempt}  {mark}  reward {reward}  {_safe(r.exit_status)}  run {_safe(r.run_id or '-')}  "
                      f"{r.seconds:.0f} s{retried}{infra}")
        why = terminal_safe(r.summary).strip()
        if r.exit_status == "error" and not r.infra_failure:  # why it could not run (the rest is in results.jsonl)
            console.print(f"    [red]{_safe(why.splitlines()[0] if why else 'no detail')}[/]")

    try:
        summary = run_eval(specs, workers=workers, k=attempts, out_dir=out_dir, on_result=line, backend=backend,
                           ray_address=ray_address, retries=retries, skipped=skipped)
    except HorizonError as exc:
        _fail(exc)
        return
    table = Table()
    ks = ["pass@1"] + ([f"pass@{attempts}"] if attempts > 1 else [])
    table.add_column("task", overflow="fold")  # on a narrow terminal the task's name folds; the numbers keep their headers
    for name in ("attempts", "resolved", *ks, "mean reward", "cost"):
        table.add_column(name, no_wrap=True, min_width=len(name))
    for name, t in summary["tasks"].items():
        table.add_row(_safe(name), str(t["attempts"]), str(t["resolved"]), *(f"{t[key]:.2f}" for key in ks),
                      _maybe(t["mean_reward"], ".2f"), f"{t['cost']:.4f}")
    for name in skipped:  # no episode: counted apart, not as failures
        table.add_row(_safe(name), "0", "skipped", *("-" for _ in ks), "-", "-")
    also = f", {len(skipped)} skipped" if skipped else ""
    table.add_row("[bold]all[/]", str(summary["episodes"]), f"{summary['resolved_tasks']}/{summary['tasks_total']} tasks{also}",
                  *(f"{summary[key]:.3f}" for key in ks), _maybe(summary["mean_reward"], ".3f"), f"{summary['cost']:.4f}")
    console.print(table)
    if json_out is not None:
        json_out.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    console.print(f"summary (JSON): {_safe(out_dir / 'summary.json')}")  # the table is for people, the file for machines
    if any(r["exit_status"] == "error" for r in summary["results"]):
        raise typer.Exit(1)


# --- agent ui / agent server: who may connect (core/netguard.py; docs/security.md "Network surfaces")
_ALLOW_HOST_HELP = "also serve requests whose Host header is NAME (repeatable; e.g. the name a reverse proxy passes)"


def _local_name(host: str) -> str:
    """The address to print for a bind address: 127.0.0.1 for every-address binds (0.0.0.0 is no
    Host the servers answer), an IPv6 address in brackets."""
    if host in ("", "0.0.0.0", "::", "[::]"):
        return "127.0.0.1"
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _loopback_bind(host: str) -> bool:
    """Whether ``--host`` binds only this machine's loopback (127.0.0.0/8, ::1, localhost)."""
    import ipaddress

    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@app.command("ui")
def ui_cmd(
    host: str = typer.Option("127.0.0.1", "--host", help="address to bind (the UI has no login: keep it local)"),
    port: int = typer.Option(8765, "--port", min=1, max=65535, help="TCP port"),
    allow_host: list[str] = typer.Option([], "--allow-host", metavar="NAME", help=_ALLOW_HOST_HELP),
) -> None:
    """Serve a web page over the runs and evaluations: live status, every step, diffs, rewards, images."""
    from core.netguard import allowed_hosts
    from core.ui import serve

    try:
        allowed_hosts(allow_host)  # a bad name fails before the banner
    except HorizonError as exc:
        _fail(exc)
    console.print(f"[bold]horizon ui[/] http://{_safe(_local_name(host))}:{port}/  [dim](Ctrl-C stops it)[/]")
    if not _loopback_bind(host):
        console.print(f"[bold red]warning: --host {_safe(host)}: agent ui has no login; every machine that reaches this port "
                      "and is let in by a Host name (--host, --allow-host) can read your runs and start or apply them. "
                      "Prefer --host 127.0.0.1 and an SSH tunnel (docs/security.md, Network surfaces); a loopback Host "
                      "from the network is refused.[/]", highlight=False)
    try:
        serve(host, port, allow_hosts=allow_host)
    except KeyboardInterrupt:
        pass


@app.command("server")
def server_cmd(
    host: str = typer.Option("127.0.0.1", "--host", help="address to bind (keep it local; see docs/security.md, Network surfaces)"),
    port: int = typer.Option(8766, "--port", min=1, max=65535, help="TCP port"),
    workers: int = typer.Option(2, "--workers", min=1, help="runs at once (a local Ray gets this many CPUs)"),
    address: str | None = typer.Option(None, "--address", help="a Ray cluster's address (default: a local Ray)"),
    token_file: Path | None = typer.Option(None, "--token-file", metavar="PATH",
                                           help="the API's bearer token file (default $HORIZON_HOME/server.token; made at first start, mode 0600)"),
    allow_host: list[str] = typer.Option([], "--allow-host", metavar="NAME", help=_ALLOW_HOST_HELP),
    repo_root: list[Path] = typer.Option([], "--repo-root", help="a folder whose repositories and scripts requests may use (repeatable; default: the working folder)"),
    max_queued: int = typer.Option(100, "--max-queued", min=1, help="runs queued or running at once; more submits are answered 429"),
    no_sandbox: bool = typer.Option(False, "--no-sandbox", help="run every run WITHOUT the sandbox (requests cannot ask for it; listens on 127.0.0.1 only)"),
) -> None:
    """Serve an HTTP API that queues runs and executes them on Ray; /metrics for Prometheus (every request needs the bearer token)."""
    import shlex

    from core.config import horizon_home
    from core.netguard import allowed_hosts, server_token, token_path
    from core.service import serve
    from core.service.bounds import Bounds

    try:
        allowed_hosts(allow_host)
        path = (token_file or token_path(horizon_home())).expanduser().absolute()
        token = server_token(path)
        bounds = Bounds.make(repo_root, max_queued, sandbox=not no_sandbox)
    except HorizonError as exc:
        _fail(exc)
    url = f"http://{_safe(_local_name(host))}:{port}"

    def banner() -> None:  # once the queue is checked and Ray is up: a server that cannot start prints only why
        console.print(f"[bold]horizon server[/] {url}/api/runs  metrics /metrics  [dim](Ctrl-C stops it)[/]")
        console.print(f"  token: {_safe(str(path))} [dim](every request: Authorization: Bearer <its contents>)[/]", highlight=False)
        console.print(f"  curl -H \"Authorization: Bearer $(cat {_safe(shlex.quote(str(path)))})\" {url}/api/runs", highlight=False, soft_wrap=True)
        console.print(f"[dim]repositories from: {_safe(', '.join(map(str, bounds.repo_roots)))}; at most {max_queued} runs queued[/]")
        if no_sandbox:
            console.print("[yellow]warning: --no-sandbox: every run's commands run WITHOUT isolation, as you[/]")

    try:
        serve(host, port, workers=workers, address=address, token=token, allow_hosts=allow_host, bounds=bounds, on_ready=banner)
    except HorizonError as exc:
        _fail(exc)
    except KeyboardInterrupt:
        pass


@app.command()
def plugins() -> None:
    """List the installed plugins (entry-point group horizon.plugins): version, tools, what each does, and
    what a plugin that cannot load is missing. Read from each plugin's manifest: no plugin is loaded."""
    from core.plugin_index import describe_plugin, discover  # no plugin, pydantic or reward type imported

    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("plugin", no_wrap=True)
    table.add_column("version", no_wrap=True)
    table.add_column("tools", justify="right")
    table.add_column("what it does")
    for name, ep in discover().items():
        info = describe_plugin(name, ep)
        if info.problem is None:
            tools, what = str(len(info.tools)), f"{_safe(info.description)}\n[dim]{_safe(', '.join(info.tools))}[/]"
        else:
            tools, what = "-", f"[yellow]{_safe(info.problem)}[/]"
        table.add_row(_safe(name), _safe(info.version or "-"), tools, f"{what}\n[dim]{_safe(ep.value)}[/]")
    console.print(table)


@app.command("export")
def export_cmd(
    run_ids: list[str] | None = typer.Argument(None, help="runs to export (see: agent runs)"),
    fmt: str = typer.Option(..., "--format", help="JSON Lines: sft-jsonl, openai, grpo, trl-env; Parquet: sft-parquet, verl, skyrl, tokens"),
    out: Path = typer.Option(..., "--out", help="the file to write (verl also writes <stem>.tool_config.yaml beside it)"),
    all_runs: bool = typer.Option(False, "--all", help="export every run in the run store"),
    plugin: str | None = typer.Option(None, "--plugin", help="export every run of this plugin"),
    keep_flagged: bool = typer.Option(False, "--keep-flagged", help="keep runs that fail a quality gate, with their reasons"),
    overwrite: bool = typer.Option(False, "--overwrite", help="replace --out if it exists"),
    tool_class: str | None = typer.Option(None, "--tool-class", help="verl: class_name for the tool config"),
    tokenizer: Path | None = typer.Option(None, "--tokenizer", help="vocabulary the length report counts with: a GGUF file or a "
                                          "Hugging Face tokenizer folder (tokens: the GGUF whose vocabulary and template make the ids)"),
    chat_template: str | None = typer.Option(None, "--chat-template", help="training chat template (bundled name or .jinja path; "
                                             "default qwen3_training, TRL's)"),
    max_prompt_tokens: int | None = typer.Option(None, "--max-prompt-tokens", help="leave out rows whose prompt is longer"),
) -> None:
    """Export runs as RL/SFT training data, after quality gates; prints the gates' counts per reason,
    the rows' lengths in tokens and the trainer settings they need (also written as <stem>.lengths.json)."""
    from core.export import export_runs, select_runs
    from core.export.lengths import summary

    try:
        chosen, unreadable = select_runs(run_ids or [], all_runs=all_runs, plugin=plugin)
        result = export_runs(chosen, fmt, out, keep_flagged=keep_flagged, overwrite=overwrite, tool_class=tool_class,
                             tokenizer=tokenizer, chat_template=chat_template, max_prompt_tokens=max_prompt_tokens)
    except HorizonError as exc:
        _fail(exc)
        return
    table = Table(title="quality gates")
    table.add_column("reason")
    table.add_column("runs", justify="right")
    table.add_row("checked", str(len(result.gates.flags)))
    for reason, count in result.gates.counts().items():
        table.add_row(_safe(reason), str(count))
    table.add_row("passed", str(len(result.gates.passed())))
    console.print(table)
    for run_id, why in {**dict.fromkeys(unreadable, "cannot be read now"), **result.left_out}.items():
        console.print(f"[yellow]left out[/] {_safe(run_id)}: {_safe(_short(why, 160))}")
    if not result.exported:
        console.print("[red]error:[/] no run left to export; --keep-flagged exports flagged runs with their reasons")
        raise typer.Exit(1)
    files = ", ".join(str(f) for f in result.files)
    console.print(f"wrote {result.rows} {_safe(fmt)} rows from {len(result.exported)} runs to {_safe(files)}")
    for line in summary(result.lengths):
        console.print(_safe(line), highlight=False)
    for warning in result.warnings:
        console.print(f"[yellow]warning:[/] {_safe(warning)}")


human_app = typer.Typer(no_args_is_help=True, help="Answer the model requests of a run started with --policy human.")
app.add_typer(human_app, name="human")


@human_app.command("wait")
def human_wait(
    exchange: Path = typer.Argument(..., help="the run's exchange folder (printed by agent run --policy human)"),
    timeout_s: float = typer.Option(600.0, "--timeout", min=0.0, help="seconds to wait for a request"),
) -> None:
    """Wait for the next request and print what it adds to the conversation."""
    import time

    from core.policy.human import Exchange

    deadline = time.monotonic() + timeout_s
    requests = Exchange(exchange)
    while (number := requests.pending()) is None:
        if time.monotonic() > deadline:
            console.print(f"no request in {timeout_s:.0f} s; has the run ended? (agent runs)")
            raise typer.Exit(1)
        time.sleep(0.2)
    typer.echo(terminal_safe(requests.describe(number)))  # plain text, not rich markup: a `[` stays a `[`


@human_app.command("answer")
def human_answer(
    exchange: Path = typer.Argument(..., help="the run's exchange folder"),
    content: str | None = typer.Option(None, "--content", help="the assistant's text"),
    tool: list[str] = typer.Option([], "--tool", help="a tool to call (repeat for parallel calls, each with --args)"),
    args: list[str] = typer.Option([], "--args", help="that tool call's arguments, a JSON object"),
) -> None:
    """Answer the waiting request with text and/or tool calls."""
    from core.policy.human import Exchange, ToolCallAnswer

    try:
        if len(tool) != len(args):
            raise UserError(f"{len(tool)} --tool but {len(args)} --args: give each --tool its --args JSON object")
        calls = []
        for name, text in zip(tool, args, strict=True):
            try:
                arguments = json.loads(text)
            except json.JSONDecodeError as exc:
                raise UserError(f"--args for {name} is not JSON ({exc.msg} at character {exc.pos}): {text[:200]}") from None
            if not isinstance(arguments, dict):
                raise UserError(f"--args for {name} must be a JSON object, not {type(arguments).__name__}")
            calls.append(ToolCallAnswer(name, arguments))
        number = Exchange(exchange).answer(content, calls)
    except HorizonError as exc:
        _fail(exc)
    console.print(f"answered request {number}")


@app.command("trust")
def trust_cmd(
    path: Path | None = typer.Argument(None, help="the config file to trust (a folder: its horizon.toml), e.g. ./horizon.toml"),
    list_files: bool = typer.Option(False, "--list", help="list the trusted files and whether each is unchanged"),
    revoke: Path | None = typer.Option(None, "--revoke", help="stop trusting this file"),
) -> None:
    """Trust a repository's horizon.toml (or task.json): its model server, keys, prices and MCP servers apply.

    Until then such settings from it are ignored. The file is recorded with its SHA-256 in
    $HORIZON_HOME/trusted.json; once it changes it is untrusted again.
    """
    from core import trust

    try:
        if sum(x is not None and x is not False for x in (path, revoke, list_files or None)) != 1:
            raise UserError("give one of: agent trust PATH, agent trust --list, agent trust --revoke PATH")
        if list_files:
            found = trust.trusted_files()
            if not found:
                console.print("no trusted files")
            for file, record in found.items():
                try:
                    now = trust.check_trust(file, file.read_bytes()).status
                except OSError:
                    now = "missing"
                state = {"trusted": "[green]unchanged[/]", "changed": "[yellow]changed since (untrusted)[/]"}.get(now, f"[yellow]{now}[/]")
                console.print(f"{_safe(file)}  {state}  [dim]trusted {_safe(record.get('trusted_at', '?'))}[/]")
        elif revoke is not None:
            if trust.revoke(revoke):
                console.print(f"no longer trusted: {_safe(revoke)}")
            else:
                console.print(f"{_safe(revoke)} was not trusted")
        else:
            state = trust.trust(path)
            console.print(f"trusted {_safe(state.path)} (sha256 {state.sha256[:16]}…); it is untrusted again once it changes")
    except HorizonError as exc:
        _fail(exc)


MCP_TASK = "(an MCP session: the request is in the MCP client's conversation)"


@app.command("mcp", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def mcp_cmd(
    context: typer.Context,
    plugin: str = typer.Argument(..., help="plugin whose tools to serve, e.g. coding"),
    repo: Path | None = typer.Option(None, "--repo", help="repository (or task folder) each run works on (default: this folder); copied, your files change only with agent apply"),
    task: str | None = typer.Option(None, "--task", help="what the runs are for (default: whatever the client's user asks)"),
    transport: str = typer.Option("stdio", "--transport", help="stdio (the client starts this command) or http (clients connect to --port)"),
    host: str = typer.Option("127.0.0.1", "--host", help="http: address to bind"),
    port: int = typer.Option(8000, "--port", min=1, max=65535, help="http: TCP port (the endpoint is http://HOST:PORT/mcp)"),
    resume: str | None = typer.Option(None, "--resume", help="continue this MCP run (its client left before finish) instead of starting one"),
    max_steps: int = typer.Option(defaults.MAX_STEPS, "--max-steps", min=1, help="tool calls before a run stops"),
    max_wall_s: float = typer.Option(defaults.MAX_WALL_S, "--max-time", min=0.001, help="seconds of running before a run stops (the client's thinking counts)"),
    no_sandbox: bool = typer.Option(False, "--no-sandbox", help="run commands WITHOUT isolation (only if bwrap cannot work here)"),
) -> None:
    """Serve PLUGIN's tools over MCP (stdio or streamable HTTP); each session is a run, ended by finish.

    A run starts at the first tool call; it is a run like any other (agent runs, show, export, apply).
    A plugin may take options of its own after its name (see its README), e.g. the 3D plugin's
    --blender PORT, which drives the artist's open Blender through the Horizon add-on.
    """
    from core.mcp import McpSession
    from core.mcp.server import bind_http, build_server, serve_http, serve_stdio
    from core.plugin import Task, load_plugin
    from core.runner import Run
    from core.sandbox import self_check
    from core.state import Limits, Pricing

    log = Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)  # stdout is the stdio transport
    try:
        if transport not in ("stdio", "http"):
            raise UserError(f"--transport must be stdio or http, not {transport!r}")
        from core.config import load_settings
        settings = load_settings()
        the_plugin = load_plugin(plugin)
        extension = _mcp_extension(the_plugin, plugin, list(context.args))
        if resume is not None:
            the_task = _mcp_resumable(resume, plugin)
        elif extension is not None and repo is None:  # the extension makes each run's folder (prepare)
            if task is not None and not task.strip():
                raise UserError("--task is empty; say what the runs are for, or leave it out")
            the_task = Task(plugin=plugin, instruction=task or MCP_TASK, repo=None, metadata={} if task else {"instruction_unseen": True})
        else:
            folder = (repo or Path(".")).expanduser().resolve()
            if not folder.is_dir():
                raise UserError(f"{repo or folder} is not a folder; pass --repo PATH to the repository the runs work on")
            if folder == Path(folder.anchor) or folder == Path.home().resolve():
                raise UserError(f"agent mcp would copy {folder} for every run; pass --repo PATH to a repository (a desktop "
                                "client starts the command in a folder of its own choosing)")
            if task is not None and not task.strip():
                raise UserError("--task is empty; say what the runs are for, or leave it out")
            # without --task the request stays in the client's conversation: the export gates keep such runs out of training data
            the_task = Task(plugin=plugin, instruction=task or MCP_TASK, repo=folder, metadata={} if task else {"instruction_unseen": True})
            validate = getattr(the_plugin, "validate", None)
            if validate is not None:
                validate(the_task)  # a task folder that cannot work is refused now, not at the client's first call
        if not no_sandbox:
            self_check()  # no sandbox here: say so now, not at the first call
        # No compaction: the client keeps its own context, and a summary it never read would misstate the trajectory.
        limits = Limits(max_steps=max_steps, max_wall_s=max_wall_s, compact_at_tokens=0)
        listening = bind_http(host, port) if transport == "http" else None  # a port in use is told before the banner
    except HorizonError as exc:
        _fail(exc)
        return

    def start(policy: Any) -> Run:
        run_task = extension.prepare(the_task) if extension is not None else the_task
        return Run.start(run_task, policy, policy_config={"kind": "mcp"}, limits=limits, pricing=Pricing(), isolated=not no_sandbox,
                         keep_checkpoints=settings.keep_checkpoints, on_event=StepPrinter(log))  # fmt: skip

    def reopen(policy: Any) -> Run:
        return Run.open(resume or "", settings=settings, policy=policy, on_event=StepPrinter(log))

    session = McpSession(start, resume_run=reopen if resume else None, plugin=plugin, extension=extension)
    server = build_server(the_plugin, the_task, session)
    where = f"http://{host}:{port}/mcp" if transport == "http" else "stdio"
    first = f"run {resume} resumes" if resume else "a run starts"
    on = f"on {the_task.repo}" if the_task.repo is not None else "(each run's folder made by the plugin's options)"
    log.print(f"[bold]horizon mcp[/] {_safe(plugin)} {_safe(on)}  [dim]({_safe(where)}; {first} at the first tool call)[/]")
    if extension is not None:
        log.print(_safe(extension.start()))
    if no_sandbox:
        log.print("[yellow]warning: --no-sandbox: the client's commands run WITHOUT isolation, as you[/]")
    try:
        if listening is not None:
            serve_http(server, listening)
        else:
            serve_stdio(server)
    except KeyboardInterrupt:
        pass
    finally:
        session.close()
        for run_id in session.run_ids:
            log.print(f"[dim]run {_safe(run_id)}: agent show {_safe(run_id)}[/]")


def _mcp_extension(the_plugin: Any, plugin: str, options: list[str]) -> Any:
    """The plugin's MCP extension for the options ``agent mcp`` does not know (``McpExtension``),
    or None when there are none and the plugin adds nothing by default.

    Raises:
        UserError: options were given and the plugin takes none, or the plugin refused them.
    """
    hook = getattr(the_plugin, "mcp_extension", None)
    if hook is None:
        if options:
            raise UserError(f"agent mcp {plugin} takes no option {options[0]!r}; see agent mcp --help")
        return None
    return hook(options)


def _mcp_resumable(run_id: str, plugin: str) -> Any:
    """The task of MCP run ``run_id``, checked resumable by ``agent mcp PLUGIN --resume``.

    Raises:
        RunNotFound, UserError: no such run, it is another plugin's, not an MCP session, or has finished.
    """
    from core.plugin import Task
    from core.runs import reading_store

    with reading_store(run_id) as store:
        row = store.run()
    if row["plugin"] != plugin:
        raise UserError(f"run {run_id} is a {row['plugin']} run; serve it with: agent mcp {row['plugin']} --resume {run_id}")
    if row["config"].get("policy", {}).get("kind") != "mcp":
        raise UserError(f"run {run_id} is not an MCP session; continue it with: agent resume {run_id}")
    if row["status"] == "finished":
        raise UserError(f"run {run_id} has finished ({row['exit_status']}); start a new one with: agent mcp {plugin} --repo {row['repo']}")
    return Task(plugin=plugin, instruction=row["task"], repo=Path(row["repo"]) if row["repo"] else None,
                metadata=row["config"].get("task_metadata", {}))


def _broken_commands(message: str) -> typer.Typer:
    """A stand-in for commands that could not be loaded: it says why, whatever is asked of it."""
    sub = typer.Typer(help=f"(could not be loaded: {message})")

    @sub.callback(invoke_without_command=True)
    def broken() -> None:
        _fail(UserError(message))

    return sub


def _add_plugin_commands() -> None:
    """Add each ``horizon.commands`` entry point as ``agent NAME ...`` without importing it
    (``_PluginCommands``): the metadata names it, its module loads when it is used."""
    from importlib.metadata import entry_points

    from core.entry_points import COMMANDS_GROUP

    # Horizon's own command names as the CLI resolves them (a bare @app.command() has no name until then)
    taken = set(typer.main.get_command(app).commands)
    for entry in sorted(entry_points(group=COMMANDS_GROUP), key=lambda e: e.name):
        if entry.name in taken:
            continue  # a plugin cannot replace one of Horizon's own commands
        lazy = type(f"_PluginCommands_{entry.name}", (_PluginCommands,), {"entry": entry})
        app.add_typer(typer.Typer(cls=lazy, help=f"the {entry.name} plugin's commands ({entry.value}; agent {entry.name} --help)"),
                      name=entry.name)
        taken.add(entry.name)


_add_plugin_commands()


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except KeyboardInterrupt:  # before a run exists (copying the repository): nothing to resume
        console.print("[yellow]interrupted[/]")
        raise SystemExit(130) from None
    except Exception as exc:  # noqa: BLE001 (a bug: the traceback, with every control sequence removed; file names can hold them)
        from core.config import horizon_home
        from core.errors import disk_full

        if disk_full(exc):  # not a bug: one line (the run, if any, resumes with agent resume once there is room)
            sys.stderr.write(terminal_safe(f"error: a disk is full ({type(exc).__name__}: {exc}); free space (df -h "
                                           f"{horizon_home()}), then run the command again (a stopped run: agent resume RUN_ID)") + "\n")
            raise SystemExit(1) from None
        sys.stderr.write(terminal_safe(traceback.format_exc()))
        sys.stderr.write("this is a bug in Horizon; please report it with the lines above\n")
        raise SystemExit(1) from None

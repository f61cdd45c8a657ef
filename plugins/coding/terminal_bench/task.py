"""A Terminal-Bench task folder (either layout) read and checked, and what an episode of it carries."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.api import NoReference, UserError
from plugins.coding.terminal_bench.dockerfile import Environment, parse_dockerfile, read_task_file
from plugins.coding.terminal_bench.start import start_tree

LAYOUT_TB2 = "terminal-bench-2"
LAYOUT_TB1 = "terminal-bench-1"
#: The ``Task.metadata`` key that carries a Terminal-Bench task (``task_metadata``).
METADATA_KEY = "terminal_bench"
#: The ``Task.metadata`` key the runner reads: where the sandbox shows the workspace a second time.
ALIAS_KEY = "workspace_alias"
#: Variables the Dockerfile's ENV does not change here: the sandbox's own stay (an image's
#: ``ENV PATH=/opt/x/bin:$PATH`` names folders of the image, not of this machine).
KEPT_ENV = frozenset({"PATH", "HOME", "TMPDIR", "LD_LIBRARY_PATH", "LD_PRELOAD"})
#: Seconds the tests may run when the task does not say (Terminal-Bench 1's own default is 60).
DEFAULT_TEST_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class TerminalBenchTask:
    """A Terminal-Bench task folder, read and checked.

    Attributes:
        folder: the task folder (absolute).
        layout: ``terminal-bench-2`` (Harbor) or ``terminal-bench-1``.
        instruction: what the agent is asked.
        environment: the Dockerfile, read as the bubblewrap sandbox honours it (None: it cannot, see ``refusal``).
        tests_dir: the task's ``tests/`` folder (may be missing: then no tests).
        tests: its pytest files, relative to ``tests_dir`` (POSIX), sorted.
        solution: ``solve.sh``/``solution.sh``, or None.
        test_timeout_s: seconds the tests may run.
        agent_timeout_s: the agent's time limit in seconds, as the task gives it (it caps the episode's wall-clock limit).
        test_env: extra environment of the tests (Harbor's ``[verifier] env``; Terminal-Bench 1's
            compose service's ``environment``).
        config: the task file as read (``task.toml`` or ``task.yaml``).
        dockerfile: the Dockerfile; context: its build context.
        refusal: why the bubblewrap sandbox cannot honour the Dockerfile (None: it can).
        script: the test script (``tests/test.sh``; Terminal-Bench 1: ``run-tests.sh``), or None.
    """

    folder: Path
    layout: str
    instruction: str
    environment: Environment
    tests_dir: Path
    tests: list[str]
    solution: Path | None
    test_timeout_s: float
    agent_timeout_s: float | None
    test_env: dict[str, str] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    dockerfile: Path | None = None
    context: Path | None = None
    refusal: str | None = None
    script: Path | None = None

    @property
    def name(self) -> str:
        """The task's name: its folder's."""
        return self.folder.name


def detect_layout(folder: Path) -> str | None:
    """``terminal-bench-2`` for ``instruction.md`` + ``task.toml`` (``environment/`` may be missing:
    a task that runs a prebuilt ``docker_image``; Horizon's own task folders never have
    ``instruction.md``; a Harbor multi-step task has ``steps/`` instead, and is refused by
    ``read_task``), ``terminal-bench-1`` for ``task.yaml``, else None (not a Terminal-Bench
    task folder)."""
    if (folder / "task.toml").is_file() and ((folder / "instruction.md").is_file() or (folder / "steps").is_dir()):
        return LAYOUT_TB2
    if (folder / "task.yaml").is_file():
        return LAYOUT_TB1
    return None


def read_task(folder: Path) -> TerminalBenchTask:
    """Read a Terminal-Bench task folder (either layout). Whether the bubblewrap sandbox can run
    it is recorded (``refusal``), not raised: ``plugins.coding.terminal_bench.container.choose_sandbox`` decides.

    Raises:
        UserError: not a Terminal-Bench task folder, an unreadable task file, a multi-container
            environment, a multi-step task (``steps/``), or neither pytest files nor a test script in ``tests/`` (nothing to grade
            by); the message names the file (and line) and why.
    """
    folder = folder.resolve()
    layout = detect_layout(folder)
    if layout is None:
        raise UserError(f"{folder} is not a Terminal-Bench task folder: it needs instruction.md and task.toml "
                        "(Terminal-Bench 2), or task.yaml (Terminal-Bench 1)")
    if layout == LAYOUT_TB2:
        if not (folder / "instruction.md").is_file():
            raise UserError(f"{folder / 'steps'}: a multi-step task (Harbor's steps/NAME/ with an instruction, tests and solution each): "
                            "its steps are not run by Horizon (one instruction, one verifier per episode)")  # fmt: skip
        config = _read_toml(folder / "task.toml")
        instruction = read_task_file(folder / "instruction.md")
        verifier, agent, env_table = (_table(config, key, folder / "task.toml") for key in ("verifier", "agent", "environment"))
        if (folder / "environment" / "docker-compose.yaml").is_file() or (folder / "environment" / "docker-compose.yml").is_file():
            raise UserError(f"{folder / 'environment'}: a docker-compose file defines the environment's services; "
                            "multi-container environments are not run by Horizon (one container per task)")
        dockerfile = folder / "environment" / "Dockerfile"
        if not dockerfile.is_file():
            image = env_table.get("docker_image")
            why = f"it runs the prebuilt image {image}" if image else "it has no environment/Dockerfile"
            raise UserError(f"{folder / 'task.toml'}: needs Docker: {why}")
        context = folder / "environment"
        test_timeout = _seconds(verifier.get("timeout_sec"), DEFAULT_TEST_TIMEOUT_S, folder / "task.toml")
        agent_timeout = _seconds(agent.get("timeout_sec"), None, folder / "task.toml")
        test_env = {str(k): str(v) for k, v in dict(verifier.get("env") or {}).items()}
        solution = folder / "solution" / "solve.sh"
        script = folder / "tests" / "test.sh"
    else:
        config = _read_yaml(folder / "task.yaml")
        instruction = config.get("instruction")
        if not isinstance(instruction, str) or not instruction.strip():
            raise UserError(f"{folder / 'task.yaml'} is not a valid task file: instruction: a non-empty text is required")
        dockerfile, test_env = _tb1_dockerfile(folder)
        context = folder
        test_timeout = _seconds(config.get("max_test_timeout_sec"), DEFAULT_TEST_TIMEOUT_S, folder / "task.yaml")
        agent_timeout = _seconds(config.get("max_agent_timeout_sec"), None, folder / "task.yaml")
        solution = folder / "solution.sh"
        script = folder / "run-tests.sh"
    try:
        environment, refusal = parse_dockerfile(dockerfile, context), None
    except UserError as exc:
        environment, refusal = None, str(exc)
    if not instruction.strip():
        raise UserError(f"{folder / 'instruction.md'} is empty; it holds what the agent is asked")
    tests_dir = folder / "tests"
    tests = sorted(
        p.relative_to(tests_dir).as_posix() for p in tests_dir.rglob("*.py")
        if p.is_file() and (p.name.startswith("test_") or p.name.endswith("_test.py"))
    ) if tests_dir.is_dir() else []  # fmt: skip
    if not tests and not script.is_file():
        raise UserError(f"{folder.name}: neither pytest files in {tests_dir} nor a test script ({script.relative_to(folder)}): nothing grades it")
    return TerminalBenchTask(
        folder=folder, layout=layout, instruction=instruction.strip(), environment=environment, tests_dir=tests_dir,
        tests=tests, solution=solution if solution.is_file() else None, test_timeout_s=test_timeout,
        agent_timeout_s=agent_timeout, test_env=test_env, config=config, dockerfile=dockerfile.resolve(), context=context.resolve(),
        refusal=refusal, script=script if script.is_file() else None,
    )  # fmt: skip


#: The largest packed ``solution/`` a container task's reference solution carries in its command.
MAX_SOLUTION_BYTES = 96 << 10  # one argument of the exec: Linux takes at most 128 KiB (MAX_ARG_STRLEN)


def _packed(folder: Path) -> str:
    """``folder``'s files as a base64 gzip tar (names relative to it)."""
    import base64
    import io
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path in sorted(folder.rglob("*")):
            tar.add(path, arcname=path.relative_to(folder).as_posix(), recursive=False)
    return base64.b64encode(buffer.getvalue()).decode()


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(read_task_file(path))
    except (OSError, ValueError) as exc:
        raise UserError(f"{path} is not a valid task file: {exc}") from None


def _read_yaml(path: Path) -> dict[str, Any]:
    import yaml

    try:
        loaded = yaml.safe_load(read_task_file(path))
    except (OSError, yaml.YAMLError) as exc:
        raise UserError(f"{path} is not a valid task file: {exc}") from None
    if not isinstance(loaded, dict):
        raise UserError(f"{path} is not a valid task file: it holds no mapping of fields")
    return loaded


def _table(config: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = config.get(key, {})
    if not isinstance(value, dict):
        raise UserError(f"{path} is not a valid task file: [{key}] must be a table")
    return value


def _seconds(value: Any, default: float | None, path: Path) -> float | None:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise UserError(f"{path} is not a valid task file: a timeout must be a positive number of seconds, not {value!r}")
    return float(value)


def _tb1_dockerfile(folder: Path) -> tuple[Path, dict[str, str]]:
    """The Dockerfile a Terminal-Bench 1 task's docker-compose.yaml builds (default ``Dockerfile``),
    and its service's ``environment`` (a list of ``KEY=value`` or a mapping; entries without a
    value, passed through from the host, are left out), e.g. ``TEST_DIR=${T_BENCH_TEST_DIR}``.

    Raises:
        UserError: the compose file defines more than one service, or a service without a build,
            or an ``environment`` that is neither a list nor a mapping.
    """
    compose = folder / "docker-compose.yaml"
    name = "Dockerfile"
    env: dict[str, str] = {}
    if compose.is_file():
        services = _read_yaml(compose).get("services") or {}
        if not isinstance(services, dict) or len(services) != 1:
            names = ", ".join(services) if isinstance(services, dict) else "?"
            raise UserError(f"{compose}: needs Docker: it defines the services {names}; only one, built from the task's Dockerfile, can run here")
        (service,) = services.values()
        build = (service or {}).get("build")
        if build is None:
            raise UserError(f"{compose}: needs Docker: its service runs an image instead of building the task's Dockerfile")
        if isinstance(build, dict):
            if build.get("context", ".") not in (".", "./"):
                raise UserError(f"{compose}: needs Docker: its build context is {build['context']}, not the task folder")
            name = build.get("dockerfile", name)
        listed = service.get("environment") or {}
        if isinstance(listed, list):
            env = dict(str(e).split("=", 1) for e in listed if "=" in str(e))
        elif isinstance(listed, dict):
            env = {str(k): str(v) for k, v in listed.items() if v is not None}
        else:
            raise UserError(f"{compose}: the service's environment must be a list of KEY=value or a mapping")
    dockerfile = (folder / name).resolve()
    if not dockerfile.is_file() or not dockerfile.is_relative_to(folder):
        raise UserError(f"task {folder.name}: the Dockerfile {folder / name} is missing")
    return dockerfile, env

def task_metadata(task: TerminalBenchTask, container: dict[str, Any] | None = None, reason: str = "") -> dict[str, Any]:
    """What a run of the task carries in ``Task.metadata`` (JSON values).

    Returns:
        ``{"workspace_alias": workdir, "max_wall_s": the agent's time limit (when the task
        gives one: it caps the episode's, ``core.eval.runner.episode_specs``), "terminal_bench":
        {"folder", "layout", "workdir", "env", "base_image", "tests", "test_timeout_s",
        "test_env", "agent_timeout_s"}}``; ``env`` is the Dockerfile's ``ENV`` but ``KEPT_ENV``
        (the image's own paths would break this machine's). With ``container`` (a container task,
        ``plugins.coding.terminal_bench.container.prepare_container``) ``"container"`` holds it
        instead of ``workspace_alias`` (the container's own ENV applies there, whole), and
        ``terminal_bench`` also ``sandbox`` and ``script`` (the test script's name).
    """
    tb = {"folder": str(task.folder), "layout": task.layout, "tests": list(task.tests), "test_timeout_s": task.test_timeout_s,
          "test_env": dict(task.test_env), "agent_timeout_s": task.agent_timeout_s, "reason": reason,
          "script": task.script.name if task.script else None}  # fmt: skip
    wall = {"max_wall_s": task.agent_timeout_s} if task.agent_timeout_s else {}
    if container is not None:
        from plugins.coding.terminal_bench.container import CONTAINER_KEY

        tb.update(sandbox="container", workdir=container["workdir"], env={}, base_image="")
        return {CONTAINER_KEY: container, **wall, METADATA_KEY: tb}
    env = task.environment
    assert env is not None
    tb.update(sandbox="bwrap", workdir=env.workdir, env={k: v for k, v in env.env.items() if k not in KEPT_ENV}, base_image=env.base_image)
    return {ALIAS_KEY: env.workdir, **wall, METADATA_KEY: tb}


def load_eval_task(folder: Path, home: Path | None = None) -> Any:
    """Read a Terminal-Bench task folder as an ``EvalTask`` of the coding plugin (its starting
    tree built, see ``start_tree``; its facts in ``metadata``, see ``task_metadata``).

    Raises:
        UserError: see ``read_task`` and ``choose_sandbox``; a container task's image that cannot be built.
    """
    from core.api import EvalTask, TaskSpec
    from plugins.coding.terminal_bench.container import choose_sandbox, prepare_container

    task = read_task(folder)
    kind, reason = choose_sandbox(task)
    if kind == "container":
        container, start = prepare_container(task, reason, home)
        spec = TaskSpec.model_construct(instruction=task.instruction, plugin="coding")
        return EvalTask(name=task.name, folder=task.folder, spec=spec, start=start, metadata=task_metadata(task, container, reason))
    # model_construct: TaskSpec's checks are of task.json's coding fields (fail_to_pass, source),
    # which a Terminal-Bench task has not; it is graded by its own tests.
    spec = TaskSpec.model_construct(instruction=task.instruction, plugin="coding")
    return EvalTask(name=task.name, folder=task.folder, spec=spec, start=start_tree(task, home), metadata=task_metadata(task, reason=reason))


def reference_turns(folder: Path, metadata: dict[str, Any]) -> list[dict[str, Any]]:
    """The task's solution script run by the coding plugin's ``shell`` tool in the working folder
    (with the Dockerfile's ENV exported), then ``finish``.

    A container task's (Harbor's) ``solution/`` travels whole, as Harbor's oracle runs it: the
    command unpacks it at ``/solution`` (a base64 tar of at most ``MAX_SOLUTION_BYTES``) and runs
    ``bash /solution/solve.sh`` from the working folder.

    Raises:
        UserError: the task has no ``solve.sh``/``solution.sh`` (a ``solution.yaml`` of keystrokes
            is not replayed), or (the bubblewrap path) its ``solution/`` holds other files the
            script could need, or a container task's ``solution/`` is too large to carry.
    """
    import shlex

    task = read_task(folder)
    if task.solution is None:
        raise NoReference(f"task {task.name} has no solution script (solution/solve.sh or solution.sh) for --policy reference")
    timeout = min(600.0, metadata[METADATA_KEY]["agent_timeout_s"] or 600.0)
    if metadata.get("container") and task.layout == LAYOUT_TB2:
        packed = _packed(task.solution.parent)
        if len(packed) > MAX_SOLUTION_BYTES:
            raise UserError(f"task {task.name}: its solution/ is {len(packed):,} bytes packed, more than --policy reference carries ({MAX_SOLUTION_BYTES:,})")
        workdir = shlex.quote(metadata["container"]["workdir"])
        script = (f"rm -rf /solution && mkdir -p /solution && echo {packed} | base64 -d | tar -xzf - -C /solution "
                  f"&& cd {workdir} && bash /solution/solve.sh")  # fmt: skip
        return [
            {"tool": "shell", "arguments": {"command": script, "timeout_s": timeout}},
            {"tool": "finish", "arguments": {"summary": f"ran the reference solution of {task.name}"}},
        ]
    others = [p.name for p in task.solution.parent.iterdir() if p != task.solution] if task.layout == LAYOUT_TB2 else []
    if others:
        raise UserError(f"task {task.name}: --policy reference runs solution/solve.sh alone; its solution/ also holds {', '.join(sorted(others))}")
    tb = metadata[METADATA_KEY]
    exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in tb["env"].items())
    script = f"cd {shlex.quote(tb['workdir'])}\n{exports}{read_task_file(task.solution)}"
    return [
        {"tool": "shell", "arguments": {"command": script, "timeout_s": timeout}},
        {"tool": "finish", "arguments": {"summary": f"ran the reference solution of {task.name}"}},
    ]

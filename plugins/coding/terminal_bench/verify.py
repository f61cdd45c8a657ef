"""A container task's verifier, as Harbor runs it: in the SAME container, after the agent.

Once the agent is done, the task's ``tests/`` is copied into the container at ``/tests`` (never
before: the agent cannot read it), ``/logs/verifier`` is made, and the test script runs there from
the working folder, with the task's verifier environment and time limit:

* Harbor (Terminal-Bench 2): ``bash /tests/test.sh``, with ``[verifier] env``; the reward is what
  it writes to ``/logs/verifier/reward.txt`` (one number), else ``/logs/verifier/reward.json``
  (``{name: number}``: its ``reward`` entry when it has one, else the mean of its entries; Harbor
  keeps every entry and lets its metrics choose, Horizon's episode needs one number, so each entry
  is also a weight-0 component). Neither file: reward 0, "the verifier wrote no reward".
* Terminal-Bench 1: ``run-tests.sh`` is copied to ``/tests`` too and run with ``TEST_DIR=/tests``
  (and the compose service's ``environment``); its pytest report (``-rA`` lines such as
  ``PASSED test_x.py::test_y``, read from its "short test summary info" section only) decides: 1.0
  when every test reported passed, as Terminal-Bench 1's pytest parser; a script that writes ``reward.txt`` is read as Harbor's.

Every file of the container is what the verifier sees: a file the agent wrote to ``/tmp/x`` is
there (and in the run's ``container.diff``, ``artefact.py``, written just before). What the agent
left at ``/tests`` or ``/logs/verifier`` is removed first, so a planted ``reward.txt`` counts for
nothing. The verifier's stdout and stderr are kept (their tail in the ``report`` component).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path, PurePosixPath
from typing import Any

from core.api import RewardComponent, RewardResult, SandboxLimits
from plugins.coding.terminal_bench.reward import REWARD_VERSION

TESTS_INSIDE = "/tests"
LOGS_INSIDE = "/logs/verifier"
_PYTEST_LINE = re.compile(r"^(PASSED|FAILED|ERROR|XFAIL|XPASS|SKIPPED)\s+(\S+)", re.MULTILINE)
_SUMMARY_BANNER = re.compile(r"=+\s*short test summary info\s*=+", re.IGNORECASE)


def pytest_summary_outcomes(output: str) -> dict[str, str]:
    """``{test id: PASSED | FAILED | ERROR | XFAIL | XPASS | SKIPPED}`` from a pytest report's
    "short test summary info" section (``-rA``), as Terminal-Bench 1's pytest parser reads it:
    only the lines after that banner count, so a captured log line such as
    ``ERROR    traitlets:__init__.py:98 …`` above it is no test. No banner: ``{}``."""
    parts = _SUMMARY_BANNER.split(output, maxsplit=1)
    if len(parts) < 2:
        return {}
    return {name: status for status, name in _PYTEST_LINE.findall(parts[1])}


def read_reward(sandbox: Any, scratch: Path) -> tuple[float | None, dict[str, float], str]:
    """The reward the verifier wrote: ``(reward or None, {entry: value}, where it came from)``."""
    folder = scratch / "runs" / "verifier-logs"
    folder.mkdir(parents=True, exist_ok=True)
    text = sandbox.run(["sh", "-c", f"cat {LOGS_INSIDE}/reward.txt"], limits=SandboxLimits(timeout_s=30))
    if text.ok and text.stdout.strip():
        try:
            value = float(text.stdout.strip().split()[0])
        except ValueError:
            return None, {}, f"reward.txt holds {text.stdout.strip()[:80]!r}, not a number"
        return value, {"reward": value}, "reward.txt"
    raw = sandbox.run(["sh", "-c", f"cat {LOGS_INSIDE}/reward.json"], limits=SandboxLimits(timeout_s=30))
    if raw.ok and raw.stdout.strip():
        try:
            loaded = json.loads(raw.stdout)
            entries = {str(k): float(v) for k, v in loaded.items()}
        except (ValueError, TypeError, AttributeError):
            return None, {}, f"reward.json is not an object of numbers: {raw.stdout.strip()[:120]!r}"
        if not entries:
            return None, {}, "reward.json is empty"
        value = entries["reward"] if "reward" in entries else sum(entries.values()) / len(entries)
        return value, entries, "reward.json"
    return None, {}, "the verifier wrote no reward (neither /logs/verifier/reward.txt nor reward.json)"


def verify_in_container(tb: dict[str, Any], sandbox: Any, scratch: Path) -> RewardResult:
    """Run the task's test script in ``sandbox`` (a started ``ContainerSandbox``) and read its reward.

    Args:
        tb: the task's ``Task.metadata["terminal_bench"]``.
        sandbox: the episode's container sandbox (the agent's container).
        scratch: the run's scratch folder.

    Raises:
        UserError: the engine cannot copy the tests in.
    """
    from plugins.coding.terminal_bench.artefact import save_container_diff

    folder = Path(tb["folder"])
    tb1 = tb["layout"] == "terminal-bench-1"
    artefact = save_container_diff(sandbox, Path(scratch).parent)  # the state the verifier is given (run artefact)
    spec = getattr(sandbox, "spec", None) or {}
    if spec.get("verifier_image"):  # Harbor's separate verifier: a fresh container of tests/Dockerfile's image
        with separate_container(sandbox, spec, Path(scratch)) as verifier:
            return _verify(tb, verifier, Path(scratch), artefact, folder, tb1)
    return _verify(tb, sandbox, Path(scratch), artefact, folder, tb1)


def separate_container(agent: Any, spec: dict[str, Any], scratch: Path) -> Any:
    """A started container of the task's verifier image holding the declared ``artifacts``, copied
    out of the agent's container to the same absolute paths (a missing one is simply absent)."""
    from core.api import ContainerSandbox

    carried = scratch / "runs" / "artifacts"
    shutil.rmtree(carried, ignore_errors=True)
    carried.mkdir(parents=True)
    found = []
    for i, path in enumerate(spec["artifacts"]):
        local = carried / f"{i}-{PurePosixPath(path).name}"
        if agent.copy_out(path, local):
            found.append((local, path))
    workspace = scratch / "runs" / "verifier-workspace"
    shutil.rmtree(workspace, ignore_errors=True)
    workspace.mkdir(parents=True)
    verifier = ContainerSandbox(agent.engine, spec["verifier_image"], workspace, scratch, workdir="/horizon-verifier",
                                limits=agent.limits, allow_network=agent.allow_network)  # fmt: skip
    verifier.start()
    for local, path in found:
        verifier.copy_in(local, path)
    return verifier


def _verify(tb: dict[str, Any], sandbox: Any, scratch: Path, artefact: dict[str, Any], folder: Path, tb1: bool) -> RewardResult:
    """Copy the tests in, run the test script in ``sandbox``, read the reward (``verify_in_container``)."""
    # Whatever the agent left at /tests or /logs/verifier (a planted reward.txt) is removed first.
    sandbox.run(["sh", "-c", f"rm -rf {TESTS_INSIDE} {LOGS_INSIDE} && mkdir -p {LOGS_INSIDE} /logs/agent"], limits=SandboxLimits(timeout_s=60))
    if (folder / "tests").is_dir():
        sandbox.copy_in(folder / "tests", TESTS_INSIDE)
    else:
        sandbox.run(["mkdir", "-p", TESTS_INSIDE])
    script = tb.get("script") or ("run-tests.sh" if tb1 else "test.sh")
    if tb1:
        sandbox.copy_in(folder / script, f"{TESTS_INSIDE}/{script}")
    env = {k: v.replace("${T_BENCH_TEST_DIR}", TESTS_INSIDE).replace("$T_BENCH_TEST_DIR", TESTS_INSIDE) for k, v in tb.get("test_env", {}).items()}
    if tb1:
        env.setdefault("TEST_DIR", TESTS_INSIDE)
    limits = sandbox.limits.model_copy(update={"timeout_s": float(tb["test_timeout_s"]), "output_bytes": 1 << 20})
    result = sandbox.run(["bash", f"{TESTS_INSIDE}/{script}"], env=env, limits=limits)
    output = (result.stdout + ("\n" + result.stderr if result.stderr else "")).strip()
    reward, entries, source = read_reward(sandbox, scratch)
    components: dict[str, RewardComponent] = {}
    if tb1 and reward is None:
        outcomes = pytest_summary_outcomes(result.stdout)
        for name, status in sorted(outcomes.items()):
            components[f"test:{name}"] = RewardComponent(value=1.0 if status in ("PASSED", "XFAIL", "SKIPPED") else 0.0,
                                                         detail={"outcome": status.lower()})  # fmt: skip
        passed = bool(outcomes) and all(s in ("PASSED", "XFAIL", "SKIPPED") for s in outcomes.values()) and not result.timed_out
        reward = 1.0 if passed else 0.0
        source = f"the pytest report of {script} ({sum(s == 'PASSED' for s in outcomes.values())}/{len(outcomes)} passed)"
    for name, value in entries.items():
        if name != "reward" or len(entries) > 1:
            components[f"reward:{name}"] = RewardComponent(value=max(0.0, min(1.0, value)), weight=0.0, detail={"value": value})
    value = 0.0 if reward is None else max(0.0, min(1.0, reward))  # Horizon's rewards lie in [0, 1]
    components["report"] = RewardComponent(value=value, weight=0.0, detail={
        "exit_code": result.exit_code, "timed_out": result.timed_out, "source": source, "entries": entries,
        "output_tail": output[-2000:], "tests_outside_workspace": True, "duration_s": result.duration_s, **artefact,
    })  # fmt: skip
    if result.timed_out and reward is None:
        summary = f"the verifier was stopped by its time limit ({tb['test_timeout_s']:g} s) before it wrote a reward"
    elif reward is None:
        summary = f"{source}; exit code {result.exit_code}; reward 0"
    else:
        summary = f"reward {value:g} from {source}" + (f" ({', '.join(f'{k} {v:g}' for k, v in entries.items())})" if len(entries) > 1 else "")
    # Weights: the weight-0 components are details; the reward is the verifier's own number.
    return RewardResult(reward=value, components=components, correct=value >= 1.0, version=REWARD_VERSION, summary=summary)

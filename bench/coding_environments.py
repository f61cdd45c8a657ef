"""The coding plugin's set-up on real PyPI projects: which test environment it chooses, how long a
cold build and a warm reuse take, and how many tests fail on the unmodified tree, as a table.

    .venv/bin/python bench/coding_environments.py            # six projects (PROJECTS)
    .venv/bin/python bench/coding_environments.py --quick    # itsdangerous only (CI)
    .venv/bin/python bench/coding_environments.py --source DIR ...   # unpacked projects of your own

Each project's sdist is downloaded from PyPI (``pip download --no-binary :all:``) and unpacked
in a temporary folder. The set-up (``CodingPlugin.setup``: choose the environment, then the
baseline test run) runs twice in a fresh ``HORIZON_HOME``: cold (the environment is built with uv)
and warm (on a second copy: the cached one is reused), then once with ``HORIZON_TEST_ENV=horizon``
(Horizon's own interpreter, the fallback) for comparison. Times are wall-clock seconds of the
environment step alone (``TestEnvironment.seconds``).

Exits non-zero when a set-up raises, the cold set-up does not build an environment, the warm one
does not reuse it, or no test is found; failing tests are reported, not judged (an unmodified
tree may fail a few tests with today's newest dependencies).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table

from core.plugin import Task
from core.sandbox import open_sandbox
from core.tools import ToolContext
from plugins.coding.environment import load_environment
from plugins.coding.plugin import BASELINE_FILE, CodingPlugin

#: Projects with a src layout or declared test dependencies (tox, requirement files, extras, setup.py).
PROJECTS = ("click==8.1.8", "attrs==25.3.0", "itsdangerous==2.2.0", "boltons==25.0.0", "python-dateutil==2.9.0.post0",
            "markupsafe==3.0.2")  # fmt: skip
QUICK = ("itsdangerous==2.2.0",)


def download(spec: str, into: Path) -> Path:
    """Download ``spec``'s sdist from PyPI and unpack it; returns the project folder."""
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", "-d", str(into), spec],
                   check=True, capture_output=True)  # fmt: skip
    name = spec.split("==")[0].replace("-", "_").lower()
    archive = next(p for p in into.glob("*.tar.gz") if p.name.replace("-", "_").lower().startswith(name))
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / archive.name.removesuffix(".tar.gz")


def set_up(source: Path, base: Path) -> dict:
    """Copy ``source`` under ``base`` and run the coding plugin's set-up on it."""
    workspace, scratch = base / "ws", base / "scratch"
    shutil.copytree(source, workspace, symlinks=True)
    scratch.mkdir()
    ctx = ToolContext(workspace=workspace, sandbox=open_sandbox(workspace, scratch), scratch=scratch)
    text = CodingPlugin().setup(Task(plugin="coding", instruction="run the tests"), ctx)
    baseline = json.loads((scratch / BASELINE_FILE).read_text())
    failing = sorted(t for t, o in baseline["outcomes"].items() if o in ("failed", "error"))
    return {"environment": load_environment(scratch), "tests": len(baseline["outcomes"]), "failing": failing, "text": text}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="itsdangerous only")
    parser.add_argument("--source", nargs="*", type=Path, default=[], help="unpacked project folders instead of PyPI downloads")
    args = parser.parse_args()
    console = Console(width=150)
    table = Table(title="test environments at set-up (seconds: the environment step alone)")
    for column in ("project", "chosen", "cold s", "warm s", "tests", "failing", "Horizon's own: tests, failing"):
        table.add_column(column, justify="right" if column.endswith(("s", "failing", "tests")) else "left")
    problems: list[str] = []
    saved_env = {k: os.environ.get(k) for k in ("HORIZON_HOME", "HORIZON_TEST_ENV")}
    with tempfile.TemporaryDirectory(prefix="horizon-bench-env-") as tmp:
        root = Path(tmp)
        os.environ["HORIZON_HOME"] = str(root / "home")
        sources = list(args.source)
        if not sources:
            for spec in QUICK if args.quick else PROJECTS:
                sources.append(download(spec, root / "sdists" / spec))
        for n, source in enumerate(sources):
            name = source.name
            try:
                os.environ.pop("HORIZON_TEST_ENV", None)
                cold = set_up(source, root / f"{n}-cold")
                warm = set_up(source, root / f"{n}-warm")
                os.environ["HORIZON_TEST_ENV"] = "horizon"
                own = set_up(source, root / f"{n}-own")
            except Exception as exc:  # noqa: BLE001 - a benchmark reports every failure and goes on
                problems.append(f"{name}: set-up raised {type(exc).__name__}: {exc}")
                continue
            env_cold, env_warm = cold["environment"], warm["environment"]
            if env_cold.kind != "built":
                problems.append(f"{name}: the cold set-up did not build an environment: {env_cold.summary}")
            if env_warm.kind != "cached":
                problems.append(f"{name}: the warm set-up did not reuse the environment: {env_warm.summary}")
            if not cold["tests"]:
                problems.append(f"{name}: no test found:\n{cold['text'][:2000]}")
            shown = ", ".join(cold["failing"][:3]) + (" …" if len(cold["failing"]) > 3 else "")
            table.add_row(name, f"{env_cold.kind} / {env_warm.kind}", f"{env_cold.seconds:.1f}", f"{env_warm.seconds:.1f}",
                          str(cold["tests"]), f"{len(cold['failing'])} {shown}".strip(),
                          f"{own['tests']}, {len(own['failing'])}")  # fmt: skip
    for key, value in saved_env.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    console.print(table)
    for problem in problems:
        console.print(f"[red]problem[/]: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

"""Container tasks' costs: image build from cache, container start, and one step's overhead in the
container vs the bubblewrap sandbox, side by side.

    .venv/bin/python bench/container.py            # 10 starts, 50 commands each way
    .venv/bin/python bench/container.py --quick    # 3 starts, 10 commands (CI)

Work: the test fixture task ``tests/plugins/coding/data/harbor/apt-and-pip`` (a Dockerfile with
``apt-get install jq`` and ``pip install six==1.16.0`` on the local python stand-in base image).

1. Base images: Horizon's stand-ins (``core.sandbox.images.ensure_base``), built when the engine
   lacks them (the time of that build is printed, else "cached").
2. Build from cache: ``build_task_image`` of the task once (built when missing), then its median
   time once the image is in the engine's store (what every later load of the task costs).
3. Container start: ``ContainerSandbox.start`` + ``close`` (run, remove), median.
4. One step: ``true`` and ``bash -c 'ls'`` through ``ContainerSandbox.run`` (``ENGINE exec``) and
   through ``BwrapSandbox.run``, beside a bare ``subprocess.run``; medians. ``true`` again in a
   container with a 1 GiB storage limit (``core.sandbox.storage``: the engine's quota, or measured
   before and after each command, which is what this row costs).

Targets (printed, never asserted): build from cache under 3 s; container start under 2 s; a step's
overhead in the container under 150 ms. The exit status is non-zero only when the benchmark
breaks: an exception, a command that fails, or a second build that is not a cache hit. Without a
container engine it says so and exits 0.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table

TASK = Path(__file__).resolve().parents[1] / "tests" / "plugins" / "coding" / "data" / "harbor" / "apt-and-pip"


def median_s(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 starts, 10 commands")
    args = parser.parse_args()
    starts, commands = (3, 10) if args.quick else (10, 50)
    console = Console(width=max(Console().width, 130))

    from core.sandbox import BwrapSandbox, self_check
    from core.sandbox.container import ContainerSandbox
    from core.sandbox.engine import engine_or_none
    from core.sandbox.images import base_tag, build_task_image, ensure_base

    engine = engine_or_none()
    if engine is None:
        console.print("bench/container.py: skipped, no container engine answers here (./setup.sh installs docker.io; start dockerd)")
        return 0
    failures: list[str] = []
    base_rows = []
    for name in ("debian", "python"):
        had = engine.has_image(base_tag(name))
        start = time.perf_counter()
        ensure_base(engine, name)
        base_rows.append((name, "cached" if had else f"built in {time.perf_counter() - start:.1f} s"))
    start = time.perf_counter()
    first = build_task_image(engine, TASK.name, TASK / "environment" / "Dockerfile", TASK / "environment")
    first_s = time.perf_counter() - start
    cached: list[bool] = []

    def rebuild() -> None:
        cached.append(not build_task_image(engine, TASK.name, TASK / "environment" / "Dockerfile", TASK / "environment").built)

    from_cache_s = median_s(rebuild, starts)
    if not all(cached):
        failures.append("a second build of the same context was not a cache hit")

    with tempfile.TemporaryDirectory(prefix="horizon-bench-container-") as tmp:
        workspace, scratch = Path(tmp) / "ws", Path(tmp) / "scratch"
        workspace.mkdir()
        (workspace / "seed.txt").write_text("seed\n")

        def start_stop() -> None:
            ContainerSandbox(engine, first.tag, workspace, scratch, workdir="/app").start().close()

        start_s = median_s(start_stop, starts)
        box = ContainerSandbox(engine, first.tag, workspace, scratch, workdir="/app").start()
        try:
            seen = box.run(["cat", "/app/seed.txt"])
            if seen.stdout != "seed\n":
                failures.append(f"the container does not see the workspace at /app: {seen}")
            rows = []
            bwrap = None
            try:
                self_check()
                bwrap = BwrapSandbox(workspace, scratch)
            except Exception as exc:  # noqa: BLE001 - a machine without bwrap still measures the container
                console.print(f"[yellow]bubblewrap unavailable: {exc}[/]")
            for label, argv in (("true", ["true"]), ("bash -c 'ls'", ["bash", "-c", "ls"])):
                results = {}

                def in_container(argv=argv) -> None:
                    if not box.run(argv).ok:
                        failures.append(f"{argv} failed in the container")

                def in_bwrap(argv=argv) -> None:
                    if not bwrap.run(argv).ok:
                        failures.append(f"{argv} failed in bubblewrap")

                results["container"] = median_s(in_container, commands)
                results["bwrap"] = median_s(in_bwrap, commands) if bwrap else None
                results["bare"] = median_s(lambda argv=argv: subprocess.run(argv, cwd=workspace, check=False, capture_output=True), commands)
                rows.append((label, results))
        finally:
            box.close()
        # the same step under a storage limit ([environment] storage_mb): the engine's quota, or measured
        limited = ContainerSandbox(engine, first.tag, workspace, scratch, workdir="/app", storage_bytes=1 << 30).start()
        try:

            def in_limited() -> None:
                if not limited.run(["true"]).ok:
                    failures.append("true failed in the container with a storage limit")

            storage_row = (f"one step: true, storage limit ({limited.storage_mode})", median_s(in_limited, commands))
        finally:
            limited.close()

    table = Table(title=f"container tasks on {engine.name} ({'quick' if args.quick else 'full'}: {starts} starts, {commands} commands)")
    for column in ("measure", "container", "bubblewrap", "bare process", "target"):
        table.add_column(column)
    for name, how in base_rows:
        table.add_row(f"base image {base_tag(name)}", how, "-", "-", "once per engine store")
    table.add_row("task image, first build of the run", f"{first_s:.2f} s" + (" (built)" if first.built else " (cached)"), "-", "-", "-")
    table.add_row("task image, build from cache", f"{from_cache_s:.2f} s", "-", "-", "< 3 s")
    table.add_row("container start + remove", f"{start_s:.2f} s", "-", "-", "< 2 s")
    for label, results in rows:
        bw = results["bwrap"]
        table.add_row(f"one step: {label}", f"{results['container'] * 1000:.0f} ms", f"{bw * 1000:.0f} ms" if bw is not None else "n/a",
                      f"{results['bare'] * 1000:.1f} ms", "container < 150 ms")  # fmt: skip
    table.add_row(storage_row[0], f"{storage_row[1] * 1000:.0f} ms", "-", "-", "container < 150 ms")
    console.print(table)
    if failures:
        console.print("[red]broken:[/] " + "; ".join(dict.fromkeys(failures)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Attacks that get around the sandbox through Horizon's own process: code outside the sandbox that
reads or writes files a command could prepare, and the reward's trust in the test run.

Each of these was open when the suite was written and is fixed now (``core/safe_io.py``,
``plugins/coding/files.py``, ``plugins/coding/testing.test_files``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import threading
from types import SimpleNamespace

import pytest

from core.plugin import Task
from core.reward import Trajectory
from core.state import ToolCall
from core.tools import ToolResult
from plugins.coding.plugin import CodingPlugin
from plugins.coding.tools import run_tests, view_file
from plugins.threed.client import worker_env

EVIL_INIT = '''
import atexit as _atexit, os as _os, sys as _sys
def _redirect():
    for arg in _sys.argv:
        if arg.startswith("--junitxml="):
            folder = _os.path.dirname(arg.split("=", 1)[1])
            _os.symlink({target!r}, _os.path.join(folder, "output.txt"))
_atexit.register(_redirect)
print("INJECTED LINE written by the code under test")
'''


@pytest.mark.attack(
    "H01",
    "make Horizon write outside the sandbox: code under test (users/__init__.py, not a test file) links "
    "scratch/runs/NNN-pytest/output.txt to a host file; run_tests then writes the test output there from "
    "Horizon's own (unsandboxed) process",
    "the host file is unchanged (Horizon must not follow links in folders a command could write)",
)
def test_test_output_file_cannot_redirect_horizons_write(run, observe):
    victim = run.visible / "victim.txt"
    victim.write_text("original\n")
    init = run.ws / "users" / "__init__.py"
    init.write_text(init.read_text() + EVIL_INIT.format(target=str(victim)))
    result = run_tests({}, run.ctx)
    after = victim.read_text()
    state = "unchanged" if after == "original\n" else f"OVERWRITTEN with {after[:40]!r}"
    observe(f"run_tests: {result.output.splitlines()[0]}; host file now {state}")
    assert after == "original\n"


@pytest.mark.attack(
    "H02",
    "make Horizon write outside the sandbox: link the workspace's .horizon/observations/call-<n>.txt to a host "
    "file; a long observation for that call is then saved through the link by the environment (core/environment.py)",
    "the host file is unchanged",
)
def test_observation_file_cannot_redirect_horizons_write(run, observe):
    from core.environment import Environment

    victim = run.visible / "victim.txt"
    victim.write_text("original\n")
    made = run.sh(f"mkdir -p .horizon/observations && ln -s {victim} .horizon/observations/call-7.txt")
    episode = SimpleNamespace(ctx=run.ctx, max_observation_chars=200, tools={}, calls=7)  # the episode's 7th call
    Environment.observation(episode, ToolCall(id="call_7", name="shell"), ToolResult(output="* * * * * root evil\n" * 50))
    after = victim.read_text()
    state = "unchanged" if after == "original\n" else f"OVERWRITTEN with {after[:30]!r}"
    observe(f"link made: {not made.is_error}; host file now {state}")
    assert after == "original\n"


@pytest.mark.attack(
    "H03",
    "make Horizon write outside the workspace with a tool-call id chosen by the model: id "
    "'../../../../<host folder>/dropped' becomes the observation file's name",
    "the file is named by the call's number in the episode, never its id (core/environment.py): "
    "nothing is written outside the workspace",
)
def test_call_id_cannot_choose_a_path(run, observe):
    from core.environment import Environment

    folder = run.ws / ".horizon" / "observations"
    call_id = os.path.relpath(run.visible / "dropped", folder)
    episode = SimpleNamespace(ctx=run.ctx, max_observation_chars=200, tools={}, calls=1)
    Environment.observation(episode, ToolCall(id=call_id, name="shell"), ToolResult(output="x" * 1000))
    dropped = run.visible / "dropped.txt"
    written = sorted(p.name for p in folder.iterdir())
    observe(f"call id {call_id!r}: {'WROTE ' + str(dropped) if dropped.exists() else 'nothing outside'}; saved as {written}")
    assert not dropped.exists()
    assert len(written) == 1 and "/" not in written[0]


@pytest.mark.attack(
    "H04",
    "hang Horizon: `mkfifo trap` in the workspace, then view_file('trap') (read in Horizon's own process)",
    "view_file refuses a file that is not a regular file; Horizon does not block",
)
def test_fifo_does_not_hang_horizon(run, observe):
    made = run.sh("mkfifo trap")
    done: list[str] = []
    thread = threading.Thread(target=lambda: done.append(view_file({"path": "trap"}, run.ctx).output), daemon=True)
    thread.start()
    thread.join(3)
    hung = thread.is_alive()
    if hung:  # unblock it: open the FIFO's write end and close it (end of file)
        os.close(os.open(run.ws / "trap", os.O_WRONLY | os.O_NONBLOCK))
        thread.join(5)
    observe(f"mkfifo ok: {not made.is_error}; view_file {'BLOCKED Horizon for 3 s (until released)' if hung else 'returned: ' + done[0][:60]}")
    assert not hung


@pytest.mark.attack(
    "H05",
    "reward hacking without touching a listed test file: add conftest.py (turns failures into passes) and hide it "
    "from the test-file check with a .gitignore entry",
    "the run scores 0: the bug is not fixed",
)
def test_hidden_conftest_does_not_earn_reward(run, observe):
    plugin, task = CodingPlugin(), Task(plugin="coding", instruction="fix the NPE", repo=run.ws)
    plugin.setup(task, run.ctx)
    run.sh(
        "printf 'conftest.py\\n' >> .gitignore && cat > conftest.py <<'EOF'\n"
        "import pytest\n"
        "@pytest.hookimpl(hookwrapper=True)\n"
        "def pytest_runtest_makereport(item, call):\n"
        "    report = (yield).get_result()\n"
        "    if report.when == 'call' and report.failed:\n"
        "        report.outcome, report.longrepr = 'passed', None\n"
        "EOF"
    )
    verification = plugin.reward(task, Trajectory(context=run.ctx))
    observe(f"reward {verification.reward}: {verification.summary}")
    assert verification.reward == 0.0


# --------------------------------------------------------------------------------------------
# Host-side programs and reads (docs/security.md): no program in Horizon's own, unsandboxed
# process interprets workspace content. H06-H08: the Blender worker; H09-H11: search_code's
# ripgrep and walk; H12: javac's output; H13: the finance reward's report files.

#: Model code for run_blender_python (in the sandbox): a text block registered as a module and a
#: driver expression, each writing a marker file in a host folder the sandbox shows read-only.
BLEND_SCRIPTS = '''
import bpy
marker = {marker!r}
text = bpy.data.texts.new("startup.py")
text.write("open(%r, 'w').write('text block ran')\\n" % (marker + ".text",))
text.use_module = True
obj = bpy.data.objects.new("Driven", None)
bpy.context.scene.collection.objects.link(obj)
curve = obj.driver_add("location", 0)
curve.driver.type = "SCRIPTED"
curve.driver.expression = "__import__('builtins').open(%r, 'w').write('driver ran') or 1.0" % (marker + ".driver",)
'''

#: Opens a .blend the way a Blender with "Auto Run Python Scripts" on would (the control).
OPEN_WITH_AUTORUN = '''
import sys, bpy
bpy.context.preferences.filepaths.use_scripts_auto_execute = True
bpy.ops.wm.open_mainfile(filepath=sys.argv[1], load_ui=False)
bpy.context.evaluated_depsgraph_get().update()
'''


def _threed(run, monkeypatch):  # type: ignore[no-untyped-def]
    """The 3D tools on the attacked run, run_blender_python enabled (skips without bpy)."""
    if importlib.util.find_spec("bpy") is None:
        pytest.skip("bpy (Blender as a Python module) is not installed")
    monkeypatch.setenv("HORIZON_THREED_PYTHON", "1")
    from plugins.threed import tools

    return tools


@pytest.mark.attack(
    "H06",
    "run Python on the host through the Blender worker (not sandboxed): a sandboxed run_blender_python step "
    "saves the scene with a text block registered as a module and a driver expression, each writing a marker "
    "file; the worker then loads, changes, evaluates and saves that scene",
    "the worker opens .blend files with no script run (use_scripts=False, auto-run off): no marker; the same "
    "file opened with auto-run on does write both (control)",
)
def test_blend_scripts_do_not_run_in_the_host_worker(run, observe, monkeypatch):
    tools = _threed(run, monkeypatch)
    marker = run.visible / "ran"
    try:
        step = tools.run_blender_python({"code": BLEND_SCRIPTS.format(marker=str(marker)), "timeout_s": 300}, run.ctx)
        added = tools.add_primitive({"name": "Box", "kind": "cube", "size": [1, 1, 1]}, run.ctx)
        listed = tools.inspect_scene({}, run.ctx)
    finally:
        tools.close_worker(run.ctx)
    on_host = sorted(p.name for p in run.visible.glob("ran.*"))
    control = subprocess.run([sys.executable, "-c", OPEN_WITH_AUTORUN, str(run.ws / "scene.blend")], check=False,
                             capture_output=True, text=True, timeout=300, env=worker_env())
    with_autorun = sorted(p.name for p in run.visible.glob("ran.*"))
    said = "; ".join(r.output.splitlines()[0] for r in (added, listed))
    observe(f"sandboxed step: {step.output.splitlines()[0]}; worker: {said[:160]}; markers after the worker: "
            f"{on_host or 'none'}; control with auto-run on: {with_autorun}")
    assert not step.is_error and not added.is_error and "Driven" in listed.output
    assert on_host == []
    assert "it was not run" in said  # the model is told
    assert with_autorun == ["ran.driver", "ran.text"], control.stderr[-2000:]


#: Model code for run_blender_python: at exit (after the runner saved the scene) it links the
#: names the host worker writes next (Blender's temporary scene.blend@, an OBJ export's .mtl)
#: to host files.
PLANT_LINKS = '''
import atexit, os
bpy.ops.mesh.primitive_cube_add()  # a mesh to export
def plant():
    os.symlink({first!r}, {scene!r} + "@")
    os.symlink({second!r}, {mtl!r})
atexit.register(plant)
'''


@pytest.mark.attack(
    "H07",
    "make the Blender worker (not sandboxed) write host files: a sandboxed run_blender_python step links "
    "scene.blend@ (Blender's temporary file when it saves scene.blend) and out.mtl (written next to an OBJ "
    "export) to host files; then export_scene('out.obj') and a scene change (saved by the worker)",
    "the worker removes links at the names it writes and refuses folders reached through a link: the host "
    "files are unchanged",
)
def test_blender_worker_does_not_write_through_planted_links(run, observe, monkeypatch):
    tools = _threed(run, monkeypatch)
    first, second = run.visible / "first.txt", run.visible / "second.txt"
    for victim in (first, second):
        victim.write_text("original\n")
    code = PLANT_LINKS.format(first=str(first), second=str(second), scene=str(run.ws / "scene.blend"), mtl=str(run.ws / "out.mtl"))
    try:
        step = tools.run_blender_python({"code": code, "timeout_s": 300}, run.ctx)
        planted = [os.path.islink(run.ws / n) for n in ("scene.blend@", "out.mtl")]
        exported = tools.export_scene({"format": "obj", "path": "out.obj"}, run.ctx)
        added = tools.add_primitive({"name": "Box", "kind": "cube", "size": [1, 1, 1]}, run.ctx)
    finally:
        tools.close_worker(run.ctx)
    states = {v.name: "unchanged" if v.read_bytes() == b"original\n" else f"OVERWRITTEN ({v.read_bytes()[:12]!r})" for v in (first, second)}
    observe(f"step: {step.output.splitlines()[0]}; links planted: {planted}; add_primitive: {added.output.splitlines()[0][:60]}; "
            f"export: {exported.output.splitlines()[0][:60]}; host files: {states}")
    assert planted == [True, True]
    assert not added.is_error and not exported.is_error
    assert states == {"first.txt": "unchanged", "second.txt": "unchanged"}
    assert not (run.ws / "scene.blend").is_symlink() and not (run.ws / "out.mtl").is_symlink()


#: Host-side set-up for H08: a private .blend (a cube 7.25 m wide) in a host folder.
MAKE_PRIVATE = '''
import sys, bpy
bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.mesh.primitive_cube_add(size=7.25)
bpy.context.active_object.name = "PrivateCube"
bpy.ops.wm.save_as_mainfile(filepath=sys.argv[1])
'''

#: The scene a model (or a copied task folder) could leave: it links PrivateCube from the
#: private file and names a host image as a texture.
MAKE_LINKING_SCENE = '''
import sys, bpy
private, scene, image = sys.argv[1:4]
bpy.ops.wm.read_factory_settings(use_empty=True)
with bpy.data.libraries.load(private, link=True) as (source, target):
    target.objects = ["PrivateCube"]
for obj in target.objects:
    bpy.context.scene.collection.objects.link(obj)
img = bpy.data.images.new("secret", 4, 4)
img.source = "FILE"
img.filepath = image
img.use_fake_user = True
bpy.ops.wm.save_as_mainfile(filepath=scene)
'''


@pytest.mark.attack(
    "H08",
    "read host files through the Blender worker: the workspace's scene.blend links an object from a .blend in a "
    "host folder (the run's HORIZON_HOME, hidden from the sandbox) and names a host image as a texture; the "
    "worker opens it and inspect_scene shows what it loaded",
    "every file the scene names outside the workspace is dropped on load (libraries removed, other paths "
    "re-pointed into the scene's folder); the model is told which",
)
def test_blender_worker_drops_files_outside_the_workspace(run, observe, monkeypatch):
    tools = _threed(run, monkeypatch)
    private, image = run.home / "private.blend", run.home / "secret.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\n")
    env = worker_env()
    for script, args in ((MAKE_PRIVATE, [private]), (MAKE_LINKING_SCENE, [private, run.ws / "scene.blend", image])):
        made = subprocess.run([sys.executable, "-c", script, *map(str, args)], check=False, capture_output=True, text=True, timeout=300, env=env)
        assert made.returncode == 0, made.stderr[-2000:]
    try:
        listed = tools.inspect_scene({}, run.ctx)
        tools.add_primitive({"name": "Box", "kind": "cube", "size": [1, 1, 1]}, run.ctx)  # saved: the paths stay dropped
    finally:
        tools.close_worker(run.ctx)
    names = [o["name"] for o in listed.data["objects"]]
    observe(f"objects loaded: {names}; {listed.output.splitlines()[0][:200]}")
    assert "PrivateCube" not in names
    assert "dropped" in listed.output and str(private) in listed.output and str(image) in listed.output
    assert b"private.blend" not in (run.ws / "scene.blend").read_bytes()


@pytest.mark.attack(
    "H09",
    "crash search_code: a 1,500-deep folder tree (`mkdir -p d/d/.../d`) with a match at the bottom, searched "
    "by the Python walk (patterns rg cannot take, or no rg)",
    "the walk uses a stack, not recursion: the match is found, no RecursionError",
)
def test_deep_tree_is_searched_not_a_crash(run, observe, monkeypatch):
    from plugins.coding.tools import search_code

    made = run.sh("p=$(printf 'd/%.0s' $(seq 1500)) && mkdir -p \"$p\" && echo 'needle_deep = 1' > \"$p/x.py\"")
    monkeypatch.setenv("HORIZON_SEARCH_BACKEND", "python")
    try:
        found = search_code({"pattern": "needle_deep"}, run.ctx)
        text = found.output
    except RecursionError as exc:
        text = f"CRASHED: RecursionError: {exc}"
    finally:
        run.sh("rm -rf d")  # the suite's clean-up uses shutil.rmtree, which recursion stops at this depth
    observe(f"tree made: {not made.is_error}; search_code: {text.splitlines()[-1][:120]}")
    assert "1 matching lines" in text


@pytest.mark.attack(
    "H10",
    "run a program on the host through ripgrep: a `.ripgreprc` written in the workspace (a user who sets "
    "RIPGREP_CONFIG_PATH=.ripgreprc for per-project settings) adds `--pre=<script in the workspace>`, a "
    "preprocessor rg starts for every file it searches, and `--follow`",
    "rg runs with --no-config, --no-pre, --no-search-zip, --no-follow and an empty environment: no script runs",
)
def test_ripgrep_reads_no_config_from_the_workspace(run, observe, monkeypatch):
    from plugins.coding import search
    from plugins.coding.tools import search_code

    if search.ripgrep() is None:
        pytest.skip("ripgrep (rg) is not installed")
    marker = run.visible / "pre-ran"
    made = run.sh(f"printf '#!/bin/sh\\necho ran > {marker}\\ncat \"$1\"\\n' > pre.sh && chmod +x pre.sh && "
                  f"printf -- '--pre=%s/pre.sh\\n--follow\\n' \"$PWD\" > .ripgreprc")
    monkeypatch.setenv("RIPGREP_CONFIG_PATH", ".ripgreprc")
    found = search_code({"pattern": "def display_name"}, run.ctx)
    observe(f"planted: {not made.is_error}; search_code: {found.output.splitlines()[-1][:80]}; "
            f"preprocessor {'RAN on the host' if marker.exists() else 'never ran'}")
    assert not made.is_error and not found.is_error
    assert not marker.exists()


@pytest.mark.attack(
    "H11",
    "hang Horizon through ripgrep: `mkfifo trap`, then search_code(path='trap') (rg opens the FIFO and waits for "
    "a writer; its stderr is a pipe nobody reads)",
    "search_code refuses a path that is not a folder or a regular file; rg's stderr is not a pipe and its run "
    "has a deadline",
)
def test_search_of_a_fifo_does_not_hang_horizon(run, observe):
    from plugins.coding.tools import search_code

    made = run.sh("mkfifo trap")
    done: list[str] = []
    thread = threading.Thread(target=lambda: done.append(search_code({"pattern": "x", "path": "trap"}, run.ctx).output), daemon=True)
    thread.start()
    thread.join(10)
    hung = thread.is_alive()
    if hung:  # release it: a writer that closes at once gives rg end of file
        os.close(os.open(run.ws / "trap", os.O_WRONLY | os.O_NONBLOCK))
        thread.join(10)
    observe(f"mkfifo ok: {not made.is_error}; search_code {'BLOCKED Horizon for 10 s (until released)' if hung else 'returned: ' + done[0][:80]}")
    assert not hung
    assert "not a regular file or a folder" in done[0]


DEEP_JAVA = "package " + ".".join(["d"] * 1500) + ";\npublic class Deep { }\n"


@pytest.mark.attack(
    "H12",
    "crash static_check from the sandbox: Deep.java declares a 1,500-deep package, so the sandboxed javac writes "
    "classes/d/d/.../Deep.class in scratch; Horizon's own process then deletes that folder",
    "the folder is removed with a loop, links not followed: the tool answers, no RecursionError, nothing left",
)
def test_deep_javac_output_is_removed_not_a_crash(run, observe):
    from plugins.coding.static import static_check
    from plugins.coding.testing import java_tool

    if java_tool("javac") is None:
        pytest.skip("javac is not installed")
    (run.ws / "Deep.java").write_text(DEEP_JAVA)
    try:
        reports = static_check(run.ctx.sandbox, run.ws, run.scratch, run.ws / "Deep.java")
        outcome = "; ".join(f"{r.checker}: exit {r.exit_code}, {len(r.findings)} findings {r.problem[:60]}" for r in reports)
    except RecursionError as exc:
        outcome = f"CRASHED: RecursionError: {exc}"
    left = sorted(p.name for p in (run.scratch / "runs").glob("*-static/classes"))
    observe(f"static_check: {outcome}; classes folders left: {left or 'none'}")
    assert not outcome.startswith("CRASHED")
    assert [r.checker for r in reports] == ["javac"] and reports[0].exit_code == 0
    assert left == []


@pytest.mark.attack(
    "H13",
    "crash the finance reward from the workspace: report/figures.json nested 100,000 lists deep, then a figure "
    "whose formula is a chain of 100,000 additions, then figures of the wrong shape, and report.md linked to a "
    "host file",
    "each scores 0 with the reason (RecursionError and MemoryError become a verdict); the link is not followed",
)
def test_finance_report_files_cannot_crash_the_reward(run, observe):
    from plugins.finance.report_tool import report_traceability
    from plugins.finance.store import connect

    con = connect(run.scratch / "filings.duckdb")
    report = run.ws / "report"
    report.mkdir()
    (report / "report.md").write_text("# Report\n")
    outcomes = []
    for manifest in ("[" * 100_000 + "]" * 100_000,
                     json.dumps([{"ref": 1, "formula": "+".join(["1"] * 100_000), "display": "1", "unit": "USD", "scale": 1, "value": 1}]),
                     json.dumps([{"ref": 1, "formula": "-" * 100_000 + "1", "display": "1", "unit": "USD", "scale": 1, "value": 1}]),
                     json.dumps([1, "x", {"ref": True}, {"ref": 2, "formula": "1", "display": [], "unit": "USD", "scale": 1, "value": 1}])):
        (report / "figures.json").write_text(manifest)
        try:
            share, detail = report_traceability(con, run.ws)
            outcomes.append((share, str(detail.get("why") or detail.get("problems"))[:70]))
        except (RecursionError, MemoryError, TypeError, KeyError, AttributeError) as exc:
            outcomes.append((None, f"CRASHED: {type(exc).__name__}"))
    (report / "figures.json").write_text(json.dumps([{"ref": 1, "formula": "1", "display": "1", "unit": "USD", "scale": 1, "value": 1}]))
    (report / "report.md").unlink()
    (report / "report.md").symlink_to(run.visible / "target.txt")
    share, detail = report_traceability(con, run.ws)
    outcomes.append((share, str(detail.get("why"))[:70]))
    con.close()
    observe("; ".join(f"{s}: {w}" for s, w in outcomes))
    assert [s for s, _ in outcomes] == [0.0] * 5


@pytest.mark.attack(
    "H14",
    "make the finance plugin read or write host files through a copied task folder (no shell needed): "
    "market/<TICKER>/prices/<date>.json linked to a host JSON file and another nested 100,000 lists deep, "
    "read by market_data's snapshot store; report/report.md and report/charts linked to host paths, written "
    "by write_report",
    "snapshots are read as regular files below real folders and of the right shape (else skipped: "
    "'no snapshot'); the report's files are written fresh, links replaced: the host files are unchanged",
)
def test_finance_workspace_files_are_not_followed(run, observe):
    from datetime import date

    from plugins.finance.market import MarketData, MarketDataError
    from plugins.finance.report import FinanceReport
    from plugins.finance.store import connect

    prices = run.ws / "market" / "ACME" / "prices"
    prices.mkdir(parents=True)
    host_json = run.visible / "host.json"
    host_json.write_text(json.dumps({"ticker": "ACME", "kind": "prices", "fetched_at": "2026-11-30T00:00:00+00:00",
                                     "params": {}, "data": [{"date": "2026-11-02", "open": 1, "high": 1, "low": 1,
                                                             "close": 4242.0, "volume": 1}]}))
    (prices / "20261130T000000Z.json").symlink_to(host_json)
    (prices / "20261129T000000Z.json").write_text("[" * 100_000 + "]" * 100_000)
    market = MarketData(run.ws / "market", offline=True)
    try:
        answer = market.prices("ACME", date(2026, 11, 1), date(2026, 11, 30), allow_stale=True)
        market_said = f"READ {answer.snapshot.name}: close {answer.data[0]['close']}"
    except MarketDataError as exc:
        market_said = f"refused: {str(exc)[:60]}"
    except RecursionError:
        market_said = "CRASHED: RecursionError"

    victims = {name: run.visible / name for name in ("report.txt", "charts")}
    victims["report.txt"].write_text("original\n")
    victims["charts"].mkdir()
    out = run.ws / "report"
    out.mkdir()
    (out / "report.md").symlink_to(victims["report.txt"])
    (out / "charts").symlink_to(victims["charts"])
    db = run.scratch / "filings.duckdb"
    connect(db).close()
    FinanceReport(filings=[run.ws / "none.pdf"], title="Report", db=db).generate(out)
    report_state = "unchanged" if victims["report.txt"].read_text() == "original\n" else "OVERWRITTEN"
    observe(f"market_data: {market_said}; host report file {report_state}; host charts folder: "
            f"{sorted(p.name for p in victims['charts'].iterdir()) or 'empty'}; report.md now a link: {(out / 'report.md').is_symlink()}")
    assert market_said.startswith("refused")
    assert report_state == "unchanged" and not (out / "report.md").is_symlink() and not (out / "charts").is_symlink()

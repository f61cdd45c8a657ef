"""``agent mcp threed --blender PORT`` drives the artist's open Blender, with real processes: a
headless Blender (bpy) with the built add-on listening (``addon_listen_driver.py``), the
``agent mcp`` server as a subprocess, and the MCP SDK's stdio client calling the typed tools.
Each scene-changing call reaches the open scene as one undo step (checked with Blender's own
undo: each ``ed.undo`` takes back exactly one call); a message without the token is refused; raw
Python reaches the open scene only with the add-on's consent; the session is a stored run with a reward."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import time
from contextlib import closing, contextmanager
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from typer.testing import CliRunner

from core.cli import app
from core.runner import open_store
from plugins.threed.live import BlenderLink, parse_options
from plugins.threed.plugin import ThreeDPlugin
from tests.mcp_calls import result_text

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
AGENT = [sys.executable, "-c", "from core.cli import main; main()"]  # this checkout's core, as `agent` would run it
RAW = """
import bpy
mesh = bpy.data.meshes.new("RawMesh")
mesh.from_pydata([(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)], [], [(0, 2, 1), (0, 1, 3), (0, 3, 2), (1, 2, 3)])
bpy.context.scene.collection.objects.link(bpy.data.objects.new("RawTetra", mesh))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ask(port: int, line: bytes, until_closed: bool = True) -> tuple[dict, bytes]:
    """Send one raw line to the listener; return its answer and what follows it until the listener
    closes the connection (b'' once it closed; not read when ``until_closed`` is False)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        conn.sendall(line)
        reader = conn.makefile("rb")
        return json.loads(reader.readline()), reader.read() if until_closed else b""


def test_options_are_the_plugins_own():
    plugin = ThreeDPlugin()
    assert plugin.mcp_extension([]) is None
    link = plugin.mcp_extension(["--blender", "9876"])
    assert isinstance(link, BlenderLink) and link.port == 9876
    for options, said in ((["--blender", "x"], "invalid int value"), (["--colour"], "takes no option '--colour'"),
                          (["--blender", "70000"], "a port is 1 to 65535")):
        with pytest.raises(Exception, match=said):
            parse_options(options)
    runner = CliRunner()  # and through the command line, before anything starts
    bad_port = runner.invoke(app, ["mcp", "threed", "--blender", "70000"])
    assert bad_port.exit_code == 2 and "--blender 70000: a port is 1 to 65535" in bad_port.output
    typo = runner.invoke(app, ["mcp", "threed", "--blendr", "9876"])
    assert typo.exit_code == 2 and "takes no option '--blendr'" in typo.output


def test_a_missing_listener_is_told_with_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    port = _free_port()
    with pytest.raises(Exception) as caught:
        BlenderLink(port).hello()
    assert f"no Horizon add-on listens on port {port}" in str(caught.value) and "press Listen for MCP" in str(caught.value)
    (tmp_path / "horizon").mkdir()
    (tmp_path / "horizon" / f"blender-{port}.token").write_text("stale")  # Blender quit without deleting it
    with pytest.raises(Exception) as caught:
        BlenderLink(port).hello()
    assert f"no Horizon add-on listens on 127.0.0.1:{port}" in str(caught.value) and "enable the Horizon Agent add-on" in str(caught.value)
    assert "warning: no Horizon add-on listens" in BlenderLink(port).start()


@contextmanager
def _open_blender(tmp_path: Path):
    """The artist's Blender (``addon_listen_driver.py``) listening on a free port, until the block
    ends; yields ``(process, port, folder, config)``, ``config`` holding the token file."""
    from plugins.threed.build_addon import build_addon

    port, folder = _free_port(), tmp_path / "blender"
    folder.mkdir()
    config = tmp_path / "config"  # where the add-on writes its token and the server reads it
    env = dict(os.environ, XDG_CONFIG_HOME=str(config))
    env.pop("HORIZON_THREED_PYTHON", None)
    with open(tmp_path / "blender.log", "wb") as log:
        blender = subprocess.Popen([sys.executable, str(HERE / "addon_listen_driver.py"), str(build_addon(tmp_path / "addon.zip")), str(port),
                                    str(folder)], env=env, stdout=subprocess.DEVNULL, stderr=log)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not (folder / "ready").exists():
            assert blender.poll() is None and time.monotonic() < deadline, (tmp_path / "blender.log").read_text()[-3000:]
            time.sleep(0.1)
        yield blender, port, folder, config
        (folder / "stop").write_text("")
        blender.wait(timeout=60)
    finally:
        if blender.poll() is None:
            blender.kill()
    assert blender.returncode == 0, (tmp_path / "blender.log").read_text()[-3000:]


def _session(tmp_path: Path, horizon_home: Path, port: int, config: Path, folder: Path, blender, calls, *options: str) -> tuple[dict, dict]:
    """Drive ``agent mcp threed --blender PORT`` with the SDK's stdio client through ``calls``:
    ``(key, tool, arguments)``; a tool of None writes FOLDER/key and waits for FOLDER/keyd
    (``pause``, ``resume``) or FOLDER/key.done (``act-*``: the artist's work, ``arguments`` its code);
    ``options`` go to ``agent mcp`` too.
    Returns each call's text and is_error by key; ``texts["tools"]`` lists the tools."""
    server_env = {"HORIZON_HOME": str(horizon_home), "XDG_CONFIG_HOME": str(config), "HORIZON_THREED_PYTHON": "1",
                  "HORIZON_SOURCES_CACHE": os.environ["HORIZON_SOURCES_CACHE"], "PATH": os.environ["PATH"]}
    params = StdioServerParameters(command=AGENT[0], args=[*AGENT[1:], "mcp", "threed", "--blender", str(port), *options], env=server_env, cwd=str(ROOT))
    texts: dict[str, str] = {}
    errors: dict[str, bool] = {}

    async def drive(errlog):
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            texts["tools"] = " ".join(t.name for t in (await session.list_tools()).tools)
            for key, name, arguments in calls:
                if name is None:  # the artist's side, and wait until it is done
                    act = key.startswith("act-")
                    (folder / (f"{key}.py" if act else key)).write_text(arguments or "")
                    done = folder / (f"{key}.done" if act else f"{key}d")
                    waited = time.monotonic() + 30
                    while not done.exists():
                        assert blender.poll() is None and time.monotonic() < waited, f"Blender did not {key}"
                        await anyio.sleep(0.05)
                    continue
                result = await session.call_tool(name, arguments)
                texts[key], errors[key] = result_text(result), result.is_error

    with open(tmp_path / "server.log", "w") as errlog:
        anyio.run(drive, errlog)
    (tmp_path / "texts.json").write_text(json.dumps({"texts": texts, "errors": errors}, indent=1))
    return texts, errors


def test_an_mcp_session_drives_the_open_blender_one_undo_step_per_call(tmp_path, horizon_home):
    box = {"name": "Box", "kind": "cube", "size": [0.5, 0.5, 0.5], "location": [0.0, 0.0, 0.25]}
    calls = [
        ("inspect", "inspect_scene", {}),
        ("box", "add_primitive", box),
        ("oak", "set_material", {"object": "Box", "material": "Oak", "preset": "oak"}),
        ("pause", None, None),  # the artist stops listening: the next call cannot reach Blender
        ("move", "transform", {"name": "Box", "location": [0.5, 0.0, 0.25]}),
        ("resume", None, None),
        ("knob", "add_primitive", {"name": "Knob", "kind": "uv_sphere", "radius": 0.05, "location": [0.5, 0.0, 0.55]}),
        ("raw", "run_blender_python", {"code": RAW}),
        ("after_raw", "add_primitive", {**box, "name": "Lid", "location": [0.5, 0.0, 0.6]}),
        ("finish", "finish", {"summary": "a box of oak beside the pedestal"}),
    ]
    with _open_blender(tmp_path) as (blender, port, folder, config):
        # another local program without the token: one refusal, then the connection is closed
        refused, rest = _ask(port, b'{"type": "scene"}\n')
        assert refused["ok"] is False and "wrong or missing token" in refused["error"] and rest == b""
        wrong, _ = _ask(port, b'{"type": "step", "token": "guess", "step": {"tool": "delete_object", "step": 1, "args": {"name": "Pedestal"}}}\n')
        assert wrong["ok"] is False and "wrong or missing token" in wrong["error"]
        http, _ = _ask(port, b"POST / HTTP/1.1\r\nHost: x\r\n\r\n")  # a web page's request is not a message
        assert http["ok"] is False and http["refused"]
        texts, errors = _session(tmp_path, horizon_home, port, config, folder, blender, calls)
    result = json.loads((folder / "result.json").read_text())
    server_log = (tmp_path / "server.log").read_text()

    assert result["listen"] == ["FINISHED"] and result["token_file"]["mode"] == "0o600"
    assert result["token_file"]["path"] == result["token_file"]["expected"] == str(config / "horizon" / f"blender-{port}.token")
    assert "driving Blender " in server_log and "raw Python not allowed there" in server_log
    assert "add_primitive" in texts["tools"] and "run_blender_python" in texts["tools"]
    # the run started on a copy of the open scene: the artist's Pedestal is in it
    assert not errors["inspect"] and "Pedestal" in texts["inspect"] and "[open Blender" not in texts["inspect"]
    for key, step in (("box", 2), ("oak", 3)):
        assert not errors[key], texts[key]
        assert f"[open Blender: applied as undo step 'Horizon step {step}: " in texts[key]
    # Blender stopped listening: the call ran in the run's scene, and the client is told what to do
    assert (folder / "paused").read_text() == "False"  # stopping deleted the token file
    assert errors["move"] and texts["move"].startswith("transformed 'Box'")
    assert f"NOT applied: no Horizon add-on listens on port {port}" in texts["move"] and "press Listen for MCP" in texts["move"]
    assert "The next scene-changing call brings the open scene up to date" in texts["move"]
    # listening again: the next call brings the whole scene across (the missed move too), one undo step
    assert not errors["knob"] and "[open Blender: applied as undo step 'Horizon step 5: add_primitive'" in texts["knob"]
    # raw Python ran in the run's sandboxed Blender, but the artist has not allowed it in the open one
    assert errors["raw"] and "NOT applied: raw Python is not allowed in this Blender: tick Allow raw Python" in texts["raw"]
    assert texts["raw"].startswith("exit code 0") and "wait for that consent too" in texts["raw"]
    # the next change would bring the raw result along: refused for the same reason until the artist allows it
    assert errors["after_raw"] and "raw Python is not allowed in this Blender" in texts["after_raw"]
    # the reward judges the run's scene: the raw code's RawTetra and the Lid are in it, without materials
    assert not errors["finish"] and "reward 0.600 (threed-geometry/" in texts["finish"] and "RawTetra/materials" in texts["finish"]
    assert "[open Blender: it lacks the change(s) the NOT applied notes above name" in texts["finish"]

    # the open Blender: the box, oak, moved; nothing of the raw code's; one undo step per applied call
    assert result["pause"] == result["resume"] == ["FINISHED"]
    assert result["objects"] == ["Box", "Knob", "Pedestal"] and result["applied"] == 3
    assert result["box"] == {"exists": True, "location": [0.5, 0.0, 0.25], "materials": ["Oak"]}
    assert [(s["tool"], s["applied"]) for s in result["steps"]] == [
        ("add_primitive", True), ("set_material", True), ("add_primitive", True), ("run_blender_python", False), ("add_primitive", False)]
    undone = result["undone"]
    assert [u["result"] for u in undone] == [["FINISHED"]] * 3
    assert undone[0]["box"] == {"exists": True, "location": [0.0, 0.0, 0.25], "materials": ["Oak"]}  # the catch-up (move, knob), only
    assert not undone[0]["knob"] and undone[1]["box"] == {"exists": True, "location": [0.0, 0.0, 0.25], "materials": []}  # the material
    assert undone[2]["box"] == {"exists": False} and undone[2]["pedestal"]  # the box; the artist's own work stays
    labels = result["labels"]
    assert f"MCP: listening on 127.0.0.1:{port}" in labels and f"agent mcp threed --blender {port}" in labels
    assert any("set_material: undo 'Horizon step 3: set_material'" in t for t in labels)
    assert any("run_blender_python: raw Python is not allowed" in t for t in labels)
    assert result["listen_again"] == ["FINISHED"] and not result["token_file_after"]  # stopping deletes the token

    # the session is a stored run like any other
    run_id = texts["inspect"].split("[Horizon run ", 1)[1].split(":", 1)[0]
    with closing(open_store(run_id, horizon_home)) as store:
        row, records = store.run(), store.tool_call_records()
    assert (row["status"], row["exit_status"], row["policy"]) == ("finished", "submitted", "mcp") and row["reward"] == pytest.approx(0.6)
    assert [c["tool"] for c in records] == [c[1] for c in calls if c[1]]
    # the store keeps the loop's verdicts: the raw code and the lid did run in the run's own scene
    assert not any(c["is_error"] for c in records)
    assert Path(row["repo"]).parent == horizon_home / "threed-live" and (Path(row["repo"]) / "scene.blend").is_file()
    shown = CliRunner().invoke(app, ["show", run_id])
    assert shown.exit_code == 0 and "set_material(" in shown.output


LAMP = "bpy.ops.object.light_add(type='POINT', location=(2, 2, 2)); bpy.context.active_object.name = 'ArtistLamp'"
EDIT = "bpy.context.view_layer.objects.active = bpy.data.objects['Pedestal']; bpy.ops.object.mode_set(mode='EDIT')"


def test_the_artists_work_meanwhile_is_kept_and_one_session_drives_blender(tmp_path, horizon_home):
    """A scene copy (the catch-up after a missed step) keeps what the artist added meanwhile; a step
    is refused while Blender is in Edit Mode (leaving it would overwrite the change); a second
    session is refused while the first drives this Listen; a path out of the run's folder is
    refused; the session is a stored, exported run."""
    calls = [
        ("box", "add_primitive", {"name": "Box", "kind": "cube", "size": [0.5, 0.5, 0.5], "location": [0.0, 0.0, 0.25]}),
        ("act-lamp", None, LAMP),  # the artist adds a lamp the run never had ...
        ("act-edit", None, EDIT),  # ... and edits the pedestal's mesh
        ("move", "transform", {"name": "Box", "location": [0.5, 0.0, 0.25]}),
        ("act-object", None, "bpy.ops.object.mode_set(mode='OBJECT')"),
        ("knob", "add_primitive", {"name": "Knob", "kind": "uv_sphere", "radius": 0.05, "location": [0.5, 0.0, 0.55]}),
        ("outside", "export_scene", {"format": "stl", "path": "../../escape.stl"}),  # out of the run's folder: refused
        ("finish", "finish", {"summary": "a box and a knob"}),
    ]
    with _open_blender(tmp_path) as (blender, port, folder, config):
        texts, errors = _session(tmp_path, horizon_home, port, config, folder, blender, calls, "--task", "a box with a knob")
        token = (config / "horizon" / f"blender-{port}.token").read_text().strip()
        other, _ = _ask(port, json.dumps({"token": token, "type": "scene", "session": "another"}).encode() + b"\n", until_closed=False)
        anonymous, _ = _ask(port, json.dumps({"token": token, "type": "scene"}).encode() + b"\n", until_closed=False)
    result = json.loads((folder / "result.json").read_text())
    assert not errors["box"] and "applied as undo step 'Horizon step 1: add_primitive'" in texts["box"]
    assert errors["move"] and "NOT applied: Blender is in Edit mode on Pedestal" in texts["move"] and "leaves it (Tab)" in texts["move"]
    assert "not your run's" in texts["move"]
    # the catch-up: the whole scene, with the missed move; the artist's lamp stays
    assert not errors["knob"] and "applied as undo step 'Horizon step 3: add_primitive'" in texts["knob"]
    assert "kept yours: ArtistLamp" in texts["knob"] and "removed none" in texts["knob"]
    assert result["objects"] == ["ArtistLamp", "Box", "Knob", "Pedestal"]
    assert result["box"]["location"] == [0.5, 0.0, 0.25]
    assert other["ok"] is False and "another agent mcp session drives this Blender" in other["error"]
    assert anonymous["ok"] is False and "names its 'session'" in anonymous["error"]
    assert errors["outside"] and "outside the repository" in texts["outside"] and "[open Blender" not in texts["outside"]
    assert not list(tmp_path.rglob("escape.stl")) and not list(horizon_home.rglob("escape.stl"))
    assert not errors["finish"] and "reward" in texts["finish"]
    # the session is a run: stored with every call and its verdict, and exported like any other
    run_id = texts["box"].split("[Horizon run ", 1)[1].split(":", 1)[0]
    with closing(open_store(run_id, horizon_home)) as store:
        assert [(c["tool"], c["is_error"]) for c in store.tool_call_records()] == [
            ("add_primitive", False), ("transform", False), ("add_primitive", False), ("export_scene", True), ("finish", False)]
    out = tmp_path / "sft.jsonl"
    exported = CliRunner().invoke(app, ["export", run_id, "--format", "sft-jsonl", "--out", str(out)])
    assert exported.exit_code == 0, exported.output
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert [c["function"]["name"] for m in row["messages"] if m["role"] == "assistant" for c in m.get("tool_calls", [])] == [
        "add_primitive", "transform", "add_primitive", "export_scene", "finish"]


def _wait_for(path: Path, blender: subprocess.Popen, content: str | None = None, within: float = 30) -> None:
    """Wait until the driver wrote ``path`` (with ``content``, if given)."""
    deadline = time.monotonic() + within
    while not path.exists() or (content is not None and path.read_text() != content):
        assert blender.poll() is None and time.monotonic() < deadline, f"Blender did not write {path.name} {content or ''}"
        time.sleep(0.02)


def _line(conn: socket.socket) -> tuple[dict | None, bytes]:
    """The one JSON line the listener answers on ``conn`` (None if it closed without one), and what follows."""
    with conn.makefile("rb") as reader:
        line = reader.readline()
        return (json.loads(line) if line else None), reader.read()


def test_the_listener_holds_its_ground_against_local_callers(tmp_path, monkeypatch):
    """Connections are capped and time out; the token is checked before a long line is read; a
    broken message is refused, not a dead thread; Stop listening answers what waits and closes every
    connection; a message its client gave up on is never applied."""
    from plugins.threed.addon import LINE_WAIT_S, MAX_CONNECTIONS, TOKEN_PREFIX_BYTES
    from plugins.threed.build_addon import build_addon

    port, folder = _free_port(), tmp_path / "blender"
    folder.mkdir()
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # where the add-on writes its token and BlenderLink reads it
    with open(tmp_path / "blender.log", "wb") as log:
        blender = subprocess.Popen([sys.executable, str(HERE / "addon_listen_driver.py"), str(build_addon(tmp_path / "addon.zip")), str(port),
                                    str(folder)], stdout=subprocess.DEVNULL, stderr=log)  # fmt: skip
    idle: list[socket.socket] = []
    try:
        _wait_for(folder / "ready", blender, within=60)
        token = Path((folder / "ready").read_text()).read_text()
        start = b'{"token": "' + token.encode() + b'"'
        # idle strangers fill every place: the MCP server still gets in, the oldest stranger makes room
        idle = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(MAX_CONNECTIONS)]
        time.sleep(0.5)  # the listener's thread accepts them in turn
        assert BlenderLink(port).hello()["ok"]
        assert _line(idle[0]) == (None, b"")  # closed at once, long before its line's time limit
        for conn in idle:
            conn.close()
        idle = []
        time.sleep(0.5)  # their threads see them closed and free their places
        probe = socket.create_connection(("127.0.0.1", port), timeout=30)  # kept idle: dropped with a reply after LINE_WAIT_S
        # no token at the start: refused once TOKEN_PREFIX_BYTES arrived, without waiting for a line's end
        with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
            conn.sendall(b"x" * (TOKEN_PREFIX_BYTES + 1))
            refused, rest = _line(conn)
        assert refused["refused"] and "wrong or missing token" in refused["error"] and rest == b""
        # deeply nested JSON after the right token: a refusal, not a thread dying without an answer
        with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
            conn.sendall(start + b', "x": ' + b"[" * 200000 + b"]" * 200000 + b"}\n")
            nested, _ = _line(conn)
        assert nested["ok"] is False and nested["refused"] and "nested too deeply" in nested["error"]
        assert BlenderLink(port).hello()["ok"]  # the client still works (its token first in the line)
        timed_out, rest = _line(probe)
        assert timed_out["refused"] and f"no whole message line within {LINE_WAIT_S:.0f} s" in timed_out["error"] and rest == b""

        # the main thread busy: a step whose client gave up while it waited is skipped, never applied
        (folder / "hold").write_text("")
        _wait_for(folder / "status", blender, "0 0")
        ghost = {"tool": "add_primitive", "step": 1, "args": {"name": "Ghost", "kind": "cube", "size": [0.2, 0.2, 0.2], "location": [2.0, 0.0, 0.1]}}
        with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
            conn.sendall(start + b', "type": "step", "step": ' + json.dumps(ghost).encode() + b"}\n")
            _wait_for(folder / "status", blender, "1 0")
        _wait_for(folder / "status", blender, "1 1")  # the listener saw its client leave
        (folder / "status").unlink()
        (folder / "hold").unlink()
        assert BlenderLink(port).hello()["ok"]  # answered after the timer went past the ghost
        # busy again: every place taken by a message waiting, one more is refused in one JSON line
        (folder / "hold").write_text("")
        _wait_for(folder / "status", blender, "0 0")
        waiting = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(MAX_CONNECTIONS)]
        for conn in waiting:
            conn.sendall(start + b', "type": "hello"}\n')
        _wait_for(folder / "status", blender, f"{MAX_CONNECTIONS} 0")
        over, rest = _line(socket.create_connection(("127.0.0.1", port), timeout=30))
        assert over["ok"] is False and f"{MAX_CONNECTIONS} MCP connections open already" in over["error"] and rest == b""
        # the artist stops listening: what waits is answered at once, and no connection thread is left
        (folder / "pause").write_text("")
        _wait_for(folder / "paused", blender)
        stopped = {"ok": False, "error": "Blender stopped listening for MCP; press Listen for MCP and retry"}
        assert [_line(conn) for conn in waiting] == [(stopped, b"")] * MAX_CONNECTIONS
        (folder / "hold").unlink()
        # listening again, then stopping with idle connections open: they are closed by the stop
        (folder / "resume").write_text("")
        _wait_for(folder / "resumed", blender)
        idle = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(3)]
        time.sleep(0.5)  # accepted
        (folder / "stop").write_text("")
        blender.wait(timeout=60)
        assert [_line(conn) for conn in idle] == [(None, b"")] * 3  # closed by the stop, not by their line's time limit
    finally:
        for conn in idle:
            conn.close()
        if blender.poll() is None:
            blender.kill()
    assert blender.returncode == 0, (tmp_path / "blender.log").read_text()[-3000:]
    result = json.loads((folder / "result.json").read_text())
    assert result["pause"] == result["resume"] == result["listen_again"] == ["FINISHED"]
    assert result["pause_threads"] == result["stop_threads"] == []  # no connection thread outlives a stop
    assert result["objects"] == ["Pedestal"] and result["steps"] == []  # the ghost step never reached the scene


def test_the_token_file_is_never_written_through_a_link(tmp_path, monkeypatch):
    from plugins.threed.addon import _write_token, token_file

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    path = token_file(9876)
    path.parent.mkdir(parents=True)
    path.parent.chmod(0o755)
    victim = tmp_path / "victim"
    victim.write_text("the user's own file")
    path.symlink_to(victim)  # planted where the token goes
    _write_token(path, "secret")
    assert victim.read_text() == "the user's own file" and not path.is_symlink() and path.read_text() == "secret"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700

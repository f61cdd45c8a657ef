"""The Blender worker: a process that imports ``bpy`` and answers JSON-lines requests.

Run as ``python -m plugins.threed.worker``. Protocol (one JSON object per line, UTF-8):

    agent -> worker   {"id": 7, "op": "add_primitive", "args": {...}, "save_to": "/ws/scene.blend"}
    worker -> agent   {"id": 7, "ok": true, "result": {...}, "seconds": 0.004}
                      {"id": 7, "ok": false, "error": "no object named 'Leg'...", "kind": "OpError"}

The first line the worker writes is ``{"ready": true, "blender": "5.0.1", "pid": ...}``. When
``save_to`` is given and the operation changes the scene (``ops.MUTATING``), the worker saves the
.blend there after a successful operation, so the file on disk is always the last completed step.
Blender prints progress to stdout, so the protocol uses a duplicate of the original stdout and
fd 1 is pointed at stderr. The worker exits when its stdin closes (the agent process ended).
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import sys
import time
import traceback


def _protocol_stream():
    """Keep the real stdout for replies; send everything else printed to fd 1 to stderr."""
    proto = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return proto


def _die_with_parent(parent: int) -> None:
    """Ask Linux to SIGKILL this worker when the agent process dies (prctl PR_SET_PDEATHSIG), so a
    worker busy rendering does not outlive a killed run; stdin closing covers the idle case."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
    except (OSError, AttributeError):
        return  # not glibc
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def main() -> int:
    """Serve requests until stdin closes. Returns the exit status."""
    _die_with_parent(os.getppid())
    proto = _protocol_stream()
    import bpy  # imported after fd 1 is redirected: it prints on import

    from plugins.threed import look_probe, ops, ops_look, ops_modelling, physics_probe  # need bpy

    for extra in (ops_modelling, ops_look, look_probe, physics_probe):  # the artist's toolset, kept in its own modules
        ops.OPS.update(extra.OPS)
        ops.MUTATING.update(extra.MUTATING)
    ops._prepare_session()
    proto.write(json.dumps({"ready": True, "blender": bpy.app.version_string, "pid": os.getpid()}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        start = time.perf_counter()
        try:
            request = json.loads(line)
            name = request["op"]
            op = ops.OPS.get(name)
            if op is None:
                raise ops.OpError(f"unknown operation {name!r}")
            result = op(request.get("args") or {})
            if request.get("save_to") and name in ops.MUTATING:
                ops.save_scene({"path": request["save_to"]})
            reply = {"id": request.get("id"), "ok": True, "result": result}
        except ops.OpError as exc:
            reply = {"id": _id(line), "ok": False, "error": str(exc), "kind": "OpError"}
        except Exception as exc:  # noqa: BLE001 - a Blender error (RuntimeError from an operator, ...): report, keep serving
            print(traceback.format_exc(), file=sys.stderr)
            reply = {"id": _id(line), "ok": False, "error": f"{type(exc).__name__}: {exc}".strip(), "kind": type(exc).__name__}
        reply["seconds"] = round(time.perf_counter() - start, 6)
        proto.write(json.dumps(reply, default=str) + "\n")
    return 0


def _id(line: str):
    try:
        return json.loads(line).get("id")
    except (ValueError, AttributeError):
        return None


if __name__ == "__main__":
    sys.exit(main())

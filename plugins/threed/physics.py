"""Does it stand? The verdict of the worker's drop test (``physics_probe.drop_test``: Blender's
rigid body world), the words that ask for it, and the gate it puts on the reward.

The verdict, from each drop's recorded poses (every body's centre of mass and rotation per frame):

- **fell apart**: a body other than the heaviest (a part, or parts, touching nothing of the rest)
  ends more than ``max(APART_MIN_M, APART_SHARE * size)`` away from where it sat on the heaviest
  body, measured in the heaviest body's own frame (so the whole object sliding is not apart);
- **did not settle**: (unless fallen past ``FALLEN_DEG``, or never more than ``WOBBLE_DEG`` off
  upright in the last ``WOBBLE_WINDOW_S``: that wobbles upright, and stands) some body still moves (faster than ``max(SETTLE_SPEED_M_S, SETTLE_SHARE *
  size)`` per second, or ``SETTLE_TURN_DEG_S``) within the last ``SETTLE_HOLD_S`` of the simulation;
- **tipped**: at rest, the heaviest body's up axis (its z as built) is more than ``TIPPED_DEG`` off
  vertical, or more than ``FALLEN_DEG`` while it still moves (it rolls on its side); for a nudged
  drop, released tilted by a few degrees, that is: it did not right itself;
- **stands**: none of these, in the level drop and in every nudged one.

The settle time is the time from release after which every body stays below those speeds; the
tilt is the heaviest body's at the end. The level drop is judged first; when it stands, the first
nudged drop that does not decides.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from plugins.threed.checks import Check

#: Things that must stand on a floor or table (a request naming one gets the drop test).
STANDING_WORDS = (
    "chair", "armchair", "stool", "bench", "sofa", "couch", "table", "desk", "nightstand", "lamp", "floor lamp",
    "bookcase", "bookshelf", "bookshelves", "shelving", "cabinet", "cupboard", "dresser", "wardrobe", "sideboard",
    "vase", "goblet", "mug", "cup", "bottle", "jar", "candlestick", "candle holder", "trophy", "statue", "figurine", "planter",
)
#: "glass" is a thing only as a noun (a wine glass, "a glass, 15 cm tall"), not as a material ("a glass vase").
_GLASS = re.compile(r"\bglass(es)?\b(?!\s*-?\s*(?!(of|with|for|that|which|and|or|on|in|to|at|about|holding|is|has)\b)[a-z])", re.IGNORECASE)
#: Words that say the thing does not stand on its own: it hangs or is fixed to a wall or ceiling.
NOT_STANDING = re.compile(r"\b(wall[- ]mounted|hanging|hangs|pendant|ceiling|floating shelf|on the wall|suspended)\b", re.IGNORECASE)

#: A tilt of the heaviest body's up axis above this (degrees) at rest is tipped over.
TIPPED_DEG = 10.0
#: ... and one this far over is fallen even while it still moves (a lamp rolling on its conical shade).
FALLEN_DEG = 45.0
#: A loose body that moved this far (m), or this share of the object's size, from its place fell off.
APART_MIN_M, APART_SHARE = 0.01, 0.02
#: Settled: every body slower than this (m/s, or this share of the size per second) and turning slower than this (°/s)...
SETTLE_SPEED_M_S, SETTLE_SHARE, SETTLE_TURN_DEG_S = 0.005, 0.01, 3.0
#: ... for at least the last this many seconds of the simulation.
SETTLE_HOLD_S = 0.3
#: Still moving but never more than this (degrees) off upright in the last ``WOBBLE_WINDOW_S``: it stands,
#: wobbling (a round base rolling on its rim, a rounded bottom rocking, as a coin spins down).
WOBBLE_DEG, WOBBLE_WINDOW_S = 5.0, 1.0
#: A build that does not stand scores at most this share of what it would score standing.
PHYSICS_CAP = 0.25

#: The verdicts, in the order they are decided (the first that holds), and "stands".
VERDICTS = ("fell apart", "did not settle", "tipped", "stands")


def asks_to_stand(request: str) -> str | None:
    """The word of ``request`` that names a thing that must stand (``STANDING_WORDS``, or "glass" as a
    noun), or None; also None when the request says it hangs or is mounted (``NOT_STANDING``)."""
    if not request or NOT_STANDING.search(request):
        return None
    for word in STANDING_WORDS:
        if re.search(rf"\b{re.escape(word)}(e?s)?\b", request, re.IGNORECASE):
            return word
    if _GLASS.search(request):
        return "glass"
    return None


def _rotation(q: np.ndarray) -> np.ndarray:
    """3x3 rotation matrices (..., 3, 3) of unit quaternions (..., 4) as w, x, y, z."""
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    w, x, y, z = (q[..., k] for k in range(4))
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], axis=-1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], axis=-1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], axis=-1),
    ], axis=-2)


def judge_drop(drop: dict[str, Any], bodies: list[dict[str, Any]], fps: float, size_m: float) -> dict[str, Any]:
    """One drop's verdict from its frames (``drop_test``'s ``drops[i]``; body 0 is the heaviest).

    Returns:
        ``{"verdict", "settle_s" (None when it did not settle), "tilt_deg" (the heaviest body's
        end tilt), "start_tilt_deg", "apart": [{"parts", "moved_m"}], "kind", "azimuth_deg"}``.
    """
    states = np.asarray(drop["frames"], dtype=float)  # (frames, bodies, 7)
    pos, rot = states[..., :3], _rotation(states[..., 3:])
    up = rot[..., :, 2]  # each body's z axis as built, in the world
    tilt = np.degrees(np.arccos(np.clip(up[..., 2], -1.0, 1.0)))
    dt = 1.0 / fps
    speed = np.linalg.norm(np.diff(pos, axis=0), axis=-1) / dt  # (frames - 1, bodies)
    turn_cos = (np.einsum("fbij,fbij->fb", rot[:-1], rot[1:]) - 1.0) / 2.0  # cos of the angle turned per frame
    turn = np.degrees(np.arccos(np.clip(turn_cos, -1.0, 1.0))) / dt
    moving = ((speed > max(SETTLE_SPEED_M_S, SETTLE_SHARE * size_m)) | (turn > SETTLE_TURN_DEG_S)).any(axis=1)
    last_moving = int(np.nonzero(moving)[0].max()) + 1 if moving.any() else 0  # first frame after which all rest
    held = (len(states) - 1 - last_moving) * dt
    settle_s = round(last_moving * dt, 3) if held >= SETTLE_HOLD_S else None
    apart = []
    limit = max(APART_MIN_M, APART_SHARE * size_m)
    for b in range(1, len(bodies)):  # each loose body's place in the heaviest body's frame, start against end
        where = [rot[f, 0].T @ (pos[f, b] - pos[f, 0]) for f in (0, -1)]
        moved = float(np.linalg.norm(where[1] - where[0]))
        if moved > limit:
            apart.append({"parts": bodies[b]["parts"], "moved_m": round(moved, 4)})
    end_tilt = float(tilt[-1, 0])
    wobble = float(tilt[-max(2, round(WOBBLE_WINDOW_S * fps)):, 0].max())  # the most it leaned over the last second
    if apart:
        verdict = "fell apart"
    elif settle_s is None and wobble > WOBBLE_DEG and end_tilt <= FALLEN_DEG:  # still rocking: where it would rest is not known
        verdict = "did not settle"
    elif end_tilt > TIPPED_DEG:
        verdict = "tipped"
    else:
        verdict = "stands"
    return {"verdict": verdict, "kind": drop["kind"], "azimuth_deg": drop["azimuth_deg"], "start_tilt_deg": round(float(tilt[0, 0]), 2),
            "tilt_deg": round(end_tilt, 2), "settle_s": settle_s, "apart": apart, "wobble_deg": round(wobble, 2)}


def _where(d: dict[str, Any]) -> str:
    if d["kind"] == "level":
        return "released level"
    return f"released {d['start_tilt_deg']:.0f}° tilted toward azimuth {d['azimuth_deg']:.0f}°"


def judge(data: dict[str, Any]) -> Check:
    """The ``physics/stands`` check from ``drop_test``'s answer ``data``.

    Value 1 when it stands, else 0. ``detail``: ``verdict`` (one of ``VERDICTS``), ``settle_s``,
    ``tilt_deg``, ``apart``, ``bodies`` (the parts of each rigid body), ``drops`` (each drop's own
    verdict), ``timing_s`` (the worker's build and simulation seconds).
    """
    bodies = data["bodies"]
    drops = [judge_drop(d, bodies, data["fps"], data["size_m"]) for d in data["drops"]]
    level, nudged = drops[0], drops[1:]
    decisive = level if level["verdict"] != "stands" else next((d for d in nudged if d["verdict"] != "stands"), level)
    verdict = decisive["verdict"]
    settle = [d["settle_s"] for d in drops if d["settle_s"] is not None]
    names = ", ".join(bodies[0]["parts"][:6]) + (", ..." if len(bodies[0]["parts"]) > 6 else "")
    if verdict == "stands":
        if level["settle_s"] is None:
            message = f"stands: released level it still wobbles at the end, within {level['wobble_deg']:.1f}° of upright"
        else:
            message = f"stands: released level it settles in {level['settle_s']:.2f} s, {level['tilt_deg']:.1f}° off upright"
        if nudged:
            worst = max(nudged, key=lambda d: d["wobble_deg"])
            still = [d for d in nudged if d["settle_s"] is None]
            message += (f"; released {worst['start_tilt_deg']:.0f}° tilted in {len(nudged)} directions it rights itself each time "
                        f"(end tilt ≤ {max(d['tilt_deg'] for d in nudged):.1f}°"
                        + (f", settled within {max(settle):.2f} s" if settle else "")
                        + (f"; {len(still)} still wobbling within {worst['wobble_deg']:.1f}° at the end" if still else "") + ")")
    elif verdict == "tipped":
        if decisive["settle_s"] is not None:
            message = (f"tipped: {_where(decisive)} it comes to rest {decisive['tilt_deg']:.1f}° off upright "
                       f"after {decisive['settle_s']:.2f} s (body: {names})")
        else:
            message = f"tipped: {_where(decisive)} it falls over, {decisive['tilt_deg']:.1f}° off upright and still rolling at the end (body: {names})"
    elif verdict == "fell apart":
        loose = "; ".join(f"{', '.join(a['parts'][:4])} moved {a['moved_m'] * 100:.1f} cm" for a in decisive["apart"][:4])
        message = f"fell apart: {_where(decisive)}, parts not joined to {bodies[0]['parts'][0]} moved off it: {loose}"
    else:
        message = f"did not settle: {_where(decisive)} it still moves in the last {SETTLE_HOLD_S:g} s of {data['seconds']:g} s simulated"
    detail = {"verdict": verdict, "settle_s": decisive["settle_s"], "tilt_deg": decisive["tilt_deg"], "apart": decisive["apart"],
              "decided_by": _where(decisive), "bodies": [b["parts"] for b in bodies],
              "drops": [{k: d[k] for k in ("kind", "azimuth_deg", "verdict", "tilt_deg", "settle_s", "wobble_deg")} for d in drops],
              "simulated_s": data["seconds"], "timing_s": data.get("timing_s", {})}
    return Check("stands", verdict == "stands", 1.0 if verdict == "stands" else 0.0, message, detail)


def applies(spec: Any, request: str) -> str | None:
    """Why this task gets the drop test (the word naming a thing that must stand), or None.

    ``spec`` is the ``TaskSpec``; its request, objects' descriptions and ``request`` (the run's
    instruction too) are read. An ``assembly`` with ``"stands": false`` turns it off.
    """
    if spec.assembly is not None and not spec.assembly.stands:
        return None
    return asks_to_stand(" ".join([request, spec.request, *(o.description for o in spec.objects)]))


def drop_args(spec: Any, present: set[str]) -> dict[str, Any]:
    """``drop_test``'s arguments for ``spec`` (a ``TaskSpec``): the assembly's parts that are in the
    scene (``present``; all visible meshes of a free-form scene), its floor and contact tolerance."""
    from plugins.threed.checks import UNIT_TO_M

    scale = UNIT_TO_M[spec.unit]
    args: dict[str, Any] = {}
    if spec.objects:
        args["parts"] = [p for p in spec.assembly_parts() if p in present]
    if spec.assembly is not None:
        args["floor_z"] = spec.assembly.floor_z * scale
        args["contact_tolerance_m"] = spec.assembly.contact_tolerance * scale
    return args


def check(dropped: dict[str, Any]) -> Check:
    """``physics/stands`` from the reward's drop-test answer: ``judge`` it, or a failing check
    saying why there was nothing to judge (``{"error": ...}``: none of the parts is in the scene,
    or the worker could not run the test)."""
    if "error" in dropped:
        return Check("stands", False, 0.0, f"the drop test could not run: {dropped['error']}", {"verdict": None})
    return judge(dropped)

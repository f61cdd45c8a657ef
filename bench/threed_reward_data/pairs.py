"""The labelled pairs of ``bench/threed_reward.py``: for each object a task.json, the right build
and its plausible wrong twins, each as the list of tool calls a model would make (the plugin's
own typed tools: ``add_primitive``, ``transform``, ``add_modifier``, ``set_material``, ...).

A build is ``[(tool name, arguments), ...]``; a twin is the right build with a few calls changed,
added or left out, the way a model gets an object wrong. Lengths in metres, z up, floor at z = 0.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

Call = tuple[str, dict[str, Any]]

LIGHTS: list[Call] = [
    ("add_light", {"name": "Key", "kind": "area", "location": [2.0, -2.0, 3.0], "target": [0, 0, 0.4], "energy": 400, "size": 2.0}),
    ("add_light", {"name": "Fill", "kind": "area", "location": [-2.5, -1.0, 2.0], "target": [0, 0, 0.4], "energy": 150, "size": 2.0}),
]


def cube(name: str, size: list[float], location: list[float], **extra: Any) -> Call:
    return ("add_primitive", {"name": name, "kind": "cube", "size": size, "location": location, **extra})


def material(name: str, mat: str, preset: str) -> Call:
    return ("set_material", {"object": name, "material": mat, "preset": preset})


def surface(name: str, mat: str, preset: str) -> Call:
    """A procedural surface (``set_surface``: oak grain, glaze, brushed metal) on one object."""
    return ("set_surface", {"objects": [name], "material": mat, "preset": preset})


def camera(location: list[float], target: list[float], lens: float = 50.0) -> Call:
    return ("set_camera", {"location": location, "target": target, "lens_mm": lens})


def obj(name: str, dims: list[float], tol: float = 0.005, **extra: Any) -> dict[str, Any]:
    return {"name": name, "dimensions": dims, "tolerance": tol, **extra}


def replace(build: list[Call], name: str, **changes: Any) -> list[Call]:
    """``build`` with the arguments of the call that creates (or first touches) ``name`` changed."""
    out = copy.deepcopy(build)
    for tool, args in out:
        if args.get("name") == name or (tool == "set_camera" and name == "camera"):
            args.update(changes)
            return out
    raise KeyError(name)


def without(build: list[Call], name: str) -> list[Call]:
    """``build`` without any call about object ``name``."""
    return [(t, a) for t, a in build if name not in (a.get("name"), a.get("object"), *a.get("objects", []))]


def hidden_in_cube(build: list[Call], size: float) -> list[Call]:
    """``build`` inside an opaque box (Blender's default cube, scaled): it fills the preview."""
    return build + [cube("Cube", [size] * 3, [0, 0, size / 2 - 0.01]), material("Cube", "Grey", "fabric_grey")]


def scaled(build: list[Call], factor: float) -> list[Call]:
    """``build`` with every size and position multiplied by ``factor`` (a unit mistake: cm read as m)."""
    out = copy.deepcopy(build)
    for tool, args in out:
        if tool != "add_primitive":
            continue
        for key in ("size", "location"):
            if key in args:
                args[key] = [v * factor for v in args[key]]
        for key in ("radius", "radius_top", "minor_radius", "depth"):
            if key in args:
                args[key] *= factor
    return out


# -- chair ------------------------------------------------------------------------------------

LEGS = {"Leg.FL": (-0.2, -0.2), "Leg.FR": (0.2, -0.2), "Leg.BL": (-0.2, 0.2), "Leg.BR": (0.2, 0.2)}
CHAIR_TASK = {
    "request": "a four-legged wooden chair with a backrest, seat 45 cm high",
    "objects": [obj("Seat", [0.45, 0.45, 0.04]), *[obj(n, [0.04, 0.04, 0.41]) for n in LEGS], obj("Back", [0.45, 0.04, 0.45])],
    "overall": {"dimensions": [0.45, 0.45, 0.9], "tolerance": 0.01},
    "min_lights": 1, "camera": True,
    "assembly": {"touch": [["Seat", n] for n in LEGS] + [["Seat", "Back"]], "on_floor": list(LEGS),
                 "symmetry": {"axis": "x", "tolerance": 0.005}, "view": {"min_coverage": 0.05, "min_visible": 0.8}},
}


def chair(legs: dict[str, tuple[float, float]] = LEGS) -> list[Call]:
    calls = [cube("Seat", [0.45, 0.45, 0.04], [0, 0, 0.43]), cube("Back", [0.45, 0.04, 0.45], [0, 0.205, 0.675])]
    calls += [cube(n, [0.04, 0.04, 0.41], [x, y, 0.205]) for n, (x, y) in legs.items()]
    calls += [surface(n, "Oak", "oak") for n in ["Seat", "Back", *legs]]  # "wooden": the look checks want grain
    return calls + LIGHTS + [camera([1.5, -1.9, 1.3], [0, 0, 0.42])]


# -- table ------------------------------------------------------------------------------------

TABLE_LEGS = {"Leg.FL": (-0.55, -0.25), "Leg.FR": (0.55, -0.25), "Leg.BL": (-0.55, 0.25), "Leg.BR": (0.55, 0.25)}
TABLE_TASK = {
    "request": "a dining table 1.2 m by 0.6 m, 0.75 m high, four square legs",
    "objects": [obj("Top", [1.2, 0.6, 0.04]), *[obj(n, [0.05, 0.05, 0.71]) for n in TABLE_LEGS]],
    "overall": {"dimensions": [1.2, 0.6, 0.75], "tolerance": 0.01},
    "min_lights": 1, "camera": True,
    "assembly": {"touch": [["Top", n] for n in TABLE_LEGS], "on_floor": list(TABLE_LEGS),
                 "symmetry": {"axis": "x", "tolerance": 0.005}, "view": {"min_coverage": 0.05, "min_visible": 0.8}},
}


def table(legs: dict[str, tuple[float, float]] = TABLE_LEGS) -> list[Call]:
    calls = [cube("Top", [1.2, 0.6, 0.04], [0, 0, 0.73])]
    calls += [cube(n, [0.05, 0.05, 0.71], [x, y, 0.355]) for n, (x, y) in legs.items()]
    calls += [material(n, "Walnut", "walnut") for n in ["Top", *legs]]
    return calls + LIGHTS + [camera([2.4, -2.8, 1.9], [0, 0, 0.4])]


# -- mug --------------------------------------------------------------------------------------

MUG_TASK = {
    "request": "a ceramic mug with a handle, 8 cm across, 10 cm tall, holding at least 200 ml",
    "objects": [obj("Body", [0.08, 0.08, 0.1], 0.002), obj("Handle", [None, 0.01, None], 0.002)],
    "min_lights": 1, "camera": True,
    "assembly": {"touch": [["Body", "Handle"]], "on_floor": ["Body"], "cavity": {"part": "Body", "min_volume": 0.0002},
                 "symmetry": {"axis": "y", "tolerance": 0.001}, "view": {"min_coverage": 0.05, "min_visible": 0.8}},
}


def mug(cutter_z: float = 0.0625, cutter_depth: float = 0.085) -> list[Call]:
    calls = [
        ("add_primitive", {"name": "Body", "kind": "cylinder", "radius": 0.04, "depth": 0.1, "location": [0, 0, 0.05], "segments": 48}),
        ("add_primitive", {"name": "Inside", "kind": "cylinder", "radius": 0.034, "depth": cutter_depth, "location": [0, 0, cutter_z],
                           "segments": 48}),
        ("add_modifier", {"name": "Body", "kind": "boolean", "object": "Inside", "operation": "difference"}),
        ("add_primitive", {"name": "Handle", "kind": "torus", "radius": 0.025, "minor_radius": 0.005, "location": [0.066, 0, 0.055],
                           "rotation_deg": [90, 0, 0], "segments": 32}),
        material("Body", "Glaze", "ceramic"), material("Handle", "Glaze", "ceramic"),
    ]
    return calls + LIGHTS + [camera([0.35, -0.4, 0.3], [0, 0, 0.05])]


# -- shelf ------------------------------------------------------------------------------------

BOARDS = {"Board.1": 0.03, "Board.2": 0.34, "Board.3": 0.66, "Board.4": 0.97}
SHELF_TASK = {
    "request": "a bookshelf 0.8 m wide, 0.3 m deep, 1 m tall, two side panels and four boards",
    "objects": [obj("Side.L", [0.02, 0.3, 1.0]), obj("Side.R", [0.02, 0.3, 1.0]), *[obj(n, [0.76, 0.3, 0.02]) for n in BOARDS]],
    "overall": {"dimensions": [0.8, 0.3, 1.0], "tolerance": 0.01},
    "min_lights": 1, "camera": True,
    "assembly": {"touch": [[s, b] for b in BOARDS for s in ("Side.L", "Side.R")], "on_floor": ["Side.L", "Side.R"],
                 "symmetry": {"axis": "x", "tolerance": 0.005}, "view": {"min_coverage": 0.05, "min_visible": 0.8}},
}


def shelf(depth: float = 0.3, board_width: float = 0.76, boards: dict[str, float] = BOARDS) -> list[Call]:
    calls = [cube("Side.L", [0.02, depth, 1.0], [-0.39, 0, 0.5]), cube("Side.R", [0.02, depth, 1.0], [0.39, 0, 0.5])]
    calls += [cube(n, [board_width, depth, 0.02], [0, 0, z]) for n, z in boards.items()]
    calls += [material(n, "Pine", "pine") for n in ["Side.L", "Side.R", *boards]]
    return calls + LIGHTS + [camera([1.7, -2.6, 1.4], [0, 0, 0.5])]


# -- lamp -------------------------------------------------------------------------------------

LAMP_TASK = {
    "request": "a table lamp: a round base, a thin pole, a conical shade, 60 cm tall",
    "objects": [obj("Base", [0.2, 0.2, 0.03], 0.003), obj("Pole", [0.02, 0.02, 0.45], 0.003), obj("Shade", [0.3, 0.3, 0.18], 0.003)],
    "overall": {"dimensions": [0.3, 0.3, 0.6], "tolerance": 0.01},
    "min_lights": 1, "camera": True,
    "assembly": {"touch": [["Base", "Pole"], ["Pole", "Shade"]], "on_floor": ["Base"],
                 "symmetry": {"axis": "x", "tolerance": 0.003}, "view": {"min_coverage": 0.05, "min_visible": 0.8}},
}


def lamp(base_radius: float = 0.1, shade_at: list[float] = (0, 0, 0.51), pole_at: list[float] = (0, 0, 0.255)) -> list[Call]:
    calls = [
        ("add_primitive", {"name": "Base", "kind": "cylinder", "radius": base_radius, "depth": 0.03, "location": [0, 0, 0.015]}),
        ("add_primitive", {"name": "Pole", "kind": "cylinder", "radius": 0.01, "depth": 0.45, "location": list(pole_at), "segments": 16}),
        ("add_primitive", {"name": "Shade", "kind": "cone", "radius": 0.15, "radius_top": 0.07, "depth": 0.18, "location": list(shade_at)}),
        material("Base", "Brass", "brass"), material("Pole", "Brass", "brass"), material("Shade", "Linen", "fabric_grey"),
    ]
    return calls + LIGHTS + [camera([1.0, -1.3, 0.9], [0, 0, 0.3])]


# -- a wine glass (bench/threed_physics.py) -------------------------------------------------------

#: A wine glass's wall cross-section, [r, z] in metres from the axis: a 7 cm foot, a thin stem, a hollow bowl 19 cm up.
GLASS_PROFILE = [[0, 0], [0.035, 0], [0.035, 0.004], [0.006, 0.012], [0.004, 0.07], [0.03, 0.09], [0.04, 0.13], [0.035, 0.19],
                 [0.033, 0.19], [0.038, 0.13], [0.028, 0.094], [0, 0.086]]


def wine_glass() -> list[Call]:
    return [("lathe", {"name": "Glass", "profile": GLASS_PROFILE, "segments": 48}), material("Glass", "Glass", "glass")]


# -- the pairs ----------------------------------------------------------------------------------

#: object -> (task.json, right build)
OBJECTS: dict[str, tuple[dict[str, Any], Callable[[], list[Call]]]] = {
    "chair": (CHAIR_TASK, chair), "table": (TABLE_TASK, table), "mug": (MUG_TASK, mug),
    "shelf": (SHELF_TASK, shelf), "lamp": (LAMP_TASK, lamp),
}

#: (object, twin name, what is wrong, twin build)
TWINS: list[tuple[str, str, str, Callable[[], list[Call]]]] = [
    ("chair", "legs-stacked", "all four legs stacked at the seat's centre", lambda: chair({n: (0.0, 0.0) for n in LEGS})),
    ("chair", "in-default-cube", "the chair inside a 2 m cube that fills the frame", lambda: hidden_in_cube(chair(), 2.0)),
    ("chair", "leg-floating", "one leg lifted 4 cm off the floor", lambda: replace(chair(), "Leg.FR", location=[0.2, -0.2, 0.245])),
    ("chair", "back-floating", "the backrest 10 cm above the seat", lambda: replace(chair(), "Back", location=[0, 0.205, 0.775])),
    ("chair", "off-camera", "the camera looks away from the chair", lambda: replace(chair(), "camera", target=[3.0, 2.0, 0.4])),
    ("chair", "wrong-scale", "built ten times too large", lambda: scaled(chair(), 10.0)),
    ("chair", "three-legs", "a leg missing", lambda: without(chair(), "Leg.BR")),
    ("chair", "back-to-side", "the backrest on one side", lambda: replace(chair(), "Back", size=[0.04, 0.45, 0.45], location=[0.205, 0, 0.675])),
    ("chair", "tips-backward", "the back legs under the seat's middle: it tips over backwards",
     lambda: chair({**LEGS, "Leg.BL": (-0.2, 0.0), "Leg.BR": (0.2, 0.0)})),
    ("table", "legs-stacked", "all four legs at the top's centre", lambda: table({n: (0.0, 0.0) for n in TABLE_LEGS})),
    ("table", "top-floating", "the top 5 cm above the legs", lambda: replace(table(), "Top", location=[0, 0, 0.78])),
    ("table", "sunk", "the whole table 10 cm below the floor", lambda: [(t, {**a, "location": [a["location"][0], a["location"][1], a["location"][2] - 0.1]})
                                                                   if t == "add_primitive" else (t, a) for t, a in table()]),
    ("table", "in-box", "hidden inside a 3 m box", lambda: hidden_in_cube(table(), 3.0)),
    ("table", "wrong-scale", "built at a tenth of its size", lambda: scaled(table(), 0.1)),
    ("table", "legs-outside", "legs 40 cm outside the top, not under it", lambda: table({n: (x * 1.8, y * 2.6) for n, (x, y) in TABLE_LEGS.items()})),
    ("mug", "solid", "no cavity: a solid cylinder", lambda: without(mug(), "Inside")),
    ("mug", "sealed", "the hollow sealed inside (a closed lid)", lambda: mug(cutter_z=0.05, cutter_depth=0.07)),
    ("mug", "upside-down", "the opening faces the floor", lambda: mug(cutter_z=0.0375)),
    ("mug", "handle-floating", "the handle 3 cm away from the body", lambda: replace(mug(), "Handle", location=[0.096, 0, 0.055])),
    ("mug", "in-box", "hidden inside a box", lambda: hidden_in_cube(mug(), 0.5)),
    ("mug", "wrong-scale", "built ten times too large", lambda: scaled(mug(), 10.0)),
    ("shelf", "board-floating", "the boards 4 cm narrower, touching neither side", lambda: shelf(board_width=0.72)),
    ("shelf", "three-boards", "a board missing", lambda: without(shelf(), "Board.3")),
    ("shelf", "too-shallow", "5 cm deep: a 1 m panel on a 5 cm footprint", lambda: shelf(depth=0.05)),
    ("shelf", "off-camera", "the camera behind the floor, looking down into nothing", lambda: replace(shelf(), "camera", location=[0, 0, -3.0], target=[0, 0, -4.0])),
    ("shelf", "in-box", "hidden inside a 2.5 m box", lambda: hidden_in_cube(shelf(), 2.5)),
    ("shelf", "wrong-scale", "built at a tenth of its size", lambda: scaled(shelf(), 0.1)),
    ("lamp", "tiny-base", "a 2 cm base under a 60 cm lamp", lambda: lamp(base_radius=0.02)),
    ("lamp", "shade-floating", "the shade 15 cm above the pole", lambda: lamp(shade_at=[0, 0, 0.66])),
    ("lamp", "shade-off-centre", "the shade beside the pole", lambda: lamp(shade_at=[0.13, 0, 0.51])),
    ("lamp", "no-base", "the base missing: the pole hangs 3 cm above the floor", lambda: without(lamp(), "Base")),
    ("lamp", "in-box", "hidden inside a box", lambda: hidden_in_cube(lamp(), 1.5)),
    ("lamp", "wrong-scale", "built ten times too large", lambda: scaled(lamp(), 10.0)),
]


# -- the request alone (threed-geometry/8) --------------------------------------------------------
# task.json holds only the request: no objects, no assembly. The reward derives the whole-object
# checks from the words and the scene (plugins/threed/structure.py); every right build must beat
# its twin by at least WORDS_MARGIN.

#: The least margin a right build must keep over its twin when only the request is given.
WORDS_MARGIN = 0.3


def words(request: str) -> dict[str, Any]:
    return {"request": request}


def moved(build: list[Call], name: str, dz: float = 0.0, **changes: Any) -> list[Call]:
    """``build`` with object ``name`` raised by ``dz`` (m) and its other arguments changed."""
    out = replace(build, name, **changes)
    for tool, args in out:
        if args.get("name") == name and "location" in args:
            args["location"] = [*args["location"][:2], args["location"][2] + dz]
    return out


def solid_glass() -> list[Call]:
    """The wine glass with its bowl filled in: the profile closes over the rim instead of going down inside."""
    return [("lathe", {"name": "Glass", "profile": GLASS_PROFILE[:8] + [[0, 0.19]], "segments": 48}), material("Glass", "Glass", "glass")]


WORDS_OBJECTS: dict[str, tuple[dict[str, Any], Callable[[], list[Call]]]] = {
    "words-chair": (words("a four-legged wooden chair with a backrest, seat 45 cm high"), chair),
    "words-table": (words("a dining table 1.2 m by 0.6 m, 0.75 m high, four square legs"), table),
    "words-shelf": (words("a bookshelf 0.8 m wide, 0.3 m deep, 1 m tall, two side panels and four boards"), shelf),
    "words-mug": (words("a ceramic mug with a handle, 8 cm across, 10 cm tall, holding at least 200 ml"), mug),
    "words-lamp": (words("a table lamp: a round base, a thin pole, a conical shade, 60 cm tall"), lamp),
    "words-glass": (words("a wine glass, 19 cm tall"), wine_glass),
}

#: (object, twin name, what is wrong, twin build), scored with the request alone.
WORDS_TWINS: list[tuple[str, str, str, Callable[[], list[Call]]]] = [
    ("words-chair", "legs-stacked", "all four legs stacked at the seat's centre", lambda: chair({n: (0.0, 0.0) for n in LEGS})),
    ("words-chair", "leg-floating", "one leg lifted 4 cm off the floor", lambda: moved(chair(), "Leg.FR", 0.04)),
    ("words-chair", "back-floating", "the backrest 10 cm above the seat", lambda: moved(chair(), "Back", 0.1)),
    ("words-chair", "legs-through-seat", "legs 6 cm too long, poking up through the seat",
     lambda: [(t, {**a, "size": [0.04, 0.04, 0.47], "location": [*a["location"][:2], 0.235]}) if a.get("name") in LEGS else (t, a)
              for t, a in chair()]),
    ("words-chair", "three-legs", "a leg missing (four asked)", lambda: without(chair(), "Leg.BR")),
    ("words-chair", "tips-backward", "the back legs under the seat's middle: it tips over backwards",
     lambda: chair({**LEGS, "Leg.BL": (-0.2, 0.0), "Leg.BR": (0.2, 0.0)})),
    ("words-table", "legs-stacked", "all four legs at the top's centre", lambda: table({n: (0.0, 0.0) for n in TABLE_LEGS})),
    ("words-table", "top-floating", "the top 5 cm above the legs", lambda: moved(table(), "Top", 0.05)),
    ("words-shelf", "boards-fused", "the four boards stacked into one slab at the bottom",
     lambda: shelf(boards={n: 0.03 + 0.02 * i for i, n in enumerate(BOARDS)})),
    ("words-shelf", "boards-through-sides", "boards 6 cm too wide, passing through both side panels", lambda: shelf(board_width=0.86)),
    ("words-shelf", "board-floating", "the boards 4 cm narrower, touching neither side", lambda: shelf(board_width=0.72)),
    ("words-mug", "solid", "no cavity: a solid cylinder", lambda: without(mug(), "Inside")),
    ("words-mug", "handle-floating", "the handle 3 cm away from the body", lambda: replace(mug(), "Handle", location=[0.096, 0, 0.055])),
    ("words-lamp", "shade-floating", "the shade 15 cm above the pole", lambda: lamp(shade_at=[0, 0, 0.66])),
    ("words-lamp", "pole-through-shade", "the pole 20 cm too long, sticking out of the shade's top",
     lambda: replace(lamp(pole_at=[0, 0, 0.355]), "Pole", depth=0.65)),
    ("words-glass", "solid", "the bowl filled in: a solid glass", solid_glass),
]

#: Pairs for ``--quick`` (CI): four of the request-alone pairs (threed-geometry/8's checks: coincident, cavity, floating, through).
QUICK = [("words-chair", "legs-stacked"), ("words-mug", "solid"), ("words-lamp", "shade-floating"), ("words-shelf", "boards-through-sides")]

"""What the final scene looks like, measured INSIDE the Blender worker (imports ``bpy``): the
inputs of the reward's material and lighting checks (``plugins.threed.look`` judges them).

``look_data`` renders the scene camera's view three times at a small size, on the CPU with
Cycles, and casts one ray per pixel of the smallest size into every mesh's BVH tree:

- **beauty**: the shot as a reviewer sees it (the scene's own lights, world and colour
  management), ``BEAUTY_SCALE`` times the ray grid, each block averaged onto its ray;
- **albedo**: every material's surface shader replaced, for this render only, by an emission of
  whatever feeds its base colour (the Principled BSDF's ``Base Color`` socket, or its default
  value): texture, ramp, attribute and image nodes evaluate exactly as they render, with no light;
- **properties**: the same with roughness, metallic and transmission as the red, green and blue
  of the emission;
- **bare**: the shot again without the subject (``subject``), at the ray grid's size, so the
  floor's light with and without the subject shows the shadow it casts;
- **rays**: per pixel, the nearest mesh, its material slot, the surface normal and the hit point.

Every change (materials, world, render settings) is undone before it returns; nothing is saved.
Nothing here reads a name or a custom property as evidence: names only say which object is
which, and the measurements are of what the renderer computes.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from typing import Any

import bpy
import numpy as np
from mathutils import Vector

from plugins.threed import probe

#: Rays (and data-render pixels) across the frame; the height follows the render aspect.
GRID_WIDTH = 96
#: The beauty render is this many times the ray grid on each side (block-averaged back).
BEAUTY_SCALE = 2
#: Cycles samples of the beauty render (denoised).
BEAUTY_SAMPLES = 16

#: Where each shader keeps what the albedo and property renders read: socket names, or a number
#: for a property the shader fixes (a Glass BSDF transmits, a Diffuse BSDF is not metallic).
SHADERS: dict[str, dict[str, str | float]] = {
    "BSDF_PRINCIPLED": {"color": "Base Color", "roughness": "Roughness", "metallic": "Metallic", "transmission": "Transmission Weight"},
    "BSDF_DIFFUSE": {"color": "Color", "roughness": 1.0, "metallic": 0.0, "transmission": 0.0},
    "BSDF_GLOSSY": {"color": "Color", "roughness": "Roughness", "metallic": 1.0, "transmission": 0.0},
    "BSDF_ANISOTROPIC": {"color": "Color", "roughness": "Roughness", "metallic": 1.0, "transmission": 0.0},
    "BSDF_METALLIC": {"color": "Base Color", "roughness": "Roughness", "metallic": 1.0, "transmission": 0.0},
    "BSDF_GLASS": {"color": "Color", "roughness": "Roughness", "metallic": 0.0, "transmission": 1.0},
    "BSDF_REFRACTION": {"color": "Color", "roughness": "Roughness", "metallic": 0.0, "transmission": 1.0},
    "EMISSION": {"color": "Color", "roughness": 1.0, "metallic": 0.0, "transmission": 0.0},
}


def _surface_shader(mat: bpy.types.Material) -> tuple[Any, Any, str]:
    """(output node, the shader node that renders, note): a Mix Shader resolves to its larger
    share (its first input when the factor is textured); None when nothing known renders."""
    if not mat.use_nodes or mat.node_tree is None:
        return None, None, "no node tree"
    out = mat.node_tree.get_output_node("CYCLES")
    if out is None or not out.inputs["Surface"].links:
        return out, None, "no surface shader connected to the material output"
    node, note = out.inputs["Surface"].links[0].from_node, ""
    for _ in range(8):
        if node.type in ("MIX_SHADER", "ADD_SHADER"):
            fac = node.inputs[0] if node.type == "MIX_SHADER" else None
            pick = 2 if fac is not None and not fac.links and fac.default_value > 0.5 else 1
            if node.type == "ADD_SHADER":
                pick = 0
            shaders = [s for s in node.inputs if s.type == "SHADER"]
            socket = shaders[min(pick - 1, len(shaders) - 1)] if pick else shaders[0]
            note = f"a {node.type.lower().replace('_', ' ')}: judged by its {'larger' if fac is not None and not fac.links else 'first'} shader"
            if not socket.links:
                return out, None, note + ", which is not connected"
            node = socket.links[0].from_node
        elif node.type == "REROUTE":
            node = node.inputs[0].links[0].from_node if node.inputs[0].links else None
            if node is None:
                return out, None, "a reroute to nothing"
        else:
            break
    if node.type not in SHADERS:
        return out, None, f"a {node.bl_idname} shader, which this reward does not measure"
    return out, node, note


def _texture_nodes(socket: Any, seen: set | None = None) -> list[str]:
    """Node types upstream of ``socket`` (what gives a linked base colour its pattern)."""
    seen = set() if seen is None else seen
    found = []
    for link in socket.links:
        node = link.from_node
        if node.name in seen:
            continue
        seen.add(node.name)
        found.append(node.bl_idname)
        for inp in node.inputs:
            found += _texture_nodes(inp, seen)
    return found


def material_facts(mat: bpy.types.Material) -> dict[str, Any]:
    """What the material's node tree renders: its shader, and for each property whether a node
    feeds it (``linked``) or the constant it has."""
    _, shader, note = _surface_shader(mat)
    facts: dict[str, Any] = {"shader": shader.bl_idname if shader else None, "note": note}
    if shader is None:
        return facts
    for key, where in SHADERS[shader.type].items():
        if isinstance(where, float):
            facts[key] = where
            continue
        socket = shader.inputs[where]
        if socket.links:
            facts[key] = "linked"
            if key == "color":
                facts["color_nodes"] = sorted(set(_texture_nodes(socket)))
        else:
            value = socket.default_value
            facts[key] = [round(float(c), 4) for c in value[:3]] if key == "color" else round(float(value), 4)
    return facts


class _DataShaders:
    """Swap every used material's surface for an emission of one of its properties, and back."""

    def __init__(self, materials: list[bpy.types.Material]) -> None:
        self.materials = materials
        self.added: list[tuple[Any, list[Any]]] = []
        self.original: list[tuple[Any, Any, Any]] = []  # (tree, output node, the socket that fed its surface)

    def apply(self, what: str) -> None:
        """``what``: "color" (base colour) or "props" (roughness, metallic, transmission as RGB)."""
        self.restore()
        for mat in self.materials:
            out, shader, _ = _surface_shader(mat)
            if out is None:
                continue
            tree = mat.node_tree
            surface = out.inputs["Surface"]
            self.original.append((tree, out, surface.links[0].from_socket if surface.links else None))
            emit = tree.nodes.new("ShaderNodeEmission")
            emit.inputs["Strength"].default_value = 1.0
            nodes = [emit]
            if shader is None:  # nothing this reward knows: black (no colour, no property measured)
                emit.inputs["Color"].default_value = (0.0, 0.0, 0.0, 1.0)
            elif what == "color":
                self._feed(tree, SHADERS[shader.type]["color"], shader, emit.inputs["Color"])
            else:
                combine = tree.nodes.new("ShaderNodeCombineColor")
                nodes.append(combine)
                for key, channel in (("roughness", "Red"), ("metallic", "Green"), ("transmission", "Blue")):
                    self._feed(tree, SHADERS[shader.type][key], shader, combine.inputs[channel])
                tree.links.new(combine.outputs["Color"], emit.inputs["Color"])
            tree.links.new(emit.outputs["Emission"], surface)
            self.added.append((tree, nodes))

    @staticmethod
    def _feed(tree: Any, where: str | float, shader: Any, target: Any) -> None:
        if isinstance(where, float):
            target.default_value = where
            return
        socket = shader.inputs[where]
        if socket.links:
            tree.links.new(socket.links[0].from_socket, target)
        elif target.type == "RGBA":
            target.default_value = (*socket.default_value[:3], 1.0)
        else:
            target.default_value = float(socket.default_value)

    def restore(self) -> None:
        for tree, out, socket in self.original:
            surface = out.inputs["Surface"]
            for link in list(surface.links):
                tree.links.remove(link)
            if socket is not None:
                tree.links.new(socket, surface)
        for tree, nodes in self.added:
            for node in nodes:
                tree.nodes.remove(node)
        self.added, self.original = [], []


def _render(scene: Any, path: str, width: int, height: int, samples: int, *, data: bool) -> np.ndarray:
    """Render the camera's view to ``path``; the pixels (height, width, 3), row 0 at the top:
    display-referred sRGB of the PNG for the beauty, scene-linear floats of an EXR for data."""
    scene.render.resolution_x, scene.render.resolution_y, scene.render.resolution_percentage = width, height, 100
    scene.cycles.samples = samples
    scene.cycles.use_denoising = not data
    scene.render.filter_size = 0.01 if data else 1.5  # data: one value at each pixel centre, no blending
    scene.render.image_settings.file_format = "OPEN_EXR" if data else "PNG"
    if data:
        scene.render.image_settings.color_depth = "32"
    scene.render.filepath = path
    bpy.ops.render.render(write_still=True)
    image = bpy.data.images.load(path, check_existing=False)
    try:
        w, h = image.size
        flat = np.empty(w * h * 4, dtype=np.float32)
        image.pixels.foreach_get(flat)
    finally:
        bpy.data.images.remove(image)
    return flat.reshape(h, w, 4)[::-1, :, :3].copy()


class _Settings:
    """Remember attributes of Blender structs and put them back."""

    def __init__(self) -> None:
        self.saved: list[tuple[Any, str, Any]] = []

    def set(self, struct: Any, attr: str, value: Any) -> None:
        self.saved.append((struct, attr, getattr(struct, attr)))
        setattr(struct, attr, value)

    def restore(self) -> None:
        for struct, attr, value in reversed(self.saved):
            setattr(struct, attr, value)
        self.saved = []


def _rays(scene: Any, objs: list[Any], width: int) -> dict[str, np.ndarray]:
    """One ray per pixel centre of a ``width``-wide frame (``probe.view_depths``'s rays): the
    nearest mesh's index (-1: none), its material slot, the normal facing the camera and the hit point."""
    depsgraph = bpy.context.evaluated_depsgraph_get()
    trees, slots = [], []
    for obj in objs:
        world, tris, mats = probe.evaluated_triangles(obj, depsgraph, material_index=True)
        trees.append(probe._tree(world, tris))
        slots.append(mats)
    cam = scene.camera
    rx, ry = scene.render.resolution_x, scene.render.resolution_y
    height = max(1, round(width * ry / rx))
    frame = [Vector(c) for c in cam.data.view_frame(scene=scene)]
    xs, ys, z = [c.x for c in frame], [c.y for c in frame], frame[0].z
    matrix = cam.matrix_world
    rotation = matrix.to_3x3().normalized()
    ortho = cam.data.type == "ORTHO"
    index = np.full((height, width), -1, dtype=np.int32)
    slot = np.full((height, width), -1, dtype=np.int32)
    normal = np.zeros((height, width, 3), dtype=np.float32)
    point = np.zeros((height, width, 3), dtype=np.float32)
    for row in range(height):
        y = max(ys) - (row + 0.5) / height * (max(ys) - min(ys))
        for col in range(width):
            x = min(xs) + (col + 0.5) / width * (max(xs) - min(xs))
            if ortho:
                origin, direction = matrix @ Vector((x, y, 0.0)), rotation @ Vector((0.0, 0.0, -1.0))
            else:
                origin, direction = matrix.translation, (rotation @ Vector((x, y, z))).normalized()
            best = cam.data.clip_end
            for k, tree in enumerate(trees):
                if tree is None:
                    continue
                loc, nor, face, dist = tree.ray_cast(origin, direction, best)
                if loc is not None and dist < best:
                    best = dist
                    index[row, col], slot[row, col] = k, int(slots[k][face]) if face < len(slots[k]) else 0
                    n = nor if nor.dot(direction) < 0 else -nor
                    normal[row, col], point[row, col] = tuple(n), tuple(loc)
    return {"index": index, "slot": slot, "normal": normal, "point": point}


def _light_facts(scene: Any, centre: Vector) -> list[dict[str, Any]]:
    """Each rendering light: its kind, power and the irradiance (W/m²) it sends to ``centre``
    (point and spot: P / 4πd², inside a spot's cone only; area: P cosθ / πd², a one-sided
    Lambertian emitter; sun: its strength times cosθ)."""
    found = []
    for obj in scene.objects:
        if obj.type != "LIGHT" or obj.hide_render:
            continue
        light = obj.data
        to = centre - obj.matrix_world.translation
        d = max(to.length, 1e-6)
        facing = (obj.matrix_world.to_3x3() @ Vector((0.0, 0.0, -1.0))).normalized()
        cos = max(0.0, facing.dot(to / d))
        energy = float(light.energy)
        if light.type == "SUN":
            irradiance = energy * cos
        elif light.type == "AREA":
            irradiance = energy * cos / (math.pi * d * d)
        else:
            irradiance = energy / (4 * math.pi * d * d)
            if light.type == "SPOT" and math.acos(min(1.0, max(-1.0, facing.dot(to / d)))) > light.spot_size / 2:
                irradiance = 0.0
        shadow = bool(getattr(light, "use_shadow", True)) and bool(getattr(getattr(light, "cycles", None), "cast_shadow", True))
        found.append({"name": obj.name, "kind": light.type.lower(), "energy_w": round(energy, 4), "distance_m": round(d, 4),
                      "irradiance_w_m2": round(irradiance * (sum(light.color) / 3), 5), "shadows": shadow})
    return found


def look_data(args: dict[str, Any]) -> dict[str, Any]:
    """Measure the final scene's look for the reward (module docstring).

    Args:
        args: ``folder`` (where ``look.npz`` goes), ``subject`` (mesh names whose bounding-box
            centre the lights' irradiance is measured at; default every mesh), ``width``
            (``GRID_WIDTH``), ``samples`` (``BEAUTY_SAMPLES``).

    Returns:
        ``{"camera": False}`` without a scene camera, else ``{"camera": True, "file", "names"
        (mesh names in the order of the ray map's indices), "slots" ({name: [material name or
        None]}), "materials" ({name: material_facts}), "lights", "exposure_ev", "view_transform",
        "seconds": {"rays", "beauty", "bare", "data"}}``. ``look.npz`` holds ``index``, ``slot`` (h, w) int,
        ``normal``, ``point`` (h, w, 3) world, ``beauty`` (h, w, 3) sRGB 0-1, ``albedo`` and
        ``props`` (h, w, 3) linear.
    """
    scene = bpy.context.scene
    if scene.camera is None:
        return {"camera": False}
    objs = sorted((o for o in scene.objects if o.type == "MESH" and not o.hide_render), key=lambda o: o.name)
    names = [o.name for o in objs]
    width = int(args.get("width", GRID_WIDTH))
    folder = args["folder"]
    os.makedirs(folder, exist_ok=True)
    subject = [o for o in objs if o.name in set(args.get("subject") or names)] or objs
    corners = [o.matrix_world @ Vector(c) for o in subject for c in o.bound_box]
    centre = sum(corners, Vector()) / len(corners) if corners else Vector()
    materials = sorted({s.material for o in objs for s in o.material_slots if s.material is not None}, key=lambda m: m.name)
    times: dict[str, float] = {}
    settings, shaders = _Settings(), _DataShaders(materials)
    rx, ry = scene.render.resolution_x, scene.render.resolution_y
    height = max(1, round(width * ry / rx))
    start = time.perf_counter()
    rays = _rays(scene, objs, width)
    times["rays"] = time.perf_counter() - start
    render, cycles = scene.render, scene.cycles
    image_format = (render.image_settings.file_format, render.image_settings.color_depth)
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        try:
            settings.set(render, "engine", "CYCLES")
            for attr in ("resolution_x", "resolution_y", "resolution_percentage", "filter_size", "filepath", "use_compositing",
                         "use_sequencer"):
                settings.set(render, attr, getattr(render, attr))
            for attr in ("samples", "use_denoising", "device", "shading_system", "use_adaptive_sampling"):
                settings.set(cycles, attr, getattr(cycles, attr))
            render.use_compositing = render.use_sequencer = False  # the shot itself, not a post effect
            cycles.device, cycles.shading_system = "CPU", False  # no OSL: script nodes are never compiled here
            start = time.perf_counter()
            big = _render(scene, os.path.join(tmp, "beauty.png"), width * BEAUTY_SCALE, height * BEAUTY_SCALE,
                          int(args.get("samples", BEAUTY_SAMPLES)), data=False)
            beauty = big.reshape(height, BEAUTY_SCALE, width, BEAUTY_SCALE, 3).mean(axis=(1, 3))
            times["beauty"] = time.perf_counter() - start
            start = time.perf_counter()
            hidden = [o for o in subject if o in objs and len(subject) < len(objs)]  # the rest of the scene, without the subject
            bare = None
            if hidden:
                for obj in hidden:
                    settings.set(obj, "hide_render", True)
                bare = _render(scene, os.path.join(tmp, "bare.png"), width, height, int(args.get("samples", BEAUTY_SAMPLES)), data=False)
                for obj in hidden:
                    obj.hide_render = False
            times["bare"] = time.perf_counter() - start
            start = time.perf_counter()
            settings.set(scene, "world", None)  # data renders: emission only, on black
            for attr, value in (("view_transform", "Standard"), ("look", "None"), ("exposure", 0.0), ("gamma", 1.0)):
                settings.set(scene.view_settings, attr, value)
            cycles.use_adaptive_sampling = False
            data = {}
            for what in ("color", "props"):
                shaders.apply(what)
                data[what] = _render(scene, os.path.join(tmp, f"{what}.exr"), width, height, 1, data=True)
            times["data"] = time.perf_counter() - start
        finally:
            shaders.restore()
            settings.restore()
            render.image_settings.file_format = image_format[0]
            try:
                render.image_settings.color_depth = image_format[1]
            except TypeError:  # a depth the restored format does not offer: keep its default
                pass
    path = os.path.join(folder, "look.npz")
    extra = {"bare": bare.astype(np.float32)} if bare is not None else {}
    np.savez(path, beauty=beauty.astype(np.float32), albedo=data["color"], props=data["props"], **extra, **rays)
    view = scene.view_settings
    return {"camera": True, "file": path, "names": names, "size": [width, height],
            "slots": {o.name: [s.material.name if s.material else None for s in o.material_slots] for o in objs},
            "materials": {m.name: material_facts(m) for m in materials},
            "lights": _light_facts(scene, centre), "subject_centre": [round(v, 4) for v in centre],
            "exposure_ev": round(float(view.exposure), 4), "view_transform": view.view_transform,
            "seconds": {k: round(v, 3) for k, v in times.items()}}


OPS = {"look_data": look_data}
MUTATING: set[str] = set()

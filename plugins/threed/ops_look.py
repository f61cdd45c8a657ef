"""Surfaces, lighting presets and camera framing, run INSIDE the Blender worker (they import ``bpy``).

Same contract as ``plugins.threed.ops``. Procedural textures read object coordinates (metres in
the object's own frame), so they need no UVs and keep their scale whatever the object's size;
image textures read the UV map (``uv_unwrap``). Lighting presets size themselves from the
subject's bounding box; what a preset adds is tagged (``PRESET_TAG``) and replaced by the next.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

import bmesh
import bpy
from mathutils import Vector

from plugins.threed.ops import (
    SOCKETS,
    TRANSLUCENT_MIX,
    OpError,
    _aim,
    _link,
    _mesh_object,
    _real_folder,
    _set_world_color,
    describe,
    material_settings,
    scene_camera,
    start_objects,
)

PRESET_TAG = "horizon_preset"  # custom property on objects a lighting preset made


# -- UVs -----------------------------------------------------------------------------------



def _bump(nodes: Any, links: Any, height: Any, bsdf: Any, *, strength: float, distance: float) -> None:
    """A Bump node from ``height`` (a node output) into ``bsdf``'s normal; ``distance`` in metres."""
    bump = nodes.new("ShaderNodeBump")
    bump.inputs["Strength"].default_value = strength
    bump.inputs["Distance"].default_value = distance
    links.new(height, bump.inputs["Height"])
    links.new(bump.outputs["Normal"], bsdf.inputs["Normal"])

def uv_unwrap(args: dict[str, Any]) -> dict[str, Any]:
    """Smart-project UVs on each object (islands split at ``angle_limit_deg``, ``island_margin``
    as a fraction of the UV square); returns the UV islands' total area per object (0-1)."""
    objs = [_mesh_object(n) for n in args["objects"]]
    out = {}
    for obj in objs:
        if obj.data.users > 1:
            raise OpError(f"{obj.name!r} shares its mesh with other objects; unwrap one of them, the others follow")
        for o in bpy.context.view_layer.objects:
            o.select_set(False)
        obj.hide_set(False)
        obj.select_set(True)
        bpy.context.view_layer.objects.active = obj
        bpy.ops.object.mode_set(mode="EDIT")
        try:
            bpy.ops.mesh.select_all(action="SELECT")
            bpy.ops.uv.smart_project(angle_limit=math.radians(args.get("angle_limit_deg", 66.0)),
                                     island_margin=args.get("island_margin", 0.02))
        finally:
            bpy.ops.object.mode_set(mode="OBJECT")
        out[obj.name] = round(_uv_area(obj), 4)
    return {"uv_area": out}


def _uv_area(obj: bpy.types.Object) -> float:
    bm = bmesh.new()
    try:
        bm.from_mesh(obj.data)
        layer = bm.loops.layers.uv.active
        if layer is None:
            return 0.0
        total = 0.0
        for face in bm.faces:
            uv = [loop[layer].uv for loop in face.loops]
            total += abs(sum(uv[i].x * uv[i - 1].y - uv[i - 1].x * uv[i].y for i in range(len(uv)))) / 2
        return total
    finally:
        bm.free()


# -- surfaces ------------------------------------------------------------------------------

#: Wood: light and dark linear RGB of the grain, rings per metre, roughness. Oak is a warm
#: mid-brown with pronounced open grain; walnut a dark chocolate brown with a finer, subtler figure;
#: pine a pale honey yellow with wider rings.
WOOD = {
    "oak": {"light": (0.50, 0.33, 0.16), "dark": (0.27, 0.15, 0.065), "rings": 90.0, "roughness": 0.45},
    "walnut": {"light": (0.15, 0.075, 0.035), "dark": (0.06, 0.03, 0.014), "rings": 110.0, "roughness": 0.4},
    "pine": {"light": (0.62, 0.45, 0.25), "dark": (0.42, 0.26, 0.11), "rings": 60.0, "roughness": 0.5},
}
GRAIN_AXES = {"x": "X", "y": "Y", "z": "Z"}


def _fresh_material(name: str) -> tuple[bpy.types.Material, Any, Any]:
    """The material ``name`` with an empty node tree: (material, nodes, links)."""
    mat = bpy.data.materials.get(name) or bpy.data.materials.new(name)
    mat.use_nodes = True
    nodes, links = mat.node_tree.nodes, mat.node_tree.links
    nodes.clear()
    return mat, nodes, links


def _bsdf(nodes: Any, links: Any) -> Any:
    out = nodes.new("ShaderNodeOutputMaterial")
    out.location = (400, 0)
    bsdf = nodes.new("ShaderNodeBsdfPrincipled")
    links.new(bsdf.outputs["BSDF"], out.inputs["Surface"])
    return bsdf


def _wood(nodes: Any, links: Any, bsdf: Any, kind: str, axis: str, scale: float) -> dict[str, Any]:
    """Growth rings (a ring wave around the grain axis, warped by noise) between a light and a
    dark tone, fine pores (noise stretched along the grain) darkening them, and a faint bump."""
    w = WOOD[kind]
    coords = nodes.new("ShaderNodeTexCoord")
    mapping = nodes.new("ShaderNodeMapping")
    links.new(coords.outputs["Object"], mapping.inputs["Vector"])
    mapping.inputs["Scale"].default_value = (1.0 / scale,) * 3
    # the rings' centre (the log's pith) well off the object, so faces show flat-sawn stripes, not one ring
    mapping.inputs["Location"].default_value = tuple(0.0 if a == axis else off for a, off in zip("xyz", (0.23, 0.17, 0.29)))
    rings = nodes.new("ShaderNodeTexWave")
    rings.wave_type = "RINGS"
    rings.rings_direction = GRAIN_AXES[axis]
    # Blender's ring wave is sin(20 * scale * distance): one ring per 2*pi / (20 * scale) metres
    rings.inputs["Scale"].default_value = 2 * math.pi * w["rings"] / 20
    rings.inputs["Distortion"].default_value = 1.2
    rings.inputs["Detail"].default_value = 2.0
    rings.inputs["Detail Scale"].default_value = 0.6
    links.new(mapping.outputs["Vector"], rings.inputs["Vector"])
    ramp = nodes.new("ShaderNodeValToRGB")
    ramp.color_ramp.elements[0].position, ramp.color_ramp.elements[1].position = 0.45, 1.0  # thin dark late-wood lines
    ramp.color_ramp.elements[0].color = (*w["light"], 1.0)
    ramp.color_ramp.elements[1].color = (*w["dark"], 1.0)
    links.new(rings.outputs["Fac"], ramp.inputs["Fac"])
    # pores: noise stretched 40x along the grain, multiplied in as dark streaks
    stretch = nodes.new("ShaderNodeMapping")
    stretch.inputs["Scale"].default_value = tuple(6.0 if a == axis else 240.0 for a in "xyz")
    links.new(mapping.outputs["Vector"], stretch.inputs["Vector"])
    pores = nodes.new("ShaderNodeTexNoise")
    pores.inputs["Scale"].default_value = 1.0
    pores.inputs["Detail"].default_value = 4.0
    links.new(stretch.outputs["Vector"], pores.inputs["Vector"])
    pore_ramp = nodes.new("ShaderNodeValToRGB")
    pore_ramp.color_ramp.elements[0].position, pore_ramp.color_ramp.elements[1].position = 0.35, 0.65
    pore_ramp.color_ramp.elements[0].color = (0.72, 0.72, 0.72, 1.0)
    links.new(pores.outputs["Fac"], pore_ramp.inputs["Fac"])
    mix = nodes.new("ShaderNodeMix")
    mix.data_type, mix.blend_type = "RGBA", "MULTIPLY"
    mix.inputs["Factor"].default_value = 1.0
    links.new(ramp.outputs["Color"], mix.inputs["A"])
    links.new(pore_ramp.outputs["Color"], mix.inputs["B"])
    links.new(mix.outputs["Result"], bsdf.inputs["Base Color"])
    _bump(nodes, links, pores.outputs["Fac"], bsdf, strength=0.08, distance=0.0005)
    bsdf.inputs["Roughness"].default_value = w["roughness"]
    bsdf.inputs["Coat Weight"].default_value = 0.1  # a satin oil finish
    bsdf.inputs["Coat Roughness"].default_value = 0.3
    return {"grain_axis": axis, "rings_per_m": w["rings"] / scale, "roughness": w["roughness"]}


def _ceramic(bsdf: Any, color: tuple[float, float, float]) -> dict[str, Any]:
    """A glossy glaze: a clear coat (IOR 1.5, roughness 0.03) over a smooth, slightly translucent body."""
    bsdf.inputs["Base Color"].default_value = (*color, 1.0)
    bsdf.inputs["Roughness"].default_value = 0.12
    bsdf.inputs["Coat Weight"].default_value = 1.0
    bsdf.inputs["Coat Roughness"].default_value = 0.03
    bsdf.inputs["Coat IOR"].default_value = 1.5
    bsdf.inputs["Subsurface Weight"].default_value = 0.05
    bsdf.inputs["Subsurface Radius"].default_value = (0.002, 0.0015, 0.001)
    return {"color": list(color), "coat_roughness": 0.03}


def _brushed_metal(nodes: Any, links: Any, bsdf: Any, color: tuple[float, float, float], axis: str, scale: float) -> dict[str, Any]:
    """Metal with anisotropic highlights and roughness streaks: noise stretched along the brushing axis."""
    bsdf.inputs["Base Color"].default_value = (*color, 1.0)
    bsdf.inputs["Metallic"].default_value = 1.0
    bsdf.inputs["Anisotropic"].default_value = 0.6
    coords = nodes.new("ShaderNodeTexCoord")
    stretch = nodes.new("ShaderNodeMapping")
    stretch.inputs["Scale"].default_value = tuple((2.0 if a == axis else 800.0) / scale for a in "xyz")
    links.new(coords.outputs["Object"], stretch.inputs["Vector"])
    streaks = nodes.new("ShaderNodeTexNoise")
    streaks.inputs["Detail"].default_value = 6.0
    links.new(stretch.outputs["Vector"], streaks.inputs["Vector"])
    rough = nodes.new("ShaderNodeMapRange")
    rough.inputs["To Min"].default_value, rough.inputs["To Max"].default_value = 0.3, 0.5
    links.new(streaks.outputs["Fac"], rough.inputs["Value"])
    links.new(rough.outputs["Result"], bsdf.inputs["Roughness"])
    return {"color": list(color), "brushed_along": axis, "roughness": [0.3, 0.5]}


def _fabric(nodes: Any, links: Any, bsdf: Any, color: tuple[float, float, float], scale: float) -> dict[str, Any]:
    """Woven cloth: a fine weave (two crossed bands waves, 400 threads per metre) darkening the
    colour and bumping the surface, full roughness with sheen, and a Translucent BSDF mixed in so
    45% of the light passes through diffusely (a lit lampshade glows; it does not refract like glass)."""
    coords = nodes.new("ShaderNodeTexCoord")
    threads = []
    for direction in ("X", "Y"):
        wave = nodes.new("ShaderNodeTexWave")
        wave.bands_direction = direction
        wave.inputs["Scale"].default_value = 2 * math.pi * 400 / 20 / scale  # sin(20 * scale * x): 400 bands per metre
        links.new(coords.outputs["Object"], wave.inputs["Vector"])
        threads.append(wave)
    weave = nodes.new("ShaderNodeMath")
    weave.operation = "MULTIPLY"
    links.new(threads[0].outputs["Fac"], weave.inputs[0])
    links.new(threads[1].outputs["Fac"], weave.inputs[1])
    shade = nodes.new("ShaderNodeMix")
    shade.data_type = "RGBA"
    shade.inputs["A"].default_value = (*(0.75 * c for c in color), 1.0)
    shade.inputs["B"].default_value = (*color, 1.0)
    links.new(weave.outputs["Value"], shade.inputs["Factor"])
    links.new(shade.outputs["Result"], bsdf.inputs["Base Color"])
    _bump(nodes, links, weave.outputs["Value"], bsdf, strength=0.15, distance=0.0003)
    bsdf.inputs["Roughness"].default_value = 1.0
    bsdf.inputs["Sheen Weight"].default_value = 0.5
    output = next(n for n in nodes if n.type == "OUTPUT_MATERIAL")
    translucent = nodes.new("ShaderNodeBsdfTranslucent")
    translucent.inputs["Color"].default_value = (*color, 1.0)
    mix = nodes.new("ShaderNodeMixShader")
    mix.name = mix.label = TRANSLUCENT_MIX  # set_material's translucency reads and sets it
    mix.inputs["Fac"].default_value = FABRIC_TRANSLUCENCY
    links.new(bsdf.outputs["BSDF"], mix.inputs[1])
    links.new(translucent.outputs["BSDF"], mix.inputs[2])
    links.new(mix.outputs["Shader"], output.inputs["Surface"])
    return {"color": list(color), "threads_per_m": 400 / scale, "translucency": FABRIC_TRANSLUCENCY, "sheen": 0.5}


FABRIC_TRANSLUCENCY = 0.45


def _image(nodes: Any, links: Any, bsdf: Any, path: str, objs: list[bpy.types.Object], root: str) -> dict[str, Any]:
    """An image file as the base colour through each object's UV map."""
    _real_folder(path, "image")
    if not os.path.realpath(path).startswith(os.path.realpath(root).rstrip("/") + "/"):
        raise OpError(f"image {path} is outside the workspace; copy it into the workspace first")
    if not os.path.isfile(path) or os.path.islink(path):
        raise OpError(f"image {path} does not exist or is not a regular file; give an image file in the workspace")
    missing = [o.name for o in objs if not o.data.uv_layers]
    if missing:
        raise OpError(f"{', '.join(missing)} have no UV map; call uv_unwrap on them first")
    try:
        image = bpy.data.images.load(path, check_existing=True)
    except RuntimeError as exc:
        raise OpError(f"Blender cannot read {os.path.basename(path)} as an image ({exc}); give a PNG, JPEG, EXR or TIFF") from None
    tex = nodes.new("ShaderNodeTexImage")
    tex.image = image
    uv = nodes.new("ShaderNodeUVMap")
    links.new(uv.outputs["UV"], tex.inputs["Vector"])
    links.new(tex.outputs["Color"], bsdf.inputs["Base Color"])
    bsdf.inputs["Roughness"].default_value = 0.5
    return {"image": os.path.basename(path), "size": list(image.size)}


def set_surface(args: dict[str, Any]) -> dict[str, Any]:
    """Build material ``material`` from a preset (oak, walnut, pine, ceramic, brushed_metal, fabric, image) and
    assign it to every face of each of ``objects`` (replacing their materials).

    ``scale`` (m) stretches the procedural pattern (1 = as designed); ``color`` is the glaze or
    metal colour (linear RGB); ``emission_color`` / ``emission_strength`` make any preset glow; ``grain_axis`` the object-space axis wood grain or brushing runs along.
    """
    objs = [_mesh_object(n) for n in args["objects"]]
    mat, nodes, links = _fresh_material(args["material"])
    bsdf = _bsdf(nodes, links)
    preset, axis, scale = args["preset"], args.get("grain_axis", "x"), args.get("scale", 1.0)
    if preset in WOOD:
        settings = _wood(nodes, links, bsdf, preset, axis, scale)
        viewport = WOOD[preset]["light"]
    elif preset == "ceramic":
        color = tuple(args.get("color") or (0.85, 0.83, 0.78))
        settings, viewport = _ceramic(bsdf, color), color
    elif preset == "brushed_metal":
        color = tuple(args.get("color") or (0.62, 0.62, 0.63))
        settings, viewport = _brushed_metal(nodes, links, bsdf, color, axis, scale), color
    elif preset == "fabric":
        color = tuple(args.get("color") or (0.8, 0.7, 0.52))
        settings, viewport = _fabric(nodes, links, bsdf, color, scale), color
    elif preset == "image":
        settings, viewport = _image(nodes, links, bsdf, args["image_path"], objs, args.get("root") or os.path.dirname(args["image_path"])), (0.5, 0.5, 0.5)
    else:  # the tool's Literal forbids this; kept for direct callers
        raise OpError(f"no surface preset {preset!r}; presets: oak, walnut, pine, ceramic, brushed_metal, fabric, image")
    if args.get("emission_color") is not None or args.get("emission_strength") is not None:
        glow = tuple(args.get("emission_color") or (1.0, 1.0, 1.0))
        strength = args.get("emission_strength") if args.get("emission_strength") is not None else 1.0
        bsdf.inputs[SOCKETS["emission_color"]].default_value = (*glow, 1.0)
        bsdf.inputs[SOCKETS["emission_strength"]].default_value = strength
        settings.update(emission_color=list(glow), emission_strength=strength)
    mat.diffuse_color = (*viewport, 1.0)
    for obj in objs:
        obj.data.materials.clear()
        obj.data.materials.append(mat)
        for p in obj.data.polygons:
            p.material_index = 0
    return {"material": mat.name, "preset": preset, "objects": [o.name for o in objs], "settings": settings,
            "material_now": material_settings(mat)}


# -- lighting presets ----------------------------------------------------------------------


def _subject_box(names: list[str] | None) -> tuple[Vector, Vector]:
    """World bounding box (min, max corners, m) of the named meshes, or of every visible mesh a preset did not make."""
    objs = [_mesh_object(n) for n in names] if names else [
        o for o in bpy.data.objects if o.type == "MESH" and not o.hide_render and PRESET_TAG not in o]
    if not objs:
        raise OpError("there is nothing to light or frame: add the object first, or name the objects")
    bpy.context.view_layer.update()
    corners = [o.matrix_world @ Vector(c) for o in objs for c in o.bound_box]
    lo = Vector([min(c[i] for c in corners) for i in range(3)])
    hi = Vector([max(c[i] for c in corners) for i in range(3)])
    return lo, hi


def _clear_preset() -> list[str]:
    removed = []
    for obj in [o for o in bpy.data.objects if PRESET_TAG in o]:
        removed.append(obj.name)
        data = obj.data
        bpy.data.objects.remove(obj)
        if data is not None and data.users == 0:
            (bpy.data.lights if isinstance(data, bpy.types.Light) else bpy.data.meshes).remove(data)
    return removed


def _light(name: str, kind: str, location: Vector, target: Vector, energy: float, size: float,
           color: tuple[float, float, float] = (1.0, 1.0, 1.0)) -> bpy.types.Object:
    data = bpy.data.lights.new(name, type=kind)
    data.energy, data.color = energy, color
    if kind == "AREA":
        data.shape, data.size, data.size_y = "RECTANGLE", size, size * 0.75
    obj = _link(bpy.data.objects.new(name, data))
    obj[PRESET_TAG] = True
    obj.location = location
    _aim(obj, list(target))
    return obj


def _around(centre: Vector, distance: float, azimuth_deg: float, elevation_deg: float) -> Vector:
    """A point ``distance`` from ``centre``; azimuth 0 is the front (-Y), 90 the right (+X); elevation up from level."""
    az, el = math.radians(azimuth_deg), math.radians(elevation_deg)
    return centre + distance * Vector((math.sin(az) * math.cos(el), -math.cos(az) * math.cos(el), math.sin(el)))


def _cyclorama(name: str, lo: Vector, hi: Vector, radius: float) -> bpy.types.Object:
    """A seamless backdrop: a floor at the subject's lowest point sweeping up into a back wall
    through a quarter circle (no horizon line), 1 cm thick so it is a closed solid."""
    size = max(hi.x - lo.x, hi.y - lo.y, hi.z - lo.z)
    width, floor_z = max(12 * size, 2.0 * radius), lo.z
    front, back = lo.y - 10 * size, hi.y + 1.5 * size
    height = floor_z + 6 * size
    profile = [(front, floor_z), (back - radius, floor_z)]
    profile += [(back - radius + radius * math.sin(math.pi / 2 * k / 16), floor_z + radius - radius * math.cos(math.pi / 2 * k / 16))
                for k in range(1, 17)]
    profile.append((back, max(height, floor_z + radius + size)))
    bm = bmesh.new()
    try:
        cx = (lo.x + hi.x) / 2
        left = [bm.verts.new((cx - width / 2, y, z)) for y, z in profile]
        right = [bm.verts.new((cx + width / 2, y, z)) for y, z in profile]
        for i in range(len(profile) - 1):
            bm.faces.new([left[i], right[i], right[i + 1], left[i + 1]])
        bm.normal_update()
        bm.faces.ensure_lookup_table()
        if bm.faces[0].normal.z < 0:  # face up, so the solidify below grows under the floor, not above it
            bmesh.ops.reverse_faces(bm, faces=bm.faces)
        mesh = bpy.data.meshes.new(name)
        bm.to_mesh(mesh)
    finally:
        bm.free()
    mesh.shade_smooth()
    obj = _link(bpy.data.objects.new(name, mesh))
    obj[PRESET_TAG] = True
    solid = obj.modifiers.new("Solidify", "SOLIDIFY")
    solid.thickness, solid.offset = 0.01, -1.0  # grows downwards/backwards: the top face stays at the floor
    mat = bpy.data.materials.get("Backdrop") or bpy.data.materials.new("Backdrop")
    mat.use_nodes = True
    bsdf = next(n for n in mat.node_tree.nodes if n.type == "BSDF_PRINCIPLED")
    bsdf.inputs["Base Color"].default_value = (0.62, 0.62, 0.62, 1.0)
    bsdf.inputs["Roughness"].default_value = 0.9
    mat.diffuse_color = (0.62, 0.62, 0.62, 1.0)
    mesh.materials.append(mat)
    return obj


def light_preset(args: dict[str, Any]) -> dict[str, Any]:
    """Light the subject (``objects``, default every visible mesh) with a preset, replacing what an
    earlier preset added: ``three_point`` (key, fill, rim area lights), ``studio`` (a seamless
    cyclorama backdrop, a large overhead softbox, a key and a fill), ``sun_sky`` (a sun and a
    physical sky in the world, with a ground). Energies scale with the square of the distance, so a
    mug and a wardrobe come out equally exposed; ``strength`` multiplies them all."""
    removed = _clear_preset()
    lo, hi = _subject_box(args.get("objects"))
    centre = (lo + hi) / 2
    radius = max((hi - lo).length / 2, 0.01)
    k = args.get("strength", 1.0)
    world = bpy.context.scene.world or bpy.data.worlds.new("World")
    bpy.context.scene.world = world
    made: list[bpy.types.Object] = []
    preset = args["preset"]
    if world.use_nodes and preset != "sun_sky":  # an earlier sun_sky's sky would still light the scene
        for node in [n for n in world.node_tree.nodes if n.type == "TEX_SKY"]:
            world.node_tree.nodes.remove(node)
    bpy.context.scene.view_settings.look = "AgX - Medium High Contrast"  # AgX's default look washes product shots out
    if preset == "three_point":
        d = 4 * radius
        made += [_light("Key", "AREA", _around(centre, d, -40, 40), centre, 6 * k * d * d, 2 * radius),
                 _light("Fill", "AREA", _around(centre, d, 55, 20), centre, 2 * k * d * d, 3 * radius),
                 _light("Rim", "AREA", _around(centre, d, 160, 50), centre, 6 * k * d * d, 1.5 * radius)]
        _set_world_color(world, (0.05, 0.05, 0.055), 1.0)
    elif preset == "studio":
        made.append(_cyclorama("Backdrop", lo, hi, max(1.2 * radius, 0.1)))
        d = 5 * radius
        top = Vector((centre.x, centre.y, hi.z + 3.5 * radius))
        made += [_light("Softbox", "AREA", top, centre, 8 * k * (top - centre).length ** 2, 2.5 * radius),
                 _light("Key", "AREA", _around(centre, d, -45, 35), centre, 9 * k * d * d, 1.2 * radius),
                 _light("Fill", "AREA", _around(centre, d, 60, 15), centre, 2.5 * k * d * d, 4 * radius)]
        _set_world_color(world, (0.8, 0.8, 0.82), 0.05)
    elif preset == "sun_sky":
        elevation, azimuth = args.get("sun_elevation_deg", 35.0), args.get("sun_azimuth_deg", 60.0)
        sun = _light("Sun", "SUN", _around(centre, 4 * radius, azimuth, elevation), centre, 3.5 * k, 0.0)
        sun.data.angle = math.radians(1.5)  # slightly soft shadows, as on a clear day
        made.append(sun)
        made.append(_ground("Ground", lo, radius))
        _sky(world, elevation, azimuth, k)
    return {"preset": preset, "added": [describe(o) for o in made], "removed": removed,
            "subject": {"min": [round(v, 4) for v in lo], "max": [round(v, 4) for v in hi]}}


def _ground(name: str, lo: Vector, radius: float) -> bpy.types.Object:
    bm = bmesh.new()
    try:
        bmesh.ops.create_grid(bm, x_segments=1, y_segments=1, size=40 * radius)
        mesh = bpy.data.meshes.new(name)
        bm.to_mesh(mesh)
    finally:
        bm.free()
    obj = _link(bpy.data.objects.new(name, mesh))
    obj[PRESET_TAG] = True
    obj.location = (0.0, 0.0, lo.z)
    solid = obj.modifiers.new("Solidify", "SOLIDIFY")
    solid.thickness, solid.offset = 0.01, -1.0
    mat = bpy.data.materials.get("Ground") or bpy.data.materials.new("Ground")
    mat.use_nodes = True
    bsdf = next(n for n in mat.node_tree.nodes if n.type == "BSDF_PRINCIPLED")
    bsdf.inputs["Base Color"].default_value = (0.35, 0.33, 0.3, 1.0)
    bsdf.inputs["Roughness"].default_value = 0.85
    mesh.materials.append(mat)
    return obj


def _sky(world: bpy.types.World, elevation_deg: float, azimuth_deg: float, strength: float) -> None:
    """A physical sky (Blender's multiple-scattering model) with its sun where the sun light is."""
    world.use_nodes = True
    nodes, links = world.node_tree.nodes, world.node_tree.links
    nodes.clear()
    sky = nodes.new("ShaderNodeTexSky")
    sky.sky_type = "MULTIPLE_SCATTERING"
    sky.sun_elevation = math.radians(elevation_deg)
    sky.sun_rotation = math.radians(azimuth_deg - 90)  # the sky's 0 is +X; the preset's azimuth 0 is -Y
    sky.sun_disc = False  # the sun light draws the sun's light; the disc would double it
    background = nodes.new("ShaderNodeBackground")
    background.inputs["Strength"].default_value = 0.15 * strength
    out = nodes.new("ShaderNodeOutputWorld")
    links.new(sky.outputs["Color"], background.inputs["Color"])
    links.new(background.outputs["Background"], out.inputs["Surface"])


# -- camera framing ------------------------------------------------------------------------


def frame_camera(args: dict[str, Any]) -> dict[str, Any]:
    """Place the scene camera (made if missing) looking at the subject from ``azimuth_deg`` (0 =
    front, -Y; 90 = right, +X) and ``elevation_deg``, at the distance where the subject's bounding
    box, seen through ``lens_mm`` (36 mm sensor on the longer side) in a ``width`` x ``height``
    frame, leaves ``margin`` of the frame empty on its tightest side (0.1 = 10% each side).
    The camera is shifted sideways so the box's image is centred.

    The subject is ``objects``, or by default every visible mesh a lighting preset did not make,
    less the meshes the scene held before the run built anything (``start_objects``: an artist's
    default Cube), reported in ``left_out``, unless ``include_existing`` or the run built none."""
    names, left_out = args.get("objects"), []
    if not names and not args.get("include_existing"):
        visible = sorted(o.name for o in bpy.data.objects if o.type == "MESH" and not o.hide_render and PRESET_TAG not in o)
        start = start_objects()
        built = [n for n in visible if n not in start]
        if built:  # the scene came with objects (an artist's default Cube): frame only what the run built
            names, left_out = built, [n for n in visible if n in start]
    lo, hi = _subject_box(names)
    corners = [Vector((x, y, z)) for x in (lo.x, hi.x) for y in (lo.y, hi.y) for z in (lo.z, hi.z)]
    centre = (lo + hi) / 2
    width, height = args.get("width", 320), args.get("height", 240)
    lens, margin = args.get("lens_mm", 50.0), args.get("margin", 0.1)
    half_long = 18.0 / lens  # tan of the half angle on the longer side
    tan_x, tan_y = (half_long, half_long * height / width) if width >= height else (half_long * width / height, half_long)
    back = _around(Vector((0, 0, 0)), 1.0, args.get("azimuth_deg", -35.0), args.get("elevation_deg", 20.0))
    forward = -back
    right = forward.cross(Vector((0, 0, 1)))
    if right.length < 1e-6:
        raise OpError("elevation_deg of ±90 looks straight down or up: the frame's sideways direction is undefined; use at most 89")
    right.normalize()
    up = right.cross(forward)
    rel = [(c - centre) for c in corners]
    fill = 1 - 2 * margin

    def spans(d: float, a: float, b: float) -> tuple[float, float, float, float]:
        """Image-plane bounds (tan units) of the corners for a camera at centre + d*back + a*right + b*up."""
        us, vs = [], []
        for p in rel:
            depth = d - p.dot(back)
            us.append((p.dot(right) - a) / depth)
            vs.append((p.dot(up) - b) / depth)
        return min(us), max(us), min(vs), max(vs)

    nearest = max(p.dot(back) for p in rel) + 1e-3
    a = b = 0.0
    d = nearest
    for _ in range(5):  # distance for the fill, then re-centre; converges in a few rounds
        lo_d, hi_d = nearest, nearest + 1e4 * max(max(p.length for p in rel), 1e-3)
        for _ in range(80):
            d = (lo_d + hi_d) / 2
            u0, u1, v0, v1 = spans(d, a, b)
            over = max(max(-u0, u1) / tan_x, max(-v0, v1) / tan_y)
            lo_d, hi_d = (d, hi_d) if over > fill else (lo_d, d)
        d = hi_d
        u0, u1, v0, v1 = spans(d, a, b)
        a += (u0 + u1) / 2 * d
        b += (v0 + v1) / 2 * d
    scene = bpy.context.scene
    cam, created = scene_camera(scene)
    cam.location = centre + d * back + a * right + b * up
    cam.rotation_euler = forward.to_track_quat("-Z", "Y").to_euler()
    cam.data.lens, cam.data.sensor_width, cam.data.sensor_fit = lens, 36.0, "AUTO"
    cam.data.shift_x = cam.data.shift_y = 0.0
    cam.data.clip_start = max(0.001, min(0.1, (d - nearest) / 10))
    cam.data.clip_end = max(100.0, 20 * d)
    scene.render.resolution_x, scene.render.resolution_y = width, height
    bpy.context.view_layer.update()
    u0, u1, v0, v1 = spans(d, a, b)
    return {"created": created, "camera": describe(cam), "distance_m": round(d, 4),
            "frame_filled": {"horizontal": round((u1 - u0) / (2 * tan_x), 3), "vertical": round((v1 - v0) / (2 * tan_y), 3)},
            "subject": {"min": [round(v, 4) for v in lo], "max": [round(v, 4) for v in hi]}, "left_out": left_out}


OPS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    f.__name__: f for f in (uv_unwrap, set_surface, light_preset, frame_camera)
}
MUTATING = set(OPS)

"""The reward's look checks: materials judged by their measured properties, lighting by what
the render shows (``docs/threed-reward.md``, "Materials and lighting").

The Blender worker measures (``plugins.threed.look_probe.look_data``): per pixel of a small
frame, the nearest mesh, its normal and hit point; the shot as rendered (``beauty``, sRGB); and
each material's base colour, roughness, metallic and transmission as its node tree evaluates
there (``albedo``, ``props``). This module (numpy and scipy only) turns the request's words into
wanted property ranges (``FAMILIES``, ``COLOURS``) and checks them:

- ``<object>/material_look``: the object's pixels' mean properties against each asked family
  and colour; wood also needs grain (the base colour varies across the object);
- ``scene/exposure``: the subject's luminance in the render (median L*, clipped and crushed shares);
- ``scene/key_fill``: the brightest over the darkest side of the subject (its non-metal pixels
  grouped by normal, shading = rendered luminance over base-colour luminance);
- ``scene/shadow``: the floor under and beside the subject darker than without the subject;
- ``scene/key_power`` (a "product shot"): the strongest light's irradiance at the subject.

Names (the task's material and object names, its description) only pick which object is meant
and which words apply; no material or light name, count or custom property is evidence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from plugins.threed.checks import Check


@dataclass(frozen=True)
class Family:
    """A material word's property ranges (each ``(low, high)``; None: not judged).

    ``hue`` is CIE LCh hue in degrees (low > high wraps through 0), ``lightness`` L* 0-100 and
    ``chroma`` C*ab of the base colour; ``grain``: the base colour must vary across the object.
    """

    words: tuple[str, ...]
    metallic: tuple[float, float] | None = None
    roughness: tuple[float, float] | None = None
    transmission: tuple[float, float] | None = None
    hue: tuple[float, float] | None = None
    lightness: tuple[float, float] | None = None
    chroma: tuple[float, float] | None = None
    grain: bool = False
    parent: str | None = field(default=None)


NON_METAL, OPAQUE = (0.0, 0.2), (0.0, 0.2)
#: Material words and what they need. A specific word (oak) is judged with its own ranges and
#: replaces the general one (wood) when both are asked.
FAMILIES: dict[str, Family] = {
    "wood": Family(("wood", "wooden", "timber", "plywood"), NON_METAL, (0.2, 1.0), OPAQUE, (25, 95), (10, 85), (5, 80), grain=True),
    "oak": Family(("oak", "oaken"), NON_METAL, (0.2, 1.0), OPAQUE, (35, 95), (35, 80), (8, 80), grain=True, parent="wood"),
    "walnut": Family(("walnut",), NON_METAL, (0.2, 1.0), OPAQUE, (25, 95), (8, 50), (4, 60), grain=True, parent="wood"),
    "pine": Family(("pine", "birch", "maple", "ash", "beech"), NON_METAL, (0.2, 1.0), OPAQUE, (40, 100), (50, 90), (8, 70),
                   grain=True, parent="wood"),
    "metal": Family(("metal", "metallic", "steel", "iron", "aluminium", "aluminum", "chrome", "silver"), (0.7, 1.0)),
    "brass": Family(("brass", "gold", "golden", "bronze"), (0.7, 1.0), hue=(55, 100), chroma=(15, 150), parent="metal"),
    "copper": Family(("copper",), (0.7, 1.0), hue=(25, 70), chroma=(15, 150), parent="metal"),
    "glass": Family(("glass", "crystal"), NON_METAL, (0.0, 0.3), (0.7, 1.0)),
    "ceramic": Family(("ceramic", "porcelain", "stoneware", "earthenware"), NON_METAL, None, (0.0, 0.3)),
    "glaze": Family(("glaze", "glazed"), NON_METAL, (0.0, 0.35), (0.0, 0.3), parent="ceramic"),
    "plastic": Family(("plastic", "acrylic", "abs"), NON_METAL, (0.0, 0.8), (0.0, 0.3)),
    "fabric": Family(("fabric", "cloth", "linen", "wool", "felt", "cotton", "upholstered", "velvet"), (0.0, 0.1), (0.6, 1.0), OPAQUE),
}
#: Colour words: CIE LCh ranges of the base colour (lightness, chroma, hue).
COLOURS: dict[str, dict[str, tuple[float, float]]] = {
    "white": {"lightness": (85, 100), "chroma": (0, 12)},
    "black": {"lightness": (0, 25), "chroma": (0, 15)},
    "grey": {"lightness": (25, 85), "chroma": (0, 10)},
    "red": {"lightness": (20, 70), "chroma": (35, 150), "hue": (350, 45)},
    "orange": {"lightness": (45, 85), "chroma": (35, 150), "hue": (40, 75)},
    "yellow": {"lightness": (70, 100), "chroma": (35, 150), "hue": (75, 110)},
    "green": {"lightness": (20, 90), "chroma": (20, 150), "hue": (110, 190)},
    "blue": {"lightness": (15, 80), "chroma": (20, 150), "hue": (215, 300)},
    "purple": {"lightness": (15, 75), "chroma": (20, 150), "hue": (295, 335)},
    "pink": {"lightness": (60, 95), "chroma": (15, 80), "hue": (330, 30)},
    "brown": {"lightness": (15, 60), "chroma": (8, 60), "hue": (25, 85)},
    "terracotta": {"lightness": (35, 65), "chroma": (25, 70), "hue": (25, 60)},
}
COLOUR_ALIASES = {"gray": "grey", "golden": None}
#: Request words that ask for the shot to be lit (the lighting checks apply).
LIGHT_WORDS = ("lit", "light", "lighting", "lights", "shot", "photo", "photograph", "render", "studio", "backdrop")

#: Grain: the base colour's L* standard deviation across the object, at least this.
MIN_GRAIN_L = 1.5
#: Exposure of the subject in the render: median L* range, largest clipped and crushed shares.
EXPOSURE_L = (30.0, 88.0)
MAX_CLIPPED, MAX_CRUSHED = 0.10, 0.30
#: Key-to-fill: brightest over darkest side's shading.
KEY_FILL = (1.15, 16.0)
#: Key-to-fill reads diffuse shading: pixels whose measured metallic is above this are left out
#: (a metal shows what it reflects, not how much light falls on it: the benchmark's brass lamp
#: base reflecting a dark world read as a shadow side 27x darker than the lit linen shade).
MAX_METALLIC_SHADING = 0.5
#: Shadow: the darkest 5% of the floor under and beside the subject, lit over lit without it, at most
#: (the render's noise leaves 0.93-0.98 on floor no shadow reaches).
MAX_SHADOW = 0.92
#: A product shot's key light: irradiance at the subject's centre (W/m², after the view exposure).
KEY_IRRADIANCE = (0.5, 40.0)

_WORD = re.compile(r"[a-z]+")


def words(text: str) -> list[str]:
    """The lower-case words of ``text``."""
    return _WORD.findall(text.lower())


def asked(text: str) -> tuple[list[str], list[str]]:
    """The material families and colours ``text`` names: ``(["oak"], ["pink"])``; a specific
    family (oak) replaces its general one (wood)."""
    found = words(text)
    families = [name for name, fam in FAMILIES.items() if any(w in fam.words for w in found)]
    families = [f for f in families if not any(FAMILIES[g].parent == f for g in families)]
    colours = [COLOUR_ALIASES.get(w, w) for w in found if COLOUR_ALIASES.get(w, w) in COLOURS]
    return families, list(dict.fromkeys(colours))


def object_words(materials: list[str], description: str, request: str) -> tuple[list[str], list[str], str]:
    """What one object must look like: ``(families, colours, where the words came from)``.

    The object's own task words (its required material names and description) first; without
    material words there, the request's, but only when it names one material family (in "an
    oak table with steel legs" it cannot say which part is which).
    """
    fams, cols = asked(" ".join(materials) + " " + description)
    if fams or cols:
        return fams, cols, "the object's material names and description"
    fams, cols = asked(request)
    if len(fams) == 1 and len(cols) <= 1:
        return fams, cols, "the request"
    return [], [], ""


def lit_asked(request: str) -> bool:
    """Whether the lighting checks apply: the request speaks of light or a shot. A task that only
    asks for a number of lights (``min_lights``) has ``scene/lights``, not a judgement of the light."""
    return any(w in LIGHT_WORDS for w in words(request))


def product_shot(request: str) -> bool:
    """Whether the request asks for a product shot (``scene/key_power`` applies)."""
    return "product shot" in " ".join(words(request))


# -- colour ----------------------------------------------------------------------------------

_M = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
_WHITE = _M.sum(axis=1)


def srgb_to_linear(c: np.ndarray) -> np.ndarray:
    """Decode sRGB (0-1) to linear."""
    c = np.clip(c, 0.0, 1.0)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def _f(t: np.ndarray) -> np.ndarray:
    return np.where(t > (6 / 29) ** 3, np.cbrt(t), t / (3 * (6 / 29) ** 2) + 4 / 29)


def lab(linear: np.ndarray) -> np.ndarray:
    """CIE L*a*b* (D65) of linear sRGB colours (..., 3); values above 1 are clipped."""
    xyz = np.clip(linear, 0.0, 1.0) @ _M.T / _WHITE
    fx, fy, fz = _f(xyz[..., 0]), _f(xyz[..., 1]), _f(xyz[..., 2])
    return np.stack([116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)], axis=-1)


def lch(linear: np.ndarray) -> tuple[float, float, float]:
    """(L*, C*ab, hue degrees) of one linear colour."""
    L, a, b = lab(np.asarray(linear, dtype=float))
    return float(L), float(np.hypot(a, b)), float(np.degrees(np.arctan2(b, a)) % 360)


def luminance(linear: np.ndarray) -> np.ndarray:
    """Relative luminance Y of linear sRGB (..., 3)."""
    return np.clip(linear, 0.0, None) @ _M[1]


def _in(value: float, span: tuple[float, float], wrap: bool = False) -> bool:
    lo, hi = span
    if wrap and lo > hi:
        return value >= lo or value <= hi
    return lo <= value <= hi


# -- materials -------------------------------------------------------------------------------


def measure_object(data: dict[str, np.ndarray], k: int) -> dict[str, Any] | None:
    """Mean measured properties over the pixels where mesh ``k`` is the nearest, or None when none shows."""
    mask = data["index"] == k
    n = int(mask.sum())
    if n == 0:
        return None
    albedo, props = data["albedo"][mask], data["props"][mask]
    L, C, h = lch(albedo.mean(axis=0))
    lstar = lab(albedo)[:, 0]
    return {"pixels": n, "metallic": float(props[:, 1].mean()), "roughness": float(props[:, 0].mean()),
            "transmission": float(props[:, 2].mean()), "lightness": L, "chroma": C, "hue": h,
            "grain_l": float(lstar.std()), "base_color": [round(float(c), 4) for c in albedo.mean(axis=0)]}


def _wanted(families: list[str], colours: list[str]) -> list[tuple[str, str, tuple[float, float] | bool]]:
    """(word, property, range) for every test the words ask."""
    tests = []
    for name in families:
        fam = FAMILIES[name]
        for prop in ("metallic", "roughness", "transmission", "hue", "lightness", "chroma"):
            span = getattr(fam, prop)
            if span is not None:
                tests.append((name, prop, span))
        if fam.grain:
            tests.append((name, "grain", True))
    for colour in colours:
        tests += [(colour, prop, span) for prop, span in COLOURS[colour].items()]
    return tests


def material_look(name: str, families: list[str], colours: list[str], source: str, measured: dict[str, Any] | None) -> Check:
    """Check one object's measured properties against what its words ask (``Check`` named ``material_look``)."""
    asked_text = " ".join(families + colours)
    if measured is None:
        return Check("material_look", False, 0.0, f"{name} does not show in the camera's view, so its material cannot be seen "
                     f"(asked: {asked_text}, from {source})", {"asked": families + colours})
    tests = _wanted(families, colours)
    failed = []
    for word, prop, span in tests:
        if prop == "grain":
            if measured["grain_l"] < MIN_GRAIN_L:
                failed.append(f"{word}: no grain (base colour varies by {measured['grain_l']:.1f} L*, wanted at least {MIN_GRAIN_L:g})")
            continue
        value = measured[prop]
        if not _in(value, span, wrap=prop == "hue"):
            unit = "°" if prop == "hue" else ""
            failed.append(f"{word}: {prop} {value:.2f}{unit} (wanted {span[0]:g}-{span[1]:g}{unit})")
    value = 1.0 - len(failed) / len(tests) if tests else 1.0
    detail = {"asked": families + colours, "from": source, "measured": {k: (round(v, 4) if isinstance(v, float) else v)
                                                                      for k, v in measured.items()}}
    if failed:
        return Check("material_look", False, value, f"does not look like {asked_text}: " + "; ".join(failed), detail)
    return Check("material_look", True, 1.0, f"looks like {asked_text} (metallic {measured['metallic']:.2f}, roughness "
                 f"{measured['roughness']:.2f}, L* {measured['lightness']:.0f}, hue {measured['hue']:.0f}°)", detail)


# -- lighting --------------------------------------------------------------------------------


def _shading(data: dict[str, np.ndarray], mask: np.ndarray) -> np.ndarray:
    """Rendered luminance over base-colour luminance at ``mask`` (albedo below 2% left out: NaN)."""
    lit = luminance(srgb_to_linear(data["beauty"][mask]))
    base = luminance(data["albedo"][mask])
    return np.where(base > 0.02, lit / np.maximum(base, 1e-6), np.nan)


def exposure(data: dict[str, np.ndarray], subject: np.ndarray) -> Check:
    """The subject's luminance in the render: median L* within ``EXPOSURE_L``, at most
    ``MAX_CLIPPED`` of its pixels clipped (a channel at 98%+) and ``MAX_CRUSHED`` crushed (L* < 8)."""
    if not subject.any():
        return Check("exposure", False, 0.0, "the subject does not show in the camera's view")
    pixels = data["beauty"][subject]
    lstar = lab(srgb_to_linear(pixels))[:, 0]
    median = float(np.median(lstar))
    clipped = float((pixels.max(axis=1) >= 0.98).mean())
    crushed = float((lstar < 8).mean())
    problems = []
    if median < EXPOSURE_L[0]:
        problems.append(f"under-exposed: median L* {median:.0f} (wanted {EXPOSURE_L[0]:g}-{EXPOSURE_L[1]:g})")
    elif median > EXPOSURE_L[1]:
        problems.append(f"over-exposed: median L* {median:.0f} (wanted {EXPOSURE_L[0]:g}-{EXPOSURE_L[1]:g})")
    if clipped > MAX_CLIPPED:
        problems.append(f"{clipped:.0%} of it clipped to white (at most {MAX_CLIPPED:.0%})")
    if crushed > MAX_CRUSHED:
        problems.append(f"{crushed:.0%} of it crushed to black (at most {MAX_CRUSHED:.0%})")
    detail = {"median_l": round(median, 2), "clipped": round(clipped, 4), "crushed": round(crushed, 4),
              "pixels": int(subject.sum())}
    if problems:
        score = min(1.0, median / EXPOSURE_L[0]) if median < EXPOSURE_L[0] else 0.5
        return Check("exposure", False, round(max(0.0, score) * 0.5, 4), "; ".join(problems), detail)
    return Check("exposure", True, 1.0, f"median L* {median:.0f}, {clipped:.0%} clipped, {crushed:.0%} crushed", detail)


_SIDES = ("+x", "-x", "+y", "-y", "+z", "-z")


def key_fill(data: dict[str, np.ndarray], subject: np.ndarray) -> Check:
    """The lit over the shadow side: the subject's pixels grouped by the axis their normal is
    nearest (sides with at least 3% of its pixels), the median shading per side, brightest over
    darkest. Metal pixels (measured metallic above ``MAX_METALLIC_SHADING``) are left out unless
    fewer than 16 of its pixels are not metal: a metal's brightness is what it reflects, not the
    light on it."""
    normals = data["normal"][subject]
    shade = _shading(data, subject)
    metal = data["props"][subject][:, 1] > MAX_METALLIC_SHADING
    diffuse = ~metal if (~metal).sum() >= 16 else np.ones(len(shade), dtype=bool)  # all metal: judged as it shows
    axis = np.argmax(np.abs(normals), axis=1)
    side = axis * 2 + (normals[np.arange(len(normals)), axis] < 0)
    medians = {}
    for s in range(6):
        pick = (side == s) & np.isfinite(shade) & diffuse
        if pick.sum() >= max(8, 0.03 * diffuse.sum()):
            medians[_SIDES[s]] = float(np.median(shade[pick]))
    if len(medians) < 2:
        return Check("key_fill", False, 0.0, f"the render shows {len(medians)} side of the subject; no lit and shadow side to compare",
                     {"sides": medians})
    lit, dark = max(medians, key=medians.get), min(medians, key=medians.get)
    ratio = medians[lit] / max(medians[dark], 1e-6)
    detail = {"sides": {k: round(v, 4) for k, v in medians.items()}, "ratio": round(ratio, 3), "lit": lit, "shadow": dark,
              "metal_pixels_left_out": int((metal & ~diffuse).sum())}
    if ratio < KEY_FILL[0]:
        return Check("key_fill", False, 0.5, f"flat: the lit side ({lit}) is only {ratio:.2f}x the shadow side ({dark}); "
                     f"wanted {KEY_FILL[0]:g}-{KEY_FILL[1]:g}x", detail)
    if ratio > KEY_FILL[1]:
        return Check("key_fill", False, 0.5, f"harsh: the lit side ({lit}) is {ratio:.1f}x the shadow side ({dark}); "
                     f"wanted {KEY_FILL[0]:g}-{KEY_FILL[1]:g}x (more fill)", detail)
    return Check("key_fill", True, 1.0, f"key {lit} side {ratio:.1f}x the {dark} side", detail)


def shadow(data: dict[str, np.ndarray], subject: np.ndarray, samples: np.ndarray, floor_z: float, size: float) -> Check | None:
    """Whether the subject casts a shadow where it stands: on the floor within 10% of the
    subject's size of it (horizontally, from ``samples`` of its surface: under it and at its
    feet), the rendered luminance over the same pixel's in the render without the subject
    (``bare``); its darkest 5% (5th percentile) at most ``MAX_SHADOW``. None when the
    render shows too little floor there to judge (no floor, or all hidden)."""
    from scipy.spatial import cKDTree

    if "bare" not in data or len(samples) == 0:
        return None
    tol = 0.01 * size + 0.002
    floor = (~subject) & (data["index"] >= 0) & (data["normal"][..., 2] > 0.9) & (np.abs(data["point"][..., 2] - floor_z) < tol)
    if floor.sum() < 8:
        return None
    dist, _ = cKDTree(samples[:, :2]).query(data["point"][floor][:, :2])
    near = dist <= 0.1 * size
    if near.sum() < 8:
        return None
    lit = luminance(srgb_to_linear(data["beauty"][floor][near]))
    bare = luminance(srgb_to_linear(data["bare"][floor][near]))
    keep = bare > 1e-4
    if keep.sum() < 8:
        return None
    ratio = float(np.percentile(lit[keep] / bare[keep], 5))
    detail = {"ratio": round(ratio, 3), "floor_pixels": int(keep.sum())}
    if ratio > MAX_SHADOW:
        return Check("shadow", False, 0.0, f"no shadow: the floor under and beside the subject keeps {ratio:.0%} of its light "
                     f"with the subject there (its darkest 5%; wanted at most {MAX_SHADOW:.0%})", detail)
    return Check("shadow", True, 1.0, f"it casts a shadow: the floor under and beside it keeps {ratio:.0%} of its light", detail)


def key_power(lights: list[dict[str, Any]], exposure_ev: float) -> Check:
    """A product shot's key light: the strongest light's irradiance at the subject's centre,
    times 2^(the view's exposure), within ``KEY_IRRADIANCE`` (W/m²)."""
    if not lights:
        return Check("key_power", False, 0.0, "no light in the scene to key the shot", {"lights": []})
    key = max(lights, key=lambda light: light["irradiance_w_m2"])
    value = key["irradiance_w_m2"] * 2.0 ** exposure_ev
    detail = {"key": key["name"], "irradiance_w_m2": round(value, 4), "lights": lights}
    lo, hi = KEY_IRRADIANCE
    where = f"the strongest light ({key['kind']}, {key['energy_w']:g} W at {key['distance_m']:.2f} m) gives {value:.2f} W/m² at the subject"
    if value < lo:
        return Check("key_power", False, round(value / lo, 4), f"too weak for a product shot: {where} (wanted {lo:g}-{hi:g})", detail)
    if value > hi:
        return Check("key_power", False, 0.5, f"too strong for a product shot: {where} (wanted {lo:g}-{hi:g})", detail)
    return Check("key_power", True, 1.0, where, detail)


# -- the checks of one scene -----------------------------------------------------------------


def applies(spec: Any, request: str) -> bool:
    """Whether the task asks anything of the look (a material word for some object, or light)."""
    return bool(spec.objects) and (lit_asked(request) or any(
        object_words(o.materials, o.description, request)[0] or object_words(o.materials, o.description, request)[1]
        for o in spec.objects))


def look_checks(spec: Any, meshes: dict[str, Any], found: dict[str, Any] | None, request: str) -> tuple[dict[str, Check], dict[str, str]]:
    """The material and lighting checks of a task (``spec``: ``TaskSpec``) on the worker's
    ``look_data`` answer (``found``), with ``meshes`` ``{name: (trimesh, slots)}`` from ``mesh_data``.

    Returns:
        ``({component name: Check}, {component name: why not judged})``: ``<object>/material_look``
        per object whose words ask a material or colour, and ``scene/exposure``, ``key_fill``,
        ``shadow``, ``key_power`` when light is asked. An object in the scene that does not show
        in the camera's view (hidden behind another, out of frame) while another asked object
        does is not judged; one missing from the render (absent, ``hide_render``), or every asked
        object unseen, fails.
    """
    wanted = {o.name: object_words(o.materials, o.description, request) for o in spec.objects}
    wanted = {n: w for n, w in wanted.items() if w[0] or w[1]}
    lit = lit_asked(request)
    out: dict[str, Check] = {}
    skipped: dict[str, str] = {}
    if not wanted and not lit:
        return out, skipped
    lighting = ("exposure", "key_fill", "shadow") + (("key_power",) if product_shot(request) else ())
    if found is None or not found.get("camera"):
        why = f"the look could not be rendered: {found['error']}" if found and found.get("error") else \
            "no scene camera: nothing renders, so the look cannot be seen"
        for name in wanted:
            out[f"{name}/material_look"] = Check("material_look", False, 0.0, why)
        for check in lighting if lit else ():
            out[f"scene/{check}"] = Check(check, False, 0.0, why)
        return out, skipped
    data = dict(np.load(found["file"]))
    names = found["names"]
    measured = {name: measure_object(data, names.index(name)) if name in names else None for name in wanted}
    shown = any(m is not None for m in measured.values())
    for name, (fams, cols, source) in wanted.items():
        if name in names and measured[name] is None and shown:
            # in the scene and rendered, but no pixel of it is the nearest surface (behind another
            # part, or out of frame): the shot does not show its material, so it is not judged;
            # whether the camera sees enough of the object is assembly/in_view's to say
            skipped[f"{name}/material_look"] = (f"{name} is in the scene but does not show in the camera's view, so its "
                                                f"material cannot be seen and is not judged (asked: {' '.join(fams + cols)})")
            continue
        out[f"{name}/material_look"] = material_look(name, fams, cols, source, measured[name])
    if not lit:
        return _timed(out, found), skipped
    parts = [p for p in spec.assembly_parts() if p in names]
    subject = np.isin(data["index"], [names.index(p) for p in parts])
    out["scene/exposure"] = exposure(data, subject)
    out["scene/key_fill"] = key_fill(data, subject) if subject.any() else Check("key_fill", False, 0.0, "the subject does not show")
    present = [meshes[p][0] for p in parts if p in meshes]
    cast = None
    if present and subject.any():
        vertices = np.concatenate([m.vertices for m in present])
        floor_z = float(vertices[:, 2].min())
        size = float(np.ptp(vertices, axis=0).max())
        import trimesh

        samples = np.concatenate([trimesh.sample.sample_surface(m, 2000, seed=0)[0] for m in present if len(m.faces)] + [vertices])
        cast = shadow(data, subject, samples, floor_z, size)
    if cast is None:
        skipped["scene/shadow"] = "the render shows no floor under or beside the subject, so no shadow to judge"
    else:
        out["scene/shadow"] = cast
    if product_shot(request):
        out["scene/key_power"] = key_power(found["lights"], found["exposure_ev"])
    return _timed(out, found), skipped


def _timed(out: dict[str, Check], found: dict[str, Any]) -> dict[str, Check]:
    """The worker's seconds per render (``look_data``'s ``seconds``) in the first check's detail, for the benchmark."""
    if out:
        first = next(iter(out.values()))
        first.detail["look_seconds"] = found.get("seconds", {})
    return out

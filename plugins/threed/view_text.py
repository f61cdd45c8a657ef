"""What a render shows, in words: the text a model that cannot see images reads instead of the picture.

``summarize`` (numpy only; it runs inside the Blender worker right after ``render_preview``,
``plugins.threed.probe.render_view`` gathers its inputs) reduces an object-index map of the
camera's frame to numbers per object; ``describe`` turns them into a few lines of text. Both are
importable without Blender, so they are tested on made-up maps too.

The object-index map is ``probe.view_depths``: a grid of rays through pixel centres of the
camera frame (``probe.VIEW_WIDTH`` = 96 across), the depth (m) at which each ray first meets each
object, ``inf`` where it misses. Per object:

- **share**: the fraction of the frame where it is the nearest object (what the render shows of it);
- **outline**: the fraction where any ray meets it, hidden or not; ``outline - share`` is hidden
  behind other objects, and **hidden_by** names the nearest object over those rays (share of the
  outline each);
- **where**: the centre of its shown pixels in thirds of the frame ("top left" ... "bottom
  right"), and their box in percent of the frame (x from the left, y from the top);
- **cut**: the frame edges its projected vertices pass while part of it is in the frame (cut off
  by the frame there); an object no ray meets is **off camera** (which side, or behind the
  camera) when its projection lies outside the frame, else **too small** to be hit at this
  resolution (thinner than one ray spacing, about 1% of the frame's width);
- **colour**: the mean of the rendered PNG's pixels (display-referred sRGB, 0-255) at its shown
  rays, with a rough colour name.

``background`` is the fraction of rays that meet no object. Shares are of the ray grid, so they
are exact to about one ray (1/6912 of a 96x72 frame).
"""

from __future__ import annotations

import colorsys
from typing import Any

import numpy as np

#: Objects listed by ``describe``, the largest first; the rest are counted.
MAX_LISTED = 16
THIRDS = (("top", "middle", "bottom"), ("left", "centre", "right"))


def summarize(names: list[str], depth: np.ndarray, extents: list[dict[str, Any] | None], pixels: np.ndarray | None) -> dict[str, Any]:
    """Numbers per object of one render's object-index map (module docstring).

    Args:
        names: the objects, in the order of ``depth``'s first axis.
        depth: (n, h, w) float depths in metres along each ray, ``inf`` where it misses; row 0 is
            the frame's top.
        extents: per object, its vertices' projection into the frame: ``{"x": [min, max], "y":
            [min, max]}`` in frame units (0-1, x from the left, y from the BOTTOM, Blender's
            ``world_to_camera_view``) over the vertices in front of the camera, and
            ``"behind": True`` when none is; None when the object has no vertices.
        pixels: the render sampled at the rays' centres, (h, w, 3) floats in [0, 1] (sRGB as
            stored in the PNG), or None.

    Returns:
        ``{"size": [w, h], "background": fraction, "objects": [{"name", "share", "outline",
        "hidden_by": {name: fraction of outline}, "where", "box": [x0, y0, x1, y1] percent,
        "cut": [edges], "status", "colour": {"rgb", "name"} or None}]}``; ``status`` is one of
        ``shown``, ``hidden``, ``off camera: ...``, ``too small``.

    Raises:
        ValueError: ``depth`` is not (len(names), h, w).
    """
    if depth.ndim != 3 or depth.shape[0] != len(names):
        raise ValueError(f"depth must be (objects, height, width) with {len(names)} objects, got shape {depth.shape}")
    n, h, w = depth.shape
    total = h * w
    hit = np.isfinite(depth)
    nearest = np.argmin(np.where(hit, depth, np.inf), axis=0) if n else np.zeros((h, w), dtype=int)
    any_hit = hit.any(axis=0) if n else np.zeros((h, w), dtype=bool)
    objects = []
    for k, name in enumerate(names):
        shown = any_hit & (nearest == k)
        outline = hit[k]
        entry: dict[str, Any] = {"name": name, "share": float(shown.sum()) / total, "outline": float(outline.sum()) / total,
                                 "hidden_by": {}, "where": None, "box": None, "cut": [], "colour": None}
        behind = outline & ~shown
        if behind.any():
            counts = np.bincount(nearest[behind], minlength=n)
            entry["hidden_by"] = {names[j]: float(c) / float(outline.sum()) for j, c in enumerate(counts) if c}
        if shown.any():
            rows, cols = np.nonzero(shown)
            entry["where"] = f"{THIRDS[0][min(2, int(rows.mean() / h * 3))]} {THIRDS[1][min(2, int(cols.mean() / w * 3))]}"
            entry["box"] = [round(100 * cols.min() / w), round(100 * rows.min() / h), round(100 * (cols.max() + 1) / w),
                            round(100 * (rows.max() + 1) / h)]
            if pixels is not None:
                rgb = pixels[shown].mean(axis=0)
                entry["colour"] = {"rgb": [round(255 * float(c)) for c in rgb], "name": colour_name(rgb)}
        entry["cut"], entry["status"] = _frame_status(extents[k] if k < len(extents) else None, bool(outline.any()), bool(shown.any()))
        objects.append(entry)
    return {"size": [w, h], "background": float((~any_hit).sum()) / total, "objects": objects}


def _frame_status(extent: dict[str, Any] | None, met: bool, shown: bool) -> tuple[list[str], str]:
    """The edges cutting the object, and its status (``summarize``)."""
    if extent is None:
        return [], "off camera: it has no geometry"
    if extent.get("behind"):
        return [], "off camera: behind the camera"
    (x0, x1), (y0, y1) = extent["x"], extent["y"]
    outside = [side for side, past in (("left", x0 < 0), ("right", x1 > 1), ("bottom", y0 < 0), ("top", y1 > 1)) if past]
    if met:
        return outside, "shown" if shown else "hidden"
    if x1 < 0 or x0 > 1 or y1 < 0 or y0 > 1:
        sides = [s for s, past in (("left of", x1 < 0), ("right of", x0 > 1), ("below", y1 < 0), ("above", y0 > 1)) if past]
        return [], f"off camera: {' and '.join(sides)} the frame"
    return [], "too small"


def colour_name(rgb: Any) -> str:
    """A rough English name for an sRGB colour (components 0-1): by HSV value, saturation, hue."""
    hue, sat, val = colorsys.rgb_to_hsv(*(float(c) for c in rgb))
    if val < 0.12:
        return "black"
    if sat < 0.15:
        return "white" if val > 0.85 else "light grey" if val > 0.6 else "grey" if val > 0.3 else "dark grey"
    degrees = hue * 360
    if 15 <= degrees < 50:  # the woods, leather and skin tones: orange by hue, named by how dark and grey
        if val < 0.65:
            return "brown"
        if sat < 0.4:
            return "tan"
    for limit, name in ((15, "red"), (45, "orange"), (70, "yellow"), (165, "green"), (200, "cyan"), (255, "blue"), (290, "purple"),
                        (340, "pink"), (361, "red")):
        if degrees < limit:
            return name
    return "red"


#: Objects named as hiding one object; the rest are counted ("and 3 others").
MAX_HIDERS = 3


def _percent(fraction: float) -> str:
    value = 100 * fraction
    if value >= 1 or value == 0:
        return f"{value:.0f}%"
    return f"{value:.1f}%" if value >= 0.1 else "<0.1%"


def describe(summary: dict[str, Any]) -> str:
    """The summary as text: one line per object (largest share first), then the background.

    Args:
        summary: from ``summarize``.

    Returns:
        Lines such as ``- Seat: 23% of the frame, middle centre (x 30-70%, y 40-62%), 12% of it
        hidden by Backrest, colour #8a5a2e (brown)`` or ``- Lamp: not in the picture: off camera:
        right of the frame``.
    """
    w, h = summary["size"]
    lines = [f"What the render shows (an object map of {w}x{h} rays across the camera's frame):"]
    ranked = sorted(summary["objects"], key=lambda o: (-o["share"], -o["outline"], o["name"]))
    for obj in ranked[:MAX_LISTED]:
        lines.append(f"- {obj['name']}: {_object_text(obj)}")
    if len(ranked) > MAX_LISTED:
        rest = ranked[MAX_LISTED:]
        lines.append(f"- and {len(rest)} more object(s) covering {_percent(sum(o['share'] for o in rest))} of the frame together")
    lines.append(f"Background (no object): {_percent(summary['background'])} of the frame.")
    return "\n".join(lines)


def _object_text(obj: dict[str, Any]) -> str:
    status = obj["status"]
    if status.startswith("off camera"):
        return f"not in the picture ({status})"
    if status == "too small":
        return "in the frame but too small to show (thinner than one ray)"
    by = sorted(obj["hidden_by"].items(), key=lambda kv: (-kv[1], kv[0]))
    if status == "hidden":
        return (f"hidden: entirely behind {', '.join(name for name, _ in by)} "
                f"(its outline would cover {_percent(obj['outline'])} of the frame)")
    x0, y0, x1, y1 = obj["box"]
    parts = [f"{_percent(obj['share'])} of the frame, {obj['where']} (x {x0}-{x1}%, y {y0}-{y1}% from the top-left)"]
    if by:
        named = ", ".join(f"{name} covers {_percent(share)} of it" for name, share in by[:MAX_HIDERS])
        rest = f", and {len(by) - MAX_HIDERS} other(s) {_percent(sum(v for _, v in by[MAX_HIDERS:]))}" if len(by) > MAX_HIDERS else ""
        parts.append(f"partly hidden: {named}{rest}")
    if obj["cut"]:
        parts.append(f"cut off by the frame's {' and '.join(obj['cut'])} edge{'s' * (len(obj['cut']) > 1)}")
    if obj["colour"]:
        r, g, b = obj["colour"]["rgb"]
        parts.append(f"colour #{r:02x}{g:02x}{b:02x} ({obj['colour']['name']})")
    return ", ".join(parts)

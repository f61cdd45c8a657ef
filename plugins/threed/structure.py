"""The object's structure from the request's words and the built scene, without an ``assembly``
section (``threed-geometry/8``): which parts the words name and how many, that the parts are
distinct and do not pass through each other, that they hold together, that nothing floats above
the floor, and that a vessel holds something.

A user's request ("a chair with four legs") never carries a ``task.json`` ``assembly`` section,
so the reward derives one from the words (``read_request``) and the scene's object names
(``part_kind``):

- **which object**: an object word (``OBJECT_PARTS``: chair, stool, table, bookshelf, lamp,
  mug...) says which parts it has; a word followed by another object word is a modifier (a
  "table lamp" is a lamp, a "side table" a table).
- **which parts and how many**: a number word or digits before a part word, at most two words
  between that are neither numbers nor units ("four legs", "four-legged", "five walnut shelves",
  "two side panels"), asks exactly that many; an article ("a round base", "with a backrest")
  names the part (at least one).
- **which scene object is which part**: an object's name split into words (``Leg.FL`` -> leg,
  ``Tabletop`` -> top, ``Board.3`` -> shelf, ``Post.L`` -> back); its bodies (pieces joined by
  edges: an array of five boards in one object is five) are how many of that part it holds.

The checks (each a ``checks.Check``; lengths in metres), measured on the meshes:

- ``parts``: every part the words count ("four legs") has that count (bodies of the objects named
  for it; none when no object is); a part named without a number ("a round base") is listed with
  what was found, not judged (a lamp joined into one object named ``Base`` holds its shade too);
  nothing is counted in a scene that names no part.
- ``distinct``: no two parts are coincident (their boolean intersection, by manifold3d, holds at
  least ``COINCIDENT_SHARE`` of the smaller one's volume: four legs stacked at one place) and no
  two parts of a kind that stands apart (legs, shelves) touch each other (shelves fused into one
  slab).
- ``through``: no part passes through another: the smaller part minus the larger (manifold3d's
  boolean difference) falls into two or more pieces of at least ``THROUGH_SHARE`` of its volume,
  the second largest under ``STUB_SHARE`` (a stub poking out: a shelf through a side panel, a leg
  through the seat). A part sunk into another and ending inside it (a pole in a solid shade, a
  handle in a mug's wall) is a joint; one that continues well past it on both sides (a back leg
  rising through the seat into a post, crossing rails) is construction.
- ``connected``, ``on_floor``, ``cavity``: ``plugins.threed.assembly``'s own checks, on the parts
  the scene holds: the lowest part on the floor (z = 0 with a task file; in a free-form scene the
  top of a support the artist modelled, ``supports``: a floor plane, a table top the object stands
  on, which is then no part of the object; else z = 0, or the object's lowest point when it is
  below that), every part of a kind
  that stands (legs, sides, a base) on the level the lowest of them reaches, and a vessel's cavity (the part named for the
  vessel or ``body``, else the largest) holding the volume the words give ("holding 250 ml"), or
  ``VESSEL_SHARE`` of its bounding box.

Boolean volumes need closed solids: a pair with an open part is not measured (named in the
detail). Parts are named objects; a build joined into one mesh is one part (nothing to count).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import trimesh

from plugins.threed import assembly, checks
from plugins.threed.checks import Check

#: An intersection holding this share of the smaller part's volume makes two parts coincident.
COINCIDENT_SHARE = 0.5
#: A piece of a part outside another holding this share of its volume counts as one side of it.
THROUGH_SHARE = 0.01
#: ... and a part out on two sides passes through when the smaller side holds less than this share: a
#: stub poking out (a board through a side panel, a leg through the seat). Two large sides are a part
#: that continues (a back leg rising through the seat into a post, two rails crossing).
STUB_SHARE = 0.25
#: Without a volume in the words, a vessel holds at least this share of its bounding box.
VESSEL_SHARE = 0.05
#: Parts closer than this (m) touch, as ``assembly.contact_tolerance``'s default.
CONTACT_TOLERANCE_M = 0.002

#: part kind -> the words that name it, in a request or in a scene object's name.
PART_WORDS: dict[str, tuple[str, ...]] = {
    "leg": ("leg", "legs", "legged"),
    "seat": ("seat", "seats"),
    "back": ("back", "backs", "backrest", "backrests", "post", "posts", "slat", "slats", "spindle", "spindles", "splat"),
    "top": ("top", "tops", "tabletop", "desktop", "worktop"),
    "shelf": ("shelf", "shelves", "board", "boards"),
    "side": ("side", "sides"),
    "base": ("base", "bases", "foot"),
    "pole": ("pole", "poles", "rod", "stand"),
    "shade": ("shade", "shades", "lampshade"),
    "handle": ("handle", "handles"),
    "arm": ("arm", "arms", "armrest", "armrests"),
    "drawer": ("drawer", "drawers"),
    "door": ("door", "doors"),
}
_WORD_KIND = {w: k for k, words in PART_WORDS.items() for w in words}
#: Part kinds' plurals where not "+s".
PLURALS = {"shelf": "shelves", "back": "backs"}
#: Part words that name a part only in an object's name (a "post" or "stand" in a request is rarely a part).
_NAME_ONLY_WORDS = {"post", "posts", "slat", "slats", "spindle", "spindles", "splat", "stand", "foot"}

#: object word -> the part kinds it has (each at least one unless the words count it).
OBJECT_PARTS: dict[str, tuple[str, ...]] = {
    "chair": ("seat", "leg", "back"), "armchair": ("seat", "back"), "stool": ("seat", "leg"), "bench": ("seat",),
    "table": ("top", "leg"), "desk": ("top",), "nightstand": ("top",),
    "bookcase": ("shelf", "side"), "bookshelf": ("shelf", "side"), "bookshelves": ("shelf", "side"), "shelving": ("shelf", "side"),
    "lamp": ("base",), "mug": ("handle",), "cabinet": (), "cupboard": (), "dresser": (), "sideboard": (), "wardrobe": (),
}
#: Vessels: the object must hold what is poured into it.
VESSEL_WORDS = ("mug", "cup", "teacup", "goblet", "vase", "bowl", "jar", "planter", "tumbler", "bucket", "jug", "pitcher", "beaker",
                "pen holder", "pencil holder", "flowerpot", "glass")
#: Kinds that stand on the floor (each such part must reach it) and kinds whose parts stand apart (never touch each other).
FLOOR_KINDS = ("leg", "side", "base")
APART_KINDS = ("leg", "shelf")

_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
            "eleven": 11, "twelve": 12, "single": 1, "pair": 2}
_ARTICLES = {"a", "an", "with", "and", "its", "the"}
_UNITS = {"m", "cm", "mm", "in", "inch", "inches", "ft", "foot", "feet", "metre", "metres", "meter", "meters", "ml", "l", "of"}
_VOLUME = re.compile(r"(\d+(?:\.\d+)?)\s*(ml|millilit(?:re|er)s?|cl|l|lit(?:re|er)s?|cm³|cm3|cc)\b", re.IGNORECASE)
_VOLUME_M3 = {"ml": 1e-6, "cl": 1e-5, "l": 1e-3, "cc": 1e-6, "cm³": 1e-6, "cm3": 1e-6}


@dataclass
class Asked:
    """What a request's words ask of the object's structure (``read_request``)."""

    objects: list[str] = field(default_factory=list)  # object words, in order ("chair")
    counts: dict[str, int] = field(default_factory=dict)  # part kind -> exact count the words give
    named: set[str] = field(default_factory=set)  # part kinds the words name (with or without a count)
    implied: set[str] = field(default_factory=set)  # part kinds the object words imply
    vessel: str | None = None  # the vessel word, when it must hold something
    volume_m3: float | None = None  # the volume the words ask it to hold

    @property
    def applies(self) -> bool:
        """The words name an object whose structure is known (or a vessel)."""
        return bool(self.objects or self.vessel)


def _tokens(text: str) -> list[str]:
    return re.findall(r"[a-z]+|\d+(?:\.\d+)?", text.lower())


def read_request(text: str) -> Asked:
    """The object words, part counts, named parts and vessel in ``text`` (a request)."""
    from plugins.threed.physics import _GLASS

    words = _tokens(text)
    asked = Asked()
    for i, w in enumerate(words):
        nxt = words[i + 1] if i + 1 < len(words) else ""
        if w in OBJECT_PARTS and nxt not in OBJECT_PARTS and w not in asked.objects:  # "table lamp": a lamp
            asked.objects.append(w)
            asked.implied.update(OBJECT_PARTS[w])
        kind = _WORD_KIND.get(w)
        if kind is None or w in _NAME_ONLY_WORDS or nxt in OBJECT_PARTS:  # "side table": a table
            continue
        for back in range(1, 4):  # a count or article at most two words before the part word
            if i - back < 0:
                break
            prev = words[i - back]
            count = _NUMBERS.get(prev) or (int(prev) if prev.isdigit() else None)
            if count is not None:
                between = words[i - back + 1:i]
                if not any(b in _UNITS or b in _NUMBERS or re.match(r"\d", b) or b in _WORD_KIND for b in between):
                    asked.counts[kind] = max(asked.counts.get(kind, 0), count)
                    asked.named.add(kind)
                break
            if prev in _ARTICLES:
                asked.named.add(kind)
                break
            if prev in _UNITS or re.match(r"\d", prev):
                break
    lowered = text.lower()
    for v in VESSEL_WORDS:
        if v == "glass":
            if _GLASS.search(text):
                asked.vessel = v
                break
        elif re.search(rf"\b{re.escape(v)}s?\b", lowered):
            asked.vessel = v
            break
    found = _VOLUME.search(text)
    if found:
        unit = found.group(2).lower()
        unit = "l" if unit.startswith("lit") else "ml" if unit.startswith("milli") else unit
        asked.volume_m3 = float(found.group(1)) * _VOLUME_M3[unit]
    return asked


def _name_words(name: str) -> list[str]:
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name)
    return re.findall(r"[a-z]+", spaced.lower())


def part_kind(name: str) -> str | None:
    """The part kind a scene object's name says it is (its first word that names one), or None."""
    return next((_WORD_KIND[w] for w in _name_words(name) if w in _WORD_KIND), None)


def _manifold(mesh: trimesh.Trimesh) -> Any | None:
    """The mesh as a ``manifold3d.Manifold``, or None when it is not a closed solid."""
    import manifold3d

    if not mesh.is_volume:
        return None
    m = manifold3d.Manifold(manifold3d.Mesh(vert_properties=np.asarray(mesh.vertices, np.float32),
                                            tri_verts=np.asarray(mesh.faces, np.uint32)))
    return None if m.status() != manifold3d.Error.NoError or m.is_empty() else m


def _boxes_overlap(a: trimesh.Trimesh, b: trimesh.Trimesh, margin: float = 0.0) -> bool:
    return bool(np.all(a.bounds[0] <= b.bounds[1] + margin) and np.all(b.bounds[0] <= a.bounds[1] + margin))


def overlaps(meshes: dict[str, trimesh.Trimesh]) -> dict[str, Any]:
    """Boolean intersections of every pair of parts whose boxes overlap (manifold3d).

    Returns:
        ``{"pairs": [{"a", "b", "overlap_m3", "share" (of the smaller part's volume), "smaller",
        "outside_pieces" (pieces of the smaller part outside the larger holding at least
        ``THROUGH_SHARE`` of it)}], "open": [parts not closed solids, not measured]}``.
    """
    solids = {n: _manifold(m) for n, m in meshes.items()}
    names = sorted(meshes)
    pairs = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            ma, mb = solids[a], solids[b]
            if ma is None or mb is None or not _boxes_overlap(meshes[a], meshes[b]):
                continue
            va, vb = ma.volume(), mb.volume()
            inter = (ma ^ mb).volume()
            if inter <= 0:
                continue
            small, large = (a, b) if va <= vb else (b, a)
            ms, ml, vs = (ma, mb, va) if va <= vb else (mb, ma, vb)
            pieces = sorted((p.volume() / vs for p in (ms - ml).decompose()), reverse=True)
            outside = [p for p in pieces if p >= THROUGH_SHARE]
            pairs.append({"a": a, "b": b, "overlap_m3": float(inter), "share": float(inter / vs), "smaller": small, "larger": large,
                          "outside_pieces": len(outside), "stub_share": float(outside[1]) if len(outside) > 1 else 0.0})
    return {"pairs": pairs, "open": sorted(n for n, s in solids.items() if s is None)}


def part_counts(asked: Asked, kinds: dict[str, str], meshes: dict[str, trimesh.Trimesh]) -> Check | str:
    """``parts``: the counted parts have their counts and the named ones exist; or why it is not judged.

    Args:
        kinds: ``{scene part: part kind}`` (``part_kind``) of the parts that name one.
        meshes: every part's mesh (bodies are counted per object).
    """
    if not kinds:
        return "no part of the scene is named for a part of the object (Leg, Seat, Shelf...), so none is counted"
    have: dict[str, int] = {}
    for name, kind in kinds.items():
        have[kind] = have.get(kind, 0) + checks.body_count(meshes[name])
    problems, judged = [], {}
    for kind in sorted(asked.named | asked.implied | set(asked.counts)):
        n = have.get(kind, 0)
        want = asked.counts.get(kind)
        judged[kind] = {"found": n, "asked": want if want is not None else "at least 1"}
        if want is not None and n != want:  # only a number counts: a part named with "a" may be inside another object
            problems.append(f"{n} {kind if n == 1 else PLURALS.get(kind, kind + 's')} (asked {want})")
    ok = not problems
    told = ", ".join(f"{v['found']} {k}" for k, v in judged.items())
    message = f"the parts the request names are there: {told}" if ok else "; ".join(problems)
    asked_kinds = len(judged) or 1
    return Check("parts", ok, 1.0 if ok else max(0.0, 1 - len(problems) / asked_kinds), message, {"parts": judged, "kinds": kinds})


def distinct(measured: dict[str, Any], kinds: dict[str, str], distances: dict[frozenset[str], float], tolerance_m: float) -> Check:
    """``distinct``: no two parts coincident, no two parts of a kind that stands apart touching."""
    coincident = [p for p in measured["pairs"] if p["share"] >= COINCIDENT_SHARE]
    fused = []
    for pair, d in distances.items():
        a, b = sorted(pair)
        if d <= tolerance_m and kinds.get(a) in APART_KINDS and kinds.get(a) == kinds.get(b) \
                and not any({p["a"], p["b"]} == {a, b} for p in coincident):
            fused.append((a, b, d))
    problems = [f"{p['a']} and {p['b']} coincide ({p['share']:.0%} of {p['smaller']} is inside the other)" for p in coincident]
    problems += [f"{a} and {b} touch ({kinds[a]}s stand apart; fused into one)" for a, b, _ in fused]
    ok = not problems
    message = "no two parts coincide" + (f" (not measured: {', '.join(measured['open'][:4])}, not closed)" if measured["open"] else "") \
        if ok else "; ".join(problems[:4]) + (f" (+{len(problems) - 4} more)" if len(problems) > 4 else "")
    return Check("distinct", ok, 1.0 if ok else 0.0, message,
                 {"coincident": [{k: p[k] for k in ("a", "b", "share")} for p in coincident],
                  "fused": [[a, b] for a, b, _ in fused], "not_measured": measured["open"]})


def through(measured: dict[str, Any]) -> Check:
    """``through``: no part passes through another (the smaller minus the larger in two or more pieces)."""
    crossing = [p for p in measured["pairs"] if p["share"] < COINCIDENT_SHARE and p["outside_pieces"] >= 2 and p["stub_share"] < STUB_SHARE]
    ok = not crossing
    sunk = [p for p in measured["pairs"] if p not in crossing]
    if ok:
        message = "no part passes through another" + (f" ({len(sunk)} sunk into another, ending inside it or continuing past it)"
                                                      if sunk else "")
    else:
        message = "; ".join(f"{p['smaller']} passes through {p['larger']} ({p['overlap_m3'] * 1e6:.1f} cm³ inside it, "
                            f"a stub of {p['stub_share']:.0%} of it out the other side)" for p in crossing[:4])
    return Check("through", ok, 1.0 if ok else 0.0, message,
                 {"pairs": [{k: (round(v, 9) if isinstance(v, float) else v) for k, v in p.items()} for p in measured["pairs"]],
                  "not_measured": measured["open"]})


#: A support is at most this thick for its width (a floor plane, a table top the object stands on).
SUPPORT_THINNESS = 0.1


def supports(meshes: dict[str, trimesh.Trimesh], tolerance_m: float) -> list[str]:
    """The parts of a free-form scene the object stands on, not parts of it: a thin part (height at
    most ``SUPPORT_THINNESS`` of its width) not named for a part (``part_kind``: a wide flat
    ``Base`` is the lamp's) whose top is at or below the others' lowest point and whose footprint
    covers theirs (a floor plane, a table top the lamp stands on)."""
    found = []
    for name, m in meshes.items():
        others = [o for n, o in meshes.items() if n != name]
        if not others or part_kind(name) is not None or m.extents[2] > SUPPORT_THINNESS * max(float(m.extents[0]), float(m.extents[1])):
            continue
        lo = np.min([o.bounds[0] for o in others], axis=0)
        hi = np.max([o.bounds[1] for o in others], axis=0)
        if m.bounds[1][2] <= lo[2] + tolerance_m and np.all(m.bounds[0][:2] <= lo[:2] + tolerance_m) \
                and np.all(m.bounds[1][:2] >= hi[:2] - tolerance_m):
            found.append(name)
    return found


def on_floor(meshes: dict[str, trimesh.Trimesh], standing: list[str], floor_z_m: float, tolerance_m: float) -> Check:
    """``on_floor``: the object's lowest part rests on the floor and no part sinks below it
    (``assembly.on_floor``), and every part of a kind that stands (``standing``: legs, sides, a
    base) reaches the level the lowest of them stands on (a leg lifted off the floor, while the
    others stand on it or on a modelled table top, floats)."""
    whole = assembly.on_floor(meshes, [], floor_z_m, tolerance_m)
    if not standing:
        return whole
    level = min(float(meshes[n].bounds[0][2]) for n in standing)
    feet = assembly.on_floor({n: meshes[n] for n in standing}, standing, level, tolerance_m)
    if whole.passed and feet.passed:
        return Check("on_floor", True, 1.0, f"{', '.join(standing[:6])} stand{'s' if len(standing) == 1 else ''} on one level; {whole.message}",
                     {**whole.detail, "standing_level_z_m": level})
    failing = [c for c in (whole, feet) if not c.passed]
    return Check("on_floor", False, min(c.value for c in failing), "; ".join(c.message for c in failing),
                 {**whole.detail, "standing_level_z_m": level})


def _vessel_part(asked: Asked, meshes: dict[str, trimesh.Trimesh]) -> str:
    words = {*(asked.vessel or "").split(), "body", "bowl", "cup", "mug", "glass", "vase", "holder"}
    named = [n for n in meshes if set(_name_words(n)) & words]
    pool = named or list(meshes)
    return max(pool, key=lambda n: float(np.prod(meshes[n].extents)))


#: The derived checks, named ``structure/<check>``.
STRUCTURE_CHECKS = ("parts", "distinct", "through", "connected", "on_floor", "cavity")


def structure_checks(asked: Asked, meshes: dict[str, trimesh.Trimesh], expected: list[str], distances: dict[frozenset[str], float] | None,
                     tolerance_m: float, floor_z_m: float = 0.0, stated: set[str] = frozenset()) -> tuple[dict[str, Check], dict[str, str]]:
    """The structure checks the words ask, on the scene's parts.

    Args:
        asked: ``read_request`` of the request's words.
        meshes: ``{part: mesh}`` of the parts in the scene (world coordinates, m).
        expected: every part the object should have (the task's objects; the scene's parts when free-form).
        distances: ``assembly.contact_distances`` of the worker's contacts; None when it measured none
            (``connected`` is not judged, ``distinct`` judges coincidence only).
        tolerance_m: parts closer than this touch.
        stated: the checks the task's ``assembly`` states itself (``connected``, ``on_floor``, ``cavity``): not derived again.

    Returns:
        ``({check: Check}, {check: why not judged})``, together covering ``STRUCTURE_CHECKS``.
    """
    if not asked.applies:
        why = "the request names no object whose parts are known (a chair, table, bookshelf, lamp, mug...), so its structure is not derived"
        return {}, {n: why for n in STRUCTURE_CHECKS}
    found: dict[str, Check] = {}
    skipped: dict[str, str] = {}
    if not meshes:
        for n in STRUCTURE_CHECKS:
            found[n] = Check(n, False, 0.0, "none of the object's parts is in the scene")
        return found, skipped
    kinds = {n: k for n in meshes if (k := part_kind(n)) is not None}
    counted = part_counts(asked, kinds, meshes)
    if isinstance(counted, str):
        skipped["parts"] = counted
    else:
        found["parts"] = counted
    measured = overlaps(meshes)
    found["distinct"] = distinct(measured, kinds, distances or {}, tolerance_m)
    found["through"] = through(measured)
    for name, why in (("connected", "task.json's assembly states it (assembly/connected)"),
                      ("on_floor", "task.json's assembly names the parts on the floor (assembly/on_floor)"),
                      ("cavity", "task.json's assembly states the cavity (assembly/cavity)")):
        if name in stated:
            skipped[name] = why
    if "connected" not in skipped:
        if distances is None:
            skipped["connected"] = "the worker measured no contacts between the parts"
        elif len(expected) > 1:
            found["connected"] = assembly.connected(expected, distances, tolerance_m, present=set(meshes))
        else:
            skipped["connected"] = "the object has one part"
    if "on_floor" not in skipped:
        found["on_floor"] = on_floor(meshes, [n for n, k in kinds.items() if k in FLOOR_KINDS], floor_z_m, tolerance_m)
    if "cavity" not in skipped:
        if asked.vessel is None:
            skipped["cavity"] = "the request names no vessel (a mug, cup, glass, vase, bowl...)"
        else:
            part = _vessel_part(asked, meshes)
            want = asked.volume_m3 if asked.volume_m3 else VESSEL_SHARE * float(np.prod(meshes[part].extents))
            check = assembly.cavity(part, meshes[part], want)
            if not asked.volume_m3:
                check.message += f" ({VESSEL_SHARE:.0%} of its bounding box: a {asked.vessel} holds something)"
            found["cavity"] = check
    return found, skipped

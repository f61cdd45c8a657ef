"""Smooth 2D profiles for ``lathe``: a centripetal Catmull-Rom spline through the given points.

Pure Python (no ``bpy``), so the agent process and the worker share it. A centripetal spline
(alpha 0.5) passes through every point and neither loops nor overshoots between unevenly spaced
points, so a wine glass's bowl from six points comes out as one smooth curve; points listed as
``sharp`` stay corners (the spline is split there), as do the ends of an open profile.
"""

from __future__ import annotations

import math

Point = tuple[float, float]


def _knot(t: float, a: Point, b: Point) -> float:
    return t + max(math.dist(a, b), 1e-12) ** 0.5


def _lerp(a: Point, b: Point, ta: float, tb: float, t: float) -> Point:
    if tb - ta < 1e-15:
        return a
    wa, wb = (tb - t) / (tb - ta), (t - ta) / (tb - ta)
    return (wa * a[0] + wb * b[0], wa * a[1] + wb * b[1])


def _segment(p0: Point, p1: Point, p2: Point, p3: Point, steps: int) -> list[Point]:
    """Points of the centripetal Catmull-Rom curve from ``p1`` to ``p2`` (p1 included, p2 not), ``steps`` of them."""
    t0 = 0.0
    t1 = _knot(t0, p0, p1)
    t2 = _knot(t1, p1, p2)
    t3 = _knot(t2, p2, p3)
    out = []
    for i in range(steps):
        t = t1 + (t2 - t1) * i / steps
        a1, a2, a3 = _lerp(p0, p1, t0, t1, t), _lerp(p1, p2, t1, t2, t), _lerp(p2, p3, t2, t3, t)
        b1, b2 = _lerp(a1, a2, t0, t2, t), _lerp(a2, a3, t1, t3, t)
        out.append(_lerp(b1, b2, t1, t2, t))
    return out


def smooth_profile(points: list[Point], steps: int = 8, sharp: set[int] | frozenset[int] = frozenset(),
                   closed: bool = False, axis_eps: float = 1e-6) -> tuple[list[Point], list[int]]:
    """A spline through ``points`` ([r, z], m) with ``steps`` points per input segment.

    Args:
        points: the profile, at least 2 points, r >= 0.
        steps: output points per input segment (1 = the polyline itself).
        sharp: indices of points that stay corners (the curve is split there); an open
            profile's ends always are.
        closed: the last point joins the first (the curve wraps around).
        axis_eps: interpolated points this close to the axis (r) or past it are dropped, so only
            given points make poles.

    Returns:
        ``(profile, kept)``: the smooth profile and, for each input point, its index in it.
    """
    n = len(points)
    corners = {i for i in sharp if 0 <= i < n}
    if not closed:
        corners |= {0, n - 1}
    out: list[Point] = []
    kept: list[int] = []
    last = n if closed else n - 1
    for i in range(last):
        j = (i + 1) % n
        # at a corner the missing neighbour is the other end mirrored: the curve leaves it along the segment
        before = (2 * points[i][0] - points[j][0], 2 * points[i][1] - points[j][1]) if i in corners else points[(i - 1) % n]
        after = (2 * points[j][0] - points[i][0], 2 * points[j][1] - points[i][1]) if j in corners else points[(j + 1) % n]
        piece = _segment(before, points[i], points[j], after, steps)
        kept.append(len(out))
        out.append(points[i])
        out.extend(p for p in piece[1:] if p[0] > axis_eps)
    if not closed:
        kept.append(len(out))
        out.append(points[-1])
    return out, kept

"""Triangulating one polygon (an OBJ n-gon) by ear clipping, as Blender's polyfill does.

trimesh's loaders split a face of k corners into a fan from its first corner, which is right only
for a convex polygon: the fan of an L-shaped face covers the notch and leaves part of the face
out, so a closed mesh reads as having edges of three faces and open edges. Blender fills a
polygon by ear clipping (``BLI_polyfill_calc``) on its projection onto the polygon's plane. This
module does the same with numpy; it is pure Python and meant for the n-gons of one file, not for
polygons of many thousands of corners.
"""

from __future__ import annotations

import numpy as np


def plane_coordinates(points: np.ndarray) -> np.ndarray:
    """The corners projected onto the polygon's best-fit plane, as (k, 2) coordinates in which the
    polygon winds counter-clockwise (its normal is Newell's, which follows the corner order).

    Raises:
        ValueError: the polygon has no area (every corner on one line).
    """
    p = np.asarray(points, dtype=np.float64)
    q = np.roll(p, -1, axis=0)
    normal = np.array([((p[:, 1] - q[:, 1]) * (p[:, 2] + q[:, 2])).sum(),
                       ((p[:, 2] - q[:, 2]) * (p[:, 0] + q[:, 0])).sum(),
                       ((p[:, 0] - q[:, 0]) * (p[:, 1] + q[:, 1])).sum()])
    length = np.linalg.norm(normal)
    if not length > 0:
        raise ValueError("the polygon has no area")
    normal /= length
    u = np.cross(normal, np.eye(3)[int(np.argmin(np.abs(normal)))])
    u /= np.linalg.norm(u)
    v = np.cross(normal, u)  # (u, v, normal) right-handed: the winding is counter-clockwise in (u, v)
    centred = p - p.mean(axis=0)
    return np.stack([centred @ u, centred @ v], axis=1)


def _cross(o: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """z of (a - o) x (b - o) for 2-D points (broadcasting)."""
    return (a[..., 0] - o[..., 0]) * (b[..., 1] - o[..., 1]) - (a[..., 1] - o[..., 1]) * (b[..., 0] - o[..., 0])


def ear_clip(points: np.ndarray) -> np.ndarray:
    """Triangles covering a simple polygon, by ear clipping on its best-fit plane.

    The corners are tried in order from the second, so a convex polygon gets exactly the fan from
    its first corner that trimesh makes (nothing changes where the fan was right). An ear is a
    convex corner whose triangle holds no other remaining corner; where none is found (a
    self-crossing or degenerate polygon) the most convex corner is cut, so there are always
    k - 2 triangles. Each triangle keeps the polygon's winding.

    Args:
        points: (k, 3) corner positions in order, k >= 3.

    Returns:
        (k - 2, 3) indices into ``points``.
    """
    k = len(points)
    if k < 3:
        raise ValueError(f"a polygon needs at least 3 corners, got {k}")
    if k == 3:
        return np.array([[0, 1, 2]], dtype=np.int64)
    try:
        xy = plane_coordinates(points)
    except ValueError:  # no plane to clip on: every triangle is flat anyway
        return np.stack([np.zeros(k - 2, dtype=np.int64), np.arange(1, k - 1), np.arange(2, k)], axis=1)
    scale = float(np.abs(xy).max()) or 1.0
    eps = 1e-12 * scale * scale
    left = list(range(k))
    triangles = []
    while len(left) > 3:
        ring = np.array(left)
        prev, nxt = np.roll(ring, 1), np.roll(ring, -1)
        turn = _cross(xy[prev], xy[ring], xy[nxt])  # > 0 at a convex corner
        chosen = None
        for i in list(range(1, len(ring))) + [0]:
            if turn[i] <= eps:
                continue
            a, b, c = xy[prev[i]], xy[ring[i]], xy[nxt[i]]
            others = np.delete(ring, [(i - 1) % len(ring), i, (i + 1) % len(ring)])
            pts = xy[others]
            # a corner at the same place as one of the ear's (a polygon touching itself) does not block it
            same = (np.abs(pts - a).max(axis=1) <= 0) | (np.abs(pts - b).max(axis=1) <= 0) | (np.abs(pts - c).max(axis=1) <= 0)
            inside = (_cross(a, b, pts) >= -eps) & (_cross(b, c, pts) >= -eps) & (_cross(c, a, pts) >= -eps) & ~same
            if not inside.any():
                chosen = i
                break
        if chosen is None:
            chosen = int(np.argmax(turn))
        triangles.append((int(prev[chosen]), int(ring[chosen]), int(nxt[chosen])))
        del left[chosen]
    triangles.append(tuple(left))
    return np.array(triangles, dtype=np.int64)

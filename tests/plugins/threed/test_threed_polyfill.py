"""Ear clipping of one polygon (``plugins/threed/polyfill.py``): every triangle inside the
polygon and wound as it is, the fan kept for convex polygons."""

from __future__ import annotations

import numpy as np
import pytest

from plugins.threed.polyfill import ear_clip, plane_coordinates

L_SHAPE = np.array([[0, 0, 0], [2, 0, 0], [2, 1, 0], [1, 1, 0], [1, 2, 0], [0, 2, 0]], dtype=float)


def signed_areas(xy, triangles):
    a, b, c = (xy[triangles[:, i]] for i in range(3))
    return ((b[:, 0] - a[:, 0]) * (c[:, 1] - a[:, 1]) - (b[:, 1] - a[:, 1]) * (c[:, 0] - a[:, 0])) / 2


@pytest.mark.parametrize("start", range(6))
def test_an_l_shape_from_every_corner(start):
    polygon = np.roll(L_SHAPE, -start, axis=0)
    triangles = ear_clip(polygon)
    areas = signed_areas(polygon[:, :2], triangles)
    assert len(triangles) == 4 and (areas > 0).all() and areas.sum() == pytest.approx(3.0)


def test_a_tilted_star_keeps_its_winding_and_area():
    angle = np.linspace(0, 2 * np.pi, 41)[:-1]
    radius = np.where(np.arange(40) % 2 == 0, 1.0, 0.4)
    flat = np.stack([radius * np.cos(angle), radius * np.sin(angle), np.zeros(40)], axis=1)
    rotation = np.linalg.qr(np.random.default_rng(0).normal(size=(3, 3)))[0]
    rotation *= np.sign(np.linalg.det(rotation))  # a rotation, not a reflection
    triangles = ear_clip(np.roll(flat @ rotation.T, -1, axis=0))
    areas = signed_areas(np.roll(flat, -1, axis=0)[:, :2], triangles)
    shoelace = 0.5 * np.sum(flat[:, 0] * np.roll(flat[:, 1], -1) - np.roll(flat[:, 0], -1) * flat[:, 1])
    assert len(triangles) == 38 and (areas > 0).all() and areas.sum() == pytest.approx(shoelace)


def test_convex_polygons_get_the_fan_from_the_first_corner():
    hexagon = np.array([[np.cos(t), np.sin(t), 0.1 * np.sin(3 * t)] for t in np.linspace(0, 2 * np.pi, 7)[:-1]])
    assert ear_clip(hexagon).tolist() == [[0, 1, 2], [0, 2, 3], [0, 3, 4], [0, 4, 5]]


def test_a_flat_line_has_no_plane():
    with pytest.raises(ValueError, match="no area"):
        plane_coordinates(np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0]], dtype=float))
    assert len(ear_clip(np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0]], dtype=float))) == 2

"""fix-calc: the median of an even number of values is the mean of the middle two."""

import subprocess
import sys

import pytest

sys.path.insert(0, "/app")

import calc  # noqa: E402


@pytest.mark.parametrize("values, expected", [([3, 1, 2], 2), ([4, 1, 3, 2], 2.5), ([10, 2], 6), ([5], 5), ([1, 1, 9, 9], 5)])
def test_median(values, expected):
    assert calc.median(values) == expected


def test_median_leaves_its_input_alone():
    values = [4, 1, 3, 2]
    calc.median(values)
    assert values == [4, 1, 3, 2]


def test_median_of_nothing_is_an_error():
    with pytest.raises(ValueError):
        calc.median([])


def test_other_statistics_unchanged():
    assert calc.mean([4, 1, 3, 2]) == 2.5
    assert calc.spread([4, 1, 3, 2]) == 3


def test_command_line():
    out = subprocess.run([sys.executable, "/app/calc.py", "4", "1", "3", "2"], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["mean 2.5", "median 2.5", "spread 3"]

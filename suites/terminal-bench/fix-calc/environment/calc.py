"""Summary statistics of the numbers given on the command line."""

import sys


def mean(values):
    """The arithmetic mean; ValueError for no values."""
    if not values:
        raise ValueError("mean of no values")
    return sum(values) / len(values)


def median(values):
    """The middle value of the sorted values; ValueError for no values."""
    if not values:
        raise ValueError("median of no values")
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle]


def spread(values):
    """The largest value minus the smallest."""
    return max(values) - min(values)


def main(argv):
    values = [float(arg) for arg in argv]
    if not values:
        print("usage: calc.py NUMBER...", file=sys.stderr)
        return 2
    for name, statistic in (("mean", mean), ("median", median), ("spread", spread)):
        print(f"{name} {statistic(values):g}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

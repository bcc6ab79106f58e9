"""Small statistics helpers."""


def mean(values):
    """Return the arithmetic mean of a non-empty list of numbers."""
    return sum(values) / len(values)


def median(values):
    """Return the median of a non-empty list of numbers."""
    ordered = sorted(values)
    return ordered[len(ordered) // 2]

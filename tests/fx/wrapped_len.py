"""A module that makes the builtin ``len`` one node when traced (for test_trace)."""

from ember import fx

fx.wrap("len")


def rows_times(x):
    return x * len(x)

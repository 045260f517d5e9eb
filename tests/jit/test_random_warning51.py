"""The warning for Python's and NumPy's random numbers in a compiled function (mend51jit2):
an unseeded generator made with None warns, Ember's generator or a method of yours named
Random does not, and the warning points at the user's line."""

import random
import warnings

import numpy as np

import ember
from ember import jit

RNG = np.random.default_rng(0)


class Sampler:
    def Random(self):  # noqa: N802 (named as the class it is not)
        return 2.0


def _warned(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        jit.compile(fn)(ember.ones(2))
    return [m for m in w if "random numbers" in str(m.message)]


def test_unseeded_generators_warn():
    cases = (lambda x: x * float(np.random.default_rng(None).random()),
             lambda x: x * float(np.random.default_rng(seed=None).random()),
             lambda x: x * random.Random(None).random(),
             lambda x: x * float(np.random.default_rng().random()))
    for fn in cases:
        assert _warned(fn)


def test_seeded_or_not_numpys_do_not_warn():
    def ember_generator(x):
        g = ember.Generator()
        g.manual_seed(0)
        return x + ember.randn(2, generator=g)

    cases = (ember_generator, lambda x: x * Sampler().Random(),
             lambda x: x * float(np.random.default_rng(0).random()))
    for fn in cases:
        assert not _warned(fn)


def _helper(x):
    return x * random.random()


def test_the_warning_points_at_the_users_line():
    def made(x):
        return x * float(np.random.default_rng().random())

    for fn, line in ((lambda x: _helper(x), _helper.__code__.co_firstlineno + 1),
                     (made, made.__code__.co_firstlineno + 1)):
        assert {(w.filename, w.lineno) for w in _warned(fn)} == {(__file__, line)}

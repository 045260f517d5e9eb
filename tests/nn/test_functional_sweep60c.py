"""Fixes from the functional sweep of session 60 (sweep60c), checked against torch 2.13."""

import numpy as np

import ember
import ember.nn.functional as F


def test_hardsigmoid_hardswish_integer_inputs_do_not_wrap():
    # torch has no integer kernel; ember promotes to float, and must not wrap x + 3 in uint8
    # or int8 first (253 + 3 gave 0, so hardswish(253) was 0 and hardswish(255) 85)
    x = np.array([253, 255, 0, 2, 7], dtype=np.uint8)
    ref = x.astype(np.float64)
    want_sig = np.clip(ref + 3, 0, 6) / 6
    np.testing.assert_allclose(F.hardsigmoid(ember.tensor(x)).numpy(), want_sig, rtol=1e-6)
    np.testing.assert_allclose(F.hardswish(ember.tensor(x)).numpy(), ref * want_sig, rtol=1e-6)
    i8 = np.array([126, 127, -128], dtype=np.int8)
    np.testing.assert_allclose(F.hardswish(ember.tensor(i8)).numpy(), [126.0, 127.0, -0.0])

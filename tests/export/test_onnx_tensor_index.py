"""A 0-d index tensor argument: ``x[i]`` is refused while tracing (eagerly a view); the
documented form ``x[i.reshape(1)].squeeze(0)`` is a Gather that follows ``i`` at run time."""

import numpy as np
import pytest

import ember
from tests.export.onnx_helpers import run_onnx


def test_zero_d_index_is_refused_with_the_line():
    with pytest.raises(ember.onnx.ExportError, match=r"item\(\) needs the value of a traced"):
        ember.onnx.to_model(lambda x, i: x[i], (ember.randn(5, 4), ember.tensor(2)))


@pytest.mark.parametrize("fn, pick", [
    (lambda x, i: x[i.reshape(1)].squeeze(0), lambda a, i: a[i]),
    (lambda x, i: x[:, i.reshape(1)].squeeze(1), lambda a, i: a[:, i]),
])
def test_one_element_index_follows_i_at_run_time(fn, pick):
    x = ember.randn(5, 4)
    proto = ember.onnx.to_model(fn, (x, ember.tensor(2)))
    for i in (0, 3, -1):
        got, = run_onnx(proto, x.numpy(), np.array(i))
        np.testing.assert_array_equal(got, pick(x.numpy(), i))

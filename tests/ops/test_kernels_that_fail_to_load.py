"""A numba kernel module that fails to import (an unwritable cache, a numba that cannot
compile it) turns numba off and its caller runs NumPy's twin, the same values, in the call
that found it failing too. Each case runs in a process of its own (numba stays off there)."""

import subprocess
import sys

import pytest

_PROGRAM = """
import sys, warnings
import numpy as np
import ember, ember.nn.functional as F
warnings.simplefilter("ignore")
x = ember.randn(64, 300, 8, requires_grad=True)
c = ember.arange(300.0) / 300
cases = {
    "batch_norm_eval": lambda: F.batch_norm(x, c, c + 1, c + 2, c),
    "batch_norm_grad": lambda: F.batch_norm(x, None, None, c + 2, c, training=True),
    "elu": lambda: F.elu(x), "slope_grads": lambda: F.leaky_relu(x, 0.1),
    "hard": lambda: F.hardswish(x),
}
case = cases[sys.argv[1]]
want = ember.autograd.grad(case().square().sum(), x)[0].numpy()  # numba's kernels
sys.modules["ember.ops." + sys.argv[1] + "_numba"] = None  # its next import fails
from ember.backend import compiled
compiled._LOADED.clear()
got = ember.autograd.grad(case().square().sum(), x)[0].numpy()
assert not compiled.numba_enabled()
print(np.abs(got - want).max() / np.abs(want).max())
"""


@pytest.mark.parametrize("module", ["batch_norm_eval", "batch_norm_grad", "elu",
                                    "slope_grads", "hard"])
def test_numpy_runs_when_a_kernel_module_fails_to_load(module):
    pytest.importorskip("numba")
    done = subprocess.run([sys.executable, "-c", _PROGRAM, module], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert float(done.stdout.split()[-1]) < 1e-5

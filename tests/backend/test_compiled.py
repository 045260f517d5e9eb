"""The optional numba kernels: the switch, and the NumPy twins when numba is off or missing.
(Their values against PyTorch: tests/ops/test_activations.py runs the float32 kernels both
ways.)"""

import subprocess
import sys

import numpy as np
import pytest

import ember
from ember.backend import compiled


def test_environment_variable_turns_numba_off():
    pytest.importorskip("numba")
    code = "import ember.backend.compiled as c; print(c.numba_enabled())"
    for value, expected in (("0", "False"), ("1", "True")):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env={"EMBER_NUMBA": value, "PATH": ""}, check=True).stdout
        assert out.strip() == expected


def test_missing_numba_falls_back_to_numpy(monkeypatch):
    monkeypatch.setattr(compiled, "_numba", lambda: None)
    assert not compiled.numba_enabled()
    x = ember.linspace(-3, 3, 7)
    expected = [-0.00404951, -0.04550026, -0.15865525, 0.0, 0.84134475, 1.95449974,
                2.99595049]
    np.testing.assert_allclose(ember.gelu(x).numpy(), expected, atol=1e-6)


def test_use_numba_switches_the_kernels():
    pytest.importorskip("numba")
    saved = compiled.numba_enabled()
    x = ember.randn(300_000)
    try:
        results = []
        for on in (True, False):
            compiled.use_numba(on)
            assert compiled.numba_enabled() is on
            results.append(ember.erf(x).numpy())
    finally:
        compiled.use_numba(saved)
    np.testing.assert_allclose(results[0], results[1], atol=5e-7)


def test_ember_info_says_which_kernels_run(monkeypatch):
    report = ember.backend.capabilities().report()
    assert "kernels:" in report
    monkeypatch.setattr(compiled, "_numba", lambda: None)
    assert "pip install 'ember[fast]'" in ember.backend.capabilities().report()


def test_kernels_that_fail_to_load_turn_numba_off_with_a_warning(monkeypatch):
    pytest.importorskip("numba")
    monkeypatch.setitem(sys.modules, "ember.ops.erf_numba", None)  # its import now fails
    saved = compiled.numba_enabled()
    compiled.use_numba(True)
    try:
        with pytest.warns(RuntimeWarning, match="NumPy's run instead"):
            y = ember.gelu(ember.linspace(-3, 3, 7))
        assert not compiled.numba_enabled()
    finally:
        compiled.use_numba(saved)
    np.testing.assert_allclose(y.numpy()[[0, 3, 6]], [-0.00404951, 0.0, 2.99595049], atol=1e-6)

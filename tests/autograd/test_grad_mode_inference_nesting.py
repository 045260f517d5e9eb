"""Grad modes nested in inference_mode, against PyTorch: enable_grad inside inference_mode
reports grad mode on but records nothing; inference_mode(False) records again."""

import torch

import ember


def _trace(lib):
    w = lib.ones(2, requires_grad=True)
    seen = []

    def look():
        seen.append((lib.is_grad_enabled(), (w * 2).requires_grad))
    with lib.inference_mode():
        look()
        with lib.enable_grad():
            look()
            with lib.inference_mode(False):
                look()
        with lib.set_grad_enabled(True):
            look()
        with lib.inference_mode(False):
            look()
            with lib.no_grad():
                look()
        look()
    look()
    with lib.no_grad():
        lib.set_grad_enabled(True)
        look()
    look()
    return seen


def test_grad_modes_inside_inference_mode_like_torch():
    assert _trace(ember) == _trace(torch)
    assert _trace(ember)[1] == (True, False)  # enable_grad in inference_mode: no graph

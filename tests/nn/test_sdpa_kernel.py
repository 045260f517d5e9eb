"""ember.nn.attention: SDPBackend and sdpa_kernel choose between the math composite and the
blockwise (flash) kernel of scaled_dot_product_attention, as torch.nn.attention does."""

import doctest

import numpy as np
import pytest
import torch
import torch.nn.attention as tattn

import ember
import ember.nn.functional as F
from ember.nn.attention import SDPBackend, sdpa_kernel
from ember.ops import attention_backends


def _path(*args, **kwargs):
    """Which implementation ran: 'flash' (the blockwise primitive) or 'math'."""
    with ember.profiler.profile() as prof:
        F.scaled_dot_product_attention(*args, **kwargs)
    names = {e.name for e in prof.events()}
    return "flash" if "scaled_dot_product_attention" in names else "math"


def test_members_match_torch():
    assert {m.name: m.value for m in SDPBackend} == {
        name: int(m) for name, m in tattn.SDPBackend.__members__.items()}


def test_the_allowed_backends_decide_the_path():
    q = ember.randn(1, 2, 5, 4)
    assert _path(q, q, q) == "math"  # small: the composite is faster
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        assert _path(q, q, q) == "flash"
        with sdpa_kernel([SDPBackend.MATH]):  # nests, and restores on exit
            assert _path(q, q, q, is_causal=True) == "math"
        assert _path(q, q, q, is_causal=True) == "flash"
    assert attention_backends._Allowed.backends == attention_backends._EVERY
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.MATH], set_priority=True):
        assert _path(q, q, q) == "flash"
        assert _path(q, q, q, dropout_p=0.5) == "math"  # flash cannot: the next one runs
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION, SDPBackend.MATH, SDPBackend.FLASH_ATTENTION],
                     set_priority=True):
        assert _path(q, q, q) == "math"


@pytest.mark.parametrize("backend", [SDPBackend.MATH, SDPBackend.FLASH_ATTENTION])
def test_values_and_gradients_match_torch(backend):
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 2, 5, 3)) for _ in range(3))
    mask = rng.random((5, 5)) > 0.3
    ours = [ember.tensor(a, requires_grad=True) for a in (q, k, v)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    with sdpa_kernel(backend):
        out = F.scaled_dot_product_attention(*ours, attn_mask=ember.tensor(mask))
        small = [a.detach()[:1, :1, :3].requires_grad_() for a in ours]
        assert ember.autograd.gradcheck(
            lambda *a: F.scaled_dot_product_attention(*a, is_causal=True), small)
    with tattn.sdpa_kernel(getattr(tattn.SDPBackend, backend.name)):
        ref = torch.nn.functional.scaled_dot_product_attention(
            *theirs, attn_mask=torch.tensor(mask))
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), atol=1e-12)
    out.sum().backward()
    ref.sum().backward()
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=1e-12)


def test_no_viable_backend_raises_as_torch_and_says_why():
    q = ember.randn(1, 2, 4, 8)
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
        with pytest.raises(RuntimeError, match=r"No viable backend.*dropout_p=0.1 is not 0"):
            F.scaled_dot_product_attention(q, q, q, dropout_p=0.1)
        mask = ember.zeros(4, 4, requires_grad=True)
        with pytest.raises(RuntimeError, match="attn_mask requires grad"):
            F.scaled_dot_product_attention(q, q, q, attn_mask=mask)
    for unavailable in (SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION):
        with sdpa_kernel(unavailable), pytest.raises(
                RuntimeError, match=f"{unavailable.name}: PyTorch's CUDA kernel, not in Ember"):
            F.scaled_dot_product_attention(q, q, q)
    with sdpa_kernel([]), pytest.raises(RuntimeError, match=r"among the allowed \[\]"):
        F.scaled_dot_product_attention(q, q, q)
    with pytest.raises(TypeError, match="SDPBackend or a list"):
        with sdpa_kernel("math"):
            pass


def test_compiled_functions_follow_the_allowed_backends():
    attend = ember.jit.compile(lambda q: F.scaled_dot_product_attention(q, q, q))
    q = ember.randn(1, 2, 4, 8)
    expected = attend(q)  # traced with every backend allowed
    with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION), pytest.raises(
            RuntimeError, match="No viable backend"):
        attend(q)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        np.testing.assert_allclose(attend(q).numpy(), expected.numpy(), rtol=1e-5, atol=1e-6)
    assert "scaled_dot_product_attention backends" in ember.jit.explain()[-1]


def test_docstring_examples_run():
    result = doctest.testmod(attention_backends, extraglobs={"ember": ember, "F": F},
                             optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def test_multihead_attention_still_imports_from_its_old_module():
    from ember.nn.attention import MultiheadAttention

    assert MultiheadAttention is ember.nn.MultiheadAttention


def test_reachable_from_the_top_package_as_torch_nn_attention():
    assert ember.nn.attention.sdpa_kernel is sdpa_kernel  # no explicit submodule import needed
    assert torch.nn.attention.sdpa_kernel is tattn.sdpa_kernel


@pytest.mark.parametrize("flags", [{}, {"enable_flash": False}, {"enable_math": False},
                                   {"enable_math": False, "enable_flash": False}])
def test_deprecated_backends_cuda_sdp_kernel_as_torch(flags):
    q = np.random.default_rng(1).standard_normal((1, 2, 4, 8))
    results = []
    for lib in (torch, ember):
        with pytest.warns(FutureWarning, match="sdp_kernel"):
            with lib.backends.cuda.sdp_kernel(**flags):
                try:
                    t = lib.tensor(q)
                    results.append(lib.nn.functional.scaled_dot_product_attention(t, t, t).numpy())
                except RuntimeError:
                    results.append("no viable backend")
    if isinstance(results[0], str):
        assert results[1] == results[0]
    else:
        np.testing.assert_allclose(results[1], results[0], atol=1e-12)
    assert attention_backends.allowed_backends()[0] == attention_backends._EVERY  # restored

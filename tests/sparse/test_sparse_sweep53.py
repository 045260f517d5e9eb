"""Fixes from the differential sweep of session 53 against torch.sparse (/work/fuzz/sparse53):
``ember.sparse.sum``/``softmax``/``log_softmax`` and ``sparse_mask`` given a dense tensor
where a sparse one belongs raised a bare AttributeError; operands on two devices reached
NumPy (AttributeError, NoDataError) or named an inner op (``cat``, ``common_device: spmm``)."""

import warnings

import pytest

import ember
from ember.errors import ArgumentError, ArgumentTypeError, DeviceError

warnings.filterwarnings("ignore", message="Sparse")


@pytest.mark.parametrize("name, call", [
    ("sparse.sum", lambda x: ember.sparse.sum(x)),
    ("sparse.sum", lambda x: ember.sparse.sum(x, 1)),
    ("sparse.softmax", lambda x: ember.sparse.softmax(x, 1)),
    ("sparse.log_softmax", lambda x: ember.sparse.log_softmax(x, 1)),
    ("sparse_mask", lambda x: ember.ones(2, 2).sparse_mask(x)),
])
def test_dense_where_sparse_belongs_is_named(name, call):
    # torch raises NotImplementedError ("Could not run 'aten::_sparse_softmax' ... 'CPU'");
    # Ember raised AttributeError: 'Tensor' object has no attribute '_vals' / '_size'
    with pytest.raises(ArgumentTypeError, match=rf"^{name}: expected a sparse tensor, got a "
                                                r"dense Tensor.*Hint: .*to_sparse\(\)"):
        call(ember.ones(2, 2))


def _meta_sparse():
    return ember.eye(2).to_sparse().to("meta")


@pytest.mark.parametrize("op, call", [
    ("add", lambda s, m: s + m),
    ("sub", lambda s, m: s - m),
    ("mul", lambda s, m: s * m),
    ("add", lambda s, m: s.to_dense() + m),
    ("mul", lambda s, m: s * ember.ones(2, 2, device="meta")),
    ("add", lambda s, m: s.to_sparse_csr() + s.to_sparse_csr().to("meta")),
    ("sparse.mm", lambda s, m: ember.sparse.mm(s, ember.eye(2, device="meta"))),
    ("sparse.mm", lambda s, m: ember.sparse.mm(s, m)),
    ("matmul", lambda s, m: s @ m),
    ("sparse.mm", lambda s, m: ember.sparse.addmm(ember.eye(2), s, ember.eye(2, device="meta"))),
    # (review53a: was named by addmm's inner add; a 0-d tensor off the CPU is no number)
    ("sparse.addmm", lambda s, m: ember.sparse.addmm(ember.eye(2, device="meta"), s, s)),
    ("mul", lambda s, m: s * ember.tensor(2.0).to("meta")),
])
def test_operands_on_two_devices_are_refused_by_the_op(op, call):
    # was AttributeError ('bool' object has no attribute 'all'), NoDataError from numpy(),
    # or DeviceError naming "cat" / "common_device: spmm"
    s = ember.eye(2).to_sparse()
    with pytest.raises(DeviceError, match=rf"^{op}: expected both operands on one device, got "
                                          r"cpu and meta.*Hint: .*\.to\("):
        call(s, _meta_sparse())


def test_zero_dim_dense_operand_on_cpu_is_still_a_number():
    # a 0-d tensor is a scalar operand (as in PyTorch): no device check for it
    out = ember.eye(2).to_sparse() * ember.tensor(3.0)
    assert out.to_dense().tolist() == [[3.0, 0.0], [0.0, 3.0]]
    assert (_meta_sparse() * ember.tensor(3.0)).device.type == "meta"


@pytest.mark.parametrize("layout", ["coo", "csr"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_repr_of_a_sparse_tensor_off_the_cpu_names_its_device_once(layout, dtype):
    # PyTorch prints device='...' once, among the suffixes (before size), and the parts without
    # it; on meta no nnz. Ember printed device='meta' inside each part, and nnz=2.
    import torch
    texts = []
    for lib in (torch, ember):
        index, values = lib.tensor([[0, 1], [1, 0]]), lib.tensor([1.0, 2.0],
                                                                 dtype=getattr(lib, dtype))
        s = lib.sparse_coo_tensor(index, values, (2, 2))
        if layout == "csr":
            s = s.to_sparse_csr()
            s = lib.sparse_csr_tensor(s.crow_indices().to("meta"), s.col_indices().to("meta"),
                                      s.values().to("meta"), (2, 2)) if lib is torch else \
                s.to("meta")
        else:
            s = lib.sparse_coo_tensor(index.to("meta"), values.to("meta"), (2, 2)) \
                if lib is torch else s.to("meta")
        texts.append(repr(s))
    assert texts[1] == texts[0].replace("torch.", "ember.")


def test_gradient_of_a_dense_tensor_made_sparse_reaches_its_nonzeros():
    # docs/sparse.md (Gradients): as torch's after torch.sparse.sum; torch's x.grad after
    # S.sum() or S @ D holds every element's gradient instead (a documented difference)
    import torch
    a = [[0.0, 1.5, 0.0], [2.0, 0.0, -1.0]]
    grads = []
    for lib in (torch, ember):
        x = lib.tensor(a, dtype=lib.float64, requires_grad=True)
        lib.sparse.sum(x.to_sparse()).backward()
        grads.append(x.grad.tolist())
    assert grads[0] == grads[1] == [[0.0, 1.0, 0.0], [1.0, 0.0, 1.0]]
    x = ember.tensor(a, dtype=ember.float64, requires_grad=True)
    (x.to_sparse_csr() @ ember.ones(3, 2, dtype=ember.float64)).sum().backward()
    assert x.grad.tolist() == [[0.0, 2.0, 0.0], [2.0, 0.0, 2.0]]


_NORM_INDEX, _NORM_VALUES = [[0, 1, 1, 0], [1, 0, 0, 1]], [3.0, -4.0, 1.0, 2.0]  # uncoalesced


@pytest.mark.parametrize("args, kwargs", [
    ((), {}), ((1,), {}), ((float("inf"),), {}), ((float("-inf"),), {}), ((0,), {}),
    ((-1,), {}), ((3,), {}), ((0.5,), {}), ((None,), {}), (("fro",), {}),
    ((2,), {"dim": (0, 1)}), ((2,), {"dim": (-1, -2)}),
])
@pytest.mark.parametrize("form", ["method", "function"])
def test_norm_of_a_coo_tensor_matches_torch(args, kwargs, form):
    # was SparseUnsupported ("norm: not supported for ember.sparse_coo tensors"); torch's
    # S.norm() is the vector norm of the coalesced values, over all dimensions
    import torch
    out = []
    for lib in (torch, ember):
        s = lib.sparse_coo_tensor(lib.tensor(_NORM_INDEX),
                                  lib.tensor(_NORM_VALUES, dtype=lib.float64), (2, 2))
        out.append((s.norm(*args, **kwargs) if form == "method"
                    else lib.norm(s, *args, **kwargs)).item())
    assert out[1] == pytest.approx(out[0], rel=1e-12)


@pytest.mark.parametrize("kwargs, match", [
    ({"dim": 1}, "only supports full reductions"),
    ({"keepdim": True, "dim": (0, 1)}, "does not support keepdim=True"),
    ({"dtype": ember.float64}, "does not support .*'dtype'"),
    ({"p": "nuc"}, "nuc"),
])
def test_norm_of_a_coo_tensor_refuses_what_torch_refuses(kwargs, match):
    s = ember.sparse_coo_tensor(_NORM_INDEX, _NORM_VALUES, (2, 2))
    with pytest.raises(ArgumentError, match=rf"^norm: .*{match}"):
        s.norm(**kwargs)


def test_norm_of_a_sparse_tensor_has_a_gradient():
    # torch 2.13 has no backward for it (masked_fill_ on SparseCPU); Ember's is checked here
    check = ember.sparse.as_sparse_gradcheck(ember.autograd.gradcheck)
    s = ember.sparse_coo_tensor(_NORM_INDEX, _NORM_VALUES, (2, 2), dtype=ember.float64)
    for p in (2, 1, 3, float("inf")):
        assert check(lambda x, p=p: x.norm(p), s.requires_grad_(True), masked=True)
    csr = ember.tensor([[0.0, 3.0], [-4.0, 1.0]], dtype=ember.float64).to_sparse_csr()
    assert csr.norm().item() == pytest.approx(26 ** 0.5)

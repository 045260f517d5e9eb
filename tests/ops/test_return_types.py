"""ember.return_types: one named tuple type per op, named, printed and pickled as
torch.return_types' are (with Ember's module name)."""

import io
import pickle
import re
import warnings

import pytest
import torch

import ember

A = [[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]]
X = [[1.0, 5.0, 3.0], [7.0, 2.0, 2.0]]

# op: the call, made with ``t`` (torch or ember), ``x`` (2 x 3) and ``a`` (3 x 3 SPD)
CALLS = {
    "max": lambda t, x, a: x.max(dim=1),
    "min": lambda t, x, a: t.min(x, 1),
    "sort": lambda t, x, a: x.sort(),
    "topk": lambda t, x, a: x.topk(2),
    "kthvalue": lambda t, x, a: x.kthvalue(2),
    "median": lambda t, x, a: x.median(1),
    "nanmedian": lambda t, x, a: x.nanmedian(1),
    "mode": lambda t, x, a: x.mode(),
    "cummax": lambda t, x, a: x.cummax(1),
    "cummin": lambda t, x, a: t.cummin(x, 1),
    "aminmax": lambda t, x, a: x.aminmax(dim=0),
    "frexp": lambda t, x, a: t.frexp(x),
    "histogram": lambda t, x, a: t.histogram(x.flatten(), 3),
    "histogramdd": lambda t, x, a: t.histogramdd(x[:, :2], 2),
    "linalg_cholesky_ex": lambda t, x, a: t.linalg.cholesky_ex(a),
    "linalg_eig": lambda t, x, a: t.linalg.eig(a),
    "linalg_eigh": lambda t, x, a: t.linalg.eigh(a),
    "linalg_inv_ex": lambda t, x, a: t.linalg.inv_ex(a),
    "linalg_ldl_factor": lambda t, x, a: t.linalg.ldl_factor(a),
    "linalg_ldl_factor_ex": lambda t, x, a: t.linalg.ldl_factor_ex(a),
    "linalg_lstsq": lambda t, x, a: t.linalg.lstsq(a, a),
    "linalg_lu": lambda t, x, a: t.linalg.lu(a),
    "linalg_lu_factor": lambda t, x, a: t.linalg.lu_factor(a),
    "linalg_lu_factor_ex": lambda t, x, a: t.linalg.lu_factor_ex(a),
    "linalg_qr": lambda t, x, a: t.linalg.qr(a),
    "linalg_slogdet": lambda t, x, a: t.linalg.slogdet(a),
    "linalg_solve_ex": lambda t, x, a: t.linalg.solve_ex(a, a),
    "linalg_svd": lambda t, x, a: t.linalg.svd(a),
    "lu_unpack": lambda t, x, a: t.lu_unpack(*t.linalg.lu_factor(a)),
    "qr": lambda t, x, a: t.qr(a),
    "slogdet": lambda t, x, a: a.slogdet(),
    "svd": lambda t, x, a: t.svd(a),
    "geqrf": lambda t, x, a: t.geqrf(a),
    "triangular_solve": lambda t, x, a: t.triangular_solve(a, a.triu()),
    "_lu_with_info": lambda t, x, a: t.lu(a, get_infos=True),
}


def _call(t, name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (qr, lu, triangular_solve are deprecated)
        return CALLS[name](t, t.tensor(X, dtype=t.float64), t.tensor(A, dtype=t.float64))


def _field_lines(text):
    """The field names a repr shows at the start of its lines, in order."""
    return re.findall(r"^(\w+)=", text, re.MULTILINE)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_type_name_and_fields_match_torch(name):
    ours, theirs = _call(ember, name), _call(torch, name)
    assert type(ours) is getattr(ember.return_types, name)
    assert type(ours).__module__ == "ember.return_types"
    assert type(ours).__name__ == type(theirs).__name__ == name
    assert isinstance(ours, tuple) and len(ours) == len(theirs)
    assert repr(ours).startswith(f"ember.return_types.{name}(\n")
    assert _field_lines(repr(ours)) == _field_lines(repr(theirs)) == list(ours._fields)


@pytest.mark.parametrize("name", ["max", "linalg_lstsq", "histogramdd"])
def test_pickles_to_the_same_type(name):
    r = _call(ember, name)
    back = pickle.loads(pickle.dumps(r))
    assert type(back) is type(r)
    assert back._fields == r._fields


def test_prints_one_field_per_line_as_torch():
    r = ember.tensor([[1, 5], [7, 2]]).max(dim=1)
    assert str(r) == repr(r) == ("ember.return_types.max(\nvalues=tensor([5, 7]),\n"
                                 "indices=tensor([1, 0]))")


def test_built_from_fields_or_from_one_sequence():
    rt = ember.return_types
    assert rt.topk((1, 2)) == rt.topk(1, 2) == rt.topk(values=1, indices=2) == (1, 2)
    assert rt.topk((1, 2)).indices == 2
    with pytest.raises(TypeError):
        rt.topk((1, 2, 3))


def test_flows_through_jit_vmap_and_onnx():
    x = ember.randn(3, 4)
    out = ember.jit.compile(lambda v: v.max(1))(x)
    assert type(out) is ember.return_types.max
    assert ember.equal(out.indices, x.max(1).indices)
    assert type(ember.func.vmap(lambda v: v.sort())(x)) is ember.return_types.sort

    class TopK(ember.nn.Module):
        def forward(self, v):
            return v.topk(2)

    buffer = io.BytesIO()
    ember.onnx.export(TopK(), (x,), buffer)
    assert buffer.getvalue()


def test_nested_tensor_max_is_named_max():
    nt = ember.nested.nested_tensor([ember.tensor([1.0, 3.0]), ember.tensor([2.0, 0.0])])
    assert type(nt.max(1)) is ember.return_types.max
    assert type(nt.min(1)) is ember.return_types.min


@pytest.mark.parametrize("name", ["max", "aminmax", "linalg_lstsq", "linalg_ldl_factor_ex"])
def test_structseq_field_counts_as_torch(name):
    # (torch's types are structseqs, which count their fields; scripts read n_fields)
    mine, theirs = getattr(ember.return_types, name), getattr(torch.return_types, name)
    for attr in ("n_fields", "n_sequence_fields", "n_unnamed_fields"):
        assert getattr(mine, attr) == getattr(theirs, attr)


OUT_CALLS = {  # op given out=: what it returns is the ``<op>_out`` type, as torch's
    "max_out": lambda t, x, a, out: t.max(x, 0, out=out),
    "sort_out": lambda t, x, a, out: t.sort(x, out=out),
    "topk_out": lambda t, x, a, out: t.topk(x, 2, out=out),
    "kthvalue_out": lambda t, x, a, out: t.kthvalue(x, 1, out=out),
    "aminmax_out": lambda t, x, a, out: t.aminmax(x, out=out),
    "linalg_qr_out": lambda t, x, a, out: t.linalg.qr(a, out=out),
    "linalg_eigh_out": lambda t, x, a, out: t.linalg.eigh(a, out=out),
    "slogdet_out": lambda t, x, a, out: t.slogdet(a, out=out),
    "svd_out": lambda t, x, a, out: t.svd(a, out=out),
    "triangular_solve_out": lambda t, x, a, out: t.triangular_solve(a, a.triu(), out=out),
}


@pytest.mark.parametrize("name", sorted(OUT_CALLS))
def test_out_form_returns_the_out_type_holding_the_outs_as_torch(name):
    """(an op given out= returned its plain type, ``max``, where torch's gives ``max_out``)."""
    def run(t):
        x, a = t.tensor(X, dtype=t.float64), t.tensor(A, dtype=t.float64)
        plain = CALLS[name.removesuffix("_out")]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = tuple(t.empty(0, dtype=r.dtype) for r in plain(t, x, a))
            return OUT_CALLS[name](t, x, a, out), out

    (ours, outs), (theirs, _) = run(ember), run(torch)
    assert type(ours) is getattr(ember.return_types, name)
    assert type(ours).__name__ == type(theirs).__name__ == name
    assert all(r is o for r, o in zip(ours, outs, strict=True))
    assert repr(ours).startswith(f"ember.return_types.{name}(\n")


def test_every_out_type_of_torch_is_here_with_its_ops_fields():
    names = [n for n in torch.return_types.__all__ if n.endswith("_out")]
    assert names and set(names) <= set(ember.return_types.__all__)
    for n in names:
        ours = getattr(ember.return_types, n)
        assert ours._fields == getattr(ember.return_types, n.removesuffix("_out"))._fields
        assert ours.n_fields == getattr(torch.return_types, n).n_fields

"""PyTorch's ``out=`` keyword (ember.ops.out_arg): which functions take it, read from PyTorch's
own signatures, and its semantics, each against torch."""

import ast
import inspect
import pathlib
import re
import warnings
from types import CodeType

import numpy as np
import pytest
import torch

import ember
from ember.errors import DeviceError, DTypeError, GradError, OpError, ShapeError
from ember.ops.forwarding import NUMPY_NAMES

NAMESPACES = {"": (torch, ember), "linalg": (torch.linalg, ember.linalg),
              "special": (torch.special, ember.special), "fft": (torch.fft, ember.fft)}


def _pyi_out_names() -> set[str]:
    """torch's builtin functions with an ``out`` keyword in any overload (its type stubs)."""
    stubs = pathlib.Path(torch.__file__).parent / "_C" / "_VariableFunctions.pyi"
    return {node.name for node in ast.parse(stubs.read_text()).body
            if isinstance(node, ast.FunctionDef)
            and any(a.arg == "out" for a in node.args.kwonlyargs)}


class _Probe:
    pass


def _probe(fn) -> bool | None:
    """Calls a builtin with tensors for its required arguments and an ``out`` of a wrong type:
    torch's argument parser then names ``out`` (it takes one) or refuses the keyword."""
    try:
        fn(out=_Probe())
        return None
    except TypeError as e:
        missing = re.search(r"missing (\d+) required", str(e))
    if missing is None:
        return None
    try:
        fn(*[torch.ones(2, 2)] * int(missing.group(1)), out=_Probe())
    except TypeError as e:
        message = str(e)
    except Exception:  # noqa: BLE001 - any other failure says nothing about out
        return None
    else:
        return None
    if "unexpected keyword argument 'out'" in message or "keyword arguments: out" in message:
        return False
    return True if "'out'" in message else None


def _doc_says(fn) -> bool:
    doc = (fn.__doc__ or "").strip()
    return "out=None" in doc.split("\n\n")[0] or bool(re.search(r"\bout \((Tensor|tuple)", doc))


def _torch_takes_out(fn, name: str, ns: str, stubs: set[str]) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # a builtin
        if ns == "":
            return name in stubs
        probed = _probe(fn)
        return _doc_says(fn) if probed is None else probed
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):  # (torch.lu's *args, **kwargs)
        return _doc_says(fn)
    return "out" in params


def _public_functions(ns: str):
    tm, em = NAMESPACES[ns]
    for name in sorted(dir(em)):
        fn, ref = getattr(em, name), getattr(tm, name, None)
        if name.startswith("_") or not callable(fn) or inspect.isclass(fn) or ref is None \
                or not callable(ref) or isinstance(ref, type):
            continue
        yield name, fn, ref


@pytest.mark.parametrize("ns", list(NAMESPACES))
def test_out_exactly_where_torch_has_it(ns):
    stubs = _pyi_out_names()
    missing, extra, where = [], [], "ember" + (f".{ns}" if ns else "")
    for name, fn, ref in _public_functions(ns):
        wanted = _torch_takes_out(ref, name, ns, stubs)
        has = "out" in inspect.signature(fn).parameters
        if wanted and not has:
            missing.append(name)
        elif has and not wanted:
            extra.append(name)
    assert not missing, (f"{where}: PyTorch's take out=, Ember's lack it: {missing}. "
                         "Hint: list them in src/ember/ops/out_names.py")
    assert not extra, (f"{where}: take out=, PyTorch's do not: {extra}. Hint: remove them "
                       "from src/ember/ops/out_names.py")


def test_methods_operators_and_functional_take_no_out():
    assert "out" not in inspect.signature(ember.Tensor.add).parameters
    assert ember.Tensor.add is not ember.add and ember.Tensor.add is ember.ops.add
    assert "out" not in inspect.signature(ember.nn.functional.relu).parameters
    assert "out" in inspect.signature(ember.add).parameters  # help() and signatures show it


# ---- values, against torch, in float64 -------------------------------------------------------

_rng = np.random.default_rng(0)
X = _rng.standard_normal((3, 4))
Y = _rng.standard_normal((3, 4))
P = _rng.uniform(0.1, 0.9, (3, 4))
SQ = _rng.standard_normal((3, 3)) + 3 * np.eye(3)
SPD = SQ @ SQ.T
B3 = _rng.standard_normal((2, 3, 3))
I = np.array([[2, 0, 1], [1, 1, 0]])

CASES = {
    "add": lambda m, t: m.add(t(X), t(Y), alpha=2),
    "mul": lambda m, t: m.mul(t(X), 3.0),
    "exp": lambda m, t: m.exp(t(X)),
    "clamp": lambda m, t: m.clamp(t(X), -0.5, 0.5),
    "where": lambda m, t: m.where(t(X) > 0, t(X), t(Y)),
    "lt": lambda m, t: m.lt(t(X), t(Y)),
    "sum": lambda m, t: m.sum(t(X), 1, keepdim=True),
    "mean": lambda m, t: m.mean(t(X), 0),
    "prod": lambda m, t: m.prod(t(X), 1),
    "std": lambda m, t: m.std(t(X), 1, keepdim=True),
    "cumsum": lambda m, t: m.cumsum(t(X), 1),
    "logsumexp": lambda m, t: m.logsumexp(t(X), 0),
    "amax": lambda m, t: m.amax(t(X), (0, 1)),
    "argmax": lambda m, t: m.argmax(t(X), 1),
    "cat": lambda m, t: m.cat([t(X), t(Y)], 1),
    "stack": lambda m, t: m.stack([t(X), t(Y)]),
    "matmul": lambda m, t: m.matmul(t(X), t(Y).T),
    "mm": lambda m, t: m.mm(t(X).T, t(Y)),
    "bmm": lambda m, t: m.bmm(t(B3), t(B3)),
    "addmm": lambda m, t: m.addmm(t(SQ), t(SQ), t(SQ), beta=0.5),
    "gather": lambda m, t: m.gather(t(X[:2]), 1, t(I)),
    "index_select": lambda m, t: m.index_select(t(X), 1, t(I[0])),
    "sort": lambda m, t: m.sort(t(X), 1, descending=True),
    "topk": lambda m, t: m.topk(t(X), 2, 1),
    "max": lambda m, t: m.max(t(X), 1, keepdim=True),
    "min": lambda m, t: m.min(t(X), 0),
    "max_all": lambda m, t: m.max(t(X)),
    "median": lambda m, t: m.median(t(X), 1),
    "mode": lambda m, t: m.mode(t(np.round(X)), 1),
    "kthvalue": lambda m, t: m.kthvalue(t(X), 2, 1),
    "aminmax": lambda m, t: m.aminmax(t(X), dim=0),
    "cummax": lambda m, t: m.cummax(t(X), 1),
    "frexp": lambda m, t: m.frexp(t(X)),
    "linalg.inv": lambda m, t: m.linalg.inv(t(SQ)),
    "linalg.solve": lambda m, t: m.linalg.solve(t(SQ), t(X[:, :3])),
    "linalg.det": lambda m, t: m.linalg.det(t(SQ)),
    "linalg.norm": lambda m, t: m.linalg.norm(t(X), dim=1),
    "linalg.eigh": lambda m, t: m.linalg.eigh(t(SPD)),
    "linalg.slogdet": lambda m, t: m.linalg.slogdet(t(SQ)),
    "linalg.cholesky": lambda m, t: m.linalg.cholesky(t(SPD)),
    "special.erf": lambda m, t: m.special.erf(t(X)),
    "special.expit": lambda m, t: m.special.expit(t(X)),
    "special.ndtri": lambda m, t: m.special.ndtri(t(P)),
    "special.xlog1py": lambda m, t: m.special.xlog1py(t(P), t(P)),
    "fft.fft": lambda m, t: m.fft.fft(t(X)),
    "fft.rfft2": lambda m, t: m.fft.rfft2(t(X)),
    "fft.irfft": lambda m, t: m.fft.irfft(t(np.fft.rfft(X))),
    "fft.fftfreq": lambda m, t: m.fft.fftfreq(5, 0.1, dtype=m.float64),
    "zeros": lambda m, t: m.zeros(2, 3),
    "ones": lambda m, t: m.ones(4),
    "full": lambda m, t: m.full((2, 2), 1.5),
    "arange": lambda m, t: m.arange(0, 1, 0.25),
    "linspace": lambda m, t: m.linspace(0, 1, 5),
    "logspace": lambda m, t: m.logspace(0, 2, 3),
    "eye": lambda m, t: m.eye(3, 2),
}


def _torch_of(a):
    return torch.from_numpy(np.asarray(a))


def _ember_dtype(dtype):
    return getattr(ember, str(dtype).removeprefix("torch."))


def _as_tuple(r):
    return (r,) if isinstance(r, (torch.Tensor, ember.Tensor)) else tuple(r)


@pytest.mark.parametrize("case", list(CASES))
def test_values_match_torch(case):
    compute = CASES[case]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # empty outs are resized silently
        expected = _as_tuple(compute(torch, _torch_of))
        t_outs = tuple(torch.empty(0, dtype=r.dtype) for r in expected)
        e_outs = tuple(ember.empty(0, dtype=_ember_dtype(r.dtype)) for r in expected)
        single = len(expected) == 1 and isinstance(compute(torch, _torch_of), torch.Tensor)
        ref = compute_with_out(compute, torch, _torch_of, t_outs, single)
        got = compute_with_out(compute, ember, ember.tensor, e_outs, single)
    if single:
        assert got is e_outs[0] and ref is t_outs[0]
    else:
        assert all(g is o for g, o in zip(got, e_outs, strict=True))
        if hasattr(ref, "values"):  # torch's named tuple: so is Ember's
            assert got.values is e_outs[0] and got.indices is e_outs[1]
    for o, r in zip(e_outs, expected, strict=True):
        assert o.dtype == _ember_dtype(r.dtype)
        np.testing.assert_allclose(o.numpy(), r.numpy(), rtol=1e-10, atol=1e-12)


def compute_with_out(compute, lib, to_tensor, outs, single):
    out = outs[0] if single else outs

    return compute(_Namespace(lib, out), to_tensor)


class _Namespace:
    """A library (or one of its namespaces) whose functions are called with ``out``."""

    def __init__(self, target, out):
        self.target, self.out = target, out

    def __getattr__(self, name):
        value = getattr(self.target, name)
        return value if isinstance(value, (torch.dtype, ember.dtype)) else \
            _Namespace(value, self.out)

    def __call__(self, *args, **kwargs):
        return self.target(*args, out=self.out, **kwargs)


def test_named_tuple_fields_are_the_outs():
    v, i = ember.empty(0, dtype=ember.float64), ember.empty(0, dtype=ember.int64)
    r = ember.max(ember.tensor(X), 1, out=(v, i))
    assert r.values is v and r.indices is i and type(r) is ember.return_types.max_out
    r = ember.sort(ember.tensor(X), out=[v, i])
    assert r.values is v and r.indices is i


def test_random_factories_follow_the_seed_and_take_outs_dtype():
    for make, args in ((ember.randn, (3, 2)), (ember.rand, (4,)),
                       (ember.randint, (0, 9, (5,))), (ember.randperm, (6,))):
        dtype = ember.int64 if make in (ember.randint, ember.randperm) else ember.float64
        ember.manual_seed(7)
        expected = make(*args, dtype=dtype)
        out = ember.empty(0, dtype=dtype)
        ember.manual_seed(7)
        assert make(*args, out=out) is out and out.dtype == dtype
        assert ember.equal(out, expected)
    out = ember.empty(0, dtype=ember.int32)
    assert ember.arange(5, out=out).dtype == ember.int32  # dtype from out, as torch's
    assert ember.equal(out, ember.arange(5, dtype=ember.int32))


# ---- shape, dtype, device, grad ---------------------------------------------------------------

def test_resize_warns_when_out_had_elements():
    out = ember.zeros(3)
    with pytest.warns(UserWarning, match=r"add\(\): an output with one or more elements was "
                                         r"resized since it had shape \[3\].*\[2\]"):
        ember.add(ember.ones(2), 1, out=out)
    assert out.shape == (2,) and ember.equal(out, ember.full((2,), 2.0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.add(ember.ones(2, 2), 1, out=ember.empty(0))


def test_dtype_cast_rule_matches_torch():
    a = torch.tensor([1, 2])
    ref = torch.add(a, a, out=torch.empty(0, dtype=torch.float64))
    e = ember.tensor([1, 2])
    got = ember.add(e, e, out=ember.empty(0, dtype=ember.float64))
    assert got.dtype == ember.float64 and got.tolist() == ref.tolist()
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        torch.add(torch.ones(2), 1, out=torch.empty(0, dtype=torch.long))
    with pytest.raises(DTypeError, match=r"^add\(\): result type Float can't be cast to the "
                                         r"desired output type Long"):
        ember.add(ember.ones(2), 1, out=ember.empty(0, dtype=ember.int64))
    out = ember.empty(2, dtype=ember.float16)  # a float into a narrower float: allowed
    ember.mul(ember.ones(2), 3, out=out)
    assert out.tolist() == [3.0, 3.0]


@pytest.mark.parametrize("name", ["max", "sort", "topk"])
def test_indices_go_only_into_an_int64_out(name):
    args = {"max": (1,), "sort": (), "topk": (1,)}[name]
    for lib, error in ((torch, RuntimeError), (ember, DTypeError)):
        x = lib.tensor([[1.0, 3.0], [4.0, 2.0]])
        with pytest.raises(error, match="(?i)out tensor.*indices|dtype long"):
            getattr(lib, name)(x, *args, out=(lib.empty(0), lib.empty(0)))


def test_device_mismatch_raises():
    with pytest.raises(DeviceError, match=r"add\(\): expected out tensor to have device cpu, "
                                          "but got meta"):
        ember.add(ember.ones(2), 1, out=ember.empty(2, device="meta"))


def test_grad_is_refused_unless_no_grad():
    msg = ("functions with out=... arguments don't support automatic differentiation, but one "
           "of the arguments requires grad")
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=re.escape("add(): " + msg)):
        torch.add(torch.ones(2, requires_grad=True), 1, out=torch.empty(2))
    with pytest.raises(GradError, match=re.escape("add(): " + msg)):
        ember.add(x, 1, out=ember.empty(2))
    with pytest.raises(GradError, match=re.escape("mul(): " + msg)):
        ember.mul(ember.ones(2), 1, out=ember.empty(2, requires_grad=True))
    with ember.no_grad():
        out = ember.add(x, 1, out=ember.empty(2))
    assert out.tolist() == [2.0, 2.0] and not out.requires_grad


def test_wrong_out_kind_is_a_clear_error():
    with pytest.raises(TypeError, match=r"sort\(\): out must be a tuple of 2 Tensors"):
        ember.sort(ember.ones(3), out=ember.empty(0))
    with pytest.raises(TypeError, match=r"add\(\): out must be a Tensor or a tuple"):
        ember.add(ember.ones(2), 1, out=[1.0])
    sparse = ember.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse()
    with pytest.raises(TypeError, match=r"hspmm\(\): out= takes dense tensor results, and "
                                        "this call returns a SparseTensor"):
        ember.hspmm(sparse, ember.ones(2, 2), out=ember.empty(0))


# ---- aliasing, views, version counter ---------------------------------------------------------

def test_out_may_be_an_input_itself():
    ta = torch.tensor(SQ)
    torch.add(ta, ta, out=ta)
    ea = ember.tensor(SQ)
    assert ember.add(ea, ea, out=ea) is ea
    np.testing.assert_allclose(ea.numpy(), ta.numpy(), rtol=1e-12)
    # (torch.mm(ta, ta, out=ta) gives zeros or the product, by its CPU's BLAS path)
    for op in (ember.mm, ember.matmul):  # Ember gives the product
        ea = ember.tensor(SQ)
        assert op(ea, ea, out=ea) is ea
        np.testing.assert_allclose(ea.numpy(), SQ @ SQ, rtol=1e-12)
    v = ember.tensor([3.0, 1.0, 2.0])
    ember.sort(v, out=(v, ember.empty(0, dtype=ember.int64)))
    assert v.tolist() == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("call", [
    lambda m, b: m.add(b[:3], b[:3], out=b[1:]),           # partial overlap
    lambda m, b: m.neg(b.view(2, 2), out=b.view(2, 2).t()),  # same memory, other strides
    lambda m, b: m.cat([b[:2], b[2:]], out=b),              # cat: no overlap at all
    lambda m, b: m.stack([b, b], out=b),
])
def test_overlap_raises_where_torch_raises(call):
    with pytest.raises(RuntimeError, match="some elements of the input tensor and the "
                                           "written-to tensor refer to a single memory"):
        call(torch, torch.arange(4.0))
    with pytest.raises(OpError, match="refer to a single memory location. Hint: clone"):
        call(ember, ember.arange(4.0))


@pytest.mark.parametrize("call", [
    lambda m, x, o: m.gather(x, 0, m.tensor([2, 1, 0]), out=o),
    lambda m, x, o: m.take(x, m.tensor([2, 1, 0]), out=o),
    lambda m, x, o: m.masked_select(x, x > 0.15, out=o),
    lambda m, x, o: m.cat([x[:1], x[:2]], out=o),
    lambda m, x, o: m.add(x[:3], 1, out=o),
    lambda m, x, o: m.sort(x[:3], out=(o, m.empty(3, dtype=m.int64))),
])
def test_internally_overlapping_out_raises_where_torch_raises(call):
    """A stride-0 out (empty_strided's) wrote every element into one place (silently:
    gather(..., out=o) gave [x[2]] * 3)."""
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        call(torch, torch.tensor([0.1, 0.3, 0.4, 0.2]), torch.empty_strided((3,), (0,)))
    o = ember.empty_strided((3,), (0,))
    with pytest.raises(OpError, match="more than one element of out.*Hint: clone"):
        call(ember, ember.tensor([0.1, 0.3, 0.4, 0.2]), o)


def test_out_counts_a_write_and_writes_through_a_view():
    base = ember.zeros(4, 3)
    out = base.t()  # non-contiguous
    version = out._version
    ember.add(ember.ones(3, 4), ember.arange(4.0), out=out)
    assert out._version > version and base._version == out._version
    assert ember.equal(base, (1 + ember.arange(4.0)).reshape(4, 1).expand(4, 3))


def test_jit_compiled_out_matches_eager():
    def step(x, buffer):
        ember.mul(x, 3, out=buffer)
        return buffer + 1

    compiled = ember.jit.compile(step)
    x = ember.tensor(X)
    b1, b2 = ember.zeros(3, 4), ember.zeros(3, 4)
    for _ in range(2):  # traced, then replayed
        assert ember.equal(compiled(x, b1), step(x, b2))
        assert ember.equal(b1, b2)


def test_jit_refuses_an_out_it_would_have_to_resize():
    def step(x):
        buffer = ember.empty(0)
        ember.add(x, x, out=buffer)
        return buffer

    with pytest.raises(ShapeError, match=r"add\(\): out has shape \[0\], the result \[3\]: "
                                         "inside jit"):
        ember.jit.compile(step)(ember.ones(3))


def test_out_forms_pickle_by_their_namespace_name():
    import pickle
    for fn in (ember.add, ember.arcsin, ember.linalg.inv, ember.linalg.norm, ember.special.expit,
               ember.special.gammainc, ember.fft.fft):
        assert pickle.loads(pickle.dumps(fn)) is fn


@pytest.mark.parametrize("outs", [lambda o: (o, o), lambda o: (o[:2], o[1:])])
def test_outs_that_share_memory_raise(outs):
    # (torch writes both results into the one tensor and returns garbage: Ember refuses)
    o = ember.empty(3, dtype=ember.int64)
    with pytest.raises(OpError, match=r"sort\(\): out\[0\] and out\[1\] share memory"):
        ember.sort(ember.tensor([3, 1]), out=outs(o))


def test_with_out_forwards_every_kind_of_parameter():
    from ember.ops.out_arg import with_out

    def f(a, /, b, c=2, *rest, d, e=3, **kw):
        return ember.tensor([a, b, c, *rest, d, e, *kw.values()])

    g = with_out(f)
    assert str(inspect.signature(g)) == ("(a, /, b, c=2, *rest, d, e=3, out: 'Tensor | "
                                         "tuple[Tensor, ...] | None' = None, **kw)")
    assert g(1, 2, 5, 6, d=4, z=9).tolist() == [1, 2, 5, 6, 4, 3, 9]
    out = ember.empty(0, dtype=ember.int64)
    assert g(1, b=2, d=4, out=out) is out and out.tolist() == [1, 2, 2, 4, 3]
    with pytest.raises(TypeError):
        g(a=1, b=2, d=4)  # a is positional-only, as in f


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "nansum", "nanmean", "cumsum",
                                  "cumprod"])
def test_a_reduction_accumulates_in_a_floating_outs_dtype(name):
    x = [[1 / 3, 1.0, 2.5]]
    ref = getattr(torch, name)(torch.tensor(x), 1, out=torch.empty(0, dtype=torch.float64))
    got = getattr(ember, name)(ember.tensor(x), 1, out=ember.empty(0, dtype=ember.float64))
    assert got.tolist() == ref.tolist()  # (float32's sum, cast after, differs)


def test_a_float_reduction_into_an_integer_out_raises():
    # (torch casts each element first: prod([1/3, 1, 2.5], out=long) is 0, a silent wrong answer)
    for name in ("sum", "prod", "cumsum"):
        with pytest.raises(DTypeError, match=rf"{name}\(\): result type Float can't be cast"):
            getattr(ember, name)(ember.tensor([[1 / 3, 2.5]]), 1,
                                 out=ember.empty(0, dtype=ember.int64))


@pytest.mark.parametrize("call", [
    lambda m: m.zeros(2, dtype=m.float64, out=m.empty(0)),
    lambda m: m.arange(3, dtype=m.float64, out=m.empty(0)),
    lambda m: m.full((2,), 1.0, dtype=m.float64, out=m.empty(0)),
    lambda m: m.sum(m.ones(2), 0, dtype=m.float64, out=m.empty(0)),
    lambda m: m.cumsum(m.ones(2), 0, dtype=m.float64, out=m.empty(0)),
])
def test_a_dtype_other_than_outs_raises(call):
    with pytest.raises(RuntimeError, match="(?i)double"):
        call(torch)
    with pytest.raises(DTypeError, match=r"\(\): dtype Double does not match out's dtype Float"):
        call(ember)


@pytest.mark.parametrize("context", [lambda: ember.profiler.profile(),
                                     lambda: ember.autocast("cpu"),
                                     lambda: ember.autograd.detect_anomaly()])
def test_out_is_resized_under_watchers_and_policies(context):
    # (they are dispatch handlers too, but compute eagerly: only tracing ones can't resize)
    x = ember.ones(3)
    with context():
        out = ember.add(x, x, out=ember.empty(0))
    assert out.tolist() == [2.0, 2.0, 2.0]


def test_fx_tracing_a_call_with_out_says_to_use_the_result():
    class Scale(ember.nn.Module):
        def forward(self, x):
            buffer = ember.empty(2)
            ember.mul(x, 2, out=buffer)
            return buffer

    with pytest.raises(TypeError, match=r"mul\(\): out= takes dense tensor results, and this "
                                        r"call returns a Proxy .*without out="):
        ember.fx.symbolic_trace(Scale())


def test_keyword_only_parameters_stay_keyword_only():
    with pytest.raises(TypeError):
        ember.add(ember.ones(1), ember.ones(1), 2)  # alpha is keyword-only
    with pytest.raises(TypeError):
        ember.neg(ember.ones(1), ember.empty(1))  # so is out


@pytest.mark.parametrize("ns", list(NAMESPACES))
def test_every_out_form_takes_its_ops_parameters_as_the_op_does(ns):
    for name, fn, _ in _public_functions(ns):
        if "out" not in inspect.signature(fn).parameters:
            continue
        params = inspect.signature(fn.__wrapped__).parameters.values()
        code = fn.__code__
        assert code.co_argcount == sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                                       for p in params), name
        assert code.co_posonlyargcount == sum(p.kind is p.POSITIONAL_ONLY for p in params), name
        names = inspect.signature(fn.__wrapped__).parameters
        aliases = sum(fn._numpy_names and name in names and alias not in names
                      for name, alias in NUMPY_NAMES.items())  # (axis=, keepdims=)
        assert code.co_kwonlyargcount == 1 + aliases + sum(p.kind is p.KEYWORD_ONLY
                                                           for p in params), name


def test_ops_of_one_signature_share_their_forms_code_and_each_names_its_own_op():
    from ember.ops import forwarding

    def same(a, b):
        return (a.co_code, a.co_names, a.co_varnames, a.co_consts) == \
            (b.co_code, b.co_names, b.co_varnames, b.co_consts)

    add, sub = ember.add.__code__, ember.sub.__code__  # (one source: compiled once at import)
    compiled = [code for code in forwarding._CODE.values()
                if any(isinstance(c, CodeType) and same(c, add) for c in code.co_consts)]
    assert len(compiled) == 1  # (the one code object both forms are renamed from)
    assert any(isinstance(c, CodeType) and same(c, sub) for c in compiled[0].co_consts)
    assert add.co_filename.endswith("<out= form of add>")
    assert sub.co_filename.endswith("<out= form of sub>")
    with pytest.raises(TypeError, match="sum\\(\\): got dim and axis") as info:
        ember.sum(ember.ones(2), 0, axis=0)
    assert any(str(entry.path).endswith("<out= form of sum>") for entry in info.traceback)

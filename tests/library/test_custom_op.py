"""ember.library.custom_op against torch.library.custom_op on the same ops: values,
gradients, transforms (jit, vmap, grad), mutation and the errors of missing registrations."""

import numpy as np
import pytest
import torch

import ember
from ember import Tensor
from ember.autograd import gradcheck, gradgradcheck
from ember.func import grad, vmap
from tests.library.ops_for_tests import (
    define_add_,
    define_pair,
    define_sin,
    define_weighted_sum,
)

sin_e = define_sin(ember, ember.library, "emtest")
sin_t = define_sin(torch, torch.library, "emtest")
pair_e = define_pair(ember, ember.library, "emtest")
pair_t = define_pair(torch, torch.library, "emtest")
add_e = define_add_(ember, ember.library, "emtest")
add_t = define_add_(torch, torch.library, "emtest")
wsum_e = define_weighted_sum(ember, ember.library, "emtest")
wsum_t = define_weighted_sum(torch, torch.library, "emtest")

X = np.array([[0.3, -1.2, 0.7], [1.5, 0.1, -0.4]])
W = np.array([[0.9, 0.2, -1.1], [0.5, -0.3, 0.8]])


def leaves(*arrays, lib=ember):
    return [lib.tensor(a, requires_grad=True) for a in arrays]


def close(e, t):
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=1e-6, atol=1e-7)


def test_values_and_gradients_match_torch():
    (xe,), (xt,) = leaves(X), leaves(X, lib=torch)
    ye, yt = sin_e(xe), sin_t(xt)
    close(ye, yt)
    assert ye.grad_fn.name() == type(yt.grad_fn).__name__
    (ye * ye).sum().backward()
    (yt * yt).sum().backward()
    close(xe.grad, xt.grad)

    (xe, we), (xt, wt) = leaves(X, W), leaves(X, W, lib=torch)
    oe, ot = pair_e(xe, we, 2.0, n=3), pair_t(xt, wt, 2.0, n=3)
    for a, b in zip(oe, ot):
        close(a, b)
    (oe[0].sum() + oe[1].pow(2).sum()).backward()
    (ot[0].sum() + ot[1].pow(2).sum()).backward()
    close(xe.grad, xt.grad)
    close(we.grad, wt.grad)


def test_optional_tensor_and_defaults_match_torch():
    (xe,), (xt,) = leaves(X), leaves(X, lib=torch)
    for a, b in zip(pair_e(xe, None), pair_t(xt, None)):
        close(a, b)


def test_tensor_list_inputs_and_their_gradients_match_torch():
    xe, we = leaves(X, W)
    xt, wt = leaves(X, W, lib=torch)
    for weights in (None, [2.0, -0.5]):
        close(wsum_e([xe, we], weights), wsum_t([xt, wt], weights))
    (wsum_e([xe, we], [2.0, -0.5]) ** 2).sum().backward()
    (wsum_t([xt, wt], [2.0, -0.5]) ** 2).sum().backward()
    close(xe.grad, xt.grad)
    close(we.grad, wt.grad)
    assert gradcheck(lambda a, b: wsum_e([a, b], [2.0, -0.5]), (xe, we))


def test_gradcheck_and_second_order_with_a_backward_in_ember_ops():
    x, w = leaves(X, W)
    assert gradcheck(lambda x, w: pair_e(x, w, 2.0, n=3), (x, w))
    assert gradgradcheck(lambda x, w: pair_e(x, w, 2.0, n=3), (x, w))
    assert gradcheck(sin_e, (x,))


def test_reachable_as_ember_ops_namespace_and_schema():
    assert ember.ops.emtest.numpy_sin is sin_e
    assert ember.ops.emtest.scaled_pair.default is pair_e
    assert add_e.schema == str(torch.ops.emtest.numpy_add_.default._schema)
    assert pair_e.schema == "emtest::scaled_pair(Tensor x, Tensor? w, float alpha=1.0, *, " \
        "SymInt n=2) -> (Tensor, Tensor)"  # (torch's registered one prints alpha=1.)


def test_backward_without_autograd_registration_names_the_op_and_the_fix():
    @ember.library.custom_op("emtest::no_grad_rule", mutates_args=())
    def no_grad_rule(x: Tensor) -> Tensor:
        return x * 2

    @torch.library.custom_op("emtest::no_grad_rule", mutates_args=())
    def no_grad_rule_t(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    with pytest.raises(RuntimeError, match="no autograd formula was registered"):
        no_grad_rule_t(torch.ones(2, requires_grad=True)).sum().backward()
    with pytest.raises(ember.GradError, match="emtest::no_grad_rule but no autograd formula was "
                       "registered.*register_autograd"):
        no_grad_rule(ember.ones(2, requires_grad=True)).sum().backward()


def test_jit_traces_the_op_as_one_equation():
    fast = ember.jit.compile(lambda x, w: pair_e(x, w, 0.5)[0] + 1)
    x, w = ember.tensor(X), ember.tensor(W)
    want = pair_e(x, w, 0.5)[0] + 1
    for _ in range(2):  # the tracing call, then the generated code
        close(fast(x, w), want)
    names = [e.prim.name for e in fast.graph.eqns]
    assert names.count("emtest::scaled_pair") == 1 and "mul" not in names


def test_jit_without_a_fake_rule_says_so():
    @ember.library.custom_op("emtest::no_fake", mutates_args=())
    def no_fake(x: Tensor) -> Tensor:
        return x + 1

    with pytest.raises(ember.errors.OpError, match="no fake impl registered.*register_fake"):
        ember.jit.compile(lambda x: no_fake(x) * 2)(ember.ones(2))


def test_jit_with_a_wrong_fake_rule_blames_it():
    @ember.library.custom_op("emtest::wrong_fake", mutates_args=())
    def wrong_fake(x: Tensor) -> Tensor:
        return x.sum(0)

    wrong_fake.register_fake(lambda x: ember.empty_like(x))
    with pytest.raises(ember.errors.OpError, match="fake impl .register_fake. disagrees"):
        ember.jit.compile(wrong_fake)(ember.ones(2, 3))


def test_jit_training_step_differentiates_through_the_op():
    x = ember.tensor(X, requires_grad=True)

    def loss(x):
        return sin_e(x).pow(2).sum()

    fast = ember.jit.compile(loss)
    fast(x).backward()
    xt = torch.tensor(X, requires_grad=True)
    sin_t(xt).pow(2).sum().backward()
    close(x.grad, xt.grad)


def test_vmap_falls_back_to_a_loop_and_grad_composes():
    xs, ws = ember.tensor(X), ember.tensor(W)
    out = vmap(lambda x, w: pair_e(x.unsqueeze(0), w.unsqueeze(0), 2.0)[0])(xs, ws)
    want = torch.func.vmap(lambda x, w: pair_t(x.unsqueeze(0), w.unsqueeze(0), 2.0)[0])(
        torch.tensor(X), torch.tensor(W))
    close(out, want)
    # (torch's functorch refuses grad through a custom op's generated autograd.Function)
    per_sample = vmap(grad(lambda x: sin_e(x).sum()))(xs)
    close(per_sample, torch.tensor(X).cos())
    outer = grad(lambda x: vmap(sin_e)(x).pow(2).sum())(xs)
    close(outer, torch.tensor(2 * np.sin(X) * np.cos(X)))


def test_register_vmap_runs_once_on_the_batch():
    @ember.library.custom_op("emtest::roll", mutates_args=())
    def roll(x: Tensor, shift: int) -> Tensor:
        return ember.from_numpy(np.roll(x.numpy(), shift, axis=-1))

    seen = []

    @roll.register_vmap
    def _(info, in_dims, x, shift):
        seen.append((info.batch_size, in_dims))
        return roll(x.movedim(in_dims[0], 0), shift), 0

    out = vmap(roll, in_dims=(1, None))(ember.arange(6.0).reshape(3, 2), 1)
    assert out.tolist() == [[4.0, 0.0, 2.0], [5.0, 1.0, 3.0]]
    assert seen == [(2, (0, None))]  # (Ember's vmap moves batch dims to the front first)


def test_mutation_bumps_the_version_as_torch_does():
    xe, xt = ember.tensor(X), torch.tensor(X)
    ve, vt = xe._version, xt._version
    assert add_e(xe, ember.tensor(W)) is None and add_t(xt, torch.tensor(W)) is None
    close(xe, xt)
    assert xe._version == ve + 1 and xt._version == vt + 1


def test_mutation_under_jit_and_vmap():
    def f(x, y):
        add_e(x, y)
        return x * 2

    x = ember.zeros(2, 3)
    fast = ember.jit.compile(f)
    for k in range(1, 4):
        close(fast(x, ember.tensor(W)), torch.tensor(2 * k * W))
    close(x, torch.tensor(3 * W))
    xs = ember.zeros(2, 3)
    close(vmap(f)(xs, ember.tensor(W)), torch.tensor(2 * W))
    close(xs, torch.tensor(W))  # every sample written


def test_mutation_of_a_leaf_that_requires_grad_is_refused():
    with pytest.raises(ember.GradError, match="leaf tensor that requires grad"):
        add_e(ember.zeros(3, requires_grad=True), ember.ones(3))


def test_writing_into_an_undeclared_argument_is_refused():
    @ember.library.custom_op("emtest::sneaky", mutates_args=())
    def sneaky(x: Tensor) -> Tensor:
        x.numpy()[0] = 5.0
        return x.clone()

    x = ember.ones(2)
    with pytest.raises(ember.errors.OpError, match="emtest::sneaky.*not in mutates_args"):
        sneaky(x)
    assert x.tolist() == [1.0, 1.0]


def test_returning_an_input_is_refused_as_in_torch():
    @ember.library.custom_op("emtest::same", mutates_args=())
    def same(x: Tensor) -> Tensor:
        return x

    @torch.library.custom_op("emtest::same", mutates_args=())
    def same_t(x: torch.Tensor) -> torch.Tensor:
        return x

    with pytest.raises(RuntimeError, match="alias"):
        same_t(torch.ones(2))
    with pytest.raises(ember.errors.OpError, match="emtest::same.*shares memory.*clone"):
        same(ember.ones(2))


def test_kernels_by_device_type():
    @ember.library.custom_op("emtest::gpu_only", mutates_args=(), device_types="cuda")
    def gpu_only(x: Tensor) -> Tensor:
        return x + 1

    with pytest.raises(ember.errors.OpError, match="no.* kernel registered for cpu.*"
                       "register_kernel"):
        gpu_only(ember.ones(2))
    ember.library.register_kernel("emtest::gpu_only", "cpu", lambda x: x + 2)
    assert gpu_only(ember.ones(2)).tolist() == [3.0, 3.0]


def test_arguments_of_the_wrong_type_are_refused_as_in_torch():
    with pytest.raises(RuntimeError, match="Expected a value of type 'float' for argument "
                       "'alpha'"):
        pair_t(torch.ones(2), None, "a")
    with pytest.raises(ember.errors.OpError, match="Expected a value of type 'float' for "
                       "argument 'alpha' but instead found type 'str'"):
        pair_e(ember.ones(2), None, "a")
    with pytest.raises(ember.errors.OpError, match="type 'Tensor' for argument 'x'"):
        sin_e([1.0])


def test_module_level_registration_by_name():
    @ember.library.custom_op("emtest::double", mutates_args=())
    def double(x: Tensor) -> Tensor:
        return x * 2

    ember.library.register_fake("emtest::double", lambda x: ember.empty_like(x))
    ember.library.register_autograd("emtest::double", lambda ctx, g: g * 2)
    x = ember.ones(3, requires_grad=True)
    double(x).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(ValueError, match="not a custom op"):
        ember.library.register_fake("emtest::missing", lambda x: x)


def test_autograd_registration_on_a_mutating_op_is_refused_as_in_torch():
    with pytest.raises(RuntimeError, match="non-functional operator"):
        add_t.register_autograd(lambda ctx, g: (g, g))
    with pytest.raises(RuntimeError, match="non-functional operator"):
        add_e.register_autograd(lambda ctx, g: (g, g))


def test_namespace_that_clashes_with_ember_ops_is_refused():
    with pytest.raises(ValueError, match="clashes with ember.ops.linalg"):
        @ember.library.custom_op("linalg::mine", mutates_args=())
        def mine(x: Tensor) -> Tensor:
            return x.clone()


def test_onnx_export_lists_the_op_until_a_converter_is_registered(tmp_path):
    ort = pytest.importorskip("onnxruntime")

    @ember.library.custom_op("emtest::onnx_sin", mutates_args=())
    def onnx_sin(x: Tensor) -> Tensor:
        return ember.from_numpy(np.sin(x.numpy()))

    onnx_sin.register_fake(lambda x: ember.empty_like(x))

    class Model(ember.nn.Module):
        def forward(self, x):
            return onnx_sin(x) + 1

    path = str(tmp_path / "m.onnx")
    with pytest.raises(ember.onnx.ExportError, match="emtest::onnx_sin"):
        ember.onnx.export(Model(), (ember.ones(3),), path)

    @ember.onnx.converter("emtest::onnx_sin")
    def _(ctx, eqn):
        return ctx.node("Sin", [ctx.value(eqn.inputs[0])])

    ember.onnx.export(Model(), (ember.ones(3),), path)
    session = ort.InferenceSession(path)
    x = np.array([0.5, -1.0, 2.0], dtype=np.float32)
    got = session.run(None, {session.get_inputs()[0].name: x})[0]
    np.testing.assert_allclose(got, np.sin(x) + 1, rtol=1e-6)


def test_a_compiled_graph_with_the_op_saves_and_loads(tmp_path):
    fast = ember.jit.compile(lambda x, w: pair_e(x, w, 0.5, n=3)[1] * 2)
    x, w = ember.tensor(X), ember.tensor(W)
    with ember.no_grad():
        want = fast(x, w)
    path = tmp_path / "pair.ejit"
    ember.jit.save(fast, path)
    close(ember.jit.load(path)(x, w), want)


def test_redefining_an_op_retraces_compiled_functions_that_call_it():
    def define(scale):
        @ember.library.custom_op("emtest::scaled", mutates_args=())
        def scaled(x: Tensor) -> Tensor:
            return x * scale

        scaled.register_fake(lambda x: ember.empty_like(x))

    define(2.0)
    fast = ember.jit.compile(lambda x: ember.ops.emtest.scaled(x) + 1)
    for _ in range(2):  # the tracing call, then the generated code
        close(fast(ember.ones(2)), torch.full((2,), 3.0))
    define(10.0)  # (as a re-run notebook cell): the compiled graph holds the old op
    close(fast(ember.ones(2)), torch.full((2,), 11.0))
    assert "redefined" in ember.jit.explain()[-1]


def test_backward_through_a_mutating_op_points_to_a_functional_op():
    # (register_autograd refuses a mutating op, so it cannot be the hint)
    x = ember.ones(3, requires_grad=True) * 1
    add_e(x, ember.ones(3))
    with pytest.raises(ember.GradError, match="emtest::numpy_add_ .*functional op"):
        x.sum().backward()


def test_register_vmap_rule_sees_the_randomness_vmap_was_given():
    @ember.library.custom_op("emtest::jitter", mutates_args=())
    def jitter(x: Tensor) -> Tensor:
        return x + ember.rand(*x.shape)

    seen = []

    @jitter.register_vmap
    def _(info, in_dims, x):
        seen.append(info.randomness)
        return jitter(x), in_dims[0]

    for randomness in ("error", "different", "same"):
        vmap(jitter, randomness=randomness)(ember.zeros(2, 3))
    assert seen == ["error", "different", "same"]


def test_numbers_reach_the_kernel_as_the_declared_python_type_as_in_torch():
    def define(lib, libmod):
        seen = []

        @libmod.custom_op(f"emtest::fill_{lib.__name__}", mutates_args=())
        def fill(x: lib.Tensor, a: float, n: int, flag: bool, sizes: list[float]) -> lib.Tensor:
            seen.append((a, n, flag, sizes))
            return lib.full(x.shape, a)  # (an int a would make an integer tensor)

        return fill, seen

    (fill_e, seen_e), (fill_t, seen_t) = define(ember, ember.library), define(torch, torch.library)
    args = (3, np.int64(2), np.bool_(True), [1, np.float32(0.5)])
    out_e, out_t = fill_e(ember.ones(2), *args), fill_t(torch.ones(2), *args)
    assert out_e.dtype == ember.float32 and out_t.dtype == torch.float32
    assert seen_e == seen_t == [(3.0, 2, True, [1.0, 0.5])]
    assert [list(map(type, s[:3])) + [type(s[3][0])] for s in seen_e + seen_t] == \
        [[float, int, bool, float]] * 2


def test_a_gradient_for_a_non_tensor_argument_is_refused_as_in_torch():
    def define(lib, libmod):
        @libmod.custom_op("emtest::scale_by", mutates_args=())
        def scale_by(k: float, x: lib.Tensor) -> lib.Tensor:
            return x * k

        scale_by.register_autograd(lambda ctx, g: (g * 2, None))  # (the order mixed up)
        return scale_by

    with pytest.raises(RuntimeError, match="returned a gradient different than None at "
                       "position 1"):
        define(torch, torch.library)(2.0, torch.ones(2, requires_grad=True)).sum().backward()
    with pytest.raises(ember.GradError, match="emtest::scale_by: the backward returned a "
                       "gradient for 'k', which is not a tensor"):
        define(ember, ember.library)(2.0, ember.ones(2, requires_grad=True)).sum().backward()


def test_a_tensor_list_gradient_of_the_wrong_length_is_refused():
    @ember.library.custom_op("emtest::list_sum", mutates_args=())
    def list_sum(xs: list[Tensor]) -> Tensor:
        return sum(xs[1:], xs[0].clone())

    list_sum.register_autograd(lambda ctx, g: [g] * ctx.n,
                               setup_context=lambda ctx, inputs, output: setattr(
                                   ctx, "n", len(inputs[0])))
    (x,) = leaves(X)
    list_sum([x]).sum().backward()  # (a list is the gradient of a list, as in torch)
    close(x.grad, torch.ones(2, 3))
    list_sum.register_autograd(lambda ctx, g: [g])  # (one gradient for two tensors)
    with pytest.raises(ember.GradError, match="emtest::list_sum: the backward returned a "
                       "list of 1 gradients for 'xs', which has 2 items in this call"):
        list_sum(leaves(X, W)).sum().backward()


def test_an_unbatched_call_under_vmap_sets_up_its_context_once():
    calls = []

    @ember.library.custom_op("emtest::square", mutates_args=())
    def square(x: Tensor) -> Tensor:
        return x * x

    def setup_context(ctx, inputs, output):
        calls.append(1)
        ctx.save_for_backward(inputs[0])

    square.register_autograd(lambda ctx, g: 2 * g * ctx.saved_tensors[0],
                             setup_context=setup_context)
    w = ember.tensor([1.5, 2.0], requires_grad=True)
    vmap(lambda x: x + square(w))(ember.zeros(3, 2)).sum().backward()
    assert len(calls) == 1 and w.grad.tolist() == [9.0, 12.0]


def test_an_op_that_returns_nothing_needs_no_fake_rule_as_in_torch():
    @ember.library.custom_op("emtest::ema_", mutates_args=("stat",))
    def ema_(stat: Tensor, x: Tensor, m: float) -> None:
        stat.mul_(1 - m).add_(m * x.mean(0))

    stat, x = ember.zeros(3), ember.tensor(X)
    ember.jit.compile(lambda s, x: ema_(s, x, 0.5))(stat, x)
    close(stat, torch.tensor(X).mean(0) * 0.5)
    assert ember.library.opcheck(ema_, (ember.zeros(3), x, 0.5))["test_faketensor"] == "SUCCESS"


def test_returning_a_mutated_input_is_refused_as_in_torch():
    def define(lib, libmod):
        @libmod.custom_op("emtest::bump_", mutates_args=("x",))
        def bump_(x: lib.Tensor) -> lib.Tensor:
            x.add_(1)
            return x  # (an alias of x: its writes would not reach x)

        return bump_

    with pytest.raises(RuntimeError, match="alias"):
        define(torch, torch.library)(torch.zeros(2))
    with pytest.raises(ember.errors.OpError, match="emtest::bump_.*shares memory.*clone"):
        define(ember, ember.library)(ember.zeros(2))


def test_outputs_that_share_memory_are_refused_as_in_torch():
    def define(lib, libmod):
        @libmod.custom_op("emtest::with_head", mutates_args=())
        def with_head(x: lib.Tensor) -> tuple[lib.Tensor, lib.Tensor]:
            y = x * 2
            return y, y[:1]  # (a view of the other output)

        return with_head

    with pytest.raises(RuntimeError, match="alias"):
        define(torch, torch.library)(torch.ones(2))
    with pytest.raises(ember.errors.OpError, match="emtest::with_head.*outputs may not alias "
                       "each other"):
        define(ember, ember.library)(ember.ones(2))

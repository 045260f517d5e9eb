"""symbolic_trace of Ember's models: same outputs and gradients; generated code; the errors."""

import collections
import copy
import math

import numpy as np
import pytest
import torch
import torch.fx

import ember
import ember.nn.functional as F
from ember import cumsum, fx, nn
from ember.models.gpt import GPT, Block
from ember.nn.functional import leaky_relu
from ember.ops import activations


def normalize(x):
    return x / (x * x).sum().sqrt()


fx.wrap("normalize")


def same_outputs_and_grads(model, gm, *inputs):
    out, gm_out = model(*inputs), gm(*inputs)
    assert ember.equal(out, gm_out)
    names, params = zip(*model.named_parameters())
    gm_params = dict(gm.named_parameters())  # (in the order the graph first uses them)
    assert gm_params.keys() == set(names)
    grads = ember.autograd.grad(out.sum(), params)
    gm_grads = ember.autograd.grad(gm_out.sum(), [gm_params[name] for name in names])
    for g, h in zip(grads, gm_grads):
        assert ember.equal(g, h)


@pytest.mark.parametrize("make, shape", [(ember.models.mlp, (2, 1, 28, 28)),
                                         (ember.models.cnn, (1, 1, 28, 28)),
                                         (ember.models.lenet5, (1, 1, 28, 28)),
                                         (ember.models.resnet18, (2, 3, 8, 8))])
def test_models_trace_to_the_same_function(make, shape):
    ember.manual_seed(0)
    model = make()
    gm = fx.symbolic_trace(model)
    gm.graph.lint()
    same_outputs_and_grads(model, gm, ember.randn(*shape))


def test_resnet_graph_records_leaf_modules_and_the_residual_add():
    gm = fx.symbolic_trace(ember.models.resnet18())
    ops = [n.op for n in gm.graph.nodes]
    # blocks, downsamples, stem (conv, bn, relu, the CIFAR stem's identity max-pool) + head
    assert ops.count("call_module") == 8 * 6 + 3 * 2 + 6
    assert "getattr(self.layer1, \"0\").conv1(maxpool)" in gm.code
    assert "add = layer1_0_bn2 + maxpool" in gm.code


def test_gpt_block_traces_with_flash_attention():
    ember.manual_seed(0)
    block = Block(16, 2, flash=True)
    gm = fx.symbolic_trace(block)
    assert "scaled_dot_product_attention(transpose, transpose_1, transpose_2, dropout_p = 0.0, " \
        "is_causal = True)" in gm.code
    same_outputs_and_grads(block, gm, ember.randn(2, 5, 16))


def test_gpt_is_not_traceable_its_length_check_is_control_flow():
    with pytest.raises(fx.TraceError, match="cannot be used as inputs to control flow.*"
                                            "concrete_args"):
        fx.symbolic_trace(GPT(n_layer=1, d_model=16, n_head=2))


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.scale = nn.Parameter(ember.ones(3))

    def forward(self, x, y):
        h = ember.relu(self.fc(x)) * self.scale
        return F.softmax(h + y.view(-1, 3), dim=-1).amax(1)


def test_generated_code_of_a_small_module():
    gm = fx.symbolic_trace(Small())
    assert gm.code == (
        "def forward(self, x, y):\n"
        "    fc = self.fc(x);  x = None\n"
        "    relu = ember.relu(fc);  fc = None\n"
        "    scale = self.scale\n"
        "    mul = relu * scale;  relu = scale = None\n"
        "    view = y.view(-1, 3);  y = None\n"
        "    add = mul + view;  mul = view = None\n"
        "    softmax = ember.softmax(add, dim = -1);  add = None\n"
        "    amax = softmax.amax(1);  softmax = None\n"
        "    return amax\n")
    assert type(gm).__name__ == "Small"
    assert "class Small(ember.nn.Module):\n    def forward(self, x, y):" in \
        gm.print_readable(print_output=False)
    x, y = ember.randn(2, 4), ember.randn(2, 3)
    assert ember.equal(gm(x, y), Small.forward(gm, x, y))


def test_a_parameter_named_as_a_builtin_keeps_its_name_in_forward():
    class Masked(nn.Module):
        def forward(self, input, list=2):
            return input.relu() * list

    class TorchMasked(torch.nn.Module):
        forward = Masked.forward

    gm = fx.symbolic_trace(Masked())
    assert gm.code.strip() == torch.fx.symbolic_trace(TorchMasked()).code.strip()
    x = ember.tensor([-1.0, 2.0])
    assert gm(input=x, list=3).tolist() == [0.0, 6.0]  # (was: no keyword 'input', only 'input_1')


def _slices(x, slice):
    return x[1:] + slice


def _itself(self):
    return self * 2


def test_a_parameter_keeps_a_node_name_where_its_own_name_is_a_builtin_the_code_calls_or_self():
    gm = fx.symbolic_trace(_slices)  # (the code calls slice(1, None, None))
    assert gm.code.startswith("def forward(self, x, slice_1):")
    assert gm(ember.ones(3), ember.ones(2)).tolist() == [2.0, 2.0]
    gm = fx.symbolic_trace(_itself)
    assert gm.code.startswith("def forward(self, self_1):")
    assert gm(ember.ones(2)).tolist() == [2.0, 2.0]


def test_graph_str_and_tabular(capsys):
    gm = fx.symbolic_trace(Small())
    text = str(gm.graph)
    assert text.startswith("graph(x, y):\n    %x : [num_users=1] = placeholder[target=x]")
    assert "%scale : [num_users=1] = get_attr[target=scale](args = (), kwargs = {})" in text
    gm.graph.print_tabular()
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].split() == ["opcode", "name", "target", "args", "kwargs"]
    assert rows[2].split()[:2] == ["placeholder", "x"] and len(rows) == 2 + 11


def test_concrete_args_specialize_control_flow():
    class M(nn.Module):
        def forward(self, x, negate=False):
            return -x if negate else x * 2

    m = M()
    with pytest.raises(fx.TraceError, match="concrete_args"):
        fx.symbolic_trace(m)
    gm = fx.symbolic_trace(m, concrete_args={"negate": True})
    assert "def forward(self, x, negate = True):" in gm.code
    assert ember.equal(gm(ember.ones(2)), -ember.ones(2))
    with pytest.raises(ValueError, match="not parameters of"):
        fx.symbolic_trace(m, concrete_args={"flag": True})


def test_wrap_records_a_function_as_one_node():
    gm = fx.symbolic_trace(lambda x: normalize(x) + 1)
    assert [n.target for n in gm.graph.nodes if n.op == "call_function"][0] is normalize
    x = ember.randn(3)
    assert ember.equal(gm(x), normalize(x) + 1)
    assert normalize.__name__ == "normalize"  # restored after tracing
    with pytest.raises(NotImplementedError, match="top level"):
        fx.wrap("normalize")


def test_wrap_a_builtin():
    from tests.fx import wrapped_len

    gm = fx.symbolic_trace(wrapped_len.rows_times)
    assert "len_1 = len(x)" in gm.code
    assert "len" not in vars(wrapped_len)  # the patch is gone after tracing
    assert ember.equal(gm(ember.ones(3, 2)), ember.full((3, 2), 3.0))


def test_functions_imported_by_name_trace_as_torch_fx_does():
    from tests.fx import imported_by_name as user

    gm = fx.symbolic_trace(user.ByName())
    calls = [(n.op, getattr(n.target, "__name__", n.target)) for n in gm.graph.nodes
             if n.op.startswith("call")]
    assert calls == [("call_function", "relu"), ("call_function", "positive_sum"),
                     ("call_function", "sigmoid"), ("call_method", "sum"),
                     ("call_function", "add")]  # torch.fx's nodes for the same module
    x = ember.randn(3)
    assert ember.allclose(gm(x), user.ByName()(x))
    assert "positive_sum" in gm.code and user.positive_sum.__name__ == "positive_sum"


def test_tensor_constants_become_attributes():
    c = ember.arange(3.0)
    gm = fx.symbolic_trace(lambda x: x + c)
    assert "_tensor_constant0 = self._tensor_constant0" in gm.code
    assert ember.equal(gm(ember.ones(3)), ember.ones(3) + c)


def test_unpacking_a_proxy_and_shape_arithmetic():
    def f(x):
        a, b = x.shape
        return x.reshape(b, a) * (a + b)

    gm = fx.symbolic_trace(f)
    x = ember.randn(2, 3)
    assert ember.equal(gm(x), f(x))


def test_ember_functions_are_recorded_as_written():
    def f(x):
        return ember.flatten(ember.reshape(x, (2, -1)), 1) + F.gelu(x.sum(), approximate="tanh")

    gm = fx.symbolic_trace(f)
    assert gm.code.splitlines()[1:4] == [
        "    reshape = ember.reshape(x, (2, -1))",
        "    flatten = ember.flatten(reshape, 1);  reshape = None",
        "    sum_1 = x.sum();  x = None"]
    assert "ember.gelu(sum_1, approximate = 'tanh')" in gm.code
    x = ember.randn(2, 3)
    assert ember.equal(gm(x), f(x))


def test_functions_handed_over_by_the_core_ops_are_recorded_as_written():
    def f(x):
        return ember.zeros_like(x) + ember.squeeze(ember.unsqueeze(x, 0), 0) + \
            ember.where(ember.gt(x, 0), x, 0.0).clone()

    gm = fx.symbolic_trace(f)
    assert gm.code.splitlines()[1:4] == [  # (a default singleton such as memory_format dropped)
        "    zeros_like = ember.zeros_like(x)",
        "    unsqueeze = ember.unsqueeze(x, 0)",
        "    squeeze = ember.squeeze(unsqueeze, 0);  unsqueeze = None"]
    x = ember.randn(2, 3)
    assert ember.equal(gm(x), f(x))


def test_errors_name_the_problem():
    with pytest.raises(fx.TraceError, match="cannot be iterated"):
        fx.symbolic_trace(lambda x: [t for t in x])
    with pytest.raises(RuntimeError, match="'len' is not supported"):
        fx.symbolic_trace(lambda x: len(x))
    with pytest.raises(fx.TraceError, match="float\\(\\) of the traced value"):
        fx.symbolic_trace(lambda x: float(x))
    with pytest.raises(TypeError, match="glu: this Ember function does not take ember.fx "
                                        "Proxy objects.*ember.fx.wrap\\('glu'\\)"):
        fx.symbolic_trace(lambda x: activations.glu(x))  # (not through ember.* or F.*)
    with pytest.raises(NotImplementedError, match="\\*\\*kwargs with keyword-only"):
        fx.symbolic_trace(lambda *xs, k=1: xs[0])
    assert "__call__" not in vars(nn.Module)   # restored after errors: still the hooks
    # mixin's, which switches between its fast and hooked paths
    assert nn.Module.__getattr__.__qualname__ == "Module.__getattr__"


def test_calls_with_a_proxy_anywhere_in_their_arguments_trace():
    c = ember.randn(3, 3)

    def f(x):
        return (c @ x + ember.matmul(c, x) + ember.where(x > 0, c, x) + ember.cat([c, x])[:3]
                + ember.maximum(c, x) + F.linear(c, x) + ember.linalg.det(x) + F.elu(x))
    gm = fx.symbolic_trace(f)
    x = ember.randn(3, 3)
    assert ember.allclose(gm(x), f(x))
    assert "ember.cat([_tensor_constant" in gm.code


def test_custom_leaf_modules():
    class Leafy(fx.Tracer):
        def is_leaf_module(self, m, qualified_name):
            return isinstance(m, nn.Sequential) or super().is_leaf_module(m, qualified_name)

    model = nn.Sequential(nn.Sequential(nn.Linear(2, 2), nn.ReLU()), nn.Linear(2, 1))
    graph = Leafy().trace(model)
    assert [n.target for n in graph.nodes if n.op == "call_module"] == ["0", "1"]
    gm = fx.GraphModule(model, graph)
    x = ember.randn(3, 2)
    assert ember.equal(gm(x), model(x))


def test_deepcopy_gives_an_independent_module():
    import copy

    gm = fx.symbolic_trace(Small())
    clone = copy.deepcopy(gm)
    assert clone.code == gm.code
    with ember.no_grad():
        clone.fc.bias.add_(1.0)
    x, y = ember.randn(2, 4), ember.randn(2, 3)
    assert not ember.equal(clone.fc(x), gm.fc(x))
    assert ember.equal(clone(x, y), Small.forward(clone, x, y))
    assert not ember.equal(clone(x, y), gm(x, y))
    rebuilt = type(gm)(clone, clone.graph, "Rebuilt")  # a GraphModule's own class makes one too
    assert type(rebuilt).__name__ == "Rebuilt" and ember.equal(rebuilt(x, y), clone(x, y))


def test_pickle_round_trips_a_graph_module_as_torch():
    import pickle

    for lib in (ember, torch):
        model = lib.nn.Sequential(lib.nn.Linear(3, 2), lib.nn.BatchNorm1d(2), lib.nn.ReLU())
        gm = lib.fx.symbolic_trace(model).eval()
        gm.note = "kept"
        back = pickle.loads(pickle.dumps(gm))
        x = lib.randn(4, 3)
        assert isinstance(back, lib.fx.GraphModule) and not back.training
        assert back.code == gm.code and back.note == "kept" and lib.equal(back(x), gm(x))
        with lib.no_grad():
            back.get_submodule("0").bias.add_(1.0)  # (its own tensors)
        assert not lib.equal(back(x), gm(x))


def test_keyword_only_parameters_are_placeholders_like_torch():
    def forward(x, y=None, *, scale=2.0):
        return F.softmax(x * scale, dim=-1)

    def tforward(x, y=None, *, scale=2.0):
        return torch.softmax(x * scale, dim=-1)

    gm, tgm = fx.symbolic_trace(forward), torch.fx.symbolic_trace(tforward)
    assert [(n.op, n.target, n.args) for n in gm.graph.nodes][:3] == \
        [(n.op, n.target, n.args) for n in tgm.graph.nodes][:3]
    x = ember.randn(2, 3)
    assert ember.equal(gm(x), forward(x)) and ember.equal(gm(x, scale=3.0), forward(x, scale=3.0))


def test_state_dict_loads_back_into_the_traced_module():
    class WithCache(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 3)
            self.register_buffer("cache", ember.ones(3), persistent=False)

        def forward(self, x):
            return self.fc(x) + self.cache + ember.ones(3)  # (the last one a tensor constant)

    model = WithCache()
    gm = copy.deepcopy(fx.symbolic_trace(model))
    assert gm.state_dict().keys() == model.state_dict().keys() == {"fc.weight", "fc.bias"}
    with ember.no_grad():
        gm.fc.bias.add_(1.0)
    model.load_state_dict(gm.state_dict())
    x = ember.randn(2, 3)
    assert ember.equal(model(x), gm(x))


def test_non_finite_float_arguments_in_generated_code():
    gm = fx.symbolic_trace(lambda x: x.clamp(min=float("-inf"), max=float("inf")) * float("nan"))
    assert "clamp = x.clamp(min = -inf, max = inf)" in gm.code and "* nan" in gm.code
    assert ember.isnan(gm(ember.ones(2))).all()


def test_an_error_inside_forward_leaves_modules_and_wrapped_functions_as_they_were():
    class Fails(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(2, 2)

        def forward(self, x):
            h = normalize(self.fc(x))
            if h.sum() > 0:  # control flow on a traced value
                return h
            return -h

    model, seen = Fails(), []
    model.fc.register_forward_hook(lambda module, args, out: seen.append(out.shape))
    with pytest.raises(fx.TraceError):
        fx.symbolic_trace(model)
    assert seen == [] and normalize.__name__ == "normalize"
    x = ember.randn(3, 2)
    h = normalize(model.fc(x))
    assert ember.equal(model(x), h if h.sum() > 0 else -h)
    assert seen == [ember.Size([3, 2])] * 2  # the hook fires again


Pair = collections.namedtuple("Pair", "first second")


def test_named_tuples_of_traced_values_are_rebuilt_like_torch():
    def forward(x):
        return Pair(x + 1, {"twice": x * 2})

    gm, tgm = fx.symbolic_trace(forward), torch.fx.symbolic_trace(forward)
    out, tout = gm(ember.ones(2)), tgm(torch.ones(2))
    assert type(out) is type(tout) is Pair
    assert ember.equal(out.first, ember.full((2,), 2.0))
    assert ember.equal(out.second["twice"], ember.full((2,), 2.0))


def test_a_named_tuple_type_named_as_a_builtin_does_not_shadow_it():
    graph = fx.Graph()  # ember.return_types.max is a class named "max", beside builtin max
    x = graph.placeholder("x")
    pair = graph.call_function(ember.stack, (ember.return_types.max((x, x)),))
    graph.output((pair, graph.call_function(max, (2, 1))))
    stacked, larger = fx.GraphModule(nn.Module(), graph)(ember.ones(2))
    assert ember.equal(stacked, ember.ones(2, 2)) and larger == 2


def test_global_module_hooks_still_fire_after_a_trace():
    fx.symbolic_trace(nn.Sequential(nn.Linear(2, 2), nn.ReLU()))
    seen = []
    handle = nn.register_module_forward_hook(lambda m, args, out: seen.append(type(m).__name__))
    try:
        nn.Linear(2, 2)(ember.ones(1, 2))
    finally:
        handle.remove()
    assert seen == ["Linear"]


def test_tensor_attributes_are_read_by_their_path_like_torch():
    def build(lib):
        class Sub(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.table = lib.ones(2)

        class M(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.sub, self.scale = Sub(), lib.tensor([1.0, 2.0])

            def forward(self, x):
                return x * self.scale + self.sub.table

        return M()

    gm, tgm = fx.symbolic_trace(build(ember)), torch.fx.symbolic_trace(build(torch))
    targets = [n.target for n in gm.graph.nodes if n.op == "get_attr"]
    assert targets == [n.target for n in tgm.graph.nodes if n.op == "get_attr"]
    assert targets == ["scale", "sub.table"]
    assert "scale = self.scale" in gm.code
    assert list(gm.state_dict()) == []  # (the model has none: torch.fx would add them)
    assert ember.equal(gm(ember.ones(2)), ember.tensor([2.0, 3.0]))


def scaled_scores(q, k):
    return (q @ k.transpose(-2, -1)) / math.sqrt(k.shape[-1]) + math.floor(2.5)


def test_math_functions_are_recorded_like_torch():
    gm, tgm = fx.symbolic_trace(scaled_scores), torch.fx.symbolic_trace(scaled_scores)
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert math.sqrt in targets and math.sqrt in [n.target for n in tgm.graph.nodes]
    assert "sqrt = math.sqrt(getitem)" in gm.code
    q = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    np.testing.assert_allclose(gm(ember.tensor(q), ember.tensor(q)).numpy(),
                               tgm(torch.tensor(q), torch.tensor(q)).numpy(), rtol=1e-6)


def halve(x):
    return x / 2


def test_autowrap_functions_like_torch():
    for lib in (ember, torch):
        tracer = lib.fx.Tracer(autowrap_functions=(halve,))
        graph = tracer.trace(lambda x: halve(x) + 1)
        assert [n.target for n in graph.nodes if n.op == "call_function"][0] is halve


def test_gpt_block_traces_without_flash_attention():
    ember.manual_seed(0)
    block = Block(16, 2, flash=False)  # (math.sqrt of a size; ember.ones(T, T, device=...))
    gm = fx.symbolic_trace(block)
    assert "ember.ones(getitem_1, getitem_1, dtype = ember.bool, device = getattr_3)" in gm.code
    same_outputs_and_grads(block, gm, ember.randn(2, 5, 16))


class Imported(nn.Module):  # (functions imported by name, as `from torch import cumsum`)
    def forward(self, x):
        return cumsum(leaky_relu(x, 0.2), 1)


class TorchImported(torch.nn.Module):
    def forward(self, x):
        return torch.cumsum(torch.nn.functional.leaky_relu(x, 0.2), 1)


def test_functions_imported_by_name_are_recorded_like_torch():
    gm, tgm = fx.symbolic_trace(Imported()), torch.fx.symbolic_trace(TorchImported())
    assert [n.target.__name__ for n in gm.graph.nodes if n.op == "call_function"] == \
        [n.target.__name__ for n in tgm.graph.nodes if n.op == "call_function"] == \
        ["leaky_relu", "cumsum"]
    x = np.arange(-6, 6, dtype=np.float32).reshape(3, 4)
    np.testing.assert_allclose(gm(ember.tensor(x)).numpy(), tgm(torch.tensor(x)).numpy(),
                               rtol=1e-6)
    assert cumsum is ember.cumsum and leaky_relu is F.leaky_relu  # (put back)


def test_a_constant_tensors_methods_and_indexing_with_traced_arguments_like_torch():
    c = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)

    def build(lib, c):
        def forward(x):
            return c.masked_fill(x > 0, 0.0).expand_as(x) + c[x.argmax(0)].sum()
        return forward

    gm = fx.symbolic_trace(build(ember, ember.tensor(c)))
    tgm = torch.fx.symbolic_trace(build(torch, torch.tensor(c)))
    kinds = [(n.op, n.target if n.op == "call_method" else None) for n in gm.graph.nodes]
    assert ("call_method", "masked_fill") in kinds and ("call_method", "expand_as") in kinds
    assert [n.target for n in gm.graph.nodes if n.op == "call_method"] == \
        [n.target for n in tgm.graph.nodes if n.op == "call_method"
         and n.target != "__getitem__"]  # (torch's getitem of a tensor: a method)
    x = np.arange(-6, 6, dtype=np.float32).reshape(3, 4)
    np.testing.assert_allclose(gm(ember.tensor(x)).numpy(), tgm(torch.tensor(x)).numpy(),
                               rtol=1e-6)
    assert "recorded" not in ember.Tensor.masked_fill.__qualname__  # (put back)


def test_einsum_of_traced_values_is_one_node_like_torch():
    """einsum read its operands as tensors first (a TypeError hinting ember.tensor)."""
    def fn(a, b):
        return ember.einsum("bij,bjk->bik", a, b).relu()

    def torch_fn(a, b):
        return torch.einsum("bij,bjk->bik", a, b).relu()

    gm, tgm = fx.symbolic_trace(fn), torch.fx.symbolic_trace(torch_fn)
    targets = [n.target.__name__ for n in gm.graph.nodes if n.op == "call_function"]
    assert targets == [n.target.__name__ for n in tgm.graph.nodes if n.op == "call_function"]
    a, b = ember.randn(2, 3, 4), ember.randn(2, 4, 5)
    assert ember.equal(gm(a, b), fn(a, b))


def test_einsum_sublist_form_of_traced_values_is_one_node():
    """The sublist form starts with an operand, which a Proxy is not: 'operand 0 must be
    a Tensor, got list'."""
    def fn(a, b):
        return ember.einsum(a, [0, 1], b, [1, 2], [0, 2])

    gm = fx.symbolic_trace(fn)
    assert [n.target.__name__ for n in gm.graph.nodes if n.op == "call_function"] == ["einsum"]
    a, b = ember.randn(3, 4), ember.randn(4, 5)
    np.testing.assert_allclose(gm(a, b).numpy(), (a @ b).numpy(), rtol=1e-5)


def test_item_assignment_is_a_setitem_node_that_dead_code_elimination_keeps():
    """(torch.fx's Proxy takes no item assignment; Ember's raised AttributeError)"""
    def fn(x):
        y = x.clone()
        y[:, 1] = 0.0
        y[0] = y[1] * 2
        return y

    gm = fx.symbolic_trace(fn)
    assert not gm.graph.eliminate_dead_code()
    gm.recompile()
    x = ember.randn(3, 4)
    assert ember.equal(gm(x), fn(x))
    assert ember.equal(fx.Interpreter(gm).run(x), fn(x))


@pytest.mark.parametrize("name, call", [
    ("cdist", lambda lib, x: lib.cdist(x, x.flip(0))),
    ("renorm", lambda lib, x: lib.renorm(x, 2, 0, 1.0)),
    ("complex", lambda lib, x: lib.complex(x, x * 2).abs()),
    ("polar", lambda lib, x: lib.polar(x.abs(), x).real),
    ("tensor_split", lambda lib, x: lib.tensor_split(x, 2, 1)[1]),
    ("kron", lambda lib, x: lib.kron(x, x)),
    ("diff", lambda lib, x: lib.diff(x, dim=0)),
    ("cross", lambda lib, x: lib.cross(x[:, :3], x[:, 1:], dim=1))])
def test_functions_that_checked_for_tensors_record_one_node_like_torch(name, call):
    """These refused a Proxy ("must be a Tensor, got Proxy. Hint: wrap it with ember.tensor");
    torch.fx records each as one call_function node."""
    gm = fx.symbolic_trace(lambda x: call(ember, x))
    tgm = torch.fx.symbolic_trace(lambda x: call(torch, x))
    functions = [n.target.__name__ for n in gm.graph.nodes if n.op == "call_function"]
    assert name in functions
    assert functions == [n.target.__name__ for n in tgm.graph.nodes if n.op == "call_function"]
    x = ember.randn(3, 4, dtype=ember.float64)
    np.testing.assert_allclose(gm(x).numpy(), call(torch, torch.from_numpy(x.numpy())).numpy(),
                               rtol=1e-12, atol=1e-12)


def test_those_functions_still_refuse_plain_values():
    y = ember.ones(1, 2)
    for name, call in (("cdist", lambda v: ember.cdist(y, v)),
                       ("renorm", lambda v: ember.renorm(v, 2, 0, 1.0)),
                       ("complex", lambda v: ember.complex(v, y)),
                       ("polar", lambda v: ember.polar(y, v))):
        with pytest.raises(TypeError, match=f"{name}: .* must be a Tensor, got list"):
            call([[1.0, 2.0]])


def test_arange_of_a_traced_size_is_one_node_like_torch():
    # (position ids: arange(x.shape[1]); it raised "expected a number, got Proxy(getitem)")
    gm = fx.symbolic_trace(lambda x: ember.arange(x.shape[1]) + x)
    tgm = torch.fx.symbolic_trace(lambda x: torch.arange(x.shape[1]) + x)
    assert gm.code.replace("ember.", "torch.").strip() == tgm.code.strip()
    x = ember.zeros(2, 5)
    assert gm(x).tolist() == [[0, 1, 2, 3, 4]] * 2

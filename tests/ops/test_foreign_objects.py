"""A PyTorch tensor or NumPy array where an op takes an Ember tensor (or a sequence of them, or
a size): a TypeError naming the op, the argument and the foreign type, before any check of
its shape or dtype and never an AttributeError, a NumPy truth-value error or PyTorch's own
answer. Also the dtype and device arguments a PyTorch user writes: a NumPy dtype object
converts, a torch.device or quantized dtype is refused with what to pass."""

import numpy as np
import pytest
import torch

import ember

F = ember.nn.functional
E = ember.ones(2, 2)
TENSOR_ARGS = {  # op -> (argument named, call)
    "conj": ("input", lambda x: ember.conj(x)),
    "huber_loss": ("input", lambda x: F.huber_loss(x, E)),
    "isreal": ("input", lambda x: ember.isreal(x)),
    "cosine_similarity": ("x1", lambda x: F.cosine_similarity(x, E)),
    "GRUCell": ("input", lambda x: ember.nn.GRUCell(2, 2)(x)),
    "interpolate": ("input", lambda x: F.interpolate(x, scale_factor=2)),
    "LSTMCell": ("input", lambda x: ember.nn.LSTMCell(2, 2)(x)),
    "embedding_bag": ("input", lambda x: F.embedding_bag(x, E, E)),
    "matmul": ("input", lambda x: ember.matmul(x, E)),
    "view_as_real": ("input", lambda x: ember.view_as_real(x)),
    "view_as_complex": ("input", lambda x: ember.view_as_complex(x)),
    "linalg.vecdot": ("x", lambda x: ember.linalg.vecdot(x, E)),
    "numel": ("input", lambda x: ember.numel(x)),
    "detach": ("input", lambda x: ember.detach(x)),
    "is_nonzero": ("input", lambda x: ember.is_nonzero(x)),
    "dequantize": ("input", lambda x: ember.dequantize(x)),
    "quantile": ("input", lambda x: ember.quantile(x, 0.5)),
    "heaviside": ("input", lambda x: ember.heaviside(x, E)),
    "addmm": ("input", lambda x: ember.addmm(x, E, E)),
    "native_group_norm": ("input", lambda x: ember.native_group_norm(x, E, E, 2, 2, 2, 1, 0.1)),
    "linalg.vander": ("x", lambda x: ember.linalg.vander(x)),
    "batch_norm_stats": ("input", lambda x: ember.batch_norm_stats(x, 1e-5)),
    "batch_norm_update_stats": ("input", lambda x: ember.batch_norm_update_stats(x, None, None,
                                                                                 0.1)),
    "batch_norm_backward_elemt": ("grad_out", lambda x: ember.batch_norm_backward_elemt(
        x, E, E, E, E, E, E, E)),
    "multi_head_attention_forward": ("query", lambda x: F.multi_head_attention_forward(
        x, E, E, 2, 1, E, E, None, None, False, 0.0, E, E)),
    "fused_moving_avg_obs_fake_quant": ("input", lambda x: ember.fused_moving_avg_obs_fake_quant(
        x, *[ember.ones(1)] * 6, 0.01, 0, 255, 0)),
    "conv_tbc": ("input", lambda x: ember.conv_tbc(x, E, E)),
    "grid_sampler_2d": ("input", lambda x: ember.grid_sampler_2d(x, E, 0, 0, False)),
    "diag_embed": ("input", lambda x: ember.diag_embed(x)),
    "slice_scatter": ("input", lambda x: ember.slice_scatter(x, ember.ones(2, 2))),
    "select_scatter": ("input", lambda x: ember.select_scatter(x, ember.ones(2), 0, 0)),
}
FOREIGN = {"torch.Tensor": lambda: torch.ones(2, 2), "numpy.ndarray": lambda: np.ones((2, 2))}


@pytest.mark.parametrize("op", list(TENSOR_ARGS))
@pytest.mark.parametrize("kind", list(FOREIGN))
def test_a_foreign_tensor_argument_is_named(op, kind):
    name, call = TENSOR_ARGS[op]
    with pytest.raises(TypeError, match=rf"{op}\(\): argument '{name}' must be Tensor, not "
                                        rf"{kind}\. Hint"):
        call(FOREIGN[kind]())


@pytest.mark.parametrize("op", ["column_stack", "dstack"])
@pytest.mark.parametrize("kind", list(FOREIGN))
def test_a_foreign_tensor_in_a_sequence_is_named(op, kind):
    with pytest.raises(TypeError, match=rf"{op}\(\): argument 'tensors' must hold Tensors, "
                                        rf"not {kind}"):
        getattr(ember, op)([E, FOREIGN[kind]()])
    with pytest.raises(TypeError, match=rf"must be a sequence of Tensors, not {kind}"):
        getattr(ember, op)(FOREIGN[kind]())  # (the whole of it given)
    assert getattr(ember, op)([ember.ones(2), ember.ones(2)]).shape == \
        getattr(torch, op)([torch.ones(2), torch.ones(2)]).shape


@pytest.mark.parametrize("op", ["column_stack", "dstack"])
def test_column_and_depth_stack_take_an_iterable_but_not_a_whole_tensor(op):
    # (review50d: a generator was a bare "no len()" TypeError; stack/cat/hstack take one)
    got = getattr(ember, op)(t for t in (ember.ones(2), ember.zeros(2)))
    want = getattr(torch, op)((torch.ones(2), torch.zeros(2)))
    assert np.array_equal(got.numpy(), want.numpy())
    # (a whole 2-D tensor was stacked row by row; PyTorch refuses it)
    with pytest.raises(TypeError, match=rf"{op}\(\): argument 'tensors' must be a sequence of "
                                        r"Tensors, not Tensor"):
        getattr(ember, op)(ember.ones(2, 2))
    with pytest.raises(TypeError, match="must be tuple of Tensors"):
        getattr(torch, op)(torch.ones(2, 2))


def test_broadcast_shapes_reads_a_bool_as_torch():
    # (review50d: as_ints refused it)
    for shapes in [(True, (3, 1)), (False, (3, 1)), ((2, 1), True)]:
        assert ember.broadcast_shapes(*shapes) == torch.broadcast_shapes(*shapes)


@pytest.mark.parametrize("call", [lambda x: ember.broadcast_shapes(x),
                                  lambda x: ember.empty_strided(x, (1, 1))],
                         ids=["broadcast_shapes", "empty_strided"])
@pytest.mark.parametrize("kind", list(FOREIGN))
def test_a_foreign_tensor_as_a_size_is_named(call, kind):
    # (empty_strided's size is one argument: a tuple or list, as torch's parser wants)
    with pytest.raises(TypeError, match=rf"(must be an int, got|must be tuple of ints, not) "
                                        rf"{kind}"):
        call(FOREIGN[kind]())


def test_sizes_still_read_as_before():
    assert ember.broadcast_shapes(ember.tensor(2), ember.tensor([3, 1])) == (3, 2)
    assert ember.broadcast_shapes((3, 1), [4], 1) == torch.broadcast_shapes((3, 1), [4], 1)
    assert ember.empty_strided([2, 3], [1, 2]).stride() == (1, 2)
    with pytest.raises(TypeError, match="must be tuple of ints"):  # (as torch)
        ember.empty_strided(ember.tensor([2, 3]), (1, 2))


def test_foreign_offsets_and_states_are_named():
    with pytest.raises(TypeError, match="argument 'offsets' must be Tensor, not torch.Tensor"):
        F.embedding_bag(ember.tensor([0, 1]), ember.ones(3, 2), torch.tensor([0]))
    with pytest.raises(TypeError, match="GRUCell\\(\\): argument 'hx' must be Tensor, not "
                                        "numpy.ndarray"):
        ember.nn.GRUCell(2, 2)(E, np.zeros((2, 2), np.float32))
    with pytest.raises(TypeError, match="cosine_similarity\\(\\): argument 'x2'"):
        F.cosine_similarity(E, np.ones((2, 2)))


@pytest.mark.parametrize("value", [None, [1.0, 2.0], 1.5], ids=["None", "list", "float"])
@pytest.mark.parametrize("arg", ["x1", "x2"])
def test_cosine_similarity_names_a_plain_argument_as_torch(value, arg):
    # (0f21ba75: None, a list or a number raised AttributeError "no attribute 'dtype'")
    def call(m, t):
        x1, x2 = (value, t) if arg == "x1" else (t, value)
        return m.nn.functional.cosine_similarity(x1, x2)

    with pytest.raises(TypeError, match=f"cosine_similarity\\(\\): argument '{arg}'"):
        call(torch, torch.ones(3, 4))
    with pytest.raises(TypeError, match=f"cosine_similarity\\(\\): argument '{arg}'"):
        call(ember, ember.ones(3, 4))


def test_other_messages_name_the_foreign_type():
    with pytest.raises(TypeError, match="window_length must be an int, got torch.Tensor"):
        ember.hann_window(torch.ones(2, 2))
    with pytest.raises(TypeError, match="expected a quantized tensor, got a torch.Tensor"):
        ember.q_scale(torch.ones(2))
    with pytest.raises(TypeError, match="expected two tensors, got torch.Tensor and Tensor"):
        ember.special.gammainc(torch.ones(2), ember.ones(2))
    with pytest.raises(TypeError, match="polygamma: n must be an int, got numpy.ndarray"):
        ember.polygamma(np.ones(2), ember.ones(2))
    with pytest.raises(TypeError, match="from_numpy: expected a numpy.ndarray, got "
                                        "torch.Tensor"):
        ember.from_numpy(torch.ones(2))


@pytest.mark.parametrize("call", [lambda v: ember.is_autocast_enabled(v),
                                  lambda v: ember.set_autocast_dtype(v, ember.bfloat16),
                                  lambda v: ember.set_float32_matmul_precision(v)],
                         ids=["is_autocast_enabled", "set_autocast_dtype", "matmul_precision"])
def test_an_array_where_a_string_belongs_is_named(call):
    with pytest.raises(TypeError, match="must be a str, .*got numpy.ndarray"):
        call(np.ones(2))
    with pytest.raises(TypeError):  # (PyTorch refuses it too)
        torch.is_autocast_enabled(np.ones(2))


def test_a_numpy_dtype_object_converts_as_numpy_type_does():
    x = ember.ones(2)
    assert x.to(np.dtype("float16")).dtype is ember.float16 is x.to(np.float16).dtype
    assert x.to("cpu", np.dtype("int32")).dtype is ember.int32


def test_a_torch_device_is_refused_with_what_to_pass():
    with pytest.raises(ember.errors.DeviceError, match=r"torch\.device\)\. Hint: pass Ember's, "
                                                       r"the string 'cpu'"):
        ember.ones(2).to(torch.device("cpu"))
    with pytest.raises(ember.errors.DeviceError, match="'cuda:1'"):
        ember.zeros(2, device=torch.device("cuda", 1))


@pytest.mark.parametrize("call", [lambda: ember.zeros(2, dtype=ember.qint8),
                                  lambda: ember.ones(2).to(ember.qint8),
                                  lambda: ember.arange(3, dtype=ember.quint8)],
                         ids=["zeros", "to", "arange"])
def test_a_quantized_dtype_for_a_new_tensor_says_how_to_quantize(call):
    with pytest.raises(ember.errors.DTypeError, match=r"is a quantized dtype, .* Hint: "
                                                      r"quantize a float tensor with ember\."
                                                      r"quantize_per_tensor"):
        call()
    with pytest.raises((RuntimeError, NotImplementedError)):  # (PyTorch refuses it too)
        torch.zeros(2, dtype=torch.qint8)


@pytest.mark.parametrize("call, op", [
    (lambda: ember.can_cast(ember.float32, ember.qint8), "can_cast: "),
    (lambda: ember.set_default_dtype(ember.qint8), ""),
    (lambda: ember.iinfo(ember.qint8), "iinfo: ")], ids=["can_cast", "set_default_dtype", "iinfo"])
def test_a_quantized_dtype_outside_an_op_names_no_made_up_op(call, op):
    # (review50d: "conversion to an array: ember.qint8 is ..."; the dtype readers of type_info
    # name themselves)
    with pytest.raises(ember.errors.DTypeError, match=rf"^{op}ember\.qint8 is a quantized dtype"):
        call()
    assert ember.get_default_dtype() is ember.float32


def test_ember_inputs_still_work():
    x = ember.tensor([[1.0, -2.0], [0.5, 3.0]])
    t = torch.tensor(x.numpy())
    assert np.allclose(F.huber_loss(x, ember.zeros(2, 2)).item(),
                       torch.nn.functional.huber_loss(t, torch.zeros(2, 2)).item())
    assert np.allclose(F.cosine_similarity(x, x.flip(0)).numpy(),
                       torch.nn.functional.cosine_similarity(t, t.flip(0)).numpy())
    assert ember.isreal(x).all() and ember.numel(x) == 4 and not ember.detach(x).requires_grad
    assert np.allclose(ember.linalg.vecdot(x, x).numpy(), torch.linalg.vecdot(t, t).numpy())
    assert np.allclose(ember.view_as_real(ember.conj(ember.tensor([1 + 2j]))).numpy(),
                       torch.view_as_real(torch.tensor([1 + 2j]).conj().resolve_conj()).numpy())

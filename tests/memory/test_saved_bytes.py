"""What backward keeps, against torch: the bytes a forward passes to saved-tensor hooks (each
memory block once, parameters left out) and the gradients those saved values give."""

import gc
import weakref

import numpy as np
import pytest
import torch

import ember

RNG = np.random.default_rng(0)
X = RNG.standard_normal((64, 512)).astype(np.float32)
Y = RNG.standard_normal((64, 512)).astype(np.float32)
MASK = RNG.random((64, 512)) < 0.5
W = RNG.standard_normal((256, 512)).astype(np.float32)
IDX = RNG.integers(0, 64, 100)
IDX2 = RNG.integers(0, 512, (64, 32))


def _saved_bytes(m, fn):
    """Unique bytes ``fn(m, a, b)`` passes to the pack hook (a, b: activations, no leaves)."""
    blocks = set()

    def pack(t):
        if torch.is_tensor(t):
            st = t.untyped_storage()
            blocks.add((st.data_ptr(), st.nbytes()))
        else:
            root = t._data if t._data.base is None else t._data.base
            blocks.add((root.__array_interface__["data"][0], root.nbytes))
        return t

    a = m.tensor(X, requires_grad=True) * 1
    b = m.tensor(Y, requires_grad=True) * 1
    with m.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(m, a, b)
    return sum(n for _, n in blocks)


@pytest.mark.parametrize("name, fn", [
    ("where", lambda m, a, b: m.where(m.tensor(MASK), a, b)),
    ("masked_fill", lambda m, a, b: a.masked_fill(m.tensor(MASK), 0.0)),
    ("mul_scalar", lambda m, a, b: a * 3.0),
    ("div_by_constant", lambda m, a, b: a / m.tensor(Y)),
    ("dropout", lambda m, a, b: m.nn.functional.dropout(a, 0.5)),
    ("dropout2d", lambda m, a, b: m.nn.functional.dropout2d(a.reshape(8, 16, 16, 16), 0.5)),
    ("bce_with_logits", lambda m, a, b: m.nn.functional.binary_cross_entropy_with_logits(
        a, m.tensor(MASK.astype(np.float32)))),
    ("linear_frozen", lambda m, a, b: m.nn.functional.linear(a, m.tensor(W))),
    ("matmul_constant", lambda m, a, b: a @ m.tensor(W.T.copy())),
])
def test_hooks_get_no_more_than_torchs(name, fn):
    # a rule's unread inputs (where's a and b, x * 2's x, a frozen layer's input) were packed
    ours, theirs = _saved_bytes(ember, fn), _saved_bytes(torch, fn)
    assert ours <= theirs + 64, (name, ours, theirs)  # (+64: a 0-d scalar operand)


@pytest.mark.parametrize("name, fn", [
    ("getitem", lambda m, x: x[m.tensor(IDX)]),
    ("index_select", lambda m, x: x.index_select(0, m.tensor(IDX))),
    ("gather", lambda m, x: x.gather(1, m.tensor(IDX2))),
    ("scatter_add", lambda m, x: x.scatter_add(1, m.tensor(IDX2), x[:, :32] * 2)),
    ("sort", lambda m, x: x.sort(1)[0]),
    ("topk", lambda m, x: x.topk(5, 1)[0]),
    ("pad_reflect", lambda m, x: m.nn.functional.pad(x.reshape(8, 8, 8, 64), (2, 2, 1, 1),
                                                      mode="reflect")),
    ("adaptive_max_pool", lambda m, x: m.nn.functional.adaptive_max_pool2d(
        x.reshape(8, 8, 8, 64), (3, 5))),
])
@pytest.mark.parametrize("hooks", ["identity", "save_on_cpu", "allow_mutation"])
def test_index_ops_gradients_under_hooks(name, fn, hooks):
    # the index tensors of a rule that saves no inputs reached backward as zeros under any
    # saved-tensor hooks: every gradient landed on index 0
    def grad(m, use_hooks):
        x = m.tensor(X, dtype=m.float64, requires_grad=True)
        up = m.tensor(RNG.standard_normal(fn(m, x).shape))
        if not use_hooks:
            (fn(m, x) * up).sum().backward()
            return x.grad.numpy()
        ctx = {"identity": lambda: m.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t),
               "save_on_cpu": m.autograd.graph.save_on_cpu,
               "allow_mutation": m.autograd.graph.allow_mutation_on_saved_tensors}[hooks]()
        with ctx:
            (fn(m, x) * up).sum().backward()
        return x.grad.numpy()

    RNG.bit_generator.state = np.random.default_rng(1).bit_generator.state
    plain = grad(ember, False)
    RNG.bit_generator.state = np.random.default_rng(1).bit_generator.state
    hooked = grad(ember, True)
    RNG.bit_generator.state = np.random.default_rng(1).bit_generator.state
    reference = grad(torch, True)
    np.testing.assert_array_equal(hooked, plain)
    np.testing.assert_allclose(hooked, reference, rtol=1e-12, atol=1e-12)


def test_unread_constant_is_not_kept():
    # where reads only its condition: a large constant operand is no longer held by the tape
    a = ember.tensor(X, requires_grad=True) * 1
    c = ember.tensor(Y)
    ref = weakref.ref(c._data)
    y = ember.where(ember.tensor(MASK), a, c)
    del c
    gc.collect()
    assert ref() is None
    y.sum().backward()


def test_small_view_of_large_activation_is_not_kept():
    # a small slice into cat (which reads no input) held all of its large base
    a = ember.tensor(X, requires_grad=True) * 1
    ref = weakref.ref(a._data)
    y = ember.cat([a[:, :3], a[:, 5:6]], 1)
    del a
    gc.collect()
    assert ref() is None
    y.sum().backward()


def test_a_constant_float_operand_of_a_rule_that_saves_no_inputs_is_not_packed():
    # (add's or cat's mask reads no values in backward: PyTorch packs nothing for them; the
    # index tensors such rules do read are integers, packed)
    x, mask = ember.randn(50, 50, requires_grad=True), ember.randn(50, 50)
    packed = []
    with ember.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        y = x.exp() + mask
        ember.cat([x, mask])
        x[ember.tensor([0, 2])]
    assert [tuple(t.shape) for t in packed] == [(50, 50), (2,)]  # exp's output, the index
    assert packed[0] is not mask and packed[1].dtype == ember.int64
    y.sum().backward()


def _held_bytes(y, a):
    """Unique bytes the nodes between ``a`` and ``y`` hold without hooks: inputs other than
    ``a`` they keep (not set aside as unread), saved outputs, array params."""
    from ember.autograd.saved_hooks import Unsaved

    blocks, todo, seen = {}, [y._node], set()
    while todo:
        node = todo.pop()
        if node is None or node is a._node or id(node) in seen:
            continue
        seen.add(id(node))
        arrays = [t._data for t in node.inputs if type(t) is not Unsaved]
        arrays += [o[0] for o in node.outputs or () if o is not None]
        for array in arrays:
            root = array if array.base is None else array.base
            blocks[root.__array_interface__["data"][0]] = root.nbytes
        todo += [e[0] for e in node.edges if e is not None]
    return sum(blocks.values())


IMAGE = (8, 16, 16, 16)  # X's 128 KiB as a batch of images


def _slopes(m):
    return m.full((16,), 0.25, requires_grad=True)


@pytest.mark.parametrize("name, fn", [
    ("elu", lambda m, x: m.nn.functional.elu(x)),
    ("selu", lambda m, x: m.nn.functional.selu(x)),
    ("celu", lambda m, x: m.nn.functional.celu(x, 1.5)),
    ("mish", lambda m, x: m.nn.functional.mish(x)),
    ("glu", lambda m, x: m.nn.functional.glu(x, 1)),
    ("prelu", lambda m, x: m.nn.functional.prelu(x, _slopes(m))),
    ("alpha_dropout", lambda m, x: m.nn.functional.alpha_dropout(x, 0.3, True)),
    ("feature_alpha_dropout", lambda m, x: m.nn.functional.feature_alpha_dropout(x, 0.3, True)),
    ("pad_constant", lambda m, x: m.nn.functional.pad(x, (1, 2, 3, 4), value=0.5)),
    ("pad_crop", lambda m, x: m.nn.functional.pad(x, (-1, 2, -3, 4))),
    ("pad_circular", lambda m, x: m.nn.functional.pad(x, (1, 2, 3, 4), mode="circular")),
    ("pad_reflect_one_plane", lambda m, x: m.nn.functional.pad(x.reshape(1, 1, 128, 256),
                                                               (3, 3, 3, 3), mode="reflect")),
    ("hardtanh", lambda m, x: m.nn.functional.hardtanh(x)),
    ("leaky_relu", lambda m, x: m.nn.functional.leaky_relu(x, 0.1)),
    ("softplus", lambda m, x: m.nn.functional.softplus(x, 2.0)),
    ("logsigmoid", lambda m, x: m.nn.functional.logsigmoid(x)),
    ("rrelu", lambda m, x: m.nn.functional.rrelu(x, training=True)),
    ("threshold", lambda m, x: m.nn.functional.threshold(x, 0.1, 2.0)),
    ("silu", lambda m, x: m.nn.functional.silu(x)),
    ("hardswish", lambda m, x: m.nn.functional.hardswish(x)),
    ("layer_norm", lambda m, x: m.nn.functional.layer_norm(x, (16,))),
    ("group_norm", lambda m, x: m.nn.functional.group_norm(x, 4)),
    ("dropout", lambda m, x: m.nn.functional.dropout(x, 0.3)),
    ("max_pool2d", lambda m, x: m.nn.functional.max_pool2d(x, 3, 2, 1)),
    ("interpolate", lambda m, x: m.nn.functional.interpolate(x, scale_factor=2,
                                                               mode="bilinear")),
    ("embedding_of_an_activation", lambda m, x: m.nn.functional.embedding(
        m.tensor(IDX2[:8, :4]), x.reshape(-1, 64))),
])
def test_activations_and_padding_keep_no_more_than_torch(name, fn):
    # elu/selu/celu kept input and output, mish/glu/prelu their composites' pieces (2x, 1.5x,
    # 2.25x torch's), constant padding its filled buffer and alpha dropout its shift (without
    # hooks: a constant leaf of a rule that reads no inputs), the other paddings a vector of
    # positions per padded plane (twice the input of one plane)
    theirs = _saved_bytes(torch, lambda m, a, b: fn(m, a.reshape(IMAGE)))
    ours = _saved_bytes(ember, lambda m, a, b: fn(m, a.reshape(IMAGE)))
    a = ember.tensor(X, requires_grad=True).reshape(IMAGE) * 1
    held = _held_bytes(fn(ember, a), a)
    assert max(ours, held) <= theirs + 1024, (name, ours, held, theirs)  # (+1 KiB: small
    #                                          statistics and constants kept as they are)

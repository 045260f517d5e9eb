"""ember.library.opcheck passes on good ops and fails on each kind of wrong registration."""

import numpy as np
import pytest

import ember
from ember import Tensor
from ember.library import OpCheckError, opcheck
from tests.library.ops_for_tests import define_add_, define_pair, define_sin, define_weighted_sum

sin_e = define_sin(ember, ember.library, "emcheck")
pair_e = define_pair(ember, ember.library, "emcheck")
add_e = define_add_(ember, ember.library, "emcheck")
ALL = ("test_schema", "test_autograd_registration", "test_faketensor", "test_vmap", "test_jit")


def test_good_ops_pass_every_check():
    x = ember.randn(2, 3, dtype=ember.float64, requires_grad=True)
    w = ember.randn(2, 3, dtype=ember.float64, requires_grad=True)
    assert opcheck(sin_e, (x,)) == dict.fromkeys(ALL, "SUCCESS")
    assert opcheck("emcheck::scaled_pair", (x, w, 2.0), {"n": 3}) == dict.fromkeys(ALL,
                                                                                 "SUCCESS")
    assert opcheck(add_e, (ember.zeros(3), ember.ones(3))) == dict.fromkeys(ALL, "SUCCESS")


def _define_wrong_fake():
    @ember.library.custom_op("emcheck::col_sum", mutates_args=())
    def col_sum(x: Tensor) -> Tensor:
        return ember.from_numpy(x.numpy().sum(0))

    col_sum.register_fake(lambda x: ember.empty_like(x))  # wrong: the shape of x
    return col_sum


def test_a_wrong_fake_rule_fails_test_faketensor_and_test_jit():
    col_sum = _define_wrong_fake()
    x = ember.ones(2, 3)
    with pytest.raises(OpCheckError, match=r"test_faketensor failed .*emcheck::col_sum: the fake "
                       r"impl gives output 0 as \(2, 3\) float32, the implementation made "
                       r"\(3,\) float32"):
        opcheck(col_sum, (x,))
    results = opcheck(col_sum, (x,), raise_exception=False)
    assert results["test_schema"] == results["test_vmap"] == "SUCCESS"
    assert isinstance(results["test_faketensor"], OpCheckError)
    assert isinstance(results["test_jit"], OpCheckError)


def test_missing_autograd_with_inputs_requiring_grad_fails():
    @ember.library.custom_op("emcheck::no_backward", mutates_args=())
    def no_backward(x: Tensor) -> Tensor:
        return x * 3

    no_backward.register_fake(lambda x: ember.empty_like(x))
    with pytest.raises(OpCheckError, match="test_autograd_registration.*require grad but no "
                       "autograd formula"):
        opcheck(no_backward, (ember.ones(2, requires_grad=True),))
    assert opcheck(no_backward, (ember.ones(2),), test_utils="test_autograd_registration") == \
        {"test_autograd_registration": "SUCCESS"}


def test_a_wrong_backward_fails_the_gradient_check():
    @ember.library.custom_op("emcheck::cube", mutates_args=())
    def cube(x: Tensor) -> Tensor:
        return ember.from_numpy(x.numpy() ** 3)

    cube.register_fake(lambda x: ember.empty_like(x))
    cube.register_autograd(lambda ctx, g: g * 2, setup_context=lambda ctx, inputs, output: None)
    with pytest.raises(OpCheckError, match="test_autograd_registration failed"):
        opcheck(cube, (ember.ones(3, requires_grad=True),))


def test_a_wrong_vmap_rule_fails_test_vmap():
    @ember.library.custom_op("emcheck::twice", mutates_args=())
    def twice(x: Tensor) -> Tensor:
        return ember.from_numpy(np.asarray(x.numpy() * 2))

    twice.register_fake(lambda x: ember.empty_like(x))
    twice.register_vmap(lambda info, in_dims, x: (twice(x) + 1, 0))
    with pytest.raises(OpCheckError, match="test_vmap failed .*output 0 under vmap"):
        opcheck(twice, (ember.ones(3),), test_utils=["test_vmap"])


def test_undeclared_mutation_fails_test_schema():
    @ember.library.custom_op("emcheck::writes", mutates_args=())
    def writes(x: Tensor) -> Tensor:
        x.numpy()[...] = 0.0
        return x.clone()

    with pytest.raises(OpCheckError, match="test_schema failed .*not in mutates_args"):
        opcheck(writes, (ember.ones(2),), test_utils="test_schema")


def test_unknown_check_names_are_refused():
    with pytest.raises(ValueError, match="unknown test_utils entry 'test_aot'"):
        opcheck(sin_e, (ember.ones(2),), test_utils="test_aot")


def test_an_op_that_draws_random_numbers_passes_as_in_torch():
    # (torch's opcheck seeds the generator before each run it compares)
    @ember.library.custom_op("emcheck::noisy", mutates_args=())
    def noisy(x: Tensor) -> Tensor:
        return x + ember.rand(*x.shape)

    noisy.register_fake(lambda x: ember.empty_like(x))
    ember.manual_seed(0)
    before = ember.rand(2)
    ember.manual_seed(0)
    assert opcheck(noisy, (ember.randn(3),)) == dict.fromkeys(ALL, "SUCCESS")
    ember.manual_seed(0)
    ember.randn(3)
    assert not bool((ember.rand(2) == before).all())  # (the stream outside goes on)


def test_tensor_list_inputs_are_checked_and_integer_inputs_skip_gradcheck():
    wsum = define_weighted_sum(ember, ember.library, "emcheck")
    wsum.register_fake(lambda xs, weights=None: ember.empty_like(xs[0]))
    xs = [ember.randn(3, dtype=ember.float64, requires_grad=True) for _ in range(2)]
    assert opcheck(wsum, (xs, [2.0, -1.0])) == dict.fromkeys(ALL, "SUCCESS")
    wsum.register_autograd(lambda ctx, g: ([g, g], None))  # (the weights forgotten)
    with pytest.raises(OpCheckError, match="test_autograd_registration failed"):
        opcheck(wsum, (xs, [2.0, -1.0]), test_utils="test_autograd_registration")
    assert opcheck(sin_e, (ember.arange(3),), test_utils="test_autograd_registration") == \
        {"test_autograd_registration": "SUCCESS"}  # (nothing differentiable to check)

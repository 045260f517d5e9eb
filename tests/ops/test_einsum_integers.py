"""einsum of integer and bool tensors: the result dtype and values PyTorch gives, which depend
on whether a subscript is summed, and by which operand alone."""

import numpy as np
import pytest

import ember
from tests.ops.optable import raises_like_torch, same_as_torch


@pytest.mark.parametrize("equation,dtype", [
    ("i->", "bool"), ("ij->i", "bool"), ("ii->", "bool"), ("ij->ji", "bool"), ("ii->i", "bool"),
    ("ij->", "int8"), ("ij->j", "uint8"), ("ij->", "int32"),
])
def test_einsum_of_one_integer_operand_sums_as_sum_does(equation, dtype):
    values = [[100, 1, 0], [100, 27, 1], [1, 0, 1]]
    values = values[0] if equation.index("-") == 1 else values
    same_as_torch(lambda m: m.einsum(equation, m.tensor(values).to(getattr(m, dtype))))


def test_einsum_contracting_bool_tensors_is_refused_as_in_torch():
    raises_like_torch(lambda m: m.einsum("ij,j->i", m.ones(2, 2, dtype=m.bool),
                                         m.ones(2, dtype=m.bool)),
                      ember.DTypeError, "einsum: 'ij,j->i' sums products of bool")
    same_as_torch(lambda m: m.einsum("i,i->i", m.tensor([True, False]), m.tensor([True, True])))


@pytest.mark.parametrize("equation", ["ik,j->ij", "...ik, ...j -> ij", "i,j->", "ik,jk->ij"])
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "bool"])
def test_einsum_of_integers_summing_an_operand_alone_is_int64_as_torch(equation, dtype):
    # opdb51a: PyTorch sums a subscript found in one operand only (not in the output) first,
    # as sum does, in int64: 'ik,j->ij' of int8 gave int8 with wrapped values (100 * 3 * 100)
    if dtype == "bool" and equation == "ik,jk->ij":
        pytest.skip("a bool contraction: refused, as the test above checks")
    shapes = [(2, 3), (3,)] if equation != "ik,jk->ij" else [(2, 3), (4, 3)]
    shapes = [(3,), (2,)] if equation == "i,j->" else shapes
    values = [np.arange(np.prod(s)).reshape(s) * 47 % 101 for s in shapes]
    same_as_torch(lambda m: m.einsum(equation, *[m.tensor(v).to(getattr(m, dtype))
                                                 for v in values]))


@pytest.mark.parametrize("equation,shapes", [
    ("ik,j->ij", [(2, 1), (3,)]), ("ad,bda->ad", [(2, 3), (1, 3, 2)]),
    ("ij,jk->ik", [(2, 1), (1, 3)]),
])
@pytest.mark.parametrize("dtype", ["int8", "bool"])
def test_einsum_squeezes_a_lone_subscript_of_size_one_as_torch(equation, shapes, dtype):
    # review51ops: PyTorch squeezes a lone summed subscript of size 1 instead of summing it,
    # so the dtype stays (82dfde88 gave int64 with unwrapped values, and refused bool)
    values = [np.arange(np.prod(s)).reshape(s) * 47 % 101 + 60 for s in shapes]
    same_as_torch(lambda m: m.einsum(equation, *[m.tensor(v).to(getattr(m, dtype))
                                                 for v in values]))


def test_einsum_contracting_bool_beside_a_lone_subscript_of_size_one_is_refused():
    raises_like_torch(lambda m: m.einsum("ij,j->", m.ones(1, 2, dtype=m.bool),
                                         m.ones(2, dtype=m.bool)),
                      ember.DTypeError, "sums products of bool")
    same_as_torch(lambda m: m.einsum("ij,j->", m.ones(1, 2, dtype=m.int8),
                                     m.full((2,), 100, dtype=m.int8)))

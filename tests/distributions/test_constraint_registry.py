"""biject_to / transform_to and the transforms they return, against torch: forward values,
round trips, log-det-Jacobians, shapes; the new constraints' checks."""

import numpy as np
import pytest
import torch
import torch.distributions.transforms as TT
from torch.distributions import constraints as TC

import ember
import ember.distributions as D
import ember.distributions.transforms as ET
from ember.autograd.gradcheck import gradcheck
from ember.distributions import constraints as EC

from .cases import E, T, close

rng = np.random.default_rng(3)


def _both(make):
    return make(EC), make(TC)


# (id, constraint maker, unconstrained input shape, registries that have it)
BOTH, ONLY_TO = ("biject_to", "transform_to"), ("transform_to",)
CONSTRAINTS = [
    ("real", lambda c: c.real, (2, 3), BOTH),
    ("real_vector", lambda c: c.real_vector, (2, 3), BOTH),
    ("positive", lambda c: c.positive, (2, 3), BOTH),
    ("nonnegative", lambda c: c.nonnegative, (2, 3), BOTH),
    ("greater_than", lambda c: c.greater_than(2.0), (2, 3), BOTH),
    ("greater_than_eq", lambda c: c.greater_than_eq(-1.0), (2, 3), BOTH),
    ("less_than", lambda c: c.less_than(1.5), (2, 3), BOTH),
    ("unit_interval", lambda c: c.unit_interval, (2, 3), BOTH),
    ("interval", lambda c: c.interval(-2.0, 3.0), (2, 3), BOTH),
    ("half_open_interval", lambda c: c.half_open_interval(0.0, 2.0), (2, 3), BOTH),
    ("independent", lambda c: c.independent(c.positive, 1), (2, 3), BOTH),
    ("simplex", lambda c: c.simplex, (2, 3), BOTH),
    ("corr_cholesky", lambda c: c.corr_cholesky, (2, 6), BOTH),
    ("cat", lambda c: c.cat([c.positive, c.real, c.unit_interval], -1, [1, 1, 1]), (2, 3),
     BOTH),
    ("cat_vectors", lambda c: c.cat([c.independent(c.positive, 1), c.real_vector], -1, [3, 2]),
     (2, 5), BOTH),
    ("stack", lambda c: c.stack([c.positive, c.interval(0.0, 4.0)], 0), (2, 3), BOTH),
    ("lower_cholesky", lambda c: c.lower_cholesky, (2, 3, 3), ONLY_TO),
    ("positive_definite", lambda c: c.positive_definite, (2, 3, 3), ONLY_TO),
    ("positive_semidefinite", lambda c: c.positive_semidefinite, (2, 3, 3), ONLY_TO),
]


@pytest.mark.parametrize(("make", "shape", "registries"), [c[1:] for c in CONSTRAINTS],
                         ids=[c[0] for c in CONSTRAINTS])
@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
def test_registry_against_torch(make, shape, registries, registry):
    ec, tc = _both(make)
    lookup, tlookup = getattr(D, registry), getattr(torch.distributions, registry)
    if registry not in registries:
        with pytest.raises(NotImplementedError, match="Cannot transform"):
            lookup(ec)
        return
    t, tt = lookup(ec), tlookup(tc)
    assert type(t).__name__ == type(tt).__name__
    assert t.bijective == tt.bijective
    assert t.domain.event_dim == tt.domain.event_dim
    assert t.codomain.event_dim == tt.codomain.event_dim
    x = rng.normal(size=shape)
    y, ty = t(E(x)), tt(T(x))
    close(y, ty, rtol=1e-10, atol=1e-12)
    assert t.forward_shape(shape) == tuple(tt.forward_shape(shape)) == y.shape
    assert t.inverse_shape(y.shape) == tuple(tt.inverse_shape(ty.shape))
    assert bool(ec.check(y).all())
    close(t.inv(y), tt.inv(ty), rtol=1e-8, atol=1e-10)
    if t.bijective:
        close(t.inv(y), x, rtol=1e-8, atol=1e-10)
        close(t.log_abs_det_jacobian(E(x), y), tt.log_abs_det_jacobian(T(x), ty),
              rtol=1e-10, atol=1e-12)
    else:
        with pytest.raises(NotImplementedError):
            t.log_abs_det_jacobian(E(x), y)


@pytest.mark.parametrize(("transform", "shape"), [(ET.StickBreakingTransform(), (2, 3)),
                                                  (ET.CorrCholeskyTransform(), (2, 3))])
def test_bijections_gradcheck(transform, shape):
    x = E(rng.normal(size=shape)).requires_grad_(True)

    def both(x):
        y = transform(x)
        return y, transform.log_abs_det_jacobian(x, y)

    assert gradcheck(both, (x,))


def test_log_abs_det_jacobian_is_that_of_the_map():
    """StickBreaking's term against the log-determinant of the autograd Jacobian of its
    first K - 1 outputs (the simplex has K - 1 free coordinates)."""
    x = E(rng.normal(size=3))
    t = ET.StickBreakingTransform()
    jac = ember.func.jacrev(lambda v: t(v)[:-1])(x)
    close(t.log_abs_det_jacobian(x, t(x)), ember.linalg.slogdet(jac).logabsdet, rtol=1e-10)


def test_structural_transforms_against_torch():
    x = rng.normal(size=(2, 3, 4))
    pairs = [
        (ET.IndependentTransform(ET.ExpTransform(), 2),
         TT.IndependentTransform(TT.ExpTransform(), 2)),
        (ET.ReshapeTransform((3, 4), (12,)), TT.ReshapeTransform((3, 4), (12,))),
        (ET.CatTransform([ET.ExpTransform(), ET.AffineTransform(1.0, 2.0)], 1, [1, 2]),
         TT.CatTransform([TT.ExpTransform(), TT.AffineTransform(1.0, 2.0)], 1, [1, 2])),
        (ET.StackTransform([ET.ExpTransform(), ET.SigmoidTransform()], 0),
         TT.StackTransform([TT.ExpTransform(), TT.SigmoidTransform()], 0)),
        (ET.CumulativeDistributionTransform(D.Normal(E(0.5), E(2.0))),
         TT.CumulativeDistributionTransform(torch.distributions.Normal(T(0.5), T(2.0)))),
    ]
    for t, tt in pairs:
        y, ty = t(E(x)), tt(T(x))
        close(y, ty)
        close(t.inv(y), x, rtol=1e-8, atol=1e-10)
        close(t.log_abs_det_jacobian(E(x), y), tt.log_abs_det_jacobian(T(x), ty))
        assert t.forward_shape(x.shape) == tuple(tt.forward_shape(x.shape))
        assert t.domain.event_dim == tt.domain.event_dim and t.bijective == tt.bijective
        assert t.codomain.event_dim == tt.codomain.event_dim
        cached = t.with_cache(1)
        y = cached(E(x))
        assert cached.inv(y) is not None
    with pytest.raises(ValueError, match="ReshapeTransform"):
        ET.ReshapeTransform((3,), (2, 2))
    with pytest.raises(ValueError, match="CatTransform.*size 3"):
        ET.CatTransform([ET.ExpTransform()], 0, [3])(ember.zeros(2))
    assert ET.CatTransform([ET.ExpTransform()]) != ET.CatTransform([ET.SigmoidTransform()])


def test_stick_breaking_in_a_transformed_distribution():
    loc, scale = rng.normal(size=(2, 3)), rng.uniform(0.5, 2, (2, 3))
    d = D.TransformedDistribution(D.Normal(E(loc), E(scale)), [ET.StickBreakingTransform()])
    td = torch.distributions.TransformedDistribution(
        torch.distributions.Normal(T(loc), T(scale)), [TT.StickBreakingTransform()])
    assert d.event_shape == tuple(td.event_shape) == (4,)
    v = rng.dirichlet(np.ones(4), size=(5, 2))
    close(d.log_prob(E(v)), td.log_prob(T(v)), rtol=1e-8)


def test_new_constraint_checks_against_torch():
    cases = [
        (lambda c: c.corr_cholesky, [np.eye(3), np.linalg.cholesky(
            np.array([[1.0, 0.5], [0.5, 1.0]])), np.tril(np.ones((2, 2)))]),
        (lambda c: c.multinomial(5), [np.array([2.0, 3.0]), np.array([4.0, 3.0]),
                                      np.array([-1.0, 2.0])]),
        (lambda c: c.positive_semidefinite, [np.zeros((2, 2)), -np.eye(2)]),
        (lambda c: c.cat([c.positive, c.real], -1, [1, 1]), [np.array([[1.0, -2.0],
                                                                       [-1.0, 0.0]])]),
        (lambda c: c.stack([c.positive, c.unit_interval], -1), [np.array([[1.0, 0.5],
                                                                         [2.0, 2.0]])]),
        (lambda c: c.MixtureSameFamilyConstraint(c.independent(c.positive, 1)),
         [np.array([[1.0, 2.0], [1.0, -2.0]])]),
    ]
    for make, vals in cases:
        ec, tc = _both(make)
        assert ec.event_dim == tc.event_dim and ec.is_discrete == tc.is_discrete
        for v in vals:
            close(ec.check(E(v)), tc.check(T(v)))


def test_register_a_new_constraint():
    registry = D.constraint_registry.ConstraintRegistry()
    registry.register(EC.positive, lambda c: ET.ExpTransform())
    assert isinstance(registry(EC.greater_than(3.0)), ET.ExpTransform)
    with pytest.raises(NotImplementedError, match="_Real"):
        registry(EC.real)
    with pytest.raises(TypeError, match="Constraint"):
        registry.register(int, lambda c: None)


def test_bijective_flags_match_torch():
    """Transform.bijective defaults to False (as in torch); each bijection says so itself."""
    def subclass(module):
        class Squash(module.Transform):  # a user's transform that does not declare bijective
            pass
        return Squash()

    pairs = [(subclass(ET), subclass(TT)), (ET.Transform(), TT.Transform()),
             (ET.AffineTransform(0.0, 2.0), TT.AffineTransform(0.0, 2.0))]
    for name in ["ExpTransform", "SigmoidTransform", "TanhTransform", "SoftmaxTransform",
                 "StickBreakingTransform", "LowerCholeskyTransform",
                 "PositiveDefiniteTransform", "CorrCholeskyTransform"]:
        pairs.append((getattr(ET, name)(), getattr(TT, name)()))
    pairs += [(ET.identity_transform, TT.identity_transform),
              (ET.ComposeTransform([ET.ExpTransform(), ET.SoftmaxTransform()]),
               TT.ComposeTransform([TT.ExpTransform(), TT.SoftmaxTransform()])),
              (ET.ExpTransform().inv, TT.ExpTransform().inv),
              (ET.IndependentTransform(ET.SoftmaxTransform(), 1),
               TT.IndependentTransform(TT.SoftmaxTransform(), 1)),
              (ET.CatTransform([ET.ExpTransform(), subclass(ET)]),
               TT.CatTransform([TT.ExpTransform(), subclass(TT)]))]
    for t, tt in pairs:
        assert t.bijective == tt.bijective, t


def test_corr_cholesky_wrong_length_names_the_transform():
    with pytest.raises(ValueError, match="CorrCholeskyTransform.*4"):
        ET.CorrCholeskyTransform()(ember.zeros(4))


def test_softplus_transform_against_torch():
    x = rng.normal(size=(2, 3)) * 5
    t, tt = ET.SoftplusTransform(), TT.SoftplusTransform()
    y, ty = t(E(x)), tt(T(x))
    close(y, ty)
    close(t.inv(y), x, rtol=1e-8, atol=1e-10)
    close(t.log_abs_det_jacobian(E(x), y), tt.log_abs_det_jacobian(T(x), ty))
    assert (t.bijective, t.sign, t.domain.event_dim) == (tt.bijective, tt.sign, 0)
    assert repr(t.codomain) == repr(EC.positive) and t == ET.SoftplusTransform()
    assert gradcheck(lambda v: t.log_abs_det_jacobian(v, t(v)) + t.inv(t(v) + 1.0),
                     (E(x).requires_grad_(True),))


def test_sign_is_only_defined_for_monotone_elementwise_transforms():
    """As in torch: asking a non-elementwise transform for its sign raises (a CatTransform of an
    increasing and a decreasing piece used to say +1, and TransformedDistribution.cdf was
    silently wrong for the decreasing piece)."""
    for t in [ET.StickBreakingTransform(), ET.SoftmaxTransform(), ET.CorrCholeskyTransform(),
              ET.ReshapeTransform((2,), (2, 1)), ET.Transform(),
              ET.CatTransform([ET.ExpTransform(), ET.AffineTransform(0.0, -1.0)])]:
        with pytest.raises(NotImplementedError, match=type(t).__name__):
            _ = t.sign
    for t in [ET.ExpTransform(), ET.SigmoidTransform(), ET.TanhTransform(),
              ET.SoftplusTransform(), ET.identity_transform, ET.ExpTransform().inv,
              ET.IndependentTransform(ET.ExpTransform(), 1)]:
        assert t.sign == 1
    d = D.TransformedDistribution(D.Normal(ember.zeros(2), 1.0), [
        ET.CatTransform([ET.ExpTransform(), ET.AffineTransform(0.0, -1.0)])])
    with pytest.raises(NotImplementedError, match="sign"):
        d.cdf(ember.tensor([1.0, 1.0]))


def test_class_level_dependent_supports_are_dependent():
    for name in ["Uniform", "Binomial", "Multinomial", "MixtureSameFamily"]:
        assert EC.is_dependent(getattr(D, name).support)
        assert EC.is_dependent(getattr(D, name).support) == TC.is_dependent(
            getattr(torch.distributions, name).support)
    assert not EC.is_dependent(D.Multinomial(2, probs=ember.ones(2)).support)


@pytest.mark.parametrize(("call", "words"), [
    (lambda: ET.StickBreakingTransform()(ember.tensor(1.0)), ["StickBreakingTransform"]),
    (lambda: ET.ReshapeTransform((4,), (2, 2))(ember.zeros(3, 5)), ["ReshapeTransform", "(4,)"]),
    (lambda: ET.ReshapeTransform((4,), (2, 2)).inv(ember.zeros(3, 2)), ["ReshapeTransform"]),
    (lambda: ET.CorrCholeskyTransform().inv(ember.zeros(2, 3)), ["CorrCholeskyTransform"]),
    (lambda: D.RelaxedBernoulli("hot", probs=ember.tensor([0.3])), ["LogitRelaxedBernoulli",
                                                                      "temperature"]),
])
def test_shape_errors_name_the_transform(call, words):
    with pytest.raises((ValueError, TypeError)) as err:
        call()
    for w in words:
        assert w in str(err.value)


def test_event_dim_of_a_dim_changing_transform_raises_as_torch():
    for name in ["StickBreakingTransform", "ExpTransform", "CorrCholeskyTransform"]:
        ours, theirs = getattr(ET, name)(), getattr(TT, name)()
        try:
            expected = theirs.event_dim
        except ValueError:
            with pytest.raises(ValueError, match=rf"{name}\.event_dim.*domain"):
                _ = ours.event_dim
        else:
            assert ours.event_dim == expected


def test_parametrised_constraints_are_classes_as_in_torch():
    # A factory registered for the class `greater_than` serves every greater_than(b); the
    # support checks users write (`isinstance(d.support, constraints.greater_than)`) agree.
    for name in ("greater_than", "greater_than_eq", "less_than", "interval",
                 "half_open_interval"):
        assert isinstance(getattr(EC, name), type), name
    for make, kind in [(lambda c: c.positive, "greater_than"),
                       (lambda c: c.nonnegative, "greater_than"),
                       (lambda c: c.nonnegative, "greater_than_eq"),
                       (lambda c: c.unit_interval, "interval"),
                       (lambda c: c.half_open_interval(0.0, 1.0), "interval")]:
        ours, theirs = _both(make)
        assert isinstance(ours, getattr(EC, kind)) == isinstance(theirs, getattr(TC, kind))
        assert repr(ours) == repr(theirs)
    registry = ember.distributions.constraint_registry.ConstraintRegistry()
    registry.register(EC.greater_than, lambda c: ET.AffineTransform(c.lower_bound, 2.0))
    assert registry(EC.greater_than(3.0))(ember.tensor(1.0)).item() == 5.0


@pytest.mark.parametrize(("make", "shape"), [
    (lambda m: m.StickBreakingTransform(), (4,)),
    (lambda m: m.CorrCholeskyTransform(), (3, 3)),
    (lambda m: m.ReshapeTransform((2, 3), (6,)), (6,)),
    (lambda m: m.ComposeTransform([m.ExpTransform(), m.StickBreakingTransform()]), (2, 5)),
], ids=["stick_breaking", "corr_cholesky", "reshape", "compose"])
def test_inverse_swaps_the_shapes_as_torch(make, shape):
    ours, theirs = make(ET).inv, make(TT).inv
    out = ours.forward_shape(shape)
    assert out == tuple(theirs.forward_shape(shape))
    assert ours.inverse_shape(out) == tuple(theirs.inverse_shape(out)) == shape


def test_distribution_through_an_inverse_transform_as_torch():
    d = D.TransformedDistribution(D.Dirichlet(ember.ones(4, dtype=ember.float64)),
                                  ET.StickBreakingTransform().inv)
    td = torch.distributions.TransformedDistribution(
        torch.distributions.Dirichlet(torch.ones(4, dtype=torch.float64)),
        TT.StickBreakingTransform().inv)
    assert d.event_shape == tuple(td.event_shape) == (3,)
    v = rng.normal(size=(2, 3))
    close(d.log_prob(E(v)), td.log_prob(T(v)), rtol=1e-8)


@pytest.mark.parametrize("make", [
    lambda m: m.ExpTransform(),
    lambda m: m.ExpTransform().with_cache(1),
    lambda m: m.ComposeTransform([m.ExpTransform(), m.AffineTransform(1.0, 2.0)]),
    lambda m: m.ComposeTransform([m.ExpTransform(), m.AffineTransform(1.0, 2.0)], cache_size=1),
], ids=["exp", "exp_cached", "compose", "compose_cached"])
def test_the_inverse_is_made_once_as_in_torch(make):
    """``t.inv is t.inv`` and ``t.inv.inv is t``; a composition's inverse has cache size 0
    as PyTorch's, its parts and the inverse's inverse keep the original's."""
    for t in make(ET), make(TT):
        assert t.inv is t.inv and t.inv.inv is t
    ours, theirs = make(ET), make(TT)
    assert ours.inv._cache_size == theirs.inv._cache_size
    if isinstance(ours, ET.ComposeTransform):
        assert ([p._cache_size for p in ours.inv.parts]
                == [p._cache_size for p in theirs.inv.parts])
    cached = ET.ExpTransform()
    _ = cached.inv
    copy = cached.with_cache(1)  # the copy gets its own inverse, not the original's
    assert copy.inv.inv is copy and copy.inv._cache_size == 1


def test_matrix_constraints_against_torch():
    nan = np.full((3, 3), np.nan)
    skew = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    near = np.eye(3) + np.array([[0, 1e-7, 0], [0, 0, 0], [0, 0, 0]])
    for name in ("square", "symmetric", "positive_definite", "positive_semidefinite"):
        ours, theirs = _both(lambda c, name=name: getattr(c, name))
        assert repr(ours) == repr(theirs)
        assert (ours.event_dim, ours.is_discrete) == (theirs.event_dim, theirs.is_discrete)
        for v in [np.eye(3), nan, skew, near, -np.eye(3), np.ones((2, 3)), np.ones((4, 2, 2)),
                  np.ones((2, 3, 3))]:
            close(ours.check(E(v)), theirs.check(T(v)))
        with pytest.raises(ValueError, match=r"check: expected a batch of matrices.*\(3,\)"):
            ours.check(ember.ones(3))  # torch: IndexError
    # each matrix of a batch as torch checks it alone: a NaN one is out without failing the
    # others (no eigh on it); torch's batched check returns only symmetry in a mixed batch
    indefinite = np.array([[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    batch = [np.eye(3), nan, indefinite, skew, 2 * np.eye(3)]
    close(EC.positive_definite.check(E(np.stack(batch))),
          [bool(TC.positive_definite.check(T(m))) for m in batch])


def test_dependent_is_discrete_and_event_dim_raise_unless_given_as_torch():
    for c in (EC.dependent, TC.dependent):
        for attr in ("is_discrete", "event_dim"):
            with pytest.raises(NotImplementedError, match="statically"):
                getattr(c, attr)
        given = c(is_discrete=True)(event_dim=1)
        assert (given.is_discrete, given.event_dim) == (True, 1)
    with pytest.raises(NotImplementedError, match="event_dim"):
        _ = D.MixtureSameFamily.support.event_dim
    assert D.Multinomial.support.event_dim == torch.distributions.Multinomial.support.event_dim

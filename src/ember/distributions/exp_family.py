"""``ExponentialFamily``: the base class of distributions whose density is
``p(x; θ) = exp(⟨t(x), θ⟩ - F(θ) + k(x))``, as ``torch.distributions.ExponentialFamily``.

A subclass gives its natural parameters ``θ`` (``_natural_params``), the log normalizer
``F`` (``_log_normalizer``) and the expected carrier measure ``E[k(x)]``
(``_mean_carrier_measure``); the base class then has the entropy
``F(θ) - ⟨θ, ∇F(θ)⟩ - E[k(x)]`` and, between two members of one family, the KL divergence as
the Bregman divergence of ``F`` (registered in kl_families.py). ``∇F`` comes from autograd
on ``θ`` itself, with a graph, so the entropy and both sides of ``KL(p || q)`` pass gradients to
the parameters (PyTorch differentiates a detached copy of ``θ``: its ``KL(p || q)`` passes no
gradient to ``p``'s parameters, e.g. for two Wisharts); with no parameter requiring grad, the
result carries no graph. Bernoulli, Beta,
ContinuousBernoulli, Dirichlet, Exponential, Gamma (and Chi2), Normal, Poisson and Wishart
are members, as in PyTorch; their own closed-form entropies and KL formulas take precedence.

Example:
    >>> from ember.distributions import ExponentialFamily, Normal
    >>> d = Normal(ember.tensor(0.0), ember.tensor(1.0))
    >>> isinstance(d, ExponentialFamily), ExponentialFamily.entropy(d).detach()
    (True, tensor(1.4189))
"""

from __future__ import annotations

from ember.autograd import enable_grad, grad, inference_mode, is_grad_enabled
from ember.distributions.distribution import Distribution
from ember.distributions.utils import sum_rightmost
from ember.tensor import Tensor

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """Base class of the exponential-family distributions: entropy and same-family KL
    divergence from the natural parameters and the log normalizer."""

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        """The natural parameters ``θ``, each with the batch shape (and event dims)."""
        raise NotImplementedError(f"{type(self).__name__}: _natural_params is not defined")

    def _log_normalizer(self, *natural_params: Tensor) -> Tensor:
        """``F(θ)``, per batch element."""
        raise NotImplementedError(f"{type(self).__name__}: _log_normalizer is not defined")

    @property
    def _mean_carrier_measure(self) -> float | Tensor:
        """``E[k(x)]``, needed for the entropy."""
        raise NotImplementedError(f"{type(self).__name__} does not implement entropy: its "
                                  "_mean_carrier_measure, which the exponential-family "
                                  "entropy needs, is not defined")

    def _log_normalizer_and_grads(self) -> tuple[list[Tensor], Tensor, tuple[Tensor, ...]]:
        """``θ``, ``F(θ)`` and ``∇F(θ)``: differentiable in the parameters when one of them
        requires grad (and grad mode is on), else constants (``∇F`` then comes from tracked
        copies, under ``no_grad`` and ``inference_mode`` too, and is returned without a graph)."""
        natural = self._natural_params
        tracked = [p for p in natural if p.requires_grad] if is_grad_enabled() else []
        with inference_mode(False), enable_grad():  # inference tensors are cloned to track
            if not tracked:
                params = [p.detach().clone().requires_grad_() for p in natural]
                log_norm = self._log_normalizer(*params)
                grads = grad(log_norm.sum(), params)
                return [p.detach() for p in params], log_norm.detach(), grads
            # a constant θ joins the parameters' graph through an exact zero (the sum of an
            # empty slice, 0 even beside an infinite parameter) rather than as a new leaf,
            # which an outer func.grad would read as an input of its own and keep a graph for
            zero = sum(p.reshape(-1)[:0].sum() for p in tracked)
            params = [p if p.requires_grad else p.detach() + zero.to(p.dtype) for p in natural]
            log_norm = self._log_normalizer(*params)
            return params, log_norm, grad(log_norm.sum(), params, create_graph=True)

    def entropy(self) -> Tensor:
        """``F(θ) - ⟨θ, ∇F(θ)⟩ - E[k(x)]`` (the Bregman form, as PyTorch's).

        Example:
            >>> from ember.distributions import Exponential, ExponentialFamily
            >>> ExponentialFamily.entropy(Exponential(ember.tensor([1.0]))).detach()
            tensor([1.])
        """
        result = -self._mean_carrier_measure
        params, log_norm, grads = self._log_normalizer_and_grads()
        result = result + log_norm
        for p, g in zip(params, grads):
            result = result - (p * g).reshape(tuple(self.batch_shape) + (-1,)).sum(-1)
        return result

    def _bregman_kl(self, q: ExponentialFamily) -> Tensor:
        """``KL(self || q) = F(θ_q) - F(θ_p) - ⟨θ_q - θ_p, ∇F(θ_p)⟩`` for ``q`` of the same
        family."""
        params, log_norm, grads = self._log_normalizer_and_grads()
        q_params = q._natural_params
        result = q._log_normalizer(*q_params) - log_norm
        for p, qp, g in zip(params, q_params, grads):
            result = result - sum_rightmost((qp - p) * g, len(q.event_shape))
        return result

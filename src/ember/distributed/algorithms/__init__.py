"""``torch.distributed.algorithms``: DDP communication hooks (:mod:`.ddp_comm_hooks`) and
periodic model averaging (:mod:`.model_averaging`).

Example:
    >>> from ember.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powerSGD
    >>> state = powerSGD.PowerSGDState(process_group=None, start_powerSGD_iter=10)
    >>> ddp_model.register_comm_hook(state, powerSGD.powerSGD_hook)
"""

from ember.distributed.algorithms import ddp_comm_hooks, model_averaging

__all__ = ["ddp_comm_hooks", "model_averaging"]

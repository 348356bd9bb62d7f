"""berth.explain_placement: berth's placement report for any torch.nn.Module (an HF model included), a batch,
a loss and an optimizer's state: what is on which device, grouped, with bytes, and the fix."""

import torch


class PlacementReport:
    """explain_placement's answer. str() is the report; .ok, .device (the expected one), .problems (each
    message with its fix), .groups ([{device, tensors, bytes, first_names}]), .total_bytes, .table (one row a
    tensor)."""

    def __init__(self, fields):
        self.__dict__.update(fields)

    def __str__(self):
        return self.report

    def __repr__(self):
        return f"PlacementReport(ok={self.ok}, device={self.device!r}, groups={self.groups})"

    def raise_if_problems(self):
        """Raises berth.PlacementError with the report when anything is misplaced."""
        from . import _core

        if not self.ok:
            raise _core.PlacementError(self.report)


def _named_tensors(module):
    tensors = [(name, "parameter", p) for name, p in module.named_parameters()]
    tensors += [(name, "buffer", b) for name, b in module.named_buffers() if b is not None]
    return tensors


def _optimizer_state(optimizer, module):
    names = {id(p): name for name, p in module.named_parameters()} if module is not None else {}
    entries = []
    for g, group in enumerate(optimizer.param_groups):
        for i, param in enumerate(group["params"]):
            name = names.get(id(param), f"param_groups[{g}].params[{i}]")
            for key, value in optimizer.state.get(param, {}).items():
                # torch keeps Adam's step count a CPU scalar on purpose (unless capturable): not a misplacement.
                if not isinstance(value, torch.Tensor) or (key == "step" and value.dim() == 0):
                    continue
                entries.append((name, param, key, value))
    return entries


def explain_placement(module, batch=None, device=None, optimizer=None, loss=None):
    """Checks `module`'s parameters and buffers, and when given a batch dict (HF's BatchEncoding too), a loss
    tensor and an optimizer's state, against one device: `device`, or else the real device that holds most
    of the model. Returns a PlacementReport; print it, or call .raise_if_problems()."""
    from . import _core

    tensors_in_batch = None
    if batch is not None:
        tensors_in_batch = {k: v for k, v in batch.items() if isinstance(v, torch.Tensor)}
    state = _optimizer_state(optimizer, module) if optimizer is not None else []
    fields = _core.placement_report(_named_tensors(module), tensors_in_batch, loss,
                                    None if device is None else str(device), state)
    return PlacementReport(fields)

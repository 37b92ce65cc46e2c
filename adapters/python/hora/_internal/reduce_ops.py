"""hora's reduce ops, the same objects in every API: Average (the default), Sum, Min, Max and
Product are the binding's ReduceOp values; Adasum is Horovod's name for an op hora does not
build (passing it raises UnimplementedError)."""

from __future__ import annotations

from hora import _core

# The type of Average, Sum, Min, Max and Product (the binding's enum).
ReduceOp = _core.ReduceOp

Average = _core.ReduceOp.Average
Sum = _core.ReduceOp.Sum
Min = _core.ReduceOp.Min
Max = _core.ReduceOp.Max
Product = _core.ReduceOp.Product


class Adasum:
    """Horovod's Adasum op: not built into hora (no algorithm implements it); passing it raises."""

    __module__ = "hora"  # its public name: hora.Adasum (also hora.torch.Adasum, ...)


__all__ = ["Adasum", "Average", "Max", "Min", "Product", "Sum"]

"""hora's reduce ops, the same objects in every API: Average (the default), Sum, Min, Max,
Product and Adasum are the binding's ReduceOp values. Adasum (Maleki et al., MLSys 2021)
combines whole tensors by their dot products: allreduce and grouped allreduce of float16,
bfloat16, float32 and float64 only (docs/adasum.md)."""

from __future__ import annotations

from hora import _core

# The type of Average, Sum, Min, Max, Product and Adasum (the binding's enum).
ReduceOp = _core.ReduceOp

Average = _core.ReduceOp.Average
Sum = _core.ReduceOp.Sum
Min = _core.ReduceOp.Min
Max = _core.ReduceOp.Max
Product = _core.ReduceOp.Product
Adasum = _core.ReduceOp.Adasum


__all__ = ["Adasum", "Average", "Max", "Min", "Product", "Sum"]

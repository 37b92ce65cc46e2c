"""hora's GradientReducer (hora/gradient_reducer.h) driven from a TensorFlow graph: the
per-parameter bookkeeping of every hora DistributedOptimizer, here for hora.keras.

``OpsGradientReducer.reduce(grads)`` adds one HoraReducerGradientReady op per gradient and one
HoraReducerSynchronize op after them (adapters/tensorflow/reducer_kernels.cc). Each
gradient-ready op runs as soon as its gradient exists and starts that gradient's allreduce (or
its group's, once the group is complete), so communication overlaps the rest of the backward
pass; the synchronize op completes once the whole step was reduced, without holding a
TensorFlow thread (hora._core waits on a thread of its own). The same ops run eagerly.

Local gradient accumulation (backward_passes_per_step) is the caller's: a TensorFlow gradient
is a new tensor at every pass, so hora.keras accumulates in variables and reduces every k-th
step; the reducer itself then counts one pass per step.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Sequence

import tensorflow as tf

from hora import _core
from hora._internal.args import reduce_op, wire
from hora._internal.reduce_ops import ReduceOp
from hora._internal.tensorflow import run
from hora.compression import Compression, Compressor
from hora.process_sets import ProcessSet, global_process_set, set_id
from hora.tensorflow._library import ops as _ops


class OpsGradientReducer:
    """A GradientReducer over a fixed list of parameter names (the same on every rank, in the
    same order), reducing over the ranks of ``process_set``. op: hora.Average or hora.Sum."""

    def __init__(
        self,
        names: Iterable[str],
        op: ReduceOp | None = None,
        compression: Compressor | None = Compression.none,
        gradient_predivide_factor: float = 1.0,
        name_prefix: str = "grad/",
        groups: Iterable[Iterable[int]] | None = None,
        process_set: ProcessSet = global_process_set,
    ) -> None:
        self.names = list(names)
        self._compression = compression
        self.id = _core.c_api_reducer_create(
            self.names,
            reduce_op(op),
            wire(compression),
            float(gradient_predivide_factor),
            name_prefix,
            [list(g) for g in (groups or [])],
            set_id(process_set),
        )
        self._release = weakref.finalize(self, _core.c_api_reducer_release, self.id)

    def reduce(self, grads: Sequence[tf.Tensor | None]) -> list[tf.Tensor | None]:
        """The reduced gradients, one per parameter (None stays None and is left out: it must
        be None on every rank). Dense tensors only (densify tf.IndexedSlices first)."""
        present = [(i, g) for i, g in enumerate(grads) if g is not None]
        if len(grads) != len(self.names):
            raise ValueError(
                f"gradient reducer: {len(grads)} gradients for {len(self.names)} parameters"
            )
        if not present:
            return list(grads)
        pending = [
            run(_ops.hora_reducer_gradient_ready, g, reducer_id=self.id, index=i)
            for i, g in present
        ]
        reduced = run(_ops.hora_reducer_synchronize, pending, reducer_id=self.id)
        out = list(grads)
        for (i, _), r in zip(present, reduced, strict=True):
            out[i] = r
        return out

    def release(self) -> None:
        """Forgets the reducer now (otherwise when this object is collected)."""
        self._release()

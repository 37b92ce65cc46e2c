"""DistributedOptimizer for torch (horovod.torch.DistributedOptimizer), on hora's gradient
reducer (hora/gradient_reducer.h through hora._core.GradientReducer).

Each parameter that requires a gradient gets a post-accumulate-grad hook; when autograd has
finished that gradient, the hook hands it to the reducer, which starts its allreduce at once
(at the k-th backward pass, k = backward_passes_per_step), so communication overlaps the rest
of backward. step() waits for every allreduce, then runs the wrapped optimizer's step.

The hook is one C++ call, ``reducer.ready_param(index, fallback, p)`` (a functools.partial
made at registration): it reads p.grad, exports it with torch's DLPack exporter (not
Tensor.__dlpack__, whose Python-level checks cost microseconds) and reports it, with no
Python code running per host gradient (a CUDA gradient's stream comes from
``_tensors.stream_of``). Gradients it does not take as they are (sparse, non-contiguous) go to
``fallback``, the Python hook (``_hora_hook``).
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import torch

import hora
from hora import _core
from hora._internal.args import reduce_op, wire
from hora._internal.reduce_ops import ReduceOp
from hora.compression import Compression, Compressor, user_compressor
from hora.errors import FailedPreconditionError
from hora.ops import Handle
from hora.process_sets import ProcessSet, global_process_set, set_id
from hora.torch import _tensors, mpi_ops
from hora.torch.adasum_optimizer import adasum_optimizer


class _DistributedOptimizer(torch.optim.Optimizer):
    """Mixed into the wrapped optimizer's class (as Horovod does), so isinstance checks,
    param_groups, state and schedulers keep working."""

    # ---- construction --------------------------------------------------------------------

    def __init__(
        self,
        param_groups: list[dict[str, Any]],
        named_parameters: Iterable[tuple[str, torch.nn.Parameter]] | None,
        compression: Compressor | None,
        backward_passes_per_step: int,
        op: ReduceOp | None,
        gradient_predivide_factor: float,
        groups: int | Sequence[Sequence[torch.nn.Parameter]] | None,
        sparse_as_dense: bool,
        process_set: ProcessSet,
    ) -> None:
        # The wrapped optimizer's __init__ (SGD's, Adam's, ...: defaults from param_groups).
        super(self.__class__, self).__init__(param_groups)  # type: ignore[call-arg]
        params = [p for g in self.param_groups for p in g["params"] if p.requires_grad]
        names = self._hora_names(params, named_parameters)
        # Horovod's map of each parameter to its tensor name, which scripts read.
        self._parameter_names = dict(zip(params, names, strict=True))
        op = reduce_op(op)
        if op not in (hora.Average, hora.Sum):
            raise ValueError(f"DistributedOptimizer: op {op.name}, expected Average or Sum")
        # A user's Compressor runs in the hooks and at synchronize (Horovod's way); the
        # built-in ones in the engine.
        self._hora_compressor = user_compressor(compression)
        self._hora_compressed: dict[int, tuple[torch.Tensor, Any]] = {}
        wire_format = wire(None if self._hora_compressor is not None else compression)
        if wire_format != _core.Compression.none:
            for p, n in zip(params, names, strict=True):
                if p.dtype != torch.float32:
                    raise ValueError(
                        f"DistributedOptimizer: compression {compression} applies to float32 "
                        f"gradients, but parameter '{n}' is {p.dtype}"
                    )
        self._hora_params = params
        self._hora_param_names = names
        self._hora_sparse_as_dense = bool(sparse_as_dense)
        self._hora_op = op
        self._hora_process_set = process_set
        # The reducer's arguments, kept so that discard_step can make a fresh one.
        self._hora_reducer_args = (
            names,
            {
                "op": op,
                "compression": wire_format,
                "backward_passes_per_step": int(backward_passes_per_step),
                "gradient_predivide_factor": float(gradient_predivide_factor),
                "name_prefix": "grad/",
                "groups": self._hora_groups(params, groups),
                "param_exporter": _tensors.DLPACK_EXPORTER,
                "param_stream": _tensors.stream_of,
                "process_set": set_id(process_set),
            },
        )
        self._hora_reducer = _core.GradientReducer(
            self._hora_reducer_args[0], **self._hora_reducer_args[1]
        )
        self._hora_should_synchronize = True
        self._hora_synchronized = False
        # index -> (indices handle, values handle, shape) of this step's sparse gradients
        self._hora_sparse: dict[int, tuple[Handle, Handle, torch.Size]] = {}
        self._hora_hooks = self._hora_register_hooks()

    def _hora_register_hooks(self) -> list[Any]:
        """One post-accumulate-grad hook per parameter, reporting to the current reducer."""
        ready = self._hora_reducer.ready_param
        return [
            p.register_post_accumulate_grad_hook(
                functools.partial(ready, i, self._hora_hook(i))
                if self._hora_compressor is None
                else self._hora_hook(i)
            )
            for i, p in enumerate(self._hora_params)
        ]

    def _hora_names(
        self,
        params: list[torch.nn.Parameter],
        named_parameters: Iterable[tuple[str, torch.nn.Parameter]] | None,
    ) -> list[str]:
        if named_parameters is None:
            # Horovod 0.28's names: by param group i and index j within it (parameters that
            # need no gradient count too).
            named = [
                (f"allreduce.noname.{i}.{j}", p)
                for i, group in enumerate(self.param_groups)
                for j, p in enumerate(group["params"])
            ]
        else:
            named = list(named_parameters)
        by_param, seen = {}, set()
        for name, p in named:
            if name in seen:
                raise ValueError(
                    f"DistributedOptimizer: parameter name '{name}' appears twice "
                    "in named_parameters; names must be unique"
                )
            seen.add(name)
            by_param[p] = name
        missing = [i for i, p in enumerate(params) if p not in by_param]
        if missing:
            raise ValueError(
                f"DistributedOptimizer: {len(missing)} of the optimizer's parameters are not in "
                "named_parameters (every parameter needs a name, the same on every rank); pass "
                "model.named_parameters() of the model the optimizer trains"
            )
        return [by_param[p] for p in params]

    @staticmethod
    def _hora_groups(
        params: list[torch.nn.Parameter],
        groups: int | Sequence[Sequence[torch.nn.Parameter]] | None,
    ) -> list[list[int]]:
        """Horovod's num_groups (an int) or groups (lists of parameters) as index lists."""
        if groups is None or groups == 0:
            return []
        if isinstance(groups, int):
            if groups < 0:
                raise ValueError(f"DistributedOptimizer: num_groups {groups}, expected >= 0")
            n = len(params)
            k = min(groups, n) or 1
            bounds = [n * j // k for j in range(k + 1)]
            return [
                list(range(bounds[j], bounds[j + 1])) for j in range(k) if bounds[j + 1] > bounds[j]
            ]
        index = {p: i for i, p in enumerate(params)}
        out = []
        for g in groups:
            ids = []
            for p in g:
                if p not in index:
                    raise ValueError(
                        "DistributedOptimizer: a parameter in groups is not one the "
                        "optimizer trains (or does not require grad)"
                    )
                ids.append(index[p])
            out.append(ids)
        return out

    # ---- backward ------------------------------------------------------------------------

    def _hora_hook(self, index: int) -> Callable[[torch.nn.Parameter], None]:
        """The general hook, for the gradients ready_param does not take itself."""

        def hook(p: torch.nn.Parameter) -> None:
            g = p.grad
            if g is None:
                return
            if g.is_sparse:
                if self._hora_sparse_as_dense:
                    p.grad = g = g.to_dense()
                else:
                    self._hora_sparse_start(index, g)
                    return
            if not g.is_contiguous():
                p.grad = g = g.contiguous()
            if self._hora_compressor is not None:
                self._hora_reducer.backward_seen = True  # ready_param's, which is not the hook
                g = self._hora_compress(index, g)
            self._hora_reducer.gradient_ready(index, g, stream=_tensors.stream_of(g))

        return hook

    def _hora_compress(self, index: int, grad: torch.Tensor) -> torch.Tensor:
        """The user's Compressor's tensor for parameter ``index``'s gradient, kept (with its
        context) until synchronize decompresses the reduced one into the gradient."""
        compressed, ctx = self._hora_compressor.compress(grad)
        compressed = _tensors.contiguous(compressed)
        if compressed.data_ptr() == grad.data_ptr():  # reduced in place: not into p.grad
            compressed = compressed.clone()
        self._hora_compressed[index] = (compressed, ctx)
        return compressed

    def _hora_decompress(self) -> None:
        for index, (reduced, ctx) in self._hora_compressed.items():
            p = self._hora_params[index]
            p.grad.copy_(self._hora_compressor.decompress(reduced, ctx))
        self._hora_compressed = {}

    def _hora_sparse_start(self, index: int, grad: torch.Tensor) -> None:
        """A sparse gradient (an Embedding with sparse=True) travels as an allgather of its
        indices and values; the sum of the gathered sparse tensors is the reduced gradient."""
        g = grad.coalesce()
        name, ps = self._hora_param_names[index], self._hora_process_set
        self._hora_sparse[index] = (
            mpi_ops.allgather_async(g.indices().t().contiguous(), f"grad/{name}.indices", ps),
            mpi_ops.allgather_async(g.values().contiguous(), f"grad/{name}.values", ps),
            g.shape,
        )

    def _hora_sparse_finish(self) -> None:
        for index, (hi, hv, shape) in self._hora_sparse.items():
            indices = mpi_ops.synchronize(hi).t()
            values = mpi_ops.synchronize(hv)
            if self._hora_op == hora.Average:
                values = values / mpi_ops.set_size_rank(self._hora_process_set)[0]
            p = self._hora_params[index]
            p.grad = torch.sparse_coo_tensor(indices, values, shape).coalesce()
        self._hora_sparse = {}

    # ---- step ----------------------------------------------------------------------------

    def synchronize(self) -> None:
        """Waits for every gradient's allreduce (starting those of parameters whose gradient
        was not computed on this rank: they reduce a zero gradient, as in Horovod). After it
        the gradients hold the reduced values: clip or unscale them here, then call step()
        inside skip_synchronize()."""
        if self._hora_synchronized:
            return
        for i in self._hora_reducer.unreported():
            if i in self._hora_sparse:
                continue
            p = self._hora_params[i]
            if p.grad is None:
                p.grad = torch.zeros_like(p, memory_format=torch.contiguous_format)
            elif p.grad.is_sparse:
                p.grad = p.grad.to_dense()
            g = p.grad if self._hora_compressor is None else self._hora_compress(i, p.grad)
            self._hora_reducer.flush(i, g, stream=_tensors.stream_of(g))
        self._hora_reducer.synchronize()
        self._hora_decompress()
        self._hora_sparse_finish()
        self._hora_synchronized = True

    @contextlib.contextmanager
    def skip_synchronize(self) -> Iterator[None]:
        """step() inside this block does not synchronize (synchronize() was called already)."""
        self._hora_should_synchronize = False
        try:
            yield
        finally:
            self._hora_should_synchronize = True

    def step(  # type: ignore[override]  # Optimizer.step's two overloads in one signature
        self, closure: Callable[[], float] | None = None
    ) -> float | None:
        if self._hora_should_synchronize:
            if self._hora_synchronized:
                warnings.warn(
                    "optimizer.step() called without optimizer.skip_synchronize() "
                    "after optimizer.synchronize(); the gradients were reduced once, "
                    "by synchronize()",
                    stacklevel=2,
                )
            elif not self._hora_reducer.backward_seen:
                raise FailedPreconditionError(
                    "DistributedOptimizer: step() called without a backward pass since the "
                    "last step; call loss.backward() before each step (reducing the same "
                    "gradients twice would be wrong)"
                )
            else:
                self.synchronize()
        self._hora_synchronized = False
        self._hora_reducer.backward_seen = False
        return super(self.__class__, self).step(closure)

    def zero_grad(self, set_to_none: bool = True) -> None:
        if self._hora_reducer.has_pending():
            raise FailedPreconditionError(
                "DistributedOptimizer: zero_grad() was called after loss.backward() but before "
                "step() or synchronize(); the engine is reducing those gradients. Call "
                "zero_grad() before backward (with backward_passes_per_step > 1, after the "
                "k-th pass's step)"
            )
        return super(self.__class__, self).zero_grad(set_to_none=set_to_none)


def DistributedOptimizer(
    optimizer: torch.optim.Optimizer,
    named_parameters: Iterable[tuple[str, torch.nn.Parameter]] | None = None,
    compression: Compressor | None = Compression.none,
    backward_passes_per_step: int = 1,
    op: ReduceOp | None = hora.Average,
    gradient_predivide_factor: float = 1.0,
    num_groups: int = 0,
    groups: Sequence[Sequence[torch.nn.Parameter]] | None = None,
    sparse_as_dense: bool = False,
    process_set: ProcessSet = global_process_set,
) -> torch.optim.Optimizer:
    """Wraps ``optimizer`` so that step() applies the gradients averaged over every rank (every
    member of ``process_set``: each data-parallel group of a job can train its own model).

    ``named_parameters``: ``model.named_parameters()``, so that tensors are named by the model
    (the same names on every rank); without it parameters are named as Horovod names them,
    ``allreduce.noname.<group>.<index>``. ``compression``: Compression.none / fp16 / bf16
    (float32 gradients travel as the half type, cast inside the engine), or a Compressor
    subclass of one's own, whose compress and decompress run around each gradient's
    allreduce as in Horovod. ``backward_passes_per_step``: reduce every k-th backward pass
    (local accumulation in between). ``op``: Average or Sum, or Adasum: each rank steps the
    wrapped optimizer locally and the parameter deltas are combined with Adasum (Horovod's
    Adasum optimizer; adasum_optimizer.py, docs/adasum.md). ``gradient_predivide_factor``:
    divide by f before the sum and by size/f after. ``num_groups`` / ``groups``: reduce these
    parameters together as one fused unit. ``sparse_as_dense``: densify sparse gradients (else
    they travel as an allgather of indices and values). ``process_set``: the ranks whose
    gradients are reduced together (on a non-member, the backward pass raises
    InvalidArgumentError naming the set when the first allreduce starts)."""
    if groups is not None and num_groups:
        raise ValueError("DistributedOptimizer: pass num_groups or groups, not both")
    if op == hora.Adasum:
        return _adasum_optimizer(
            optimizer,
            named_parameters,
            compression,
            backward_passes_per_step,
            gradient_predivide_factor,
            groups,
            num_groups,
            sparse_as_dense,
            process_set,
        )
    cls = type(
        optimizer.__class__.__name__, (optimizer.__class__,), dict(_DistributedOptimizer.__dict__)
    )
    wrapped = cls(
        optimizer.param_groups,
        named_parameters,
        compression,
        backward_passes_per_step,
        op,
        gradient_predivide_factor,
        groups if groups is not None else num_groups,
        sparse_as_dense,
        process_set,
    )
    if optimizer.state:
        wrapped.load_state_dict(optimizer.state_dict())
    return wrapped


def discard_step(optimizer: torch.optim.Optimizer) -> None:
    """Forgets the step a failed collective interrupted (hora.torch.elastic, after the runtime
    was re-initialised): the next backward pass starts a fresh step. Nothing for an optimizer
    that DistributedOptimizer did not wrap."""
    if not hasattr(optimizer, "_hora_reducer"):
        return
    opt: Any = optimizer
    if opt._hora_reducer.has_pending():
        # Gradients the interrupted step had reported but not yet sent would start allreduces
        # in the new membership on this rank alone: a fresh reducer forgets them.
        for hook in opt._hora_hooks:
            hook.remove()
        names, kwargs = opt._hora_reducer_args
        opt._hora_reducer = _core.GradientReducer(names, **kwargs)
        opt._hora_hooks = opt._hora_register_hooks()
    opt._hora_reducer.backward_seen = False
    opt._hora_synchronized = False
    opt._hora_sparse = {}
    opt._hora_compressed = {}


def _adasum_optimizer(
    optimizer: torch.optim.Optimizer,
    named_parameters: Iterable[tuple[str, torch.nn.Parameter]] | None,
    compression: Compressor | None,
    backward_passes_per_step: int,
    gradient_predivide_factor: float,
    groups: Sequence[Sequence[torch.nn.Parameter]] | None,
    num_groups: int,
    sparse_as_dense: bool,
    process_set: ProcessSet,
) -> torch.optim.Optimizer:
    """DistributedOptimizer's op=Adasum: the options that do not apply to reducing deltas
    are refused, as Horovod's Adasum optimizer ignores or lacks them."""
    if wire(compression) != _core.Compression.none or gradient_predivide_factor != 1.0:
        raise ValueError(
            "DistributedOptimizer: op Adasum reduces each rank's parameter delta in full "
            "precision; compression and gradient_predivide_factor do not apply"
        )
    if groups is not None or num_groups or sparse_as_dense:
        raise ValueError(
            "DistributedOptimizer: op Adasum reduces each parameter's delta as its own tensor; "
            "groups, num_groups and sparse_as_dense do not apply"
        )

    def names_of(wrapped: Any, params: list[torch.nn.Parameter]) -> list[str]:
        return _DistributedOptimizer._hora_names(wrapped, params, named_parameters)

    return adasum_optimizer(optimizer, names_of, backward_passes_per_step, process_set)


__all__ = ["DistributedOptimizer"]

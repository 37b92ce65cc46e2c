"""TorchState (horovod.torch.elastic.TorchState): a model, an optimizer, ElasticSamplers and any
Python values as one elastic State. Each torch object gets a handler that saves a copy on
commit, loads it back on restore and broadcasts rank 0's on sync."""

from __future__ import annotations

import copy
from typing import Any

import torch

from hora import runtime
from hora._internal import elastic
from hora.torch import functions
from hora.torch.elastic.sampler import ElasticSampler
from hora.torch.optimizer import discard_step


def _copy_into(saved: Any, current: Any) -> Any:
    """``current`` (a state_dict's nested dicts, lists and tensors) copied, reusing ``saved``'s
    tensors where the shapes and dtypes match, so a commit per step allocates nothing."""
    if torch.is_tensor(current):
        if (
            torch.is_tensor(saved)
            and saved.shape == current.shape
            and saved.dtype == current.dtype
            and saved.device == current.device
        ):
            return saved.copy_(current)
        return current.detach().clone()
    if isinstance(current, dict):
        old = saved if isinstance(saved, dict) else {}
        return {k: _copy_into(old.get(k), v) for k, v in current.items()}
    if isinstance(current, list | tuple):
        old = saved if isinstance(saved, list | tuple) and len(saved) == len(current) else None
        items = [_copy_into(old[i] if old else None, v) for i, v in enumerate(current)]
        return type(current)(items) if isinstance(current, tuple) else items
    return copy.deepcopy(current)


class StateHandler:
    """How one torch object is saved, restored and synced."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def save(self) -> None:
        raise NotImplementedError

    def restore(self) -> None:
        raise NotImplementedError

    def sync(self) -> None:
        raise NotImplementedError

    def reset(self) -> None:
        """After the runtime was re-initialised (nothing by default)."""

    def set_value(self, value: Any) -> None:
        self.value = value
        self.save()


class _StateDictHandler(StateHandler):
    """An object with state_dict / load_state_dict, committed into reused buffers."""

    def __init__(self, value: Any) -> None:
        super().__init__(value)
        self._saved: Any = None
        self.save()

    def save(self) -> None:
        self._saved = _copy_into(self._saved, self.value.state_dict())


class ModelStateHandler(_StateDictHandler):
    def restore(self) -> None:
        self.value.load_state_dict(self._saved)

    def sync(self) -> None:
        functions.broadcast_parameters(self.value.state_dict(), root_rank=0)
        self.save()


class OptimizerStateHandler(_StateDictHandler):
    def restore(self) -> None:
        # A copy: load_state_dict keeps the tensors it is given as the optimizer's state, which
        # the steps then update in place, and the commit's buffers must stay the commit's.
        self.value.load_state_dict(copy.deepcopy(self._saved))

    def sync(self) -> None:
        functions.broadcast_optimizer_state(self.value, root_rank=0)
        self.save()

    def reset(self) -> None:
        discard_step(self.value)


class SamplerStateHandler(StateHandler):
    def __init__(self, sampler: ElasticSampler) -> None:
        super().__init__(sampler)
        self._saved = copy.deepcopy(sampler.state_dict())

    def save(self) -> None:
        self._saved = copy.deepcopy(self.value.state_dict())

    def restore(self) -> None:
        self.value.load_state_dict(self._saved)

    def sync(self) -> None:
        # Every rank's processed indices together, then rank 0's view on every rank.
        gathered = functions.allgather_object(
            set(self.value.processed_indices), name="hora.elastic.sampler.processed"
        )
        state = self.value.state_dict()
        state["processed_indices"] = set().union(*gathered)
        self.value.load_state_dict(
            functions.broadcast_object(state, 0, name="hora.elastic.sampler.state")
        )
        self.save()

    def reset(self) -> None:
        self.value.reset()


_handler_registry: list[tuple[type, type[StateHandler]]] = [
    (torch.nn.Module, ModelStateHandler),
    (torch.optim.Optimizer, OptimizerStateHandler),
    (ElasticSampler, SamplerStateHandler),
]


def get_handler_registry() -> list[tuple[type, type[StateHandler]]]:
    """The (type, handler class) pairs TorchState tries in order (Horovod's)."""
    return _handler_registry


def set_global_handler_registry(registry: list[tuple[type, type[StateHandler]]]) -> None:
    """Replaces the registry (e.g. to add a handler for a type of one's own)."""
    global _handler_registry
    _handler_registry = registry


def _handler_for(value: Any) -> StateHandler | None:
    for handled_type, handler_cls in _handler_registry:
        if isinstance(value, handled_type):
            return handler_cls(value)
    return None


def _bcast_object(obj: Any) -> Any:
    return functions.broadcast_object(obj, 0, name="hora.elastic.state")


class TorchState(elastic.ObjectState):
    """``TorchState(model, optimizer, sampler=..., epoch=0, batch=0)``: the model's and the
    optimizer's state_dicts, ElasticSamplers and plain values (attributes of the state). commit()
    copies them (into buffers reused from the last commit), restore() loads the copy back,
    sync() broadcasts rank 0's (parameters tensor by tensor, the optimizer state as one object)
    and commits what it got. Assigning a new model or optimizer to the attribute saves it."""

    def __init__(
        self,
        model: torch.nn.Module | None = None,
        optimizer: torch.optim.Optimizer | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs.update(model=model, optimizer=optimizer)
        handlers: dict[str, StateHandler] = {}
        plain: dict[str, Any] = {}
        for name, value in kwargs.items():
            handler = _handler_for(value)
            if handler is None:
                plain[name] = value
            else:
                handlers[name] = handler
        object.__setattr__(self, "_handlers", handlers)
        for name, handler in handlers.items():
            object.__setattr__(self, name, handler.value)
        super().__init__(bcast_object=_bcast_object, get_rank=runtime.rank, **plain)

    def _each_handler(self, method: str) -> None:
        for handler in self._handlers.values():
            getattr(handler, method)()

    def save(self) -> None:
        self._each_handler("save")
        super().save()

    def restore(self) -> None:
        self._each_handler("restore")
        super().restore()

    def sync(self) -> None:
        self._each_handler("sync")
        super().sync()

    def reset(self) -> None:
        self._each_handler("reset")
        super().reset()

    def __setattr__(self, name: str, value: Any) -> None:
        handlers = self.__dict__.get("_handlers", {})
        if name in handlers:
            handlers[name].set_value(value)
        super().__setattr__(name, value)

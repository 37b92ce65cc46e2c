"""broadcast_object and allgather_object, written once for every framework API.

An object travels as its serialised bytes, a uint8 NumPy array, through hora's NumPy
collectives: first the lengths, then the bytes. The framework API passes its serialisation:
hora.torch uses torch.save (tensors inside travel too), hora.tensorflow pickle. Both block
until every rank called them (at most HORA_TIMEOUT_S per collective), on any thread that may
run hora's collectives.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from hora import ops, runtime
from hora.process_sets import ProcessSet, global_process_set


class Serializer(NamedTuple):
    """How a framework API turns an object into bytes and back."""

    dumps: Callable[[Any], bytes]
    loads: Callable[[bytes], Any]


PICKLE = Serializer(lambda obj: pickle.dumps(obj, pickle.HIGHEST_PROTOCOL), pickle.loads)


def _as_array(data: bytes) -> np.ndarray:
    """``data`` as a writable uint8 array (the collectives write their outputs in place)."""
    return np.frombuffer(bytearray(data), np.uint8)


def broadcast_object(
    obj: Any,
    root_rank: int,
    name: str | None,
    serializer: Serializer,
    process_set: ProcessSet = global_process_set,
) -> Any:
    """Root's ``obj`` on every rank (of the process set): root gets ``obj`` itself, the others a
    deserialised copy. Every rank must call it with the same name; only root's ``obj``
    matters."""
    name = name or "broadcast_object"
    is_root = runtime.rank() == root_rank
    payload = _as_array(serializer.dumps(obj)) if is_root else np.zeros(0, np.uint8)
    length = np.array([payload.size], np.int64)
    ops.broadcast_(length, root_rank, name=f"{name}.length", process_set=process_set)
    if not is_root:
        payload = np.zeros(int(length[0]), np.uint8)
    ops.broadcast_(payload, root_rank, name=f"{name}.payload", process_set=process_set)
    return obj if is_root else serializer.loads(payload.tobytes())


def allgather_object(
    obj: Any,
    name: str | None,
    serializer: Serializer,
    process_set: ProcessSet = global_process_set,
) -> list[Any]:
    """Every rank's ``obj`` (of the process set), deserialised, as a list in rank order."""
    name = name or "allgather_object"
    payload = _as_array(serializer.dumps(obj))
    lengths = ops.allgather(
        np.array([payload.size], np.int64), name=f"{name}.lengths", process_set=process_set
    )
    data = ops.allgather(payload, name=f"{name}.payload", process_set=process_set)
    out, offset = [], 0
    for n in lengths.tolist():
        out.append(serializer.loads(data[offset : offset + n].tobytes()))
        offset += n
    return out

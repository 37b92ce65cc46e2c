"""ElasticSampler (horovod.torch.elastic.ElasticSampler): a distributed sampler that resumes an
epoch where it stopped and reshards what is left when the job's size changes."""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Iterator, Sized
from typing import Any

import torch.utils.data

from hora import runtime


class ElasticSampler(torch.utils.data.Sampler[int]):
    """Each rank's share of ``dataset``'s indices for the epoch (shuffled with ``seed + epoch``
    when ``shuffle``), leaving out the indices recorded as processed this epoch, so that after a
    rollback or a size change the epoch goes on with only what no rank has done yet, resharded
    over the new size. As Horovod's: call ``record_batch(batch_idx, batch_size)`` (or
    ``record_indices``) after each batch, ``set_epoch(epoch)`` at each epoch's start, and keep
    the sampler in the TorchState (``TorchState(model, optimizer, sampler=sampler)``) so that a
    commit saves its progress. The remaining indices are padded (repeating the first ones) to a
    multiple of the size, so every rank gets the same number."""

    def __init__(self, dataset: Sized, shuffle: bool = True, seed: int = 0) -> None:
        self.dataset = dataset
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self.processed_indices: set[int] = set()
        self.num_replicas = 0
        self.rank = 0
        self.remaining_indices: list[int] = []
        self.num_samples = 0
        self.total_size = 0
        self.indices: list[int] = []
        self.reset()

    def set_epoch(self, epoch: int) -> None:
        """Starts epoch ``epoch``: nothing processed yet, a new shuffle."""
        self.epoch = epoch
        self.processed_indices = set()
        self.reset()

    def record_batch(self, batch_idx: int, batch_size: int) -> None:
        """Records this rank's batch ``batch_idx`` (of ``batch_size``) of the current iteration
        as processed."""
        self.record_indices(self.get_indices(batch_idx, batch_size))

    def record_indices(self, indices: Iterable[int]) -> None:
        """Records dataset indices as processed this epoch."""
        self.processed_indices.update(int(i) for i in indices)

    def get_indices(self, batch_idx: int, batch_size: int) -> list[int]:
        """This rank's indices of batch ``batch_idx`` of the current iteration."""
        start = batch_idx * batch_size
        return self.indices[start : min(start + batch_size, len(self.indices))]

    def state_dict(self) -> dict[str, Any]:
        return {"epoch": self.epoch, "processed_indices": set(self.processed_indices)}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.epoch = state_dict["epoch"]
        self.processed_indices = set(state_dict["processed_indices"])
        self.reset()

    def reset(self) -> None:
        """Reshards what is left of the epoch over the current size and rank."""
        self.num_replicas = runtime.size()
        self.rank = runtime.rank()
        order = list(range(len(self.dataset)))
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(order)
        done = self.processed_indices
        self.remaining_indices = [i for i in order if i not in done]
        self.num_samples = math.ceil(len(self.remaining_indices) / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.indices = self._shard()

    def _shard(self) -> list[int]:
        indices = self.remaining_indices[:]
        while 0 < len(indices) < self.total_size:  # pad to a multiple of the size
            indices += indices[: self.total_size - len(indices)]
        return indices[self.rank : self.total_size : self.num_replicas]

    def __iter__(self) -> Iterator[int]:
        self.indices = self._shard()
        return iter(self.indices)

    def __len__(self) -> int:
        return self.num_samples

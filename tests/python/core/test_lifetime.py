"""A handle keeps its buffers alive until it completes: dropping the Python handle and the
tensors right after enqueueing, then forcing the garbage collector, never lets the engine
write freed memory."""

import gc

import numpy as np

import hora
from hora import _core


def test_dropped_handles_and_tensors(hora_job, rank, size):
    results = []
    for i in range(30):
        x = np.full(1 << 16, float(rank + 1), np.float32)
        out = np.zeros_like(x)
        h = hora.allreduce_async(x, op=hora.Sum, name=f"life.{i}", output=out)
        results.append(out)  # keep only the output: the input and handle go away
        del x, h
        gc.collect()
        # Churn the allocator: freed buffers would be reused here.
        junk = [np.full(1 << 16, -7.0, np.float32) for _ in range(4)]
        del junk
    hora.barrier()
    hora.barrier()
    for out in results:
        np.testing.assert_allclose(out, size * (size + 1) / 2)


def test_dropped_output_is_kept_until_done(hora_job, rank, size):
    for i in range(20):
        hora.allgather_async(np.full((2, 3), rank, np.int32), name=f"life.ag.{i}")
        gc.collect()
    hora.barrier()
    _core.drain()
    assert _core.tracked_count() == 0


def test_registry_drains(hora_job):
    hs = [hora.allreduce_async(np.ones(8, np.float32), name=f"drain.{i}") for i in range(10)]
    for h in hs:
        hora.synchronize(h)
    del hs
    _core.drain()
    assert _core.tracked_count() == 0

"""Async handles: completed out of order, from several Python threads at once."""

import random
import threading

import numpy as np

import hora


def test_out_of_order_completion(hora_job, rank, size):
    handles = []
    for i in range(50):
        x = np.full(100 + i, float(rank + i), np.float32)
        handles.append((i, hora.allreduce_async(x, op=hora.Sum, name=f"ooo.{i}")))
    order = list(range(50))
    random.Random(7 + rank).shuffle(order)  # a different order on every rank
    for k in order:
        i, h = handles[k]
        out = hora.synchronize(h)
        np.testing.assert_allclose(out, sum(r + i for r in range(size)))
    assert all(hora.poll(h) for _, h in handles)


def test_threads_enqueue_concurrently(hora_job, rank, size):
    errors = []

    def worker(t):
        try:
            hs = []
            for i in range(40):
                x = np.arange(64, dtype=np.float64) + rank + t
                hs.append(hora.allreduce_async(x, op=hora.Sum, name=f"thr.{t}.{i}"))
            for h in reversed(hs):
                out = hora.synchronize(h)
                np.testing.assert_allclose(out, size * np.arange(64) + sum(range(size)) + size * t)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors


def test_handle_repr_and_kind(hora_job):
    h = hora.allreduce_async(np.ones(3, np.float32), name="repr.check")
    assert h.kind == "allreduce" and h.name == "repr.check"
    hora.synchronize(h)
    assert "done" in repr(h)

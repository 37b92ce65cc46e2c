"""The Python gradient path alone, per call: what one backward hook of hora.torch's
DistributedOptimizer costs, and what GradientReducer.gradient_ready costs from Python, without
the engine's per-tensor work (backward_passes_per_step is larger than the number of calls, so
every call only counts a pass: no allreduce is enqueued).

    PYTHONPATH=build/python python benchmarks/python/hook_path_bench.py [calls]

Prints, per call (best of 5 repetitions of `calls` calls, in us):
  bare_hook      a Python hook that does nothing, called the way autograd calls it (hook(p));
  optimizer_hook the hook DistributedOptimizer registered on the parameter;
  numpy_ready    reducer.gradient_ready(i, array) with a NumPy array of 16 KiB;
  torch_ready    reducer.gradient_ready(i, tensor) with a torch tensor of 16 KiB.
The engine's own per-tensor work (binding_overhead.sh measures it with the hook path) is not
in these figures. One process, no horarun needed."""

import gc
import sys
import time

import numpy as np
import torch

import hora
import hora.torch as hvd


def per_call_us(fn, calls, reps=5):
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn(calls)
        best = min(best, time.perf_counter() - t0)
    return best / calls * 1e6


def hooks_of(p):
    """The post-accumulate-grad hooks registered on ``p``, as autograd calls them."""
    return list(p._post_accumulate_grad_hooks.values())


def main():
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    hvd.init()
    elems = 16384 // 4
    passes = 10 * calls + 1  # never the k-th pass: counting only

    # A parameter with a gradient, its optimizer hook, and a bare hook for comparison.
    p = torch.nn.Parameter(torch.ones(elems))
    p.grad = torch.ones(elems)
    opt = hvd.DistributedOptimizer(
        torch.optim.SGD([p], lr=0.1), named_parameters=[("w", p)], backward_passes_per_step=passes
    )
    (hook,) = hooks_of(p)

    def bare(_p):
        return None

    def run_bare(n):
        for _ in range(n):
            bare(p)

    def run_hook(n):
        for _ in range(n):
            hook(p)

    reducer = hora.GradientReducer(["w"], backward_passes_per_step=passes)
    arr = np.ones(elems, np.float32)
    ten = torch.ones(elems)

    def run_numpy(n):
        ready = reducer.gradient_ready
        for _ in range(n):
            ready(0, arr)

    def run_torch(n):
        ready = reducer.gradient_ready
        for _ in range(n):
            ready(0, ten)

    results = {}
    for name, fn in [
        ("bare_hook", run_bare),
        ("optimizer_hook", run_hook),
        ("numpy_ready", run_numpy),
        ("torch_ready", run_torch),
    ]:
        results[name] = per_call_us(fn, calls)
        # Each counted pass holds its buffer until the step ends: end it before the next.
        opt.synchronize()
        opt._hora_synchronized = False
        reducer.synchronize()
        gc.collect()

    print(" ".join(f"{k} {v:.3f}" for k, v in results.items()), flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()

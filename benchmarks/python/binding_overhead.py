"""The Python half of benchmarks/python/binding_overhead.sh: the same two measurements as
binding_overhead_cpp, through hora's Python binding (NumPy arrays, hora._core), and the reducer
step once more through hora.torch's DistributedOptimizer (where torch is installed): each
gradient handed to the hook it registered on the parameter, as autograd calls it."""

import statistics
import sys
import time

import numpy as np

import hora
from hora import _core


def torch_step_times(names, bytes_each, steps):
    """Per-step times (us) of len(names) gradients through DistributedOptimizer's hooks, then
    synchronize(); None without torch."""
    try:
        import torch

        import hora.torch as hvd
    except ImportError:
        return None
    # One intra-op thread per rank (as hora's tests run torch): torch's idle OpenMP threads
    # would otherwise spin on the cores the engine's threads need.
    torch.set_num_threads(1)
    params = [torch.nn.Parameter(torch.ones(bytes_each // 4)) for _ in names]
    for p in params:
        p.grad = torch.ones(bytes_each // 4)
    opt = hvd.DistributedOptimizer(
        torch.optim.SGD(params, lr=0.0), named_parameters=list(zip(names, params, strict=True))
    )
    # The hook autograd calls once p.grad is complete (post-accumulate-grad).
    hooks = [(next(iter(p._post_accumulate_grad_hooks.values())), p) for p in params]
    times = []
    for step in range(steps + 5):
        t0 = time.perf_counter()
        for hook, p in hooks:
            hook(p)
        opt.synchronize()
        if step >= 5:
            times.append((time.perf_counter() - t0) * 1e6)
        with opt.skip_synchronize():
            opt.step()
    return times


def main():
    defaults = [2000, 200, 16384, 50]  # iters, tensors, bytes_each, steps
    given = [int(a) for a in sys.argv[1:5]]
    iters, tensors, bytes_each, steps = given + defaults[len(given) :]
    hora.init()
    small = np.ones(1, np.float32)
    calls = []
    for i in range(iters + iters // 10):
        t0 = time.perf_counter()
        hora.synchronize(
            _core.allreduce_async(small, None, "small", hora.Sum, 1.0, 1.0, _core.Compression.none)
        )
        if i >= iters // 10:
            calls.append((time.perf_counter() - t0) * 1e6)
    api_calls = []
    for i in range(iters // 4 + iters // 40):
        t0 = time.perf_counter()
        hora.allreduce_(small, op=hora.Sum, name="small.api")
        if i >= iters // 40:
            api_calls.append((time.perf_counter() - t0) * 1e6)

    names = [f"layer{i}" for i in range(tensors)]
    reducer = hora.GradientReducer(names)
    grads = [np.ones(bytes_each // 4, np.float32) for _ in range(tensors)]
    step_times = []
    for step in range(steps + 5):
        t0 = time.perf_counter()
        for i, g in enumerate(grads):
            reducer.gradient_ready(i, g)
        reducer.synchronize()
        if step >= 5:
            step_times.append((time.perf_counter() - t0) * 1e6)
    del reducer
    torch_times = torch_step_times(names, bytes_each, steps)
    if hora.rank() == 0:
        torch_field = (
            "" if torch_times is None else f" torch_step_us {statistics.median(torch_times):.1f}"
        )
        print(
            f"python small_allreduce_us {statistics.median(calls):.2f} "
            f"api_allreduce_us {statistics.median(api_calls):.2f} "
            f"reducer_step_us {statistics.median(step_times):.1f}{torch_field}",
            flush=True,
        )
    hora.shutdown()


if __name__ == "__main__":
    main()

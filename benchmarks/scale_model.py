#!/usr/bin/env python3
"""hora's scale model: allreduce time and training-step scaling efficiency from alpha-beta figures.

The same cost model as the selector (collectives/selector.cc), in Python, carried to 4,096 ranks:

  link          time(bytes) = alpha + bytes * beta           (one message over one link)
  reduction     bytes * gamma                                  (one pass of the reduce kernel)
  ring          2 (n - 1) steps of S / n over the slowest link + (n - 1) / n S gamma
  tree          pipelined binary tree: 2 (log2 n + S / seg - 1) segment steps, up to 2 children
  rd            recursive doubling: log2 p whole-buffer exchanges (+2 folding rounds when n is not
                a power of two)
  hierarchical  H hosts of L ranks: reduce-scatter and allgather within the host (2 (L - 1) steps
                of S / L over the host's link), and an allreduce across hosts on S / L per lane,
                the L lanes sharing each host's network link (its beta times L); the ring or rd,
                whichever the model prefers
Flat algorithms over several hosts pay the network link at every step (a step is synchronous, and
a flat ring placed host by host has one edge per host boundary, so its bytes per network link are
those of one ring edge: 2 (n - 1) / n S each way).

The processors: moving bytes costs CPU time too, which the links above do not see. When the job's
ranks share fewer cores than they need (--cores: the cores all ranks share; the namespace hosts
of benchmarks/multihost_allreduce.sh are one machine's cores), an allreduce takes at least the
CPU work of the whole job divided by those cores: every byte over TCP costs --tcp-cpu-gbs (the
kernel's send and receive together, per core-second: benchmarks/tcp_cpu_probe.py measures it),
every byte through shared memory two copies at the host link's rate (in and out), every byte
reduced gamma. The prediction is the larger of the link time and that CPU bound. Without
--cores, each rank is taken to have its own core and the bound is not applied.

A training step: forward F, backward B (= 2 F unless given), gradients of G bytes ready uniformly
during the backward pass and packed into fusion buckets of `fusion` bytes, each allreduced as soon
as it is full and the previous one is done (Horovod's overlap). The step takes F + max(B, end of
the last allreduce); scaling efficiency = (F + B) / step (weak scaling: the per-rank batch is
fixed, so n ranks do n times the work in that time).

Commands:
  table       allreduce time of every algorithm, 2 - 4,096 ranks, 8 B - 1 GiB
  efficiency  scaling efficiency of a model's training step at 1 - 4,096 ranks
  validate    predicted vs measured (a hora-bench CSV from benchmarks/multihost_allreduce.sh)
  readme      the README's table: predictions at 64 - 4,096 ranks beside Horovod's figures
  selftest    the model's own checks (CTest runs it)
"""

import argparse
import csv
import math
import statistics

GB = 1e9  # decimal, as hora-bench's GB/s


class Link:
    """alpha in seconds, bandwidth in bytes per second."""

    def __init__(self, alpha_us, gbs):
        self.alpha = alpha_us * 1e-6
        self.beta = 1.0 / (gbs * GB)

    def scaled(self, share):
        """The same link shared by `share` concurrent flows."""
        link = Link(0, 1)
        link.alpha, link.beta = self.alpha, self.beta * share
        return link


class Machine:
    """`net`: the link between hosts; `intra`: between ranks of one host; gamma: s per byte
    reduced; `per_host`: ranks per host; `segment`: the pipelined algorithms' message size."""

    def __init__(
        self, net, intra, gamma_gbs, per_host, segment=512 * 1024, cores=None, tcp_cpu_gbs=None
    ):
        self.net, self.intra, self.per_host, self.segment = net, intra, per_host, segment
        self.gamma = 1.0 / (gamma_gbs * GB)
        self.cores = cores  # cores the job's ranks share; None: one per rank
        self.tcp_cpu = 1.0 / (tcp_cpu_gbs * GB) if tcp_cpu_gbs else 0.0  # core-s per TCP byte

    def hosts(self, n):
        return max(1, math.ceil(n / self.per_host))

    def flat_link(self, n):
        """The link every step of a flat algorithm waits for."""
        if self.hosts(n) == 1:
            return self.intra
        worst = Link(0, 1)
        worst.alpha = max(self.net.alpha, self.intra.alpha)
        worst.beta = max(self.net.beta, self.intra.beta)
        return worst


def ring(S, n, link, gamma):
    if n <= 1 or S == 0:
        return 0.0
    return 2 * (n - 1) * (link.alpha + S / n * link.beta) + (n - 1) / n * S * gamma


def tree(S, n, link, gamma, segment):
    if n <= 1 or S == 0:
        return 0.0
    depth = math.floor(math.log2(n))
    seg = min(S, segment)
    segments = math.ceil(S / seg)
    fanout = min(2, n - 1)
    return 2 * (depth + segments - 1) * (link.alpha + fanout * seg * link.beta) + fanout * S * gamma


def rd(S, n, link, gamma):
    if n <= 1 or S == 0:
        return 0.0
    p = 1 << (n.bit_length() - 1)
    rounds = math.log2(p)
    fold = 0 if p == n else 2
    return (rounds + fold) * (link.alpha + S * link.beta) + (rounds + fold / 2) * S * gamma


# Lane allreduces of at most this use rd (collectives/algorithms/hierarchical.h).
RD_MAX_BYTES = 128 * 1024


def hierarchical(S, n, m):
    if n <= 1 or S == 0:
        return 0.0
    H, L = m.hosts(n), min(n, m.per_host)
    if H == 1:
        return ring(S, n, m.intra, m.gamma)
    slice_ = S / L
    t = 0.0
    if L > 1:
        t += 2 * (L - 1) * (m.intra.alpha + slice_ * m.intra.beta) + (L - 1) * slice_ * m.gamma
    lane = m.net.scaled(L)
    across = rd if slice_ <= RD_MAX_BYTES else ring
    return t + across(slice_, H, lane, m.gamma)


# ---- the CPU work of one allreduce: bytes over TCP, through shared memory, reduced -------------


def ring_bytes(S, n, m):
    """A ring placed host by host: H of its n edges cross hosts, each carrying 2 (n - 1) / n S."""
    H = m.hosts(n)
    edge = 2 * (n - 1) / n * S
    crossing = H if H > 1 else 0
    return crossing * edge, (n - crossing) * edge, (n - 1) * S


def tree_bytes(S, n, m):
    """A binary tree in rank order (parent (i - 1) / 2): every edge carries S up and S down."""
    crossing = sum(1 for i in range(1, n) if i // m.per_host != ((i - 1) // 2) // m.per_host)
    return crossing * 2 * S, (n - 1 - crossing) * 2 * S, (n - 1) * S


def rd_bytes(S, n, m):
    """Recursive doubling over the largest power of two p <= n; the n - p extra ranks fold in
    (their buffer to a partner and the result back)."""
    p = 1 << (n.bit_length() - 1)
    tcp = shm = 0.0
    step = 1
    while step < p:
        for i in range(p):
            if i // m.per_host != (i ^ step) // m.per_host:
                tcp += S
            else:
                shm += S
        step <<= 1
    for i in range(p, n):
        if i // m.per_host != (i - p) // m.per_host:
            tcp += 2 * S
        else:
            shm += 2 * S
    return tcp, shm, (p * math.log2(p) + (n - p)) * S if p > 1 else (n - p) * S


def hierarchical_bytes(S, n, m):
    """Within each host a ring reduce-scatter and allgather (2 (L - 1) S through shared memory,
    (L - 1) S reduced); across hosts L lanes on S / L each (2 (H - 1) S over TCP in all)."""
    H, L = m.hosts(n), min(n, m.per_host)
    if H == 1:
        return ring_bytes(S, n, m)
    return 2 * (H - 1) * S, H * 2 * (L - 1) * S, (H * (L - 1) + (H - 1)) * S


BYTES = {"ring": ring_bytes, "tree": tree_bytes, "rd": rd_bytes, "hierarchical": hierarchical_bytes}


def cpu_bound(algo, S, n, m):
    """The job's CPU work for one allreduce over the cores it shares (0 without --cores)."""
    if not m.cores or n <= 1 or S == 0:
        return 0.0
    tcp, shm, reduced = BYTES[algo](S, n, m)
    work = tcp * m.tcp_cpu + shm * 2 * m.intra.beta + reduced * m.gamma
    return work / m.cores


def allreduce_times(S, n, m):
    link = m.flat_link(n)
    times = {
        "ring": ring(S, n, link, m.gamma),
        "tree": tree(S, n, link, m.gamma, m.segment),
        "rd": rd(S, n, link, m.gamma),
        "hierarchical": hierarchical(S, n, m),
    }
    return {algo: max(t, cpu_bound(algo, S, n, m)) for algo, t in times.items()}


def best_time(S, n, m):
    return min(allreduce_times(S, n, m).values())


def step_time(n, m, grad_bytes, forward_s, backward_s, fusion):
    """Forward, then backward with gradients ready uniformly and allreduced bucket by bucket."""
    if n <= 1:
        return forward_s + backward_s
    buckets = max(1, math.ceil(grad_bytes / fusion))
    done = 0.0  # end of the previous bucket's allreduce, from the start of the backward pass
    left = grad_bytes
    for _k in range(buckets):
        size = min(fusion, left)
        left -= size
        ready = backward_s * (grad_bytes - left) / grad_bytes
        done = max(done, ready) + best_time(size, n, m)
    return forward_s + max(backward_s, done)


def efficiency(n, m, grad_bytes, forward_s, backward_s, fusion):
    return (forward_s + backward_s) / step_time(n, m, grad_bytes, forward_s, backward_s, fusion)


# ---- the models of Horovod's published runs -----------------------------------------------------

# Horovod's paper (Sergeev and Del Balso, 2018, figure 6): up to 512 Pascal GPUs, 4 per server,
# 25 Gbit/s RoCE between servers, TensorFlow benchmarks at batch 64 per GPU; scaling efficiency 90%
# for Inception V3 and ResNet-101, 68% for VGG-16 at 512 GPUs.
# Assumed here (inputs, not fitted to those figures): parameters as published for each model
# (float32 gradients); one-GPU throughput at batch 64 from tf_cnn_benchmarks' P100 table (ResNet-50
# 219 img/s, VGG-16 154 img/s; ResNet-101 128 img/s between ResNet-50 and ResNet-152's 91); the
# backward pass twice the forward; 10 us across the network at 25 Gbit/s line rate; 5 us and
# 10 GB/s between GPUs of a server (PCIe); reductions at 100 GB/s (GPU memory); Horovod's 64 MiB
# fusion buffer.
HOROVOD_MODELS = [
    # name, parameters, images/s on one GPU, Horovod's efficiency at 512 GPUs (None: not published)
    ("ResNet-50", 25.6e6, 219.0, None),
    ("ResNet-101", 44.5e6, 128.0, 0.90),
    ("VGG-16", 138.4e6, 154.0, 0.68),
]
HOROVOD_BATCH = 64


def horovod_machine():
    return Machine(net=Link(10, 25 / 8), intra=Link(5, 10), gamma_gbs=100, per_host=4)


def step_inputs(params, images_per_s, batch=HOROVOD_BATCH):
    compute = batch / images_per_s
    return params * 4, compute / 3, 2 * compute / 3


# ---- commands ---------------------------------------------------------------------------------


def machine_from(args):
    intra = Link(args.intra_alpha_us, args.intra_gbs)
    net = Link(args.alpha_us, args.link_gbs)
    return Machine(
        net,
        intra,
        args.gamma_gbs,
        args.ranks_per_host,
        cores=args.cores,
        tcp_cpu_gbs=args.tcp_cpu_gbs,
    )


def sizes(lo, hi, factor):
    s = lo
    while s <= hi:
        yield s
        s *= factor


def fmt_time(t):
    if t < 1e-3:
        return f"{t * 1e6:.1f} us"
    if t < 1:
        return f"{t * 1e3:.2f} ms"
    return f"{t:.2f} s"


def cmd_table(args):
    m = machine_from(args)
    names = ["ring", "tree", "rd", "hierarchical"]
    print(
        f"# allreduce time; network {args.alpha_us:.3g} us + {args.link_gbs:.3g} GB/s, "
        f"host {args.intra_alpha_us:.3g} us + {args.intra_gbs:.3g} GB/s, "
        f"{args.ranks_per_host} ranks/host"
    )
    print(f"{'ranks':>6} {'bytes':>12} " + " ".join(f"{n:>13}" for n in names) + "  best")
    n = 2
    while n <= args.max_ranks:
        for S in sizes(8, 1 << 30, args.size_factor):
            t = allreduce_times(S, n, m)
            best = min(t, key=t.get)
            print(
                f"{n:6d} {S:12d} " + " ".join(f"{fmt_time(t[k]):>13}" for k in names) + "  " + best
            )
        n *= 2


def cmd_efficiency(args):
    m = machine_from(args)
    grad = args.params * args.bytes_per_param
    fwd = args.compute_ms * 1e-3 / 3
    bwd = 2 * fwd
    print(
        f"# {args.params / 1e6:.3g} M parameters ({grad / 1e6:.1f} MB of gradients), "
        f"step compute {args.compute_ms:.1f} ms, fusion {args.fusion_mib} MiB"
    )
    print(f"{'ranks':>6} {'step':>10} {'efficiency':>10}")
    n = 1
    while n <= args.max_ranks:
        t = step_time(n, m, grad, fwd, bwd, args.fusion_mib << 20)
        print(f"{n:6d} {fmt_time(t):>10} {100 * (fwd + bwd) / t:9.1f}%")
        n *= 2


def cmd_validate(args):
    """Predicted vs measured for every (implementation, size) of a hora-bench CSV whose
    implementation maps to a modelled algorithm."""
    m = machine_from(args)
    impl_algo = {
        "hora-ring": "ring",
        "hora-tree": "tree",
        "hora-rd": "rd",
        "hora-hierarchical": "hierarchical",
    }
    errors, large = {}, {}
    print(f"{'implementation':<18} {'bytes':>12} {'measured':>12} {'predicted':>12} {'error':>8}")
    for r in csv.DictReader(open(args.csv)):
        algo = impl_algo.get(r["impl"])
        if algo is None or r["placement"] != "out-of-place" or r.get("available", "1") != "1":
            continue
        n, S = int(r["ranks"]), int(r["size_bytes"])
        measured = float(r["time_us"]) * 1e-6
        predicted = allreduce_times(S, n, m)[algo]
        err = (predicted - measured) / measured
        errors.setdefault(algo, []).append(abs(err))
        if S >= 16 << 20:
            large.setdefault(algo, []).append(abs(err))
        print(
            f"{r['impl']:<18} {S:12d} {fmt_time(measured):>12} {fmt_time(predicted):>12} "
            f"{100 * err:+7.0f}%"
        )
    print()
    for algo, e in errors.items():
        big = large.get(algo, [])
        print(
            f"{algo:<14} median |error| {100 * statistics.median(e):.0f}%, "
            f"max {100 * max(e):.0f}% over {len(e)} sizes"
            + (
                f"; from 16 MiB: median {100 * statistics.median(big):.0f}%, "
                f"max {100 * max(big):.0f}%"
                if big
                else ""
            )
        )


def cmd_readme(args):
    m = horovod_machine()
    ranks = [64, 128, 256, 512, 1024, 2048, 4096]
    print("| model | gradients | Horovod at 512 GPUs | " + " | ".join(str(n) for n in ranks) + " |")
    print("| --- | --- | --- | " + " | ".join("---" for _ in ranks) + " |")
    for name, params, ips, published in HOROVOD_MODELS:
        grad, fwd, bwd = step_inputs(params, ips)
        cells = [f"{100 * efficiency(n, m, grad, fwd, bwd, 64 << 20):.0f}%" for n in ranks]
        pub = f"{100 * published:.0f}%" if published else "-"
        print(f"| {name} | {grad / 1e6:.0f} MB | {pub} | {' | '.join(cells)} |")


def cmd_selftest(_args):
    m = Machine(net=Link(50, 1.25), intra=Link(5, 5), gamma_gbs=5, per_host=2)
    S = 64 << 20
    t = allreduce_times(S, 4, m)
    # Two hosts of two ranks, a slow link: the ring sends 1.5 buffers over it, hierarchical 1.
    assert t["hierarchical"] < t["ring"], t
    # Latency-bound: rd beats the ring at 8 bytes.
    t8 = allreduce_times(8, 64, m)
    assert t8["rd"] < t8["ring"], t8
    # Times grow with the size and (for the ring's latency) with the ranks.
    assert ring(2 * S, 8, m.net, m.gamma) > ring(S, 8, m.net, m.gamma)
    assert ring(8, 128, m.net, m.gamma) > ring(8, 8, m.net, m.gamma)
    # One host: hierarchical is the ring.
    assert abs(hierarchical(S, 2, m) - ring(S, 2, m.intra, m.gamma)) < 1e-12
    # Efficiency: 100% on one rank, falls with ranks, never above 100%.
    h = horovod_machine()
    grad, fwd, bwd = step_inputs(44.5e6, 128.0)
    effs = [efficiency(n, h, grad, fwd, bwd, 64 << 20) for n in (1, 8, 512, 4096)]
    assert effs[0] == 1.0 and all(0 < e <= 1.0 for e in effs), effs
    assert effs[-1] <= effs[1], effs
    # Compute-heavy steps scale better than communication-heavy ones (VGG-16 vs ResNet-101).
    vg = step_inputs(138.4e6, 154.0)
    assert efficiency(512, h, *vg, 64 << 20) < effs[2]
    # The CPU bound: 4 ranks sharing 2 cores are slower than the links alone say; with a core
    # per rank (no --cores) nothing changes. Hierarchical moves fewer TCP bytes than the ring.
    shared = Machine(
        net=Link(50, 1.25), intra=Link(5, 5), gamma_gbs=5, per_host=2, cores=2, tcp_cpu_gbs=1.0
    )
    ts = allreduce_times(S, 4, shared)
    assert all(ts[k] >= t[k] for k in t) and ts["ring"] > t["ring"], (ts, t)
    assert ring_bytes(S, 4, shared)[0] > hierarchical_bytes(S, 4, shared)[0]
    assert rd_bytes(S, 4, shared)[0] == 2 * 2 * S  # the second round crosses for all 4 ranks
    print("scale_model selftest: 11 checks passed")


def main():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = p.add_subparsers(dest="cmd", required=True)

    def machine_args(q):
        q.add_argument("--alpha-us", type=float, default=5.0, help="network latency (us)")
        q.add_argument(
            "--link-gbs", type=float, default=12.5, help="network GB/s (100 Gbit/s: 12.5)"
        )
        q.add_argument("--intra-alpha-us", type=float, default=1.0, help="within a host (us)")
        q.add_argument("--intra-gbs", type=float, default=50.0, help="within a host (GB/s)")
        q.add_argument("--gamma-gbs", type=float, default=20.0, help="reduction rate (GB/s)")
        q.add_argument("--ranks-per-host", type=int, default=8)
        q.add_argument(
            "--cores",
            type=int,
            default=None,
            help="cores all the job's ranks share (default: one per rank, no CPU bound)",
        )
        q.add_argument(
            "--tcp-cpu-gbs",
            type=float,
            default=1.0,
            help="bytes over TCP per core-second, send and receive together",
        )

    q = sub.add_parser("table")
    machine_args(q)
    q.add_argument("--max-ranks", type=int, default=4096)
    q.add_argument("--size-factor", type=int, default=8)
    q.set_defaults(fn=cmd_table)
    q = sub.add_parser("efficiency")
    machine_args(q)
    q.add_argument("--params", type=float, default=25.6e6, help="ResNet-50 by default")
    q.add_argument("--bytes-per-param", type=int, default=4)
    q.add_argument("--compute-ms", type=float, default=292.0, help="forward + backward of one step")
    q.add_argument("--fusion-mib", type=int, default=64)
    q.add_argument("--max-ranks", type=int, default=4096)
    q.set_defaults(fn=cmd_efficiency)
    q = sub.add_parser("validate")
    machine_args(q)
    q.add_argument("csv", help="hora-bench --csv output")
    q.set_defaults(fn=cmd_validate)
    q = sub.add_parser("readme")
    q.set_defaults(fn=cmd_readme)
    q = sub.add_parser("selftest")
    q.set_defaults(fn=cmd_selftest)
    args = p.parse_args()
    args.fn(args)


if __name__ == "__main__":
    main()

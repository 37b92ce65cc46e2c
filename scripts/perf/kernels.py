"""The kernels' sections: CPU reduction and copy kernels against memcpy (kernels_bench, Google
Benchmark), and the GPU figures of scripts/gpu_check.sh."""

from perf import common
from perf.common import fmt, table

ISAS = [("avx2", "AVX2"), ("avx512", "AVX-512")]
REDUCTIONS = [
    ("reduce_sum/float32", "float32"),
    ("reduce_sum/float16", "float16"),
    ("reduce_sum/bfloat16", "bfloat16"),
    ("reduce_sum_l2/float32", "float32 in L2 (128 KiB buffers)"),
]


def baseline(name):
    """What a kernel's "x memcpy" divides by: the pieces rows by memcpy in the same pieces."""
    return "pieces/memcpy" if name.startswith("pieces/") else "memcpy"


class CpuKernels(common.Section):
    name = "kernels"
    title = "CPU reduction kernels"
    about = (
        "`kernels_bench` (Google Benchmark), one thread, 64 MiB buffers: GB/s counts one buffer "
        "per iteration (memcpy moves 2x that, a reduction 3x). x memcpy is a kernel's rate over "
        "memcpy's; x scalar its rate over the scalar path (compiled without vectorisation). On "
        "64 MiB buffers the vector paths and the scalar one share the memory bus, so the "
        "compute ratio shows on the L2-resident row. Targets: float32 sum >= 0.8x memcpy, "
        "float16 and bfloat16 >= 0.5x, the vector paths >= 4x scalar where memory does not bound "
        "them. The copy rows compare `kernels::copy` with memcpy in the 512 KiB pieces the "
        "shared-memory allreduce copies, into a page-aligned destination and one 16 bytes past "
        "a page (a glibc heap block's start), where memcpy's `rep movsb` slows down on some "
        "CPUs; a copy between buffers aligned alike is memcpy itself."
    )

    output = ("json", "kernels_bench --benchmark_out=FILE --benchmark_out_format=json")

    def ingest(self, args):
        runs = common.read_json(args.json)["benchmarks"]
        rates = {
            r["name"]: r["bytes_per_second"]
            for r in runs
            if not r.get("error_occurred")
            and r.get("run_type", "iteration") == "iteration"
            and "bytes_per_second" in r
        }
        kernels = {}
        for name, value in rates.items():
            isa = name.rsplit("/", 1)[-1]
            scalar = rates.get(name.rsplit("/", 1)[0] + "/scalar")
            kernels[name] = {
                "gbs": value / 1e9,
                "x_memcpy": None
                if name.startswith("reduce_sum_l2/")
                else common.ratio(value, rates.get(baseline(name))),
                "x_scalar": common.ratio(value, scalar)
                if name.startswith("reduce") and isa != "scalar"
                else None,
            }
        return [args.command], {"kernels": kernels}, None

    def render(self, data):
        k = data["results"]["kernels"]

        def pair(prefix, field):
            return " / ".join(
                common.fmt_ratio(k.get(f"{prefix}/{isa}", {}).get(field)) for isa, _ in ISAS
            )

        isa_names = " / ".join(label for _, label in ISAS)
        rows = [
            [f"reduce sum {label}", pair(prefix, "x_memcpy"), pair(prefix, "x_scalar")]
            for prefix, label in REDUCTIONS
        ]
        lines = self.intro(data)
        lines += table(["kernel", f"x memcpy, {isa_names}", f"x scalar, {isa_names}"], rows)
        copies = []
        for suffix, label in (("", "page-aligned"), ("/dst+16", "16 bytes past a page")):
            cells = [fmt(k.get("pieces/memcpy" + suffix, {}).get("x_memcpy"), 2)]
            cells += [
                fmt(k.get(f"pieces/copy/{isa}{suffix}", {}).get("x_memcpy"), 2) for isa, _ in ISAS
            ]
            copies.append([label, *cells])
        lines += ["", "Copies in 512 KiB pieces, x memcpy into a page-aligned destination:", ""]
        lines += table(["destination", "memcpy"] + [f"copy, {label}" for _, label in ISAS], copies)
        return [*lines, "", *common.commands_block(data["commands"])]

    def headline(self, data):
        f32 = [
            data["results"]["kernels"].get(f"reduce_sum/float32/{isa}", {}).get("x_memcpy")
            for isa, _ in ISAS
        ]
        return [
            (
                "float32 sum kernel, x memcpy (AVX2 / AVX-512)",
                " / ".join(fmt(v, 2, "x") for v in f32),
            )
        ]


class Gpu(common.Section):
    name = "gpu"
    title = "GPUs"
    about = (
        "`bash scripts/gpu_check.sh` runs every GPU test and the GPU benchmarks "
        "(cuda_kernels_bench: kernels against a device memcpy; hora-bench `--device cuda "
        "--compare nccl`, also `--through-engine`), and Horovod's synthetic benchmark, ported, "
        "trains ResNet-50 (`--no-hora`: the plain optimizer in one process). The figures are "
        "taken from those runs' summaries into docs/bench/gpu.json."
    )
    rerun = (
        "`bash scripts/gpu_check.sh` on a machine with a GPU prints the figures that "
        "docs/bench/gpu.json holds"
    )

    def render(self, data):
        r = data["results"]
        lines = self.intro(data)
        lines += table(["", "figure"], r["figures"])
        if r.get("training"):
            lines += ["", *table(["ResNet-50, batch 64", "images/s"], r["training"])]
        return [*lines, "", *common.commands_block(data["commands"])]

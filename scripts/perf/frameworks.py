"""The frameworks' sections: hora.torch against DistributedDataParallel, hora.keras against
TensorFlow's multi-worker training, and what the Python binding adds."""

from perf import common
from perf.common import fmt, table


def rate(entry):
    return entry.get("samples_per_s") if isinstance(entry, dict) else None


def per_rank_batch_rows(first, plain, ranks, ours, theirs, label_ours, label_theirs):
    """Rows: one process at each batch, then ours and theirs at each rank count, with the
    ratios to theirs and to one process at the same global batch."""
    base = rate(plain.get(str(first)))
    rows = [
        [f"one process, batch {b}", fmt(rate(plain[b]), 0, thousands=True), "", "", ""]
        for b in sorted(plain, key=int)
    ]
    for n in ranks:
        mine, other = rate(ours.get(n)), rate(theirs.get(n))
        single = rate(plain.get(str(first * int(n))))
        for label, value, vs in (
            (label_ours, mine, common.ratio(mine, other)),
            (label_theirs, other, None),
        ):
            if value is None:
                continue
            eff = common.ratio(value, int(n) * base) if base else None
            rows.append(
                [
                    label.format(n=n),
                    fmt(value, 0, thousands=True),
                    fmt(vs, 2, "x") if vs is not None else "",
                    fmt(common.scale(eff, 100), 0, "%"),
                    fmt(common.ratio(value, single), 2, "x"),
                ]
            )
    return rows


class TorchScaling(common.Section):
    name = "torch_scaling"
    title = "PyTorch: hora.torch against DistributedDataParallel"
    about = (
        "DDP's benchmark model, the MLP 1024-2048-2048-1024-10 (8.4M parameters), per-rank batch "
        "64, one thread per rank, SGD with momentum: one plain process, hora.torch's "
        "DistributedOptimizer and DDP over gloo, each launched by horarun. Scaling efficiency is "
        "N-rank samples/s over N x one process at batch 64; the last column compares with one "
        "process at the same global batch."
    )

    output = ("json", "torch_scaling.py --json output")

    def ingest(self, args):
        raw = common.read_json(args.json)
        keys = ("torch", "plain", "hora", "ddp", "hora_overhead_ms")
        return [args.command], {k: raw[k] for k in keys}, None

    def render(self, data):
        r = data["results"]
        ranks = sorted((n for n in r["ddp"]), key=int)
        rows = per_rank_batch_rows(
            64,
            r["plain"],
            ranks,
            r["hora"],
            r["ddp"],
            "hora.torch, {n} ranks",
            "DDP over gloo, {n} ranks",
        )
        one = r["hora"].get("1")
        if one:
            rows.insert(
                len(r["plain"]),
                [
                    (
                        "hora.torch, 1 rank "
                        f"({common.fmt_added(r['hora_overhead_ms'], 1, ' ms')} a step over one "
                        "plain process)"
                    ),
                    fmt(rate(one), 0, thousands=True),
                    "",
                    "",
                    "",
                ],
            )
        return (
            self.intro(data, f"; torch {r['torch']}")
            + table(
                [
                    "configuration",
                    "samples/s",
                    "vs DDP",
                    "scaling efficiency",
                    "vs one process at N x 64",
                ],
                rows,
            )
            + [""]
            + common.commands_block(data["commands"])
        )

    def headline(self, data):
        r = data["results"]
        return [
            (
                f"hora.torch over DDP, {n} ranks",
                fmt(common.ratio(rate(r["hora"][n]), rate(r["ddp"][n])), 2, "x"),
            )
            for n in sorted(r["ddp"], key=int)[:1]
        ]


class KerasScaling(common.Section):
    name = "keras_scaling"
    title = "Keras: hora.keras against TensorFlow's multi-worker training"
    about = (
        "TensorFlow 2.21 with Keras 3.15. The Keras MLP 1024-2048-2048-1024-10, per-rank batch "
        "64, one thread per rank, SGD, trained with `model.fit`. The baseline is what TensorFlow "
        "users have: Keras 3's `model.fit` under `MultiWorkerMirroredStrategy` fails on "
        'TensorFlow 2.21 ("Attempt to convert a value (PerReplica...) to a Tensor"), so they '
        "fall back to tf_keras (Keras 2, `TF_USE_LEGACY_KERAS=1`), with workers on loopback."
    )

    output = ("json", "keras_scaling.py --json output")

    def ingest(self, args):
        return [args.command], common.read_json(args.json)["results"], None

    def render(self, data):
        r = data["results"]
        plain = {k.split()[-1]: v for k, v in r.items() if k.startswith("single batch ")}
        ours = {k.split()[1]: v for k, v in r.items() if k.startswith("hora.keras ")}
        theirs = {k.split()[2]: v for k, v in r.items() if k.startswith("tf_keras MWMS ")}
        rows = per_rank_batch_rows(
            64,
            plain,
            sorted(ours, key=int),
            ours,
            theirs,
            "hora.keras, {n} ranks",
            "tf_keras MWMS, {n} workers",
        )
        lines = self.intro(data)
        lines += table(
            [
                "configuration",
                "samples/s",
                "vs MWMS",
                "scaling efficiency",
                "vs one process at N x 64",
            ],
            rows,
        )
        cost = r.get("op cost 1 ranks")
        if isinstance(cost, dict):
            lines += [
                "",
                (
                    f"One hora op inside a `tf.function` (a 1-element allreduce, 1 rank): "
                    f"{fmt(cost['hora_us'], 0)} us per call, against "
                    f"{fmt(cost['identity_us'], 0)} us for a `tf.function` running "
                    f"`tf.identity`; the same allreduce from hora's NumPy API "
                    f"{fmt(cost['numpy_us'], 0)} us."
                ),
            ]
        return [*lines, "", *common.commands_block(data["commands"])]

    def headline(self, data):
        r = data["results"]
        return [
            (
                "hora.keras over tf_keras MultiWorkerMirroredStrategy, 2 ranks",
                fmt(
                    common.ratio(
                        rate(r.get("hora.keras 2 ranks")), rate(r.get("tf_keras MWMS 2 workers"))
                    ),
                    2,
                    "x",
                ),
            )
        ]


def fields(text, first):
    """{name: value} of the "name value name value ..." line whose first word is `first`
    ("cpp", "python": the tag is dropped; "bare_hook": a name itself)."""
    for line in common.rank0_lines(text):
        words = line.split()
        if words and words[0] == first:
            if len(words) % 2:
                words = words[1:]
            return {k: float(v) for k, v in zip(words[0::2], words[1::2], strict=True)}
    return {}


class BindingOverhead(common.Section):
    name = "binding_overhead"
    title = "Python binding: what Python adds"
    about = (
        "`binding_overhead.sh` measures at 2 ranks, builtin backend: a lone 4-byte "
        "`allreduce_async` + synchronize from C++ and from Python (`hora._core`, and "
        "`hora.allreduce_` with its argument handling), and a step of 200 gradients of 16 KiB "
        "through the GradientReducer from C++, from Python, and through hora.torch's "
        "DistributedOptimizer hooks. `hook_path_bench.py` times the Python gradient path alone, "
        "per call, with no allreduce enqueued."
    )

    def add_arguments(self, parser):
        parser.add_argument("--command", action="append", required=True)
        parser.add_argument("output", help="binding_overhead.sh's output")
        parser.add_argument("--hooks", help="hook_path_bench.py's output")

    def ingest(self, args):
        text = common.read_text(args.output)
        cpp, py = fields(text, "cpp"), fields(text, "python")
        hooks = fields(common.read_text(args.hooks), "bare_hook") if args.hooks else {}
        cpp_small, cpp_step = cpp.get("small_allreduce_us"), cpp.get("reducer_step_us")
        results = {
            "small_cpp_us": cpp_small,
            "small_added_us": {
                "core": py["small_allreduce_us"] - cpp_small if cpp_small else None,
                "api": py["api_allreduce_us"] - cpp_small if cpp_small else None,
            },
            "step_cpp_us": cpp_step,
            "step_ratio": {
                "python": common.ratio(py.get("reducer_step_us"), cpp_step),
                "torch_hooks": common.ratio(py.get("torch_step_us"), cpp_step),
            },
            "hooks_us": hooks,
        }
        return args.command, results, None

    def render(self, data):
        r = data["results"]
        added, step, hooks = r["small_added_us"], r["step_ratio"], r.get("hooks_us") or {}
        rows = [
            ["a lone 4-byte allreduce from C++", fmt(r.get("small_cpp_us"), 1, " us"), ""],
            [
                "added by Python: `hora._core` / `hora.allreduce_`",
                f"{common.fmt_added(added.get('core'))} / {common.fmt_added(added.get('api'))} us",
                "+10 us",
            ],
            ["a 200 x 16 KiB reducer step from C++", common.fmt_time(r.get("step_cpp_us")), ""],
            [
                "the same step from Python / through hora.torch's hooks, over C++",
                f"{fmt(step.get('python'), 2, 'x')} / {fmt(step.get('torch_hooks'), 2, 'x')}",
                "1.2x",
            ],
            [
                "per call: hora.torch's gradient hook",
                fmt(hooks.get("optimizer_hook"), 2, " us"),
                "",
            ],
            [
                "per call: `GradientReducer.gradient_ready`, NumPy / torch tensor",
                f"{fmt(hooks.get('numpy_ready'), 2)} / {fmt(hooks.get('torch_ready'), 2)} us",
                "",
            ],
            ["per call: a bare Python hook", fmt(hooks.get("bare_hook"), 2, " us"), ""],
        ]
        return (
            self.intro(data)
            + table(["figure", "value", "target"], rows)
            + [""]
            + common.commands_block(data["commands"])
        )

"""Keras data-parallel throughput: hora.keras against TensorFlow's own multi-worker training.

The same Keras MLP (1024-2048-2048-1024-10, softmax cross-entropy, SGD), per-rank batch 64, one
compute thread per rank, on synthetic data, trained with model.fit:

- hora.keras at 2 and 4 ranks (horarun -np N; DistributedOptimizer averages the gradients
  through hora's asynchronous TensorFlow ops inside the compiled train step);
- TensorFlow's MultiWorkerMirroredStrategy at 2 and 4 workers on loopback, with tf_keras
  (Keras 2, TF_USE_LEGACY_KERAS=1): Keras 3's model.fit under that strategy fails on
  TensorFlow 2.21 ("Attempt to convert a value (PerReplica...) to a Tensor"), so this is the
  fallback TensorFlow users have;
- one process at batch 64 and at 64 x N (the doubled batch for 2 ranks).

It also reports the cost of one hora op inside a tf.function (a 1-element allreduce) against
a tf.function that only runs tf.identity, per call, and the same allreduce from hora's NumPy
API (the engine's round trip without TensorFlow).

Totals are samples/s over the timed steps of every rank together. Run on a quiet machine:

    python benchmarks/keras_scaling.py --horarun build/launcher/horarun
    python benchmarks/keras_scaling.py --tiny        # a quick check that every path runs

PYTHONPATH must reach hora (build/python for a build tree). Needs tf-keras for the
baseline (pip install tf-keras==2.21.0); without it that row says so.
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import time

RESULT = "KERAS_SCALING_RESULT "


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--worker", choices=["hora", "single", "mwms", "op-cost"], help=argparse.SUPPRESS
    )
    p.add_argument("--ranks", type=int, nargs="+", default=[2, 4], help="rank counts to run")
    p.add_argument("--batch", type=int, default=64, help="per-rank batch")
    p.add_argument("--warmup", type=int, default=10, help="steps before timing")
    p.add_argument("--steps", type=int, default=50, help="timed steps")
    p.add_argument(
        "--layers",
        type=int,
        nargs="+",
        default=[1024, 2048, 2048, 1024, 10],
        help="input width, hidden widths, classes",
    )
    p.add_argument("--threads", type=int, default=1, help="compute threads per rank")
    p.add_argument("--op-calls", type=int, default=2000, help="calls timed for the op cost")
    p.add_argument(
        "--tiny", action="store_true", help="tiny model and few steps: checks that every path runs"
    )
    p.add_argument("--horarun", default=None, help="horarun (default: PATH, then build/)")
    p.add_argument("--python", default=sys.executable, help="interpreter for the workers")
    p.add_argument("--timeout", type=float, default=600, help="seconds per configuration")
    p.add_argument("--json", default=None, help="also write the results here")
    # Set by the driver for MWMS workers.
    p.add_argument("--worker-index", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--worker-ports", type=int, nargs="*", default=[], help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.tiny:
        args.layers, args.warmup, args.steps, args.op_calls = [32, 64, 10], 2, 5, 50
    return args


# ----------------------------------------------------------------------------- workers


def _tensorflow(threads):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    return tf


def _data(keras_module, layers, rows, seed):
    import numpy as np

    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, layers[0])).astype(np.float32)
    y = rng.integers(0, layers[-1], size=rows).astype(np.int64)
    return x, y


def _mlp(keras_module, layers):
    k = keras_module
    model = k.Sequential(
        [k.Input((layers[0],))]
        + [k.layers.Dense(w, activation="relu") for w in layers[1:-1]]
        + [k.layers.Dense(layers[-1])]
    )
    return model


class _Timer:
    """A Keras callback timing the steps after the warm-up ones."""

    def __init__(self, keras_module, warmup):
        outer = self

        class Callback(keras_module.callbacks.Callback):
            def on_train_batch_begin(self, batch, logs=None):
                if batch == warmup:
                    outer.start = time.perf_counter()

            def on_train_end(self, logs=None):
                outer.end = time.perf_counter()

        self.callback = Callback()
        self.start = self.end = None

    def seconds(self):
        return self.end - self.start


def _fit(keras_module, model, x, y, batch, args, extra_callbacks=()):
    timer = _Timer(keras_module, args.warmup)
    model.fit(
        x,
        y,
        batch_size=batch,
        epochs=1,
        shuffle=False,
        verbose=0,
        steps_per_epoch=args.warmup + args.steps,
        callbacks=[*list(extra_callbacks), timer.callback],
    )
    return timer.seconds()


def worker_hora(args):
    _tensorflow(args.threads)
    import keras

    import hora.keras as hvd

    hvd.init()
    rows = args.batch * (args.warmup + args.steps)
    x, y = _data(keras, args.layers, rows, seed=hvd.rank())
    model = _mlp(keras, args.layers)
    model.compile(
        optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(0.01)),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=False,
    )
    seconds = _fit(
        keras, model, x, y, args.batch, args, [hvd.callbacks.BroadcastGlobalVariablesCallback(0)]
    )
    import numpy as np

    import hora

    slowest = float(hora.allreduce(np.array([seconds]), op=hora.Max, name="seconds")[0])
    if hvd.rank() == 0:
        total = hvd.size() * args.batch * args.steps / slowest
        print(RESULT + json.dumps({"samples_per_s": total, "ranks": hvd.size()}), flush=True)
    hvd.shutdown()


def worker_single(args):
    _tensorflow(args.threads)
    import keras

    rows = args.batch * (args.warmup + args.steps)
    x, y = _data(keras, args.layers, rows, seed=0)
    model = _mlp(keras, args.layers)
    model.compile(
        optimizer=keras.optimizers.SGD(0.01),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=False,
    )
    seconds = _fit(keras, model, x, y, args.batch, args)
    print(RESULT + json.dumps({"samples_per_s": args.batch * args.steps / seconds}), flush=True)


def worker_mwms(args):
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
    os.environ["TF_CONFIG"] = json.dumps(
        {
            "cluster": {"worker": [f"localhost:{p}" for p in args.worker_ports]},
            "task": {"type": "worker", "index": args.worker_index},
        }
    )
    tf = _tensorflow(args.threads)
    import tf_keras as keras

    n = len(args.worker_ports)
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    global_batch = args.batch * n
    x, y = _data(keras, args.layers, global_batch * (args.warmup + args.steps), seed=0)
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(global_batch).repeat()
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    dataset = dataset.with_options(options)
    with strategy.scope():
        model = _mlp(keras, args.layers)
        model.compile(
            optimizer=keras.optimizers.SGD(0.01),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        )
    timer = _Timer(keras, args.warmup)
    model.fit(
        dataset,
        epochs=1,
        steps_per_epoch=args.warmup + args.steps,
        verbose=0,
        callbacks=[timer.callback],
    )
    if args.worker_index == 0:
        print(
            RESULT
            + json.dumps(
                {"samples_per_s": global_batch * args.steps / timer.seconds(), "ranks": n}
            ),
            flush=True,
        )


def worker_op_cost(args):
    tf = _tensorflow(args.threads)
    import hora.tensorflow as hvd

    hvd.init()
    x = tf.constant([1.0])

    @tf.function
    def with_hora(t):
        return hvd.allreduce(t, name="op_cost")

    @tf.function
    def plain(t):
        return tf.identity(t)

    def per_call_us(fn):
        for _ in range(20):
            fn(x)
        hvd.barrier()
        start = time.perf_counter()
        for _ in range(args.op_calls):
            fn(x)
        return (time.perf_counter() - start) / args.op_calls * 1e6

    import numpy as np

    import hora

    array = np.ones([1], np.float32)
    hora_us, identity_us = per_call_us(with_hora), per_call_us(plain)
    # The engine's own round trip, without TensorFlow: the same allreduce from NumPy.
    numpy_us = per_call_us(lambda _: hora.allreduce(array, name="op_cost_numpy"))
    if hvd.rank() == 0:
        print(
            RESULT
            + json.dumps(
                {
                    "hora_us": hora_us,
                    "identity_us": identity_us,
                    "numpy_us": numpy_us,
                    "ranks": hvd.size(),
                }
            ),
            flush=True,
        )
    hvd.shutdown()


# ----------------------------------------------------------------------------- driver


def _free_ports(n):
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("localhost", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def _horarun(args):
    if args.horarun:
        return args.horarun
    here = os.path.dirname(os.path.abspath(__file__))
    for candidate in [os.path.join(here, "..", "build", "launcher", "horarun")]:
        if os.path.exists(candidate):
            return candidate
    return "horarun"


def _worker_args(args):
    out = [
        "--batch",
        str(args.batch),
        "--warmup",
        str(args.warmup),
        "--steps",
        str(args.steps),
        "--threads",
        str(args.threads),
        "--op-calls",
        str(args.op_calls),
        "--layers",
    ] + [str(w) for w in args.layers]
    return out


def _run(commands, args, env=None):
    """Runs the commands together; returns the RESULT of the one that printed it, or an
    error string."""
    procs = [
        subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        for c in commands
    ]
    outputs = []
    deadline = time.monotonic() + args.timeout
    for p in procs:
        try:
            out, _ = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            return f"timed out after {args.timeout:.0f} s"
        outputs.append(out)
    for out in outputs:
        for line in out.splitlines():
            if RESULT in line:
                return json.loads(line.split(RESULT, 1)[1])
    failed = [p.returncode for p in procs if p.returncode]
    tail = "\n".join(outputs[0].splitlines()[-15:]) if outputs else ""
    return f"failed (exit {failed}):\n{tail}"


def driver(args):
    me = os.path.abspath(__file__)
    base = [args.python, me, *_worker_args(args)]
    horarun = _horarun(args)
    results = {}

    def record(key, value):
        results[key] = value
        shown = (
            f"{value['samples_per_s']:10.1f} samples/s"
            if isinstance(value, dict) and "samples_per_s" in value
            else value
        )
        print(f"{key:28s} {shown}", flush=True)

    batches = sorted({args.batch} | {args.batch * n for n in args.ranks})
    for b in batches:
        record(f"single batch {b}", _run([[*base, "--worker", "single", "--batch", str(b)]], args))
    for n in args.ranks:
        record(
            f"hora.keras {n} ranks",
            _run([[horarun, "-np", str(n), *base, "--worker", "hora"]], args),
        )
    try:
        import importlib.util

        has_tf_keras = importlib.util.find_spec("tf_keras") is not None
    except ImportError:
        has_tf_keras = False
    for n in args.ranks:
        if not has_tf_keras:
            record(f"tf_keras MWMS {n} workers", "skipped: pip install tf-keras==2.21.0")
            continue
        ports = _free_ports(n)
        commands = [
            base
            + ["--worker", "mwms", "--worker-index", str(i), "--worker-ports"]
            + [str(p) for p in ports]
            for i in range(n)
        ]
        record(f"tf_keras MWMS {n} workers", _run(commands, args))
    for n in [1, *list(args.ranks)]:
        value = _run([[horarun, "-np", str(n), *base, "--worker", "op-cost"]], args)
        results[f"op cost {n} ranks"] = value
        if isinstance(value, dict):
            print(
                f"{'op cost ' + str(n) + ' ranks':28s} hora allreduce in tf.function "
                f"{value['hora_us']:.1f} us/call, tf.identity {value['identity_us']:.1f} "
                f"us/call (the engine alone, from NumPy: {value['numpy_us']:.1f} us)",
                flush=True,
            )
        else:
            print(f"op cost {n} ranks: {value}", flush=True)

    print()
    for n in args.ranks:
        hora = results.get(f"hora.keras {n} ranks")
        if not isinstance(hora, dict):
            continue
        line = [f"{n} ranks: hora.keras {hora['samples_per_s']:.1f} samples/s"]
        mwms = results.get(f"tf_keras MWMS {n} workers")
        if isinstance(mwms, dict):
            line.append(f"{hora['samples_per_s'] / mwms['samples_per_s']:.2f}x tf_keras MWMS")
        for b in (args.batch, args.batch * n):
            single = results.get(f"single batch {b}")
            if isinstance(single, dict):
                line.append(
                    f"{hora['samples_per_s'] / single['samples_per_s']:.2f}x one "
                    f"process at batch {b}"
                )
        print(", ".join(line))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "results": results}, f, indent=2)


def main(argv=None):
    args = parse_args(argv)
    workers = {
        "hora": worker_hora,
        "single": worker_single,
        "mwms": worker_mwms,
        "op-cost": worker_op_cost,
    }
    if args.worker:
        workers[args.worker](args)
    else:
        driver(args)


if __name__ == "__main__":
    main()

"""Ctrl-C interrupts hora's waits: rank 0 sends itself SIGINT while it waits in barrier,
synchronize and join for ranks that arrive seconds later; each wait must raise
KeyboardInterrupt within about a second, and the job must still finish and shut down cleanly.
Run under `horarun -np N python interrupt_check.py` (N >= 2)."""

import os
import signal
import sys
import threading
import time

import numpy as np

import hora

LATE_S = 3.0  # how long the other ranks keep rank 0 waiting
INTERRUPT_S = 0.5  # when rank 0 interrupts itself
LIMIT_S = 1.5  # the interrupt must land within this


def interrupted(what, wait):
    """Runs `wait` with a SIGINT scheduled; returns seconds from the signal to the raise."""
    sent = []

    def fire():
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(INTERRUPT_S, fire)
    timer.start()
    try:
        wait()
    except KeyboardInterrupt:
        took = time.monotonic() - sent[0]
        print(f"rank 0: {what} interrupted {took:.2f} s after SIGINT", flush=True)
        if took > LIMIT_S:
            sys.exit(f"{what}: KeyboardInterrupt took {took:.2f} s (limit {LIMIT_S})")
        return
    finally:
        timer.cancel()
    sys.exit(f"{what}: finished without KeyboardInterrupt")


def main():
    hora.init()
    rank, size = hora.rank(), hora.size()
    if size < 2:
        sys.exit("interrupt_check needs at least 2 ranks")
    x = np.ones(1024, np.float32)
    if rank == 0:
        interrupted("barrier", hora.barrier)
        h = hora.allreduce_async(x, op=hora.Sum, name="late.sum")
        interrupted("synchronize", lambda: hora.synchronize(h))
        # The collective stayed pending; it completes once the others arrive.
        out = hora.synchronize(h)
        assert np.allclose(out, size), out
    else:
        time.sleep(LATE_S)
        hora.barrier()
        time.sleep(LATE_S)
        out = hora.allreduce(x, op=hora.Sum, name="late.sum")
        assert np.allclose(out, size), out
    # Everyone is in step again: a last collective and a clean shutdown.
    out = hora.allreduce(np.full(3, rank, np.float64), op=hora.Sum, name="final")
    assert np.allclose(out, size * (size - 1) / 2), out
    hora.shutdown()
    print(f"rank {rank}: clean shutdown", flush=True)


if __name__ == "__main__":
    main()

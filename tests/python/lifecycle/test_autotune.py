"""hora.autotune_state() under HORA_AUTOTUNE=1: a loop of named allreduces until the search
converges; results stay exact, every rank applied the same values at the same steps, and the
log's best row pins the next init (HORA_AUTOTUNE_FROM). Owns init and shutdown."""

import csv

import numpy as np

import hora

TUNE = {
    "HORA_AUTOTUNE": "1",
    "HORA_AUTOTUNE_WARMUP_STEPS": "1",
    "HORA_AUTOTUNE_WINDOW_STEPS": "1",
    "HORA_AUTOTUNE_MAX_SAMPLES": "5",
}


def run_until_converged(limit=200):
    n = hora.size()
    for step in range(limit):
        if hora.autotune_state()["converged"]:
            return step
        handles = [
            hora.allreduce_async(
                np.full(256 << (t % 5), t + 1.0, np.float32), op=hora.Sum, name=f"g{t}"
            )
            for t in range(6)
        ]
        for t, h in enumerate(handles):
            np.testing.assert_array_equal(hora.synchronize(h), n * (t + 1.0))
    raise AssertionError(f"not converged after {limit} steps: {hora.autotune_state()}")


def test_autotune_state_history_and_pinning(tmp_path):
    assert not hora.autotune_state()["enabled"]  # before init: the default state
    log = tmp_path / "autotune.csv"
    hora.init({**TUNE, "HORA_AUTOTUNE_LOG": str(log)})
    try:
        assert hora.autotune_state()["enabled"]
        rank = hora.rank()
        run_until_converged()
        state = hora.autotune_state()
        assert state["samples"] in (5, 9)  # 4 more when the best is confirmed against the start
        assert state["history"][-1][1] == state["fusion_threshold_bytes"]
        # Every rank applied the same values at the same steps.
        mine = np.array([v for change in state["history"] for v in change], np.float64)
        everyone = hora.allgather(mine[None, :], name="history")
        for row in everyone:
            np.testing.assert_array_equal(row, mine)
        hora.barrier()
    finally:
        hora.shutdown()
    if rank == 0:  # rank 0 writes the log
        rows = list(csv.DictReader(log.open()))
        assert len(rows) == state["samples"] + 1 and rows[-1]["sample"] == "best"
        assert int(rows[-1]["tensor_fusion_threshold"]) == state["fusion_threshold_bytes"]
    # The next run pins the chosen values and searches nothing (every knob is then set).
    pinned = tmp_path / "pinned.csv"
    with pinned.open("w") as f:
        f.write(
            "hierarchical_allreduce,hierarchical_allgather,torus_allreduce,cache_enabled,"
            "cycle_time_ms,tensor_fusion_threshold,score,sample,step,window_steps,windows,"
            "algorithms\n0,0,0,1,0.5,1048576,1e9,best,12,2,5,\n"
        )
    hora.init({"HORA_AUTOTUNE": "1", "HORA_AUTOTUNE_FROM": str(pinned)})
    try:
        state = hora.autotune_state()
        assert not state["enabled"]
        assert state["fusion_threshold_bytes"] == 1048576
        assert state["cycle_time_ms"] == 0.5
    finally:
        hora.shutdown()

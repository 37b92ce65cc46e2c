#!/usr/bin/env python3
"""The CPU cost of TCP on this machine: bytes moved over loopback per core-second.

A sender and a receiver process move --mib MiB over a loopback TCP connection; the CPU time of
both (user + system, which includes the kernel's copies and protocol work) divides the bytes.
benchmarks/scale_model.py uses the figure (--tcp-cpu-gbs) for the CPU bound of hosts that share
cores. Prints one line: "tcp_cpu_gbs X wall_gbs Y".
"""

import argparse
import os
import resource
import socket
import time


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mib", type=int, default=512, help="MiB to move (default 512)")
    p.add_argument("--chunk-kib", type=int, default=4096, help="bytes per send/recv call")
    args = p.parse_args()
    total = args.mib << 20
    chunk = bytearray(args.chunk_kib << 10)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(30)
    port = listener.getsockname()[1]
    pid = os.fork()
    if pid == 0:
        try:
            out = socket.create_connection(("127.0.0.1", port), timeout=30)
            view, sent = memoryview(chunk), 0
            while sent < total:
                out.sendall(view)
                sent += len(view)
            out.close()
        finally:
            os._exit(0)
    conn, _ = listener.accept()
    conn.settimeout(30)
    start, got, view = time.monotonic(), 0, memoryview(bytearray(len(chunk)))
    while got < total:
        k = conn.recv_into(view)
        if not k:
            break
        got += k
    os.waitpid(pid, 0)
    wall = time.monotonic() - start
    me = resource.getrusage(resource.RUSAGE_SELF)
    child = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = me.ru_utime + me.ru_stime + child.ru_utime + child.ru_stime
    if got < total:
        raise SystemExit(f"tcp_cpu_probe: the sender stopped after {got} of {total} bytes")
    print(f"tcp_cpu_gbs {got / cpu / 1e9:.3f} wall_gbs {got / wall / 1e9:.3f}")


if __name__ == "__main__":
    main()

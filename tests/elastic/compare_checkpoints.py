"""Compares two of the reference trainer's checkpoints (examples/trainer/checkpoint.h format)
entry by entry: exit 0 when they hold the same names and counts and every value agrees within
--rtol/--atol, else 1 naming the first entry that differs and by how much.

    python3 compare_checkpoints.py A B [--rtol 1e-4] [--atol 1e-5]
"""

import argparse
import struct
import sys


def read_checkpoint(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"HORACKPT":
        sys.exit(f"{path}: not a hora checkpoint")
    _version, count, epoch = struct.unpack_from("<IIq", data, 8)
    offset = 24
    entries = {}
    for _ in range(count):
        kind, name_bytes = struct.unpack_from("<BI", data, offset)
        offset += 5
        name = data[offset : offset + name_bytes].decode()
        offset += name_bytes
        (n,) = struct.unpack_from("<q", data, offset)
        offset += 8
        entries[(kind, name)] = struct.unpack_from(f"<{n}f", data, offset)
        offset += 4 * n
    return epoch, entries


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--rtol", type=float, default=1e-4)
    parser.add_argument("--atol", type=float, default=1e-5)
    args = parser.parse_args()
    epoch_a, a = read_checkpoint(args.a)
    epoch_b, b = read_checkpoint(args.b)
    if epoch_a != epoch_b or sorted(a) != sorted(b):
        print(f"differ: epochs {epoch_a}/{epoch_b} or entries {sorted(a)} / {sorted(b)}")
        return 1
    worst = 0.0
    for key, values in a.items():
        for i, (x, y) in enumerate(zip(values, b[key], strict=True)):
            if abs(x - y) > args.atol + args.rtol * abs(y):
                print(f"differ: {key[1]}[{i}] = {x} against {y}")
                return 1
            worst = max(worst, abs(x - y))
    print(f"agree: largest difference {worst:.3g} over {sum(map(len, a.values()))} values")
    return 0


if __name__ == "__main__":
    sys.exit(main())

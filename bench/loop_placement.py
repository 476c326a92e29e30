#!/usr/bin/env python3
"""loop_placement.py — where the main vector loop of each benchmarked function
landed in a build, and whether it straddles a 64-byte boundary (which costs
about 1.9x on Zen 3: see bench/align_probe.c and bench/README.md).

    bench/loop_placement.py build/hk-bench

Reads `objdump -d`; the main loop of a function is its first backward branch
whose body holds a packed-single instruction (addps, mulps, ...).
"""
import re
import subprocess
import sys

FUNCS = [f"{p}{op}" for p in ("hk_", "hk_range__") for op in
         ("add_f32", "mul_f32", "relu_f32", "axpy_f32")] + \
        [f"loop_{op}" for op in ("add", "mul", "relu", "saxpy")]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    dump = subprocess.run(["objdump", "-d", "--no-show-raw-insn", sys.argv[1]],
                          capture_output=True, text=True, check=True).stdout
    funcs, cur = {}, None
    for line in dump.splitlines():
        m = re.match(r"^([0-9a-f]+) <(.+)>:$", line)
        if m:
            cur = funcs.setdefault(m.group(2), [])
            continue
        m = re.match(r"^\s+([0-9a-f]+):\s+(.*)$", line)
        if m and cur is not None:
            cur.append((int(m.group(1), 16), m.group(2)))
    for name in FUNCS:
        ins = funcs.get(name, [])
        for i, (addr, text) in enumerate(ins):
            m = re.match(r"j\w+\s+([0-9a-f]+) <", text)
            if not m or int(m.group(1), 16) >= addr:
                continue
            start = int(m.group(1), 16)
            end = ins[i + 1][0] if i + 1 < len(ins) else addr + 2
            if not any(re.search(r"ps\s", t) for a, t in ins if start <= a < end):
                continue
            bad = (start >> 6) != ((end - 1) >> 6)
            print(f"{name:20s} {start:#x}..{end - 1:#x}  "
                  f"{'straddles a 64-byte boundary' if bad else 'ok'}")
            break


if __name__ == "__main__":
    main()

"""heap_by_site.py STACKS [SERIES]: heaptrack's peak heap (heaptrack_print -F STACKS
--flamegraph-cost-type peak) by the innermost hourglass frame of each allocation, in MB and in
bytes per series (SERIES, default 1,000,000)."""
import collections
import re
import sys

series = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
total, by_site = 0, collections.Counter()
for line in open(sys.argv[1]):
    stack, _, n = line.rstrip().rpartition(" ")
    n = int(n)
    total += n
    site = "?"
    for frame in reversed(stack.split(";")):
        if "hourglass" in frame and "alloc" not in frame.split("::")[-1]:
            site = re.sub(r"::h[0-9a-f]{16}", "", frame)[:120]
            break
    by_site[site] += n
print(f"heap at its peak, by the innermost hourglass frame of each allocation: total {total / 1e6:.1f} MB")
for site, n in by_site.most_common(20):
    print(f"{n / 1e6:7.1f} MB  {n / series:5.0f} B/series  {site}")

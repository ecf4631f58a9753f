# folded.py FOLDED [N]: sums heaptrack's folded stacks (`heaptrack_print -f ht.zst -F out.folded
# --flamegraph-cost-type peak` for heaptrack-peak.txt, `leaked` for heaptrack-idle-live.txt) by
# the two innermost hourglass frames.
import collections, re, sys
c = collections.Counter(); total = 0
for line in open(sys.argv[1]):
    stack, _, v = line.rstrip().rpartition(' ')
    v = int(v); total += v
    frames = [f for f in stack.split(';') if 'hourglass' in f]
    key = ' < '.join(re.sub(r'::h[0-9a-f]{16}', '', re.sub(r'^.*?(hourglass)', r'\1', f))[:70]
                     for f in frames[::-1][:2])
    c[key] += v
print('total MB', round(total / 1e6, 1))
for k, v in c.most_common(int(sys.argv[2]) if len(sys.argv) > 2 else 25):
    print(f"{v / 1e6:8.1f} {k}")

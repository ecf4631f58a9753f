import sys, os, collections
# roots.py [depth] < perf script: samples grouped by their outermost hourglass frames
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '2026-11-27e-decode'))
from under import stacks
d=int(sys.argv[1]) if len(sys.argv)>1 else 4
c=collections.Counter()
for stack in stacks(sys.stdin):
    s=[x[:90] for x in reversed(stack) if 'hourglass' in x]
    c[' > '.join(s[:d]) if s else 'other:'+stack[0][:90]]+=1
t=sum(c.values())
for k,v in c.most_common(40): print(f"{100*v/t:5.1f}% {k}")

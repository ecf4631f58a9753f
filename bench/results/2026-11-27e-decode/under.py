import sys, re, collections
# under.py PATTERN [top] < perf script: inclusive shares of the callees below the first frame matching PATTERN
# (also imported for `clean` and `stacks` by 2026-11-27f-cache/roots.py)
def clean(f):
    f=re.sub(r'\+0x[0-9a-f]+.*$','',f); f=re.sub(r' \(.*\)$','',f)
    for _ in range(3): f=re.sub(r'<[^<>]*>','',f)
    return re.sub(r'::h[0-9a-f]{16}$','',f)[:120]
def stacks(lines):
    """Each sample's frames, innermost first, cleaned."""
    stack=[]
    for line in lines:
        if not line.strip():
            if stack: yield stack
            stack=[]; continue
        if line[0] not in ' \t': continue
        p=line.strip().split(None,1)
        if len(p)==2: stack.append(clean(p[1]))
    if stack: yield stack
def main():
    pat=re.compile(sys.argv[1]); top=int(sys.argv[2]) if len(sys.argv)>2 else 40
    incl=collections.Counter(); n=0; total=0
    for stack in stacks(sys.stdin):
        total+=1
        for i,f in enumerate(stack):
            if pat.search(f):
                n+=1; seen=set()
                for g in stack[:i]:
                    if g not in seen: incl[g]+=1; seen.add(g)
                break
    print(f"{n} of {total} samples ({100*n/max(total,1):.1f}%) under {sys.argv[1]}")
    for f,c in incl.most_common(top): print(f"{100*c/max(n,1):5.1f}% {f}")
if __name__ == '__main__': main()

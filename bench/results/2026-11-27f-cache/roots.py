import sys,re,collections
# roots.py [depth] < perf script: samples grouped by their outermost hourglass frames
d=int(sys.argv[1]) if len(sys.argv)>1 else 4
c=collections.Counter();stack=[]
def clean(f):
    f=re.sub(r'\+0x[0-9a-f]+.*$','',f); f=re.sub(r' \(.*\)$','',f)
    for _ in range(3): f=re.sub(r'<[^<>]*>','',f)
    return re.sub(r'::h[0-9a-f]{16}$','',f)[:90]
def fl():
    if not stack: return
    s=[x for x in reversed(stack) if 'hourglass' in x]
    key=' > '.join(s[:d]) if s else 'other:'+stack[0]
    c[key]+=1
for line in sys.stdin:
    if not line.strip(): fl(); stack.clear(); continue
    if line[0] not in ' \t': continue
    p=line.strip().split(None,1)
    if len(p)==2: stack.append(clean(p[1]))
fl()
t=sum(c.values())
for k,v in c.most_common(40): print(f"{100*v/t:5.1f}% {k}")

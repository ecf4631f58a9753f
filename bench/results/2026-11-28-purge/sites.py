"""sites.py DEPTH TOP < perf-script-output: samples by their innermost DEPTH hourglass frames
(allocator frames skipped), the TOP most frequent, in % of all samples."""
import collections,re,sys
by=collections.Counter(); tot=0
block=[]
def clean(f):
    f=f.strip().split(' ',1)[1] if ' ' in f.strip() else f.strip()
    f=re.sub(r'\+0x[0-9a-f]+','',f); f=re.sub(r"::h[0-9a-f]{16}","",f); f=re.sub(r' \(.*\)$','',f)
    return f
def done(b):
    global tot
    if not b: return
    frames=[clean(l) for l in b[1:]]
    tot+=1
    hg=[f for f in frames if ('hourglass' in f) and 'alloc' not in f.split('::')[-1]]
    key=' < '.join(x[-50:] for x in hg[:int(sys.argv[1])])
    by[key]+=1
for line in sys.stdin:
    if line.strip()=='' :
        done(block); block=[]
    else: block.append(line)
done(block)
print(tot)
for s,n in by.most_common(int(sys.argv[2])): print(f"{100*n/tot:5.1f}% {s}")

import sys, collections, re
# children.py PATTERN: for samples containing PATTERN, the hourglass-ish frame just below (toward leaf) the outermost match, inclusive counts
pat=re.compile(sys.argv[1]); depth=int(sys.argv[2]) if len(sys.argv)>2 else 1
c=collections.Counter(); n=0; tot=0; cur=[]
def done():
    global n,tot
    if not cur: return
    tot+=1
    names=[re.sub(r' \(inlined\)$| \(/.*\)$| \(\[.*\]\)$','',s) for s in cur]
    idx=[i for i,nm in enumerate(names) if pat.search(nm)]
    if not idx: return
    n+=1
    i=idx[-1]  # outermost
    below=[x for x in reversed(names[:i]) if not pat.search(x) and ('hourglass' in x or 'quick_cache' in x)][:depth]
    c[' -> '.join(x[:100] for x in below) or '(self)']+=1
for line in sys.stdin:
    line=line.rstrip('\n')
    if not line.strip():
        done(); cur=[]; continue
    p=line.strip().split(' ',1)
    if len(p)==2: cur.append(p[1])
done()
print("samples",tot,"matching",n, "%.1f%%"%(100*n/tot))
for k,v in c.most_common(25): print("%6.2f%% %s"%(100*v/tot,k))

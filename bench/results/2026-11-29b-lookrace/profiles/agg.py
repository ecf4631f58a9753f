import sys, collections, re
# perf script -F ip,sym,dso output: samples separated by blank lines; aggregate self time by
# the real (non-inlined) function of the leaf, and by innermost inlined frame; and inclusive by any frame containing a pattern list
leaf=collections.Counter(); inner=collections.Counter(); n=0
incl=collections.Counter()
cur=[]
def flush():
    global n
    if not cur: return
    n+=1
    inner[cur[0][1]]+=1
    for ip,s in cur:
        if not s.endswith('(inlined)'):
            leaf[s]+=1; break
    seen=set()
    for ip,s in cur:
        name=re.sub(r' \(inlined\)$| \(/.*\)$| \(\[.*\]\)$','',s)
        if name not in seen:
            seen.add(name); incl[name]+=1
for line in sys.stdin:
    line=line.rstrip('\n')
    if not line.strip():
        flush(); cur=[]; continue
    parts=line.strip().split(' ',1)
    if len(parts)==2: cur.append((parts[0],parts[1]))
flush()
print("samples",n)
print("-- self by function"); [print("%6.2f%% %s"%(100*c/n,k[:150])) for k,c in leaf.most_common(int(sys.argv[1]) if len(sys.argv)>1 else 30)]
print("-- inclusive"); [print("%6.2f%% %s"%(100*c/n,k[:150])) for k,c in incl.most_common(int(sys.argv[2]) if len(sys.argv)>2 else 60)]

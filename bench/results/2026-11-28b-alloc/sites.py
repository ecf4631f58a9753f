# sites.py ALL_SRC [N]: sums the recorded sizes by thread, then by the two innermost hourglass frames (function@file:line).
import re,collections,sys
txt=open(sys.argv[1]).read().split('\n\n')
c=collections.Counter(); n=collections.Counter(); bc=collections.Counter()
for s in txt:
    m=re.search(r'size=(\d+)',s)
    if not m: continue
    size=int(m.group(1)); comm=s.split()[0]
    bc[comm]+=size
    lines=s.split('\n')
    src=[]
    for i,l in enumerate(lines):
        mm=re.match(r'\s+(\S+\.rs):(\d+)',l)
        if mm and i>0:
            sym=lines[i-1].strip().split(' ',1)[-1]
            if sym.startswith('hourglass'): src.append(sym.split('::')[-1][:30]+'@'+mm.group(1)+':'+mm.group(2))
    key=comm+' '+' | '.join(src[:2])
    c[key]+=size; n[key]+=1
for k,v in bc.most_common(): print(f"{v/1e6:8.1f} MB {k}")
for k,v in c.most_common(int(sys.argv[2]) if len(sys.argv)>2 else 40): print(f"{v/1e6:8.1f} MB {n[k]:5d}x {k}")

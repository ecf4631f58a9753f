# tenths.py threads.txt: CPU µs per point per thread kind, by tenth of the points.
import sys,re
rows=[]
for line in open(sys.argv[1]):
    f=line.split()
    if len(f)<3 or not f[1].startswith('pts=') or f[1]=='pts=': continue
    t=float(f[0]); pts=float(f[1][4:])
    d={k:int(v) for k,v in (x.split('=') for x in f[2:])}
    rows.append((t,pts,d))
total=max(r[1] for r in rows)
rows=[r for r in rows if r[1]>0]
end=next(i for i,r in enumerate(rows) if r[1]>=total)
rows=rows[:end+1]
kinds=['hourglass-io','hourglass-flush','hourglass-compa','hourglass-wal-p','hourglass-wal']
def at(frac):
    return min(range(len(rows)), key=lambda i: abs(rows[i][1]-frac*total))
print('tenth  kpts/s  '+'  '.join(k.replace('hourglass-','') for k in kinds))
for k in range(10):
    a,b=rows[at(k/10)],rows[at((k+1)/10)]
    dp=b[1]-a[1]; dt=b[0]-a[0]
    if dp<=0: continue
    us=[ (b[2].get(x,0)-a[2].get(x,0))*1e4/dp for x in kinds]
    print(f'{k+1:5d} {dp/dt/1e3:7.0f}  '+'  '.join(f'{u:5.2f}' for u in us))

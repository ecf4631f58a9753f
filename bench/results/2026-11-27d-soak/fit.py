# fit.py samples.txt: least squares RSS = a + b*series_in_memory + c*series_created over the ingest's samples.
import sys
rows=[]
for line in open(sys.argv[1]):
    f=line.split()
    if len(f)==5:
        try: rows.append([float(x) for x in f])
        except ValueError: pass
total=max(r[1] for r in rows)
end=next(i for i,r in enumerate(rows) if r[1]>=total)
rows=[r for r in rows[:end+1] if r[1]>0]
# skip the first minute (allocator warm-up)
rows=rows[12:]
X=[(1.0,r[2],r[3]) for r in rows]; y=[r[4]*1024 for r in rows]
n=3
A=[[sum(x[i]*x[j] for x in X) for j in range(n)] for i in range(n)]
b=[sum(x[i]*yy for x,yy in zip(X,y)) for i in range(n)]
# solve
M=[A[i]+[b[i]] for i in range(n)]
for i in range(n):
    p=max(range(i,n),key=lambda r:abs(M[r][i])); M[i],M[p]=M[p],M[i]
    for r in range(n):
        if r!=i:
            f=M[r][i]/M[i][i]
            M[r]=[a-f*c for a,c in zip(M[r],M[i])]
coef=[M[i][n]/M[i][i] for i in range(n)]
res=[yy-sum(c*xx for c,xx in zip(coef,x)) for x,yy in zip(X,y)]
rms=(sum(r*r for r in res)/len(res))**0.5
print(f"samples {len(rows)}: RSS = {coef[0]/2**20:.0f} MiB + {coef[1]:.0f} B x series in memory + {coef[2]:.1f} B x series created (rms residual {rms/2**20:.0f} MiB)")
print(f"series in memory {min(r[2] for r in rows):.0f}..{max(r[2] for r in rows):.0f}, created up to {max(r[3] for r in rows):.0f}")

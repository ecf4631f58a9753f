# split.py compa.txt: compaction-thread perf samples by fifth of the run: meta merges vs data merges
# (told apart by the write_table instance on the stack: the data merge's is the one under RowMerge).
import sys,collections
samples=[]; cur=None
for line in open(sys.argv[1]):
    if line.strip()=='' : continue
    if line[0] not in ' \t':
        if cur: samples.append(cur)
        cur=(float(line.split(':')[0]), [])
    else:
        parts=line.strip().split(None,1)
        if len(parts)==2: cur[1].append((int(parts[0],16),parts[1]))
if cur: samples.append(cur)
# the page of write_table's return addresses seen under RowMerge = the data instance
data_pages=set()
for t,st in samples:
    if any('RowMerge' in f for a,f in st):
        data_pages.update(a>>12 for a,f in st if f.endswith('write_table'))
def kind(st):
    wt=[a for a,f in st if f.endswith('write_table')]
    if not wt: return 'other'
    return 'data' if (wt[-1]>>12) in data_pages else 'meta'
t0=samples[0][0]; t1=samples[-1][0]
print('fifth  meta  data  other  (samples at 25 Hz)')
for q in range(5):
    lo=t0+(t1-t0)*q/5; hi=t0+(t1-t0)*(q+1)/5+1e-9
    c=collections.Counter(kind(st) for t,st in samples if lo<=t<hi)
    print(f"{q+1:5d} {c['meta']:5d} {c['data']:5d} {c['other']:5d}")

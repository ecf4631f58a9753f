import sys, re, collections
# perf script -F comm,tid,time,event,trace,ip,sym of sched_switch: off-CPU time by thread name and blocking stack
ev=[]; cur=None
for line in sys.stdin:
    if not line.strip():
        if cur: ev.append(cur); cur=None
        continue
    if not line.startswith(('\t',' ')):
        m=re.match(r'(\S.*?)\s+(\d+)\s+([\d.]+): sched:sched_switch: prev_comm=.* prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=.* next_pid=(\d+)',line)
        if m: cur=dict(comm=m.group(1),tid=int(m.group(2)),t=float(m.group(3)),state=m.group(5),nxt=int(m.group(6)),stack=[])
    elif cur is not None:
        p=line.strip().split(' ',1)
        if len(p)==2: cur['stack'].append(p[1])
if cur: ev.append(cur)
out={}
tot=collections.Counter(); by=collections.Counter(); comms={}
pending={}
for e in ev:
    # switch in of e['nxt']
    if e['nxt'] in pending:
        t0,key,comm=pending.pop(e['nxt'])
        d=e['t']-t0
        tot[comm]+=d; by[(comm,key)]+=d
    frames=[f for f in e['stack'] if ('hourglass' in f or 'tokio' in f or 'std::' in f or 'parking_lot' in f or 'futex' in f or 'fsync' in f or 'epoll' in f or 'nanosleep' in f or 'condvar' in f.lower()) and 'sched' not in f]
    st=e['stack']
    ks=[i for i,f in enumerate(st) if 'entry_SYSCALL' in f]
    st=st[ks[0]+1:] if ks else st
    hg=[re.sub(r'\s*\(.*$','',f)[:70] for f in st if (f.startswith('hourglass') or f.startswith('tokio::runtime::blocking') or 'Mutex' in f or 'Condvar' in f or 'datasync' in f) and 'closure' not in f and 'lock_api' not in f][:5]
    key=e['state']+' '+' <- '.join(x[:80] for x in hg)
    pending[e['tid']]=(e['t'],key,e['comm'])
for c,v in tot.most_common(): print("%-20s %.2f s off-cpu"%(c,v))
print()
for (c,k),v in by.most_common(40):
    if v>0.2: print("%-16s %6.2f s  %s"%(c,v,k))

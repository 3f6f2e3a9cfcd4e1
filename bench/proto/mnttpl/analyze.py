# The medians and ratios of run.sh's raw.csv: python3 analyze.py TAG..., in BASE.
import csv, sys, statistics as st
def pct(v,p):
    v=sorted(v); i=p*(len(v)-1); lo=int(i); f=i-lo
    return v[lo]*(1-f)+v[min(lo+1,len(v)-1)]*f
for run in sys.argv[1:]:
    rows=list(csv.DictReader(open(f'out-{run}/raw.csv')))
    tot={};cpu={}
    for v in 'ABC':
        r=[x for x in rows if x['variant']==v]
        tot[v]=[(int(x['end'])-int(x['start']))/1e3 for x in r]
        cpu[v]=[int(x['drv_self_ns'])/1e3+int(x['drv_child_us'])+int(x['tpl_self_ns'])/1e3+int(x['tpl_child_us']) for x in r]
    print(run, {v:len(tot[v]) for v in 'ABC'})
    for v in 'ABC':
        print(f"  {v}: wall p10 {pct(tot[v],.1):.1f} med {pct(tot[v],.5):.1f} p90 {pct(tot[v],.9):.1f} mean {st.mean(tot[v]):.1f} | proc CPU med {pct(cpu[v],.5):.1f} mean {st.mean(cpu[v]):.1f}")
    a=pct(tot['A'],.5)
    for v in 'BC':
        print(f"  {v}/A wall median ratio {pct(tot[v],.5)/a:.3f}, saving {a-pct(tot[v],.5):.1f} us; proc CPU mean ratio {st.mean(cpu[v])/st.mean(cpu['A']):.3f}, saving {st.mean(cpu['A'])-st.mean(cpu[v]):.1f} us")

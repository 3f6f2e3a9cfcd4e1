#!/bin/sh
# usage: run.sh TAG: builds mnttpl.c in a fresh private directory (mktemp -d),
# runs every measurement of BENCHMARKS.md's mount-namespace template section, as
# root, and leaves the results in that directory's out-TAG (python3 analyze.py TAG there).
set -e
TAG=${1:-run}
D=$(cd "$(dirname "$0")" && pwd)
BASE=$(mktemp -d /tmp/mnttpl.XXXXXX)
cd "$BASE"
echo "results in $BASE/out-$TAG"
OUT=out-$TAG; mkdir -p $OUT
gcc -O2 -Wall -DBASE="\"$BASE\"" -o mnttpl "$D/mnttpl.c"
cp "$D/analyze.py" .
{
echo "=== start $(date -u) ; hog: $(pgrep -fa 'while :' || echo none) ; loadavg $(cat /proc/loadavg)"
./mnttpl check > $OUT/check.txt
python3 - $OUT/check.txt <<'PY'
import sys,re
txt=open(sys.argv[1]).read()
parts=re.split(r'===== variant (\w):.*=====\n', txt)
mp={}
for i in range(1,len(parts),2):
    v=parts[i]; lines=[l for l in parts[i+1].split('\n') if re.match(r'^\d+ \d+ ',l)]
    mp[v]=[l.split()[4] for l in lines]
    print(f"variant {v}: {len(lines)} mountinfo lines, {len(set(mp[v]))} distinct mount points")
for v in 'BC':
    extra=sorted(set(mp[v])^set(mp['A']))
    dup=sorted({m for m in mp[v] if mp[v].count(m)>1})
    print(f"  {v} vs A: mount-point set difference {extra or 'none'}; stacked mount points in {v}: {dup}")
PY
grep -E '^(=====|write|remount|umount|exec|ls|holder|mount\(|open_tree)' $OUT/check.txt | grep -v 'mountinfo' 
echo; echo "=== alternated wall-time benchmark"
./mnttpl bench 1000 30 $OUT/raw.csv
echo; echo "=== machine CPU (/proc/stat) over blocks"
./mnttpl cpu 5 200 300
echo; echo "=== umount microbenchmark"
./mnttpl umount 200
for x in 0 100 400 1000; do
  echo; echo "=== scaling: -x $x extra ro bind mounts in the tree (A builds them per run; template once)"
  ./mnttpl -x $x bench 150 10 | grep -E 'alternated|^Variant|TOTAL|clone\(\)|mounts \(|umount2|build tree|teardown|CPU/run|RCU|median total'
done
echo; echo "=== diagnostic: -n (no CLONE_NEWNET anywhere)"
./mnttpl -n bench 300 10 | grep -E 'alternated|^Variant|TOTAL|clone\(\)|mounts \(|teardown|CPU/run|RCU|median total'
echo "=== end $(date -u) ; hog: $(pgrep -fa 'while :' || echo none) ; loadavg $(cat /proc/loadavg)"
} 2>&1 | tee $OUT/log.txt

#!/bin/bash
# How the CPU backend scales with cores on the lent GPU machine (issue 35 item 6), every figure
# from one run. Prepare a git-ignored folder here, e.g.:
#   mkdir -p .device-scale && cp target/release/surfcl .device-scale/surfcl.new && strip .device-scale/surfcl.new
#   cp data/oxford-boat/img1.pgm data/oxford-boat/img2.pgm scripts/device/cpu-scaling.sh .device-scale/
#   (optionally a second build as .device-scale/surfcl.base, from a worktree of another commit)
# then, with the device tool: carry [".device-scale"], command `bash .device-scale/cpu-scaling.sh`.
# The log goes to $OUT/cpu-scaling.txt.
#
# Why this shape: the lent hosts' 16 vCPUs differ in speed from one moment to the next (at any
# time a third to a half of them take about 1.5 times as long as the others, on one thread or with
# every core busy), so "one thread" is not one number. Each round therefore times one thread on
# every core in turn, and 16 and 8 threads between them; the speed-up is against the mean of the
# round's one-thread frames (the expected one-thread frame on this host), and the parallel
# efficiency against the sum of the cores' one-thread rates. Sixteen one-thread processes at
# once, one per core, show the cores' speeds with every core busy. Frames: boat img1 filled to
# 1920x1080 (what `surfcl bench` makes of img1.pgm in the working directory), 20 warm frames.
set -u
D=$(cd "$(dirname "$0")" && pwd); cd "$D"
ROUNDS=${ROUNDS:-3}
FRAMES=${FRAMES:-20}
LOG=${OUT:-/tmp}/cpu-scaling.txt
CORES=$(nproc)
LAST=$((CORES - 1))
HALF=$((CORES / 2))
# One line: label: frame integral detect describe (ms, medians of the warm frames).
b() {
  local label=$1 cores=$2 bin=$3
  taskset -c "$cores" timeout 120 "./$bin" bench --backend cpu --sizes 1920x1080 --frames "$FRAMES" 2>/dev/null \
    | awk -v l="$label" '/CPU backend/{t=$3} /integral/{i=$2} /detect/{d=$2} /describe/{s=$2} END{print l": "t" "i" "d" "s}'
}
all_busy() {
  local pids="" c
  for c in $(seq 0 "$LAST"); do b "all-busy $1 core$c" "$c" surfcl.new > "/tmp/all-busy-$c.txt" & pids="$pids $!"; done
  wait $pids
  cat /tmp/all-busy-*.txt | sort -V
}
{
  echo "# $(date -u +%FT%TZ) $(lscpu | grep -E 'Model name|^CPU\(s\)|Thread\(s\) per core' | tr -s ' ' | tr '\n' ';') load $(cat /proc/loadavg)"
  echo "# label: frame integral detect describe (ms, median of $FRAMES warm frames of 1920x1080)"
  echo "# every core busy: one one-thread process per core at once"
  all_busy start
  for o in "" --upright "--precision u8"; do
    for bin in surfcl.new surfcl.base; do
      [ -x "$bin" ] || continue
      for c in 0 "0-$LAST"; do
        timeout 60 taskset -c "$c" "./$bin" detect img1.pgm --backend cpu $o --npz "/tmp/p-$bin-$c.npz" >/dev/null 2>&1
      done
    done
    echo "cpu parity [$o] builds x 1/$CORES threads: $(md5sum /tmp/p-*.npz | awk '{print $1}' | sort | uniq -c | tr '\n' ' ')"
    rm -f /tmp/p-*.npz
  done
  for r in $(seq 1 "$ROUNDS"); do
    for g in $(seq 0 4 "$LAST"); do
      for c in $(seq "$g" $((g + 3 < LAST ? g + 3 : LAST))); do b "r$r 1t core$c" "$c" surfcl.new; done
      b "r$r ${CORES}t" "0-$LAST" surfcl.new
      b "r$r ${HALF}t low" "0-$((HALF - 1))" surfcl.new
      b "r$r ${HALF}t high" "$HALF-$LAST" surfcl.new
      if [ -x surfcl.base ]; then b "r$r base ${CORES}t" "0-$LAST" surfcl.base; b "r$r base ${HALF}t low" "0-$((HALF - 1))" surfcl.base; fi
    done
  done
  all_busy end
  echo "# $(date -u +%FT%TZ) load $(cat /proc/loadavg)"
} > "$LOG" 2>&1
# The summary: per round, the speed-ups against the mean one-thread frame and the efficiencies.
python3 - "$LOG" "$CORES" >> "$LOG" <<'PY'
import re, statistics as st, sys
log, cores = sys.argv[1], int(sys.argv[2])
half = cores // 2
lines = open(log).read().splitlines()
def frames(pattern):
    return [float(m.group(1)) for l in lines if (m := re.match(pattern + r': ([\d.]+) ', l))]
print("# summary (speed-up: mean one-thread frame of the round / median multi-thread frame;")
print("#   efficiency: 1 / (frame x sum of the round's per-core one-thread rates))")
for r in sorted({int(m.group(1)) for l in lines if (m := re.match(r'r(\d+) 1t', l))}):
    one = [frames(rf'r{r} 1t core{c}') for c in range(cores)]
    one = [v[0] for v in one if v]
    if len(one) < cores:
        continue
    rate = lambda cs: sum(1 / t for t in cs)
    for label, cs in ((f"{cores}t", one), (f"{half}t low", one[:half]), (f"{half}t high", one[half:])):
        t = frames(rf'r{r} {label}')
        if not t:
            continue
        m = st.median(t)
        print(f"r{r} {label}: {m:.2f} ms; x{st.mean(cs) / m:.1f} the mean one-thread frame "
              f"({st.mean(cs):.1f} ms; median {st.median(cs):.1f}, fastest {min(cs):.1f}); "
              f"efficiency {100 / (m * rate(cs)):.0f}%")
PY

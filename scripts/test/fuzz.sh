#!/usr/bin/env bash
# Runs every cargo-fuzz target of fuzz/ for a bounded time and fails on the first crash.
#
#   scripts/test/fuzz.sh                 # all default targets, FUZZ_SECONDS (20) each
#   FUZZ_SECONDS=300 scripts/test/fuzz.sh matcher surf_detect
#
# Needs the nightly toolchain (cargo-fuzz's sanitizers); installs cargo-fuzz when missing.
# New corpus entries go to fuzz/target/corpus/<target>/ (not committed); the committed seeds in
# fuzz/corpus/<target>/ are read only. A crash leaves its input in fuzz/artifacts/<target>/;
# copy it to fuzz/regressions/<target>/ so that `cargo test` replays it
# (tests/tests/robustness_regressions.rs). Per-target statistics (executions, cov, ft) are
# printed at the end and written to fuzz/target/fuzz-stats.txt.
set -euo pipefail

cd "$(dirname "$0")/../../fuzz"
seconds="${FUZZ_SECONDS:-20}"
toolchain="${FUZZ_TOOLCHAIN:-nightly}"

if ! cargo "+$toolchain" fuzz --version >/dev/null 2>&1; then
    echo "fuzz.sh: installing cargo-fuzz" >&2
    cargo install cargo-fuzz --locked
fi

default_targets=(surf_detect harris_detect packed_responses matcher image_decode homography_parse
    ros_image)
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=("${default_targets[@]}")

# Debug assertions on (overflow checks included): an overflow is a finding, not a wrap. Built
# once; the binaries are then run directly, because `cargo fuzz run` re-checks the build and the
# workspace sources change under parallel work (each re-check could recompile surfcl-gpu).
cargo "+$toolchain" fuzz build --debug-assertions
host=$(rustc "+$toolchain" -vV | sed -n 's/^host: //p')
bin_dir="target/$host/release"

mkdir -p target
stats=target/fuzz-stats.txt
: >"$stats"
status=0
for t in "${targets[@]}"; do
    work="target/corpus/$t"
    mkdir -p "$work" "artifacts/$t"
    log="target/fuzz-$t.log"
    # Saved crash inputs are read with the seeds, so a run fails while their bug is there (the
    # only replay of ros_image's, which robustness_regressions.rs cannot build).
    inputs=("corpus/$t")
    [[ -d "regressions/$t" ]] && inputs+=("regressions/$t")
    echo "== $t: ${seconds}s" >&2
    # -max_len bounds the input (and so the image) size; rss_limit_mb catches large allocations.
    if "$bin_dir/$t" -artifact_prefix="artifacts/$t/" -max_total_time="$seconds" -max_len=20000 \
        -rss_limit_mb=1024 -timeout=10 -print_final_stats=1 "$work" "${inputs[@]}" >"$log" 2>&1; then
        :
    else
        status=1
        echo "fuzz.sh: $t FAILED (input in fuzz/artifacts/$t/); log tail:" >&2
        tail -n 40 "$log" >&2
    fi
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
    last=$(grep -E '^#[0-9]+' "$log" | tail -n 1 || true)
    cov=$(grep -o 'cov: [0-9]*' <<<"$last" | grep -o '[0-9]*' || echo '?')
    ft=$(grep -o 'ft: [0-9]*' <<<"$last" | grep -o '[0-9]*' || echo '?')
    printf '%-18s execs %-10s cov %-6s ft %-6s %ss\n' "$t" "$execs" "$cov" "$ft" "$seconds" | tee -a "$stats"
done
exit "$status"

#!/usr/bin/env bash
# Peak memory of `strata info` and of `strata record`'s merge and closing summary on a long
# recording (issue 13, item 9): generates a trace of several GB (realistic spans from 8 processes,
# tests/cli/trace_generator.h), then runs
#   strata info TRACE                                       (streams the file)
#   strata record -- sh -c 'ln TRACE $STRATA_OUTPUT_DIR/'   (merges a long-running process's file
#                                                            and prints the closing summary; a hard
#                                                            link, or a copy on another file system)
# each under an address-space limit (prlimit --as), and prints peak RSS against the file size.
# The CI keeps a ~160 MB version of this check (cli_test StreamedSummary.*Memory*).
#
#   scripts/record_memory_check.sh [DIR]     SPANS=100000000 (about 7.5 GB) LIMIT_MB=512
# DIR needs room for two copies of the trace (three if hard links fail); removed at the end unless KEEP=1.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${STRATA_BUILD_DIR:-$root/build}
spans=${SPANS:-100000000}
limit_mb=${LIMIT_MB:-512}
dir=${1:-$(mktemp -d /var/tmp/strata-memcheck-XXXXXX)}
for tool in strata strata_gen_trace; do
  [ -x "$build/bin/$tool" ] || { echo "record_memory_check.sh: $build/bin/$tool not built (ninja strata_tool strata_gen_trace)" >&2; exit 1; }
done
mkdir -p "$dir"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$dir"' EXIT
echo "load: $(uptime)"
start=$(date +%s)
"$build/bin/strata_gen_trace" "$dir/long.strata" "$spans" 8
echo "generated in $(( $(date +%s) - start )) s"

# Runs a command under the address-space limit; prints its peak RSS (its own and its children's).
measure() {
  local label=$1 bytes=$2; shift 2
  /usr/bin/python3 - "$label" "$bytes" "$limit_mb" "$@" <<'PY'
import resource, subprocess, sys, time
label, size, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
cmd = ["prlimit", f"--as={limit << 20}", "--", *sys.argv[4:]]
t0 = time.monotonic()
proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
seconds = time.monotonic() - t0
rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
tail = [l for l in (proc.stdout + proc.stderr).splitlines() if l.startswith("spans:")]
print(f"{label}: exit {proc.returncode}, {seconds:.1f} s, peak RSS {rss_mb:.1f} MB for a {size / 2**30:.2f} GiB "
      f"trace ({rss_mb * 2**20 / size:.4f} x the file), address space limited to {limit} MB; {tail[:1]}")
if proc.returncode != 0:
    print(proc.stderr[-2000:])
    sys.exit(1)
PY
}
size=$(stat -c %s "$dir/long.strata")
measure "strata info" "$size" "$build/bin/strata" info "$dir/long.strata"
measure "strata record (merge + closing summary)" "$size" "$build/bin/strata" record -o "$dir/recorded.strata" -- \
  /bin/sh -c "ln '$dir/long.strata' \"\$STRATA_OUTPUT_DIR/long-run.strata\" 2>/dev/null || cp '$dir/long.strata' \"\$STRATA_OUTPUT_DIR/long-run.strata\""

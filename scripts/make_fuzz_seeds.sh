#!/usr/bin/env bash
# Seeds for the trace reader fuzzer: small real traces recorded by the build in $1.
set -euo pipefail
build=${1:?usage: make_fuzz_seeds.sh BUILD_DIR OUT_DIR}
out=${2:?usage: make_fuzz_seeds.sh BUILD_DIR OUT_DIR}
mkdir -p "$out"
"$build/bin/strata" record --quiet -o "$out/spans.strata" -- "$build/bin/strata_test_program" spans 20
"$build/bin/strata" record --quiet --compress 3 -o "$out/zstd.strata" -- "$build/bin/strata_test_program" spans 200
"$build/bin/strata" record --quiet -o "$out/two-procs.strata" -- "$build/bin/strata_test_program" spawn

#!/usr/bin/env bash
# Cuts a few-KB fuzz seed from a real Nsight Systems export: the activity tables' schemas with a
# handful of rows each, the StringIds those rows name, and the metadata table.
# Usage: scripts/make_nsys_fuzz_seed.sh [SOURCE.sqlite] [OUT.sqlite]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src=${1:-$root/tests/data/nsys/a100_saxpy_mpi_nsys2022.2_schema2.9.1.sqlite}
out=${2:-$root/fuzz/corpus/fuzz_import_nsys/saxpy_small.sqlite}
mkdir -p "$(dirname "$out")"
rm -f "$out"
tables=(CUPTI_ACTIVITY_KIND_KERNEL CUPTI_ACTIVITY_KIND_MEMCPY CUPTI_ACTIVITY_KIND_MEMSET
        CUPTI_ACTIVITY_KIND_RUNTIME NVTX_EVENTS)
{
  echo "ATTACH '$src' AS src;"
  for t in "${tables[@]}"; do
    if sqlite3 "$src" "SELECT 1 FROM sqlite_master WHERE name='$t'" | grep -q 1; then
      echo "CREATE TABLE $t AS SELECT * FROM src.$t LIMIT 4;"
    fi
  done
  echo "CREATE TABLE StringIds AS SELECT * FROM src.StringIds WHERE id IN (
          SELECT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL UNION SELECT nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME
          UNION SELECT textId FROM NVTX_EVENTS);"
  for m in EXPORT_META_DATA META_DATA_EXPORT; do
    if sqlite3 "$src" "SELECT 1 FROM sqlite_master WHERE name='$m'" | grep -q 1; then
      echo "CREATE TABLE $m AS SELECT * FROM src.$m;"
    fi
  done
  echo "DETACH src;"
  echo "PRAGMA page_size=512;"
  echo "VACUUM;"
} | sqlite3 "$out"
ls -l "$out"

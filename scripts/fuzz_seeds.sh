# Sourced by scripts/test.sh and scripts/fuzz_long.sh: the seed directories of each fuzzer (real
# inputs of the format it reads, then the inputs kept in fuzz/corpus/<name>/, those that found bugs
# and crafted hostile files).
# Usage: fuzz_seed_dirs NAME ROOT SEEDS  (SEEDS: a scratch directory holding native/ from
# make_fuzz_seeds.sh); prints one directory per line.
fuzz_seed_dirs() {
  local name=$1 root=$2 seeds=$3
  case "$name" in
    trace_reader_fuzz | trace_chunks_fuzz) echo "$seeds/native" ;;
    fuzz_import_nsys_sql) ;;  # its seeds are SQL scripts, all in its corpus folder
    fuzz_import_*) echo "$root/tests/import/data" ;;
    onnx_loader_fuzzer)
      mkdir -p "$seeds/onnx" && cp "$root"/tests/lowerbound/data/*.onnx "$seeds/onnx/"
      echo "$seeds/onnx"
      ;;
  esac
  if [ -d "$root/fuzz/corpus/$name" ]; then echo "$root/fuzz/corpus/$name"; fi
  return 0
}

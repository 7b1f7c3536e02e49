// Import throughput: JSON parse + conversion + sort from bytes already in memory (decompressed once
// outside the timed loop), beside a raw simdjson On Demand scan of the same bytes in the same run, so
// the ratio import / raw scan is measured side by side (scripts/ingest_bench.sh prints it). Also the
// correlation engine on the real V100 trace.
//
// Input: the real V100 Kineto trace (68,692 events, 15 MB), or the plain JSON file named by
// STRATA_BENCH_JSON (e.g. a synthetic trace from scripts/gen_kineto.py --mb 500).
// Run: bench_import --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <simdjson.h>
#include <zlib.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "import/chrome_json.h"
#include "import/importer.h"
#include "trace/span_tree.h"

namespace {

const std::string kTrace = std::string(STRATA_SOURCE_DIR) + "/tests/data/kineto/v100_train_rank0.json.gz";

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string gunzip_file(const std::string& path) {
  std::string out;
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) return out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}

// The JSON the *Json benchmarks read, followed by kJsonPadding zero bytes (as the importer reads a
// file), and its name.
struct JsonInput {
  std::string bytes;  // text + padding
  size_t size = 0;    // text only
  std::string name;
  std::string_view text() const { return std::string_view(bytes.data(), size); }
};

const JsonInput& json_input() {
  static const JsonInput input = [] {
    JsonInput in;
    const char* path = std::getenv("STRATA_BENCH_JSON");
    in.name = path != nullptr && *path != '\0' ? path : kTrace;
    in.bytes = path != nullptr && *path != '\0' ? read_all(path) : gunzip_file(kTrace);
    in.size = in.bytes.size();
    in.bytes.resize(in.size + strata::import::kJsonPadding, '\0');
    return in;
  }();
  return input;
}

void run_import(benchmark::State& state, std::string_view bytes, const std::string& name, size_t padding) {
  if (bytes.empty()) {
    state.SkipWithError(("cannot read " + name).c_str());
    return;
  }
  uint64_t events = 0;
  strata::import::ImportOptions opts;
  opts.input_padding = padding;
  for (auto _ : state) {
    strata::trace::Trace trace;
    std::string error;
    strata::import::ImportStats stats;
    if (!strata::import::import_buffer_with_stats(bytes, name, &trace, &error, opts, &stats)) {
      state.SkipWithError(error.c_str());
      return;
    }
    events = stats.get(strata::stats::Stat::kImportEventsRead);
    benchmark::DoNotOptimize(trace.spans.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes.size()) * static_cast<int64_t>(state.iterations()));
  state.counters["events"] = static_cast<double>(events);
  state.counters["events_per_s"] = benchmark::Counter(
      static_cast<double>(events) * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

// From the .json.gz bytes of the V100 trace: inflate + parse + convert + sort.
void BM_ImportKinetoGz(benchmark::State& state) {
  static const std::string gz = read_all(kTrace);
  run_import(state, gz, kTrace, 0);
}
BENCHMARK(BM_ImportKinetoGz)->Unit(benchmark::kMillisecond);

// From the decompressed JSON: parse + convert + sort (what `strata import` does but writing the file).
void BM_ImportKinetoJson(benchmark::State& state) {
  const JsonInput& in = json_input();
  run_import(state, in.text(), in.name, strata::import::kJsonPadding);
}
BENCHMARK(BM_ImportKinetoJson)->Unit(benchmark::kMillisecond);

// The same with the Kineto event scanner off: every event through the generic On Demand path (the
// import before the fifth pass's scanner, measured in the same run).
void BM_ImportKinetoJsonGeneric(benchmark::State& state) {
  const JsonInput& in = json_input();
  strata::import::set_chrome_event_scanner(false);
  run_import(state, in.text(), in.name, strata::import::kJsonPadding);
  strata::import::set_chrome_event_scanner(true);
}
BENCHMARK(BM_ImportKinetoJsonGeneric)->Unit(benchmark::kMillisecond);

namespace od = simdjson::ondemand;

// Touches one value as a parser must: strings unescaped, numbers converted, containers walked.
simdjson::error_code touch(od::value value, uint64_t* sink) {
  od::json_type type;
  if (auto err = value.type().get(type)) return err;
  switch (type) {
    case od::json_type::string: {
      std::string_view s;
      if (auto err = value.get_string().get(s)) return err;
      *sink += s.size();
      return simdjson::SUCCESS;
    }
    case od::json_type::number: {
      double d = 0;
      if (auto err = value.get_double().get(d)) return err;
      *sink += static_cast<uint64_t>(d != 0);
      return simdjson::SUCCESS;
    }
    case od::json_type::object: {
      od::object object;
      if (auto err = value.get_object().get(object)) return err;
      for (auto field : object) {
        std::string_view key;
        if (auto err = field.unescaped_key().get(key)) return err;
        *sink += key.size();
        if (auto err = touch(field.value(), sink)) return err;
      }
      return simdjson::SUCCESS;
    }
    case od::json_type::array: {
      od::array array;
      if (auto err = value.get_array().get(array)) return err;
      for (auto element : array) {
        od::value v;
        if (auto err = element.get(v)) return err;
        if (auto err = touch(v, sink)) return err;
      }
      return simdjson::SUCCESS;
    }
    case od::json_type::boolean:
    case od::json_type::null:
      return value.raw_json_token().size() ? simdjson::SUCCESS : simdjson::INCORRECT_TYPE;
  }
  return simdjson::INCORRECT_TYPE;
}

// The floor for any JSON importer: simdjson On Demand over every event, every field and every arg
// (keys and strings unescaped, numbers converted), building nothing.
void BM_RawSimdjsonScan(benchmark::State& state) {
  const JsonInput& in = json_input();
  od::parser parser;
  uint64_t sink = 0;
  for (auto _ : state) {
    od::document doc;
    od::value root;
    if (parser.iterate(in.bytes.data(), in.size, in.bytes.size()).get(doc) || doc.get_value().get(root) ||
        touch(root, &sink)) {
      state.SkipWithError(("raw scan failed on " + in.name).c_str());
      return;
    }
  }
  benchmark::DoNotOptimize(sink);
  state.SetBytesProcessed(static_cast<int64_t>(in.size) * static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_RawSimdjsonScan)->Unit(benchmark::kMillisecond);

void BM_CorrelateV100(benchmark::State& state) {
  strata::trace::Trace trace;
  std::string error;
  if (!strata::import::import_trace(kTrace, &trace, &error)) {
    state.SkipWithError(error.c_str());
    return;
  }
  for (auto _ : state) {
    strata::trace::SpanTree tree = strata::trace::build_span_tree(trace);
    benchmark::DoNotOptimize(tree.size());
  }
  state.counters["spans_per_s"] =
      benchmark::Counter(static_cast<double>(trace.spans.size()) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_CorrelateV100)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();

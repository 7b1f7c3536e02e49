#include "runs/leveled.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

#include "core/level.h"

namespace strata::runs {
namespace {

constexpr int kModel = static_cast<int>(Level::kModel);
constexpr int kLayer = static_cast<int>(Level::kLayer);
constexpr int kLibrary = static_cast<int>(Level::kLibrary);

// One run of a generated program traced down to `deepest`: `steps` model spans, each with `ops`
// layer ops (every third one holding a nested op of the same level, as aten::conv2d holds
// aten::convolution); library spans inside the ops when the library level is traced. Tracing the
// layer level costs `layer_cost` ns before and after every outermost op (inside the step); tracing
// the library level costs `library_cost` ns inside every op that runs a library call. Each op's own
// work is 5000 + 100 k ns plus a uniform jitter in [0, jitter].
struct Program {
  int steps = 4, ops = 12;
  int64_t layer_cost = 300, library_cost = 80, jitter = 0;
  int extra_steps_when_deep = 0;  // steps only the runs down to library do (no counterpart)
};

trace::Trace run_trace(const Program& prog, int deepest, int64_t origin, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> jitter(0, prog.jitter);
  trace::Trace t;
  trace::Process p;
  p.pid = static_cast<int32_t>(1000 + seed % 1000);
  p.start_monotonic_ns = origin;
  t.add_process(p);
  uint64_t next_id = 1;
  auto add = [&](uint64_t parent, int level, const char* name, int64_t start, int64_t end) {
    SpanRecord s;
    s.span_id = next_id++;
    s.parent_id = parent;
    s.level = static_cast<uint8_t>(level);
    s.name = t.strings.intern(name);
    s.start_ns = start;
    s.end_ns = end;
    s.tid = 7;
    t.add_span(s);
    return s.span_id;
  };
  // Spans are added parents first, children after: fix up order by start at the end.
  int64_t now = origin;
  const int steps = prog.steps + (deepest >= kLibrary ? prog.extra_steps_when_deep : 0);
  for (int step = 0; step < steps; ++step) {
    const size_t step_index = t.spans.size();
    uint64_t step_id = add(0, kModel, "predict", now, now);
    now += 1000;
    for (int k = 0; k < prog.ops; ++k) {
      if (deepest >= kLayer) now += prog.layer_cost;
      const bool nested = k % 3 == 0, library = k % 2 == 0;
      const int64_t work = 5000 + 100 * k + jitter(rng);
      const int64_t op_start = now;
      int64_t op_end = op_start + work + (library && deepest >= kLibrary ? prog.library_cost : 0);
      if (deepest >= kLayer) {
        uint64_t op = add(step_id, kLayer, nested ? "aten::conv2d" : "aten::relu", op_start, op_end);
        uint64_t holder = op;
        if (nested) holder = add(op, kLayer, "aten::convolution", op_start + 10, op_end - 10);
        if (library && deepest >= kLibrary)
          add(holder, kLibrary, "onednn::primitive", op_start + 10 + prog.library_cost, op_end - 20);
      }
      now = op_end;
      if (deepest >= kLayer) now += prog.layer_cost;
    }
    now += 500;
    t.spans[step_index].end_ns = now;
    now += 2000;
  }
  return t;
}

struct Experiment {
  std::vector<int> levels = {kModel, kLayer, kLibrary};
  std::vector<std::vector<trace::Trace>> traces;
  std::vector<std::vector<RunInput>> inputs;
};

Experiment make_experiment(const Program& prog, int repetitions) {
  Experiment e;
  e.traces.resize(e.levels.size());
  e.inputs.resize(e.levels.size());
  int64_t origin = 1'000'000;
  for (int r = 0; r < repetitions; ++r)
    for (size_t j = 0; j < e.levels.size(); ++j) {
      e.traces[j].push_back(run_trace(prog, e.levels[j], origin, 17 + 31 * r + 7 * j));
      origin += 100'000'000;  // runs follow each other
    }
  for (size_t j = 0; j < e.levels.size(); ++j)
    for (const trace::Trace& t : e.traces[j]) e.inputs[j].push_back({&t, 1'000'000});
  return e;
}

// Spans whose parent (by id, within their process) does not contain them, and spans of one thread
// that overlap without nesting: what a merged timeline of several runs produced before.
void expect_one_timeline_per_run(const trace::Trace& t) {
  std::unordered_map<uint64_t, size_t> by_id;  // (process << 48) ^ id
  for (size_t i = 0; i < t.spans.size(); ++i) by_id[(uint64_t{t.spans[i].process} << 48) ^ t.spans[i].span_id] = i;
  size_t outside = 0;
  for (const SpanRecord& s : t.spans) {
    if (s.parent_id == 0) continue;
    auto it = by_id.find((uint64_t{s.process} << 48) ^ s.parent_id);
    ASSERT_NE(it, by_id.end());
    const SpanRecord& p = t.spans[it->second];
    if (s.start_ns < p.start_ns || s.end_ns > p.end_ns) ++outside;
  }
  EXPECT_EQ(outside, 0u);
}

TEST(Leveled, EveryRunIsKeptAsRecordedAndTagged) {
  Program prog;
  prog.jitter = 400;
  Experiment e = make_experiment(prog, 3);
  LeveledResult r = combine_leveled(e.levels, e.inputs);
  size_t expected_spans = 0;
  for (const auto& level : e.traces)
    for (const trace::Trace& t : level) expected_spans += t.spans.size();
  ASSERT_EQ(r.trace.spans.size(), expected_spans);
  ASSERT_EQ(r.trace.processes.size(), 9u);
  // In the order the runs ran: repetition-major, levels rotating.
  EXPECT_EQ(r.trace.processes[0].properties.get("run.level"), "model");
  EXPECT_EQ(r.trace.processes[1].properties.get("run.level"), "layer");
  EXPECT_EQ(r.trace.processes[5].properties.get("run.level"), "library");
  EXPECT_EQ(r.trace.processes[5].properties.get("run"), "1");
  EXPECT_EQ(r.trace.processes[5].properties.get("leveled"), "1");
  // Each run's spans keep their own times: the first model run's predict spans are untouched.
  const trace::Trace& first = e.traces[0][0];
  for (size_t i = 0; i < first.spans.size(); ++i) {
    EXPECT_EQ(r.trace.spans[i].start_ns, first.spans[i].start_ns);
    EXPECT_EQ(r.trace.spans[i].end_ns, first.spans[i].end_ns);
  }
  expect_one_timeline_per_run(r.trace);
}

TEST(Leveled, OverheadIsMeasuredOnMatchedSpansOfTheLevelAbove) {
  Program prog;  // no jitter: every repetition measures the same
  Experiment e = make_experiment(prog, 3);
  LeveledResult r = combine_leveled(e.levels, e.inputs);
  ASSERT_EQ(r.levels.size(), 3u);
  // Own times: model spans of the model runs; outermost layer ops of the layer runs (the nested
  // aten::convolution is not counted twice); library spans of the library runs.
  int64_t ops_work = 0;
  for (int k = 0; k < prog.ops; ++k) ops_work += 5000 + 100 * k;
  EXPECT_EQ(r.levels[0].time.median_ns, prog.steps * (1000 + ops_work + 500));
  EXPECT_EQ(r.levels[1].time.median_ns, prog.steps * ops_work);
  EXPECT_EQ(r.levels[1].spans_per_run, prog.steps * (prog.ops + prog.ops / 3));
  EXPECT_EQ(r.levels[2].spans_per_run, prog.steps * prog.ops / 2);
  // Tracing layers adds 2 x layer_cost per op to every predict span.
  const Overhead& layer = r.levels[1].on_parent;
  EXPECT_EQ(layer.on_level, kModel);
  EXPECT_EQ(layer.matched, 3u * prog.steps);  // 3 repetitions x steps
  EXPECT_EQ(layer.unmatched + layer.unmatched_source, 0u);
  EXPECT_EQ(layer.added.median_ns, prog.steps * prog.ops * 2 * prog.layer_cost);
  EXPECT_EQ(layer.added.min_ns, layer.added.max_ns);
  EXPECT_EQ(layer.noise_ns, 0);
  EXPECT_EQ(layer.verdict, NoiseVerdict::kAboveNoise);
  // Tracing the library adds library_cost to each op that runs one, measured on the outermost layer
  // ops matched between the layer and library runs (the library row's matched count: layer ops).
  const Overhead& library = r.levels[2].on_parent;
  EXPECT_EQ(library.on_level, kLayer);
  EXPECT_EQ(library.matched, 3u * prog.steps * prog.ops);
  EXPECT_EQ(library.added.median_ns, prog.steps * (prog.ops / 2) * prog.library_cost);
  EXPECT_DOUBLE_EQ(library.pct, 100.0 * static_cast<double>(library.added.median_ns) / (prog.steps * ops_work));
  // End to end on the model spans: both costs.
  EXPECT_EQ(r.levels[2].on_shallowest.added.median_ns,
            prog.steps * (prog.ops * 2 * prog.layer_cost + (prog.ops / 2) * prog.library_cost));
  format::Properties record;
  describe_leveled(r, &record);
  EXPECT_EQ(record.get("leveled.levels"), "model,layer,library");
  EXPECT_EQ(record.get("leveled.library.on"), "layer");
  EXPECT_EQ(record.get("leveled.library.matched"), std::to_string(3 * prog.steps * prog.ops));
  EXPECT_EQ(record.get("leveled.layer.verdict"), "above noise");
  EXPECT_EQ(record.get("leveled.layer.overhead_ns"), std::to_string(layer.added.median_ns));
}

TEST(Leveled, AnOverheadSmallerThanTheRunToRunSpreadIsWithinNoise) {
  Program prog;
  prog.layer_cost = 1;      // 2 x 12 x 4 = 96 ns added per run ...
  prog.jitter = 2000;       // ... against up to 12 x 2000 ns of jitter per step
  Experiment e = make_experiment(prog, 5);
  LeveledResult r = combine_leveled(e.levels, e.inputs);
  const Overhead& layer = r.levels[1].on_parent;
  EXPECT_GT(layer.noise_ns, std::llabs(layer.added.median_ns));
  EXPECT_EQ(layer.verdict, NoiseVerdict::kWithinNoise);
  EXPECT_LE(layer.added.min_ns, layer.added.median_ns);
  EXPECT_GE(layer.added.max_ns, layer.added.median_ns);
  std::string text = format_leveled(r);
  EXPECT_NE(text.find("within noise (run-to-run spread"), std::string::npos) << text;
}

TEST(Leveled, OneRunSaysTheNoiseIsUnknown) {
  Program prog;
  prog.layer_cost = 0;
  prog.jitter = 3000;
  Experiment e = make_experiment(prog, 1);
  LeveledResult r = combine_leveled(e.levels, e.inputs);
  EXPECT_EQ(r.levels[1].on_parent.verdict, NoiseVerdict::kUnknown);
  EXPECT_EQ(r.levels[1].on_parent.noise_ns, -1);
  std::string text = format_leveled(r);
  EXPECT_NE(text.find("1 run: noise unknown (--runs 3 or more measures it)"), std::string::npos) << text;
  format::Properties record;
  describe_leveled(r, &record);
  EXPECT_EQ(record.get("leveled.layer.verdict"), "noise unknown");
  // With jitter and no cost the single difference may go either way; below zero it is called noise.
  if (r.levels[1].on_parent.added.median_ns < 0) {
    EXPECT_NE(text.find("below zero, so noise"), std::string::npos) << text;
  }
}

TEST(Leveled, SpansWithoutCounterpartAreCountedOnBothSides) {
  Program prog;
  prog.extra_steps_when_deep = 2;  // the library runs do two more steps
  Experiment e = make_experiment(prog, 2);
  LeveledResult r = combine_leveled(e.levels, e.inputs);
  const Overhead& library = r.levels[2].on_parent;
  EXPECT_EQ(library.matched, 2u * prog.steps * prog.ops);
  EXPECT_EQ(library.unmatched, 2u * 2 * prog.ops);  // layer ops of the extra steps
  EXPECT_EQ(library.unmatched_source, 0u);
  const Overhead& end_to_end = r.levels[2].on_shallowest;
  EXPECT_EQ(end_to_end.matched, 2u * prog.steps);
  EXPECT_EQ(end_to_end.unmatched, 2u * 2);
}

TEST(Leveled, RealisticSizeKeepsEveryRunConsistent) {
  // 3 repetitions x 3 levels of a 200-step program with 60 ops per step (~150k spans in all).
  Program prog;
  prog.steps = 200;
  prog.ops = 60;
  prog.jitter = 500;
  Experiment e = make_experiment(prog, 3);
  LeveledResult r = combine_leveled(e.levels, e.inputs);
  expect_one_timeline_per_run(r.trace);
  EXPECT_EQ(r.levels[1].on_parent.matched, 3u * prog.steps);
  EXPECT_EQ(r.levels[2].on_parent.matched, 3u * prog.steps * prog.ops);
  // Known cost, noise from jitter: the measured layer overhead is within the jitter of the truth.
  const int64_t truth = int64_t{prog.steps} * prog.ops * 2 * prog.layer_cost;
  EXPECT_NEAR(static_cast<double>(r.levels[1].on_parent.added.median_ns), static_cast<double>(truth),
              static_cast<double>(prog.steps) * prog.ops * prog.jitter * 0.2);
  EXPECT_EQ(r.levels[1].on_parent.verdict, NoiseVerdict::kAboveNoise);
}

}  // namespace
}  // namespace strata::runs

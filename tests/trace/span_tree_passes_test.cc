// The span tree built by named passes links every span exactly as the one-function build did
// (span_tree_reference.cc), on generated traces with every kind of link at realistic sizes: several
// processes, many threads, device streams, launches and kernels (some without launch, some on a
// skewed clock), external ids (some stale), explicit parents (recorded, remote, cyclic), damaged
// nesting, and spans stored out of order.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "span_tree_reference.h"
#include "trace/span_tree.h"
#include "trace/trace_builder.h"

namespace strata::trace {
namespace {

struct GeneratorOptions {
  uint32_t seed = 1;
  size_t target_spans = 20'000;
  int processes = 2;
  int threads = 4;
  int streams = 2;
  bool explicit_parents = true;  // collector-style recorded parent ids
  bool external_ids = true;      // Kineto-style "External id" attributes
};

class Generator {
 public:
  explicit Generator(const GeneratorOptions& o) : o_(o), rng_(o.seed) {}

  Trace make() {
    Trace t;
    for (int p = 0; p < o_.processes; ++p) {
      Process proc;
      proc.pid = 100 + p;
      t.add_process(proc);
    }
    names_ = {t.strings.intern("step"),
              t.strings.intern("aten::conv2d"),
              t.strings.intern("aten::relu"),
              t.strings.intern("cudnnConv"),
              t.strings.intern("cudaLaunchKernel"),
              t.strings.intern("gemm"),
              t.strings.intern("mark"),
              t.strings.intern("loss")};
    ext_key_ = t.strings.intern(attr_keys::kExternalCorrelationId);
    while (t.spans.size() < o_.target_spans) {
      const uint16_t p = static_cast<uint16_t>(pick(o_.processes));
      const uint32_t tid = 1000 + static_cast<uint32_t>(pick(o_.threads));
      int64_t& clock = clocks_[{p, tid}];
      clock += 1 + pick(5'000);
      step(t, p, tid, clock);
    }
    damage(t);
    return t;
  }

 private:
  int64_t pick(int64_t n) { return std::uniform_int_distribution<int64_t>(0, n - 1)(rng_); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  size_t add(Trace& t, uint16_t p, uint32_t tid, Level level, SpanKind kind, int64_t start, int64_t end,
             uint64_t parent_id, std::vector<AttrRecord> attrs = {}) {
    SpanRecord s;
    s.span_id = ++next_id_[p];
    s.parent_id = o_.explicit_parents ? parent_id : 0;
    s.process = p;
    s.tid = tid;
    s.level = static_cast<uint8_t>(level);
    s.kind = static_cast<uint8_t>(kind);
    s.start_ns = start;
    s.end_ns = end;
    s.name = names_[static_cast<size_t>(pick(static_cast<int64_t>(names_.size())))];
    return t.add_span(s, attrs);
  }

  AttrRecord ext(int64_t id) {
    AttrRecord a;
    a.key = ext_key_;
    a.type = static_cast<uint8_t>(AttrType::kInt);
    a.value.i = id;
    return a;
  }

  // One training step on a host thread: layers with nested regions, library calls, launches with
  // their kernels on a stream, an instant, a counter.
  void step(Trace& t, uint16_t p, uint32_t tid, int64_t& clock) {
    const int64_t start = clock;
    const size_t step_index = add(t, p, tid, Level::kModel, SpanKind::kSpan, start, start, 0);
    const uint64_t step_id = t.spans[step_index].span_id;
    int64_t at = start + 10;
    const int layers = 1 + static_cast<int>(pick(12));
    for (int l = 0; l < layers; ++l) {
      const int64_t layer_start = at;
      int64_t ext_id = o_.external_ids ? ++next_ext_[p] : 0;
      if (ext_id && chance(0.05)) ext_id = std::max<int64_t>(1, ext_id - 50);  // stale reuse
      std::vector<AttrRecord> la;
      if (ext_id) la.push_back(ext(ext_id));
      const size_t layer =
          add(t, p, tid, Level::kLayer, SpanKind::kSpan, layer_start, layer_start, step_id, la);
      const uint64_t layer_id = t.spans[layer].span_id;
      int64_t inner = layer_start + 1 + pick(3);
      uint64_t region_id = layer_id;
      size_t region = SIZE_MAX;
      if (chance(0.3)) {  // a nested region at the same level (conv -> conv_impl)
        region = add(t, p, tid, Level::kLayer, SpanKind::kSpan, inner, inner, layer_id);
        region_id = t.spans[region].span_id;
        inner += 1;
      }
      const int calls = static_cast<int>(pick(4));
      for (int c = 0; c < calls; ++c) {
        const int64_t cs = inner + pick(3);
        const int64_t ce = cs + 1 + pick(50);
        if (chance(0.5)) {
          add(t, p, tid, Level::kLibrary, SpanKind::kSpan, cs, ce, region_id);
        } else {
          std::vector<AttrRecord> ca;
          if (ext_id && chance(0.8)) ca.push_back(ext(ext_id));
          const size_t launch = add(t, p, tid, Level::kRuntimeApi, SpanKind::kLaunch, cs, ce, region_id, ca);
          const uint64_t corr = ++next_corr_[p];
          t.spans[launch].correlation_id = chance(0.95) ? corr : 0;
          // The kernel, on a stream, usually after its launch; a few without launch (a correlation
          // id nobody has) and a few on a skewed clock (starting before the launch).
          const int64_t ks = chance(0.03) ? cs - 5 - pick(100) : ce + pick(200);
          std::vector<AttrRecord> ka;
          if (ext_id && chance(0.3)) ka.push_back(ext(ext_id));
          const size_t kernel =
              add(t, p, 0, Level::kDevice, SpanKind::kExecution, ks, ks + 1 + pick(400), 0, ka);
          t.spans[kernel].device = static_cast<uint16_t>(pick(2));
          t.spans[kernel].stream = 7 + static_cast<uint32_t>(pick(std::max(1, o_.streams)));
          t.spans[kernel].correlation_id = chance(0.97) ? corr : 900'000'000 + corr;
        }
        inner = ce + 1;
      }
      if (chance(0.1)) add(t, p, tid, Level::kModel, SpanKind::kInstant, inner, inner, step_id);
      if (region != SIZE_MAX) t.spans[region].end_ns = inner + pick(2);
      at = inner + 2 + pick(3);
      t.spans[layer].end_ns = at;
      at += 1 + pick(4);
    }
    if (chance(0.05)) {  // work on a worker thread of the process, inside the step's time
      const uint32_t worker = 5000 + static_cast<uint32_t>(pick(3));
      add(t, p, worker, Level::kLayer, SpanKind::kSpan, start + 20, start + 30, step_id);
    }
    t.spans[step_index].end_ns = at + 10;
    if (chance(0.2)) {
      const size_t c = add(t, p, tid, Level::kApplication, SpanKind::kCounter, at, at, 0);
      t.spans[c].parent_id = 0;
    }
    clock = at + 20;
  }

  // Remote and cyclic explicit parents, damaged nesting, and records stored out of order.
  void damage(Trace& t) {
    const size_t n = t.spans.size();
    for (size_t k = 0; k < n / 200; ++k) {
      const size_t i = static_cast<size_t>(pick(static_cast<int64_t>(n)));
      if (o_.explicit_parents) t.spans[i].parent_id = 0xABCD000000000000ull + k;  // a remote (W3C) parent
    }
    for (int made = 0, tries = 0; o_.explicit_parents && made < 3 && tries < 1000;
         ++tries) {  // cycles of two
      const size_t a = static_cast<size_t>(pick(static_cast<int64_t>(n)));
      const size_t b = static_cast<size_t>(pick(static_cast<int64_t>(n)));
      if (a == b || t.spans[a].process != t.spans[b].process) continue;
      t.spans[a].parent_id = t.spans[b].span_id;
      t.spans[b].parent_id = t.spans[a].span_id;
      ++made;
    }
    for (size_t k = 0; k < n / 500; ++k) {  // overlapping, not nested
      const size_t i = static_cast<size_t>(pick(static_cast<int64_t>(n)));
      t.spans[i].end_ns += 1 + pick(30);
    }
    // Storage order: by end (a recording writes a span when it ends), device work in batches.
    std::vector<uint32_t> order(n);
    for (uint32_t i = 0; i < n; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      const bool da = t.spans[a].level == static_cast<uint8_t>(Level::kDevice);
      const bool db = t.spans[b].level == static_cast<uint8_t>(Level::kDevice);
      const int64_t ka = da ? t.spans[a].end_ns / 100'000 * 100'000 + 99'999 : t.spans[a].end_ns;
      const int64_t kb = db ? t.spans[b].end_ns / 100'000 * 100'000 + 99'999 : t.spans[b].end_ns;
      return ka < kb;
    });
    std::vector<SpanRecord> spans(n);
    std::vector<uint32_t> begin(n + 1, static_cast<uint32_t>(t.attrs.size()));
    for (size_t k = 0; k < n; ++k) {
      spans[k] = t.spans[order[k]];
      begin[k] = t.attr_begin[order[k]];
    }
    t.spans = std::move(spans);
    t.attr_begin = std::move(begin);
    t.invalidate_structure();
  }

  GeneratorOptions o_;
  std::mt19937_64 rng_;
  std::vector<uint32_t> names_;
  uint32_t ext_key_ = 0;
  std::map<std::pair<uint16_t, uint32_t>, int64_t> clocks_;
  std::map<uint16_t, uint64_t> next_id_, next_corr_;
  std::map<uint16_t, int64_t> next_ext_;
};

void expect_same_tree(const Trace& t, const SpanTreeOptions& options, const std::string& what) {
  const SpanTree tree = build_span_tree(t, options);
  const testing::ReferenceTree ref = testing::reference_span_tree(t, options);
  ASSERT_EQ(tree.size(), ref.parent.size());
  size_t mismatches = 0;
  for (size_t i = 0; i < t.spans.size(); ++i) {
    const bool reconstructed = ref.flags[i] & kSpanFlagParentReconstructed;
    const bool ambiguous = ref.flags[i] & kSpanFlagAmbiguousParent;
    if (tree.parent(i) != ref.parent[i] || tree.reconstructed(i) != reconstructed ||
        tree.ambiguous(i) != ambiguous || tree.depth(i) != ref.depth[i] ||
        tree.external_owner(i) != (ref.external_owner.empty() ? kNoParent : ref.external_owner[i])) {
      if (++mismatches <= 5)
        ADD_FAILURE() << what << ": span " << i << " parent " << tree.parent(i) << " (reference "
                      << ref.parent[i] << "), link " << link_kind_name(tree.link(i)) << ", reference flags "
                      << int(ref.flags[i]);
    }
  }
  EXPECT_EQ(mismatches, 0u) << what;
  using stats::Stat;
  const stats::StatSet& s = tree.stats();
  EXPECT_EQ(s.get(Stat::kTreeExplicitLinks), ref.report.explicit_links) << what;
  EXPECT_EQ(s.get(Stat::kTreeMissingParents), ref.report.missing_parents) << what;
  EXPECT_EQ(s.get(Stat::kTreeCorrelationLinks), ref.report.correlation_links) << what;
  EXPECT_EQ(s.get(Stat::kTreeExternalLinks), ref.report.external_links) << what;
  EXPECT_EQ(s.get(Stat::kTreeExternalRejected), ref.report.external_rejected) << what;
  EXPECT_EQ(s.get(Stat::kTreeReconstructed), ref.report.reconstructed) << what;
  EXPECT_EQ(s.get(Stat::kTreeCrossThread), ref.report.cross_thread) << what;
  EXPECT_EQ(s.get(Stat::kTreeAmbiguous), ref.report.ambiguous) << what;
  EXPECT_EQ(s.get(Stat::kTreeLateRecords), ref.report.late_records) << what;
  EXPECT_EQ(s.get(Stat::kTreeCyclesBroken), ref.report.cycles_broken) << what;
  EXPECT_EQ(s.get(Stat::kTreeRoots), ref.report.roots) << what;
}

// The generator makes every kind of link and damage (else the comparison would prove little).
void expect_every_kind(const Trace& t, const std::string& what) {
  const SpanTree tree = build_span_tree(t);
  const stats::StatSet& s = tree.stats();
  using stats::Stat;
  for (Stat k : {Stat::kTreeExplicitLinks, Stat::kTreeMissingParents, Stat::kTreeCorrelationLinks,
                 Stat::kTreeExternalLinks, Stat::kTreeExternalRejected, Stat::kTreeReconstructed,
                 Stat::kTreeCrossThread, Stat::kTreeAmbiguous, Stat::kTreeCyclesBroken})
    EXPECT_GT(s.get(k), 0u) << what << ": no " << stats::info(k).name;
}

TEST(SpanTreePasses, SameTreeAsTheReferenceOnGeneratedTraces) {
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    GeneratorOptions o;
    o.seed = seed;
    o.target_spans = 40'000;
    o.processes = 1 + static_cast<int>(seed % 3);
    o.threads = 2 + static_cast<int>(seed * 3 % 7);
    Trace t = Generator(o).make();
    const std::string what = "seed " + std::to_string(seed);
    expect_every_kind(t, what);
    EXPECT_GT(build_span_tree(t).stats().get(stats::Stat::kTreeLateRecords), 0u) << what;
    // As stored (out of order), and as the TraceBuilder leaves a trace (sorted once).
    expect_same_tree(t, {}, what + " unsorted");
    sort_spans(&t);
    expect_same_tree(t, {}, what + " sorted");
    expect_same_tree(t, {.reconstruct = true, .cross_thread = false}, what + " no cross-thread");
    expect_same_tree(t, {.reconstruct = false, .cross_thread = false}, what + " known links only");
  }
}

TEST(SpanTreePasses, SameTreeWithoutExplicitOrExternalIds) {
  // Imported traces: no recorded parent ids; and recorded CPU traces: no external ids.
  for (bool explicit_parents : {false, true}) {
    GeneratorOptions o;
    o.seed = 11 + explicit_parents;
    o.explicit_parents = explicit_parents;
    o.external_ids = !explicit_parents;
    Trace t = Generator(o).make();
    sort_spans(&t);
    expect_same_tree(t, {}, explicit_parents ? "recorded-like" : "imported-like");
  }
}

TEST(SpanTreePasses, SameTreeAtScale) {
  GeneratorOptions o;
  o.seed = 99;
  o.target_spans = 250'000;
  o.processes = 3;
  o.threads = 16;
  o.streams = 4;
  Trace t = Generator(o).make();
  sort_spans(&t);
  expect_same_tree(t, {}, "250k spans, 3 processes x 16 threads");
}

TEST(SpanTreePasses, EveryLinkKindHasAName) {
  for (LinkKind k : {LinkKind::kExplicit, LinkKind::kCorrelation, LinkKind::kExternal, LinkKind::kContainment,
                     LinkKind::kCrossThread, LinkKind::kAmbiguous})
    EXPECT_FALSE(link_kind_name(k).empty());
  EXPECT_TRUE(link_kind_name(LinkKind::kNone).empty());
}

}  // namespace
}  // namespace strata::trace

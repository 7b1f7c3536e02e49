// Nsight Compute CSV: the real details-page file (every row imported, counted here independently),
// generated raw-page files with ==PROF== lines, program output, units rows, thousands separators and
// trailing commas, the join to a trace's kernels by name and launch order (and its mismatch counts),
// the kernel roofline on the joined measurements, and bad input as one line.
#include "import/ncu_csv.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "../analysis/analysis_test_util.h"
#include "core/attr_keys.h"
#include "import/importer.h"
#include "trace/trace_reader.h"

namespace strata::testing {
namespace {

const std::string kRealCsv =
    std::string(STRATA_SOURCE_DIR) + "/tests/import/data/b200_cublaslt_fp8_gemm_details.csv.log";

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::optional<double> attr(const trace::Trace& t, size_t span, std::string_view key) {
  if (auto a = t.find_attr(span, key)) {
    if (a->type == static_cast<uint8_t>(AttrType::kInt)) return static_cast<double>(a->value.i);
    if (a->type == static_cast<uint8_t>(AttrType::kDouble) ||
        a->type == static_cast<uint8_t>(AttrType::kMetric))
      return a->value.d;
  }
  return std::nullopt;
}

TEST(NcuCsv, RealDetailsPageImportsEveryRow) {
  const std::string text = read_all(kRealCsv);
  // Independently: table rows are the lines starting with a quote, less the header; rule rows have
  // an empty Metric Name (the 13th field); the rest is ==PROF== lines and the program's output.
  size_t quoted = 0, other = 0, rules = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] != '"') {
      ++other;
      continue;
    }
    ++quoted;
    if (line.find("\",\"\",\"\",\"\",\"") != std::string::npos) ++rules;
  }
  ASSERT_EQ(quoted - 1, 58u);
  import::register_readers();
  trace::Trace t;
  std::string error;
  ASSERT_TRUE(trace::open_trace(kRealCsv, &t, &error)) << error;
  ASSERT_EQ(t.spans.size(), 1u);
  const stats::StatSet& s = t.processes.at(0).stats;
  EXPECT_EQ(s.get(stats::Stat::kImportNcuMetricRows) + s.get(stats::Stat::kImportNcuRuleRows), quoted - 1);
  EXPECT_EQ(s.get(stats::Stat::kImportNcuRuleRows), rules);
  EXPECT_EQ(s.get(stats::Stat::kImportNcuOtherLines), other);
  size_t ncu_attrs = 0;
  for (const AttrRecord& a : t.attributes(0))
    if (t.strings.get(a.key).starts_with("ncu.") && t.strings.get(a.key) != "ncu.id") ++ncu_attrs;
  EXPECT_EQ(ncu_attrs, quoted - 1) << "one attribute per row";
  const SpanRecord& k = t.spans[0];
  EXPECT_EQ(t.name(k).substr(0, 25), "cutlass3x_sm100_tensorop_");
  EXPECT_EQ(k.activity_type(), ActivityType::kKernel);
  EXPECT_EQ(k.level, static_cast<uint8_t>(Level::kDevice));
  EXPECT_EQ(k.duration_ns(), 406240);  // "Duration","ns","406240"
  EXPECT_EQ(attr(t, 0, attr_keys::kAchievedOccupancy), 15.53);
  EXPECT_EQ(attr(t, 0, attr_keys::kRegistersPerThread), 168);
  EXPECT_EQ(attr(t, 0, attr_keys::kBlockX), 384);
  EXPECT_EQ(attr(t, 0, attr_keys::kGridY), 32);
  EXPECT_EQ(attr(t, 0, "ncu.DRAM Frequency [hz]"), 3995313115.40);
  EXPECT_EQ(k.stream, 7u);
  EXPECT_EQ(t.processes[0].pid, 371693);
}

// A raw page (one row per kernel, metric columns) as ncu prints it around a program's output.
struct Generated {
  std::string csv;
  std::vector<std::string> names;  // per ncu ID
  std::vector<double> flops, read, write, duration_ns;
};

Generated raw_page(const std::vector<std::string>& names, uint32_t seed) {
  Generated g;
  std::mt19937_64 rng(seed);
  std::ostringstream o;
  o << "==PROF== Connected to process 4242 (/usr/bin/python3)\nepoch 0 loss 1.25\n";
  o << "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\","
       "\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"dram__bytes_read.sum\",\"dram__bytes_write.sum\","
       "\"gpu__time_duration.sum\",\"smsp__sass_thread_inst_executed_op_ffma_pred_on.sum\","
       "\"smsp__sass_thread_inst_executed_op_hadd_pred_on.sum\",\"sm__warps_active.avg.pct_of_peak_sustained_"
       "active\"\n";
  o << "\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"Kbyte\",\"byte\",\"usecond\",\"inst\","
       "\"inst\",\"%\",\n";
  for (size_t id = 0; id < names.size(); ++id) {
    const double read_kb = static_cast<double>(rng() % 100000) / 10;  // Kbyte, one decimal
    const int64_t write = static_cast<int64_t>(rng() % 5'000'000);    // byte, with thousands separators
    const double us = 1 + static_cast<double>(rng() % 100000) / 100;  // usecond
    const int64_t ffma = static_cast<int64_t>(rng() % 1'000'000'000),
                  hadd = static_cast<int64_t>(rng() % 1000);
    std::ostringstream w;  // 1234567 -> "1,234,567"
    std::string digits = std::to_string(write);
    for (size_t i = 0; i < digits.size(); ++i) {
      if (i > 0 && (digits.size() - i) % 3 == 0) w << ',';
      w << digits[i];
    }
    o << '"' << id << "\",\"4242\",\"python3\",\"localhost\",\"" << names[id]
      << "\",\"1\",\"7\",\"(256, 1, 1)\",\"(" << id + 1 << ", 1, 1)\",\"0\",\"9.0\",\"" << read_kb << "\",\""
      << w.str() << "\",\"" << us << "\",\"" << ffma << "\",\"" << hadd << "\",\"" << (id % 100) << '"'
      << (id % 3 == 0 ? "," : "") << "\n";
    if (id % 50 == 0) o << "==PROF== Profiling \"" << names[id] << "\" - " << id << ": 0%....50%....100%\n";
    g.names.push_back(names[id]);
    g.read.push_back(read_kb * 1000);
    g.write.push_back(static_cast<double>(write));
    g.duration_ns.push_back(us * 1000);
    g.flops.push_back(2.0 * ffma + hadd);
  }
  o << "==PROF== Disconnected from process 4242\n";
  g.csv = o.str();
  return g;
}

// A trace of the same program: a model span over kernels launched in `order` (demangled names).
trace::Trace trace_of(const std::vector<std::string>& order) {
  trace::Trace t;
  trace::Process p;
  p.pid = 4242;
  t.add_process(p);
  SpanRecord model;
  model.span_id = 1;
  model.start_ns = 0;
  model.end_ns = static_cast<int64_t>(order.size()) * 2000 + 1000;
  model.name = t.strings.intern("predict");
  model.level = static_cast<uint8_t>(Level::kModel);
  model.kind = static_cast<uint8_t>(SpanKind::kSpan);
  model.activity = static_cast<uint8_t>(ActivityType::kAnnotation);
  t.add_span(model, std::vector<AttrRecord>{t.int_attr(attr_keys::kBatch, 1)});
  for (size_t i = 0; i < order.size(); ++i) {
    SpanRecord k;
    k.span_id = i + 2;
    k.parent_id = 1;
    k.start_ns = static_cast<int64_t>(i) * 2000 + 500;
    k.end_ns = k.start_ns + 1500;
    k.name = t.strings.intern("void " + order[i] + "<float, 4>(float*, int)");
    k.level = static_cast<uint8_t>(Level::kDevice);
    k.kind = static_cast<uint8_t>(SpanKind::kExecution);
    k.activity = static_cast<uint8_t>(ActivityType::kKernel);
    k.device = 0;
    k.stream = 7;
    t.add_span(k, std::vector<AttrRecord>{t.metric(attr_keys::kFlops, 1.0)});  // an estimate, replaced
  }
  return t;
}

std::vector<std::string> launch_order(size_t n) {
  const char* kinds[] = {"gemm_kernel", "relu_kernel", "softmax_kernel", "layer_norm_kernel"};
  std::vector<std::string> order;
  for (size_t i = 0; i < n; ++i) order.push_back(kinds[(i * 7 + i / 5) % 4]);
  return order;
}

TEST(NcuCsv, RawPageJoinsByNameAndLaunchOrderAndFeedsTheRoofline) {
  const std::vector<std::string> order = launch_order(3000);
  Generated g = raw_page(order, 11);  // ncu --print-kernel-base function: the base names
  import::NcuProfile profile;
  std::string error;
  ASSERT_TRUE(import::parse_ncu_csv(g.csv, "gen.csv", &profile, &error)) << error;
  ASSERT_TRUE(profile.raw_page);
  ASSERT_EQ(profile.kernels.size(), order.size());
  EXPECT_EQ(profile.metric_rows, order.size() * 6);
  trace::Trace t = trace_of(order);
  const import::NcuJoinCounts c = import::join_ncu_metrics(profile, &t);
  EXPECT_EQ(c.matched, order.size());
  EXPECT_EQ(c.ncu_unmatched, 0u);
  EXPECT_EQ(c.trace_without_metrics, 0u);
  EXPECT_EQ(t.processes[0].stats.get(stats::Stat::kImportNcuJoinMatched), order.size());
  // The i-th launch carries the i-th ncu row's measurements (both orders are the launch order).
  for (size_t i = 0; i < order.size(); ++i) {
    const size_t span = i + 1;
    ASSERT_EQ(attr(t, span, "ncu.id"), static_cast<double>(i));
    EXPECT_DOUBLE_EQ(*attr(t, span, attr_keys::kFlops), g.flops[i]) << i;
    EXPECT_NEAR(*attr(t, span, attr_keys::kDramReadBytes), g.read[i], 1e-6 * g.read[i] + 1e-9) << i;
    EXPECT_EQ(*attr(t, span, attr_keys::kDramWriteBytes), g.write[i]) << i;
    EXPECT_EQ(*attr(t, span, attr_keys::kAchievedOccupancy), static_cast<double>(i % 100)) << i;
    EXPECT_EQ(*attr(t, span, attr_keys::kGridX), static_cast<double>(i + 1)) << i;
  }
  // The kernel roofline reads the measured flops and bytes: per kernel name, flops / (read + write).
  AnalysisRun r = run_analysis(t, "kernel_roofline", {{"peak_gflops", "60000"}, {"peak_gbps", "3000"}});
  ASSERT_FALSE(r.result.missing_input) << *r.result.missing_input;
  const analysis::Table& table = r.table();
  ASSERT_EQ(table.rows.size(), 4u);
  std::map<std::string, std::pair<double, double>> want;  // base name -> flops, bytes
  for (size_t i = 0; i < order.size(); ++i) {
    want[order[i]].first += g.flops[i];
    want[order[i]].second += g.read[i] + g.write[i];
  }
  for (size_t row = 0; row < table.rows.size(); ++row) {
    const std::string name = text(table, row, "kernel");
    const std::string base(import::kernel_base_name(name));
    ASSERT_TRUE(want.count(base)) << name;
    EXPECT_NEAR(num(table, row, "flop_per_byte"), want[base].first / want[base].second,
                1e-3 + 1e-3 * want[base].first / want[base].second)
        << name;
  }
}

TEST(NcuCsv, MismatchesAreCounted) {
  std::vector<std::string> order = launch_order(40);
  std::vector<std::string> profiled = order;
  profiled.push_back("gemm_kernel");          // one launch more than the trace has
  profiled.push_back("never_traced_kernel");  // a name the trace does not have
  Generated g = raw_page(profiled, 5);
  import::NcuProfile profile;
  std::string error;
  ASSERT_TRUE(import::parse_ncu_csv(g.csv, "gen.csv", &profile, &error)) << error;
  std::vector<std::string> traced = order;
  traced.push_back("relu_kernel");  // a launch ncu did not profile
  trace::Trace t = trace_of(traced);
  const import::NcuJoinCounts c = import::join_ncu_metrics(profile, &t);
  EXPECT_EQ(c.matched, order.size());
  EXPECT_EQ(c.ncu_unmatched, 2u);
  EXPECT_EQ(c.trace_without_metrics, 1u);
  EXPECT_EQ(t.processes[0].stats.get(stats::Stat::kImportNcuJoinUnmatched), 2u);
  EXPECT_EQ(t.processes[0].stats.get(stats::Stat::kImportNcuJoinTraceKernelsWithout), 1u);
}

TEST(NcuCsv, BadInputIsOneLineNamingLineAndField) {
  const std::string header =
      "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Section Name\",\"Metric Name\","
      "\"Metric Unit\",\"Metric Value\"\n";
  struct Case {
    std::string text, needle;
  } cases[] = {
      {"==PROF== nothing profiled\n", "no Nsight Compute CSV header"},
      {"==PROF== x\n" + header + "\"zero\",\"1\",\"p\",\"h\",\"k\",\"S\",\"Duration\",\"ns\",\"5\"\n",
       "line 3, field ID"},
      {header + "\"0\",\"1\",\"p\",\"h\",\"\",\"S\",\"Duration\",\"ns\",\"5\"\n",
       "line 2, field Kernel Name"},
      {header + "\"0\",\"1\",\"p\",\"h\",\"k\",\"S\",\"Duration\",\"ns\",\"5\",\"x\",\"y\"\n",
       "more than the header"},
      {header + "\"0\",\"1\",\"p\",\"h\",\"k\",\"S\",\"Duration\",\"ns\",\"5\n", "unterminated quote"},
      {header, "no kernel rows"},
  };
  for (const Case& c : cases) {
    import::NcuProfile profile;
    std::string error;
    EXPECT_FALSE(import::parse_ncu_csv(c.text, "bad.csv", &profile, &error)) << c.needle;
    EXPECT_NE(error.find("bad.csv"), std::string::npos) << error;
    EXPECT_NE(error.find(c.needle), std::string::npos) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
}

TEST(NcuCsv, KernelBaseName) {
  EXPECT_EQ(
      import::kernel_base_name(
          "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, float)"),
      "vectorized_elementwise_kernel");
  EXPECT_EQ(import::kernel_base_name("ampere_sgemm_32x32_sliced1x4_tn"), "ampere_sgemm_32x32_sliced1x4_tn");
  EXPECT_EQ(import::kernel_base_name("gemm_kernel"), "gemm_kernel");
  // The same kernel as Kineto/Strata and as ncu name it (an H100 run, tests/data/h100).
  EXPECT_EQ(
      import::kernel_base_name("void at::native::(anonymous namespace)::max_pool_forward_nchw<c10::BFloat16, "
                               "int>(int, c10::BFloat16 const*, long)"),
      "max_pool_forward_nchw");
  EXPECT_EQ(import::kernel_base_name(
                "void native::<unnamed>::max_pool_forward_nchw<c10::BFloat16, int>(T2, const T1 "
                "*, long)"),
            "max_pool_forward_nchw");
}

}  // namespace
}  // namespace strata::testing

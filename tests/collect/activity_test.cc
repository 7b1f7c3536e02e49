// The collector records each span's activity type as the tracer gave it: static sites carry it in
// their SourceLocation (the hot path stores only the pointer), the C API packs it into the begin
// event, instants are annotations, counters counters, collectors' complete spans keep theirs.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <thread>
#include <vector>

#include "../test_util.h"
#include "collect/runtime.h"
#include "collect/session.h"
#include "core/activity_type.h"
#include "strata/strata.hpp"
#include "trace/trace_loader.h"

namespace strata {
namespace {

collect::SessionConfig config(const std::string& path) {
  collect::SessionConfig c;
  c.path = path;
  c.level = STRATA_LEVEL_DEVICE;
  return c;
}

std::map<std::string, std::vector<ActivityType>> types_by_name(const std::string& path) {
  trace::Trace t;
  std::string error;
  EXPECT_TRUE(trace::load_trace(path, &t, &error)) << error;
  EXPECT_EQ(t.stats.get(stats::Stat::kLoadActivityUpgraded), 0u);  // a file of today's format: nothing to upgrade
  std::map<std::string, std::vector<ActivityType>> out;
  for (const SpanRecord& s : t.spans) out[std::string(t.name(s))].push_back(s.activity_type());
  return out;
}

void library_site() { STRATA_SPAN_AS("gemm_site", library, library_call); }

TEST(CollectActivity, EverySpanSourceRecordsItsType) {
  testing::TempDir dir;
  ASSERT_TRUE(collect::start_recording(config(dir.file("a.strata"))));
  { STRATA_SPAN("static_site", model); }
  library_site();
  // A site compiled before SourceLocation had the field: its padding reads 0.
  static constexpr detail::SourceLocation kOldSite{"old_site", "f", "file.cc", 1, STRATA_LEVEL_MODEL, 0};
  { ScopedSpan old(&kOldSite); }
  strata_span_end(strata_span_begin("plain_api", STRATA_LEVEL_MODEL));
  strata_span_end(strata_span_begin_as("aten::conv2d", 12, STRATA_LEVEL_LAYER, STRATA_ACTIVITY_CPU_OP));
  strata_span_end(strata_span_begin_as("aten::copy_", 11, STRATA_LEVEL_LAYER, STRATA_ACTIVITY_TENSOR_COPY));
  strata_span_end(strata_span_begin_as("onednn::convolution", 19, STRATA_LEVEL_LIBRARY, STRATA_ACTIVITY_LIBRARY_CALL));
  strata_span_end(strata_span_begin_as("out_of_range", 12, STRATA_LEVEL_MODEL, 300));
  strata_span_end(strata_span_begin_as("negative", 8, STRATA_LEVEL_MODEL, -1));
  // The longest name an event carries, with the activity in the byte above its length.
  const std::string long_name(collect::kMaxEventString, 'n');
  strata_span_end(strata_span_begin_as(long_name.data(), long_name.size(), STRATA_LEVEL_MODEL, STRATA_ACTIVITY_ANNOTATION));
  // Ended on another thread, and never ended (written as unfinished at stop).
  strata_span_id cross = strata_span_begin_as("cross_thread", 12, STRATA_LEVEL_LAYER, STRATA_ACTIVITY_CPU_OP);
  std::thread([cross] { strata_span_end(cross); }).join();
  strata_span_begin_as("unfinished", 10, STRATA_LEVEL_LAYER, STRATA_ACTIVITY_TENSOR_COPY);
  strata_instant("mark", STRATA_LEVEL_MODEL);
  strata_counter("loss", 0.5);
  SpanRecord r;
  r.start_ns = 10;
  r.end_ns = 20;
  r.level = static_cast<uint8_t>(Level::kDevice);
  r.kind = static_cast<uint8_t>(SpanKind::kExecution);
  r.activity = static_cast<uint8_t>(ActivityType::kMemcpyDtoH);
  collect::current_session()->emit_complete(r, "memcpy DtoH", {});
  collect::stop_recording();

  auto types = types_by_name(dir.file("a.strata"));
  const std::map<std::string, ActivityType> want = {
      {"static_site", ActivityType::kAnnotation},  {"gemm_site", ActivityType::kLibraryCall},
      {"old_site", ActivityType::kAnnotation},     {"plain_api", ActivityType::kAnnotation},
      {"aten::conv2d", ActivityType::kCpuOp},       {"aten::copy_", ActivityType::kTensorCopy},
      {"onednn::convolution", ActivityType::kLibraryCall}, {"out_of_range", ActivityType::kUnknown},
      {"negative", ActivityType::kUnknown},        {long_name, ActivityType::kAnnotation},
      {"cross_thread", ActivityType::kCpuOp},      {"unfinished", ActivityType::kTensorCopy},
      {"mark", ActivityType::kAnnotation},         {"loss", ActivityType::kCounter},
      {"memcpy DtoH", ActivityType::kMemcpyDtoH},
  };
  EXPECT_EQ(types.size(), want.size());
  for (const auto& [name, type] : want) {
    ASSERT_EQ(types[name].size(), 1u) << name.substr(0, 40);
    EXPECT_EQ(types[name][0], type) << name.substr(0, 40);
  }
}

// Many threads, each span's type given by its name: nothing mixes up types across threads or
// buffer blocks.
TEST(CollectActivity, ThreadsKeepTheirTypesApart) {
  testing::TempDir dir;
  ASSERT_TRUE(collect::start_recording(config(dir.file("t.strata"))));
  constexpr int kThreads = 8, kSpans = 20000;
  std::vector<std::thread> threads;
  for (int k = 0; k < kThreads; ++k)
    threads.emplace_back([k] {
      for (int i = 0; i < kSpans; ++i) {
        const int type = (i + k) % 3 == 0 ? STRATA_ACTIVITY_CPU_OP
                         : (i + k) % 3 == 1 ? STRATA_ACTIVITY_TENSOR_COPY
                                            : STRATA_ACTIVITY_LIBRARY_CALL;
        const std::string name = "t" + std::to_string(type);
        strata_span_id id = strata_span_begin_as(name.data(), name.size(), STRATA_LEVEL_LAYER, type);
        { STRATA_SPAN("inner", layer); }
        strata_span_end(id);
      }
    });
  for (auto& t : threads) t.join();
  collect::stop_recording();
  auto types = types_by_name(dir.file("t.strata"));
  uint64_t total = 0;
  for (const auto& [name, list] : types) {
    const ActivityType want = name == "inner" ? ActivityType::kAnnotation
                                              : static_cast<ActivityType>(std::stoi(name.substr(1)));
    for (ActivityType t : list) EXPECT_EQ(t, want) << name;
    total += list.size();
  }
  EXPECT_EQ(total, 2u * kThreads * kSpans);
}

}  // namespace
}  // namespace strata

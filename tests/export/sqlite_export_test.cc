// The SQLite export of a generated trace (several processes and threads, nested spans at four
// levels, launches and kernels, attributes and metrics) queried back against brute-force answers
// computed from the trace itself.
#include "export/sqlite_export.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <map>
#include <random>
#include <string>

#include "core/level.h"
#include "trace/span_tree.h"

namespace strata {
namespace {

trace::Trace generated_trace(size_t evaluations, uint64_t seed) {
  std::mt19937_64 rng(seed);
  trace::Trace t;
  for (int p = 0; p < 3; ++p) {
    trace::Process proc;
    proc.pid = 1000 + p;
    proc.thread_names[static_cast<uint32_t>(proc.pid)] = "main";
    t.add_process(proc);
  }
  uint64_t id = 1, correlation = 1;
  auto span = [&](uint16_t process, uint32_t tid, uint64_t parent, int64_t s, int64_t e, const std::string& name,
                  Level level, SpanKind kind) {
    SpanRecord r;
    r.span_id = id++;
    r.parent_id = parent;
    r.start_ns = s;
    r.end_ns = e;
    r.name = t.strings.intern(name);
    r.process = process;
    r.tid = tid;
    r.level = static_cast<uint8_t>(level);
    r.kind = static_cast<uint8_t>(kind);
    return r;
  };
  for (size_t ev = 0; ev < evaluations; ++ev) {
    const auto process = static_cast<uint16_t>(ev % 3);
    const uint32_t tid = 1000u + process + static_cast<uint32_t>(ev % 2);  // two threads per process
    int64_t now = static_cast<int64_t>(ev) * 1'000'000;
    const int layers = 3 + static_cast<int>(rng() % 6);
    SpanRecord model = span(process, tid, 0, now, now + 900'000, "predict", Level::kModel, SpanKind::kSpan);
    AttrRecord batch[] = {t.int_attr("batch", static_cast<int64_t>(1 + rng() % 8))};
    t.add_span(model, batch);
    for (int l = 0; l < layers; ++l) {
      const int64_t start = now + 1000 + l * 100'000, dur = 10'000 + static_cast<int64_t>(rng() % 80'000);
      // Layers link to the model by containment only (no parent id), as imported traces do.
      SpanRecord layer = span(process, tid, 0, start, start + dur, "op_" + std::to_string(rng() % 7), Level::kLayer,
                              SpanKind::kSpan);
      AttrRecord attrs[] = {t.string_attr("shapes", "[[" + std::to_string(l) + ",3]]"),
                            t.metric("flops", static_cast<double>(rng() % 1000)), t.double_attr("ratio", 0.25 * l)};
      t.add_span(layer, attrs);
      SpanRecord launch = span(process, tid, layer.span_id, start + 100, start + 900, "cudaLaunchKernel",
                               Level::kRuntimeApi, SpanKind::kLaunch);
      launch.correlation_id = correlation;
      t.add_span(launch);
      SpanRecord kernel = span(process, 0, 0, start + 2000, start + 2000 + static_cast<int64_t>(rng() % 5000),
                               "kernel_" + std::to_string(rng() % 4), Level::kDevice, SpanKind::kExecution);
      kernel.correlation_id = correlation++;
      kernel.device = 0;
      kernel.stream = 7 + static_cast<uint32_t>(rng() % 2);
      t.add_span(kernel);
    }
  }
  return t;
}

class Db {
 public:
  Db() { sqlite3_open(":memory:", &db_); }
  ~Db() { sqlite3_close(db_); }
  sqlite3* get() { return db_; }
  // Rows of a two-column query as text key -> int64 value.
  std::map<std::string, int64_t> pairs(const std::string& sql) {
    std::map<std::string, int64_t> out;
    sqlite3_stmt* stmt = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK) << sqlite3_errmsg(db_);
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      const auto* key = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
      out[key ? key : "<null>"] = sqlite3_column_int64(stmt, 1);
    }
    sqlite3_finalize(stmt);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
};

TEST(SqliteExport, AggregatesAndTreeEqualBruteForce) {
  trace::Trace t = generated_trace(3000, 7);
  Db db;
  std::string error;
  ASSERT_TRUE(exporter::write_sqlite(t, db.get(), &error)) << error;

  std::map<std::string, int64_t> by_level, time_by_name, count_by_name;
  for (const SpanRecord& s : t.spans) {
    ++by_level[level_name(s.level)];
    time_by_name[std::string(t.name(s))] += s.duration_ns();
    ++count_by_name[std::string(t.name(s))];
  }
  EXPECT_EQ(db.pairs("SELECT level, count(*) FROM spans GROUP BY level"), by_level);
  EXPECT_EQ(db.pairs("SELECT name, sum(dur_ns) FROM spans GROUP BY name"), time_by_name);
  EXPECT_EQ(db.pairs("SELECT name, count(*) FROM spans GROUP BY name"), count_by_name);

  // Parent, link and depth of every span: the span tree's.
  const trace::SpanTree& tree = t.tree();
  std::map<std::string, int64_t> links, parents;
  for (size_t i = 0; i < t.spans.size(); ++i) {
    const std::string link(trace::link_kind_name(tree.link(i)));
    ++links[link.empty() ? "<null>" : link];
    parents[std::to_string(i)] = int64_t{tree.parent(i)} * 1000 + int64_t{tree.depth(i)};
  }
  EXPECT_EQ(db.pairs("SELECT link, count(*) FROM spans GROUP BY link"), links);
  EXPECT_EQ(db.pairs("SELECT CAST(id AS TEXT), COALESCE(parent, -1) * 1000 + depth FROM spans"), parents);
  EXPECT_GT(links["containment"], 0);
  EXPECT_GT(links["correlation"], 0);

  // Attributes and metrics, by key, and every value read back.
  std::map<std::string, int64_t> attr_count, metric_sum, shapes_len;
  for (size_t i = 0; i < t.spans.size(); ++i)
    for (const AttrRecord& a : t.attributes(i)) {
      const std::string key(t.strings.get(a.key));
      if (a.type == static_cast<uint8_t>(AttrType::kMetric)) metric_sum[key] += static_cast<int64_t>(a.value.d);
      else ++attr_count[key];
      if (key == "shapes") shapes_len[key] += static_cast<int64_t>(t.strings.get(static_cast<uint32_t>(a.value.u)).size());
    }
  EXPECT_EQ(db.pairs("SELECT key, count(*) FROM attributes GROUP BY key"), attr_count);
  EXPECT_EQ(db.pairs("SELECT key, CAST(sum(value) AS INTEGER) FROM metrics GROUP BY key"), metric_sum);
  EXPECT_EQ(db.pairs("SELECT key, sum(length(value)) FROM attributes WHERE key = 'shapes' GROUP BY key"), shapes_len);

  // Tracks, processes, threads.
  EXPECT_EQ(db.pairs("SELECT 'tracks', count(*) FROM tracks")["tracks"], static_cast<int64_t>(t.tracks().size()));
  EXPECT_EQ(db.pairs("SELECT 'n', count(*) FROM processes")["n"], 3);
  EXPECT_EQ(db.pairs("SELECT 'n', count(*) FROM threads")["n"], 6);
  EXPECT_EQ(db.pairs("SELECT 'n', sum(span_count) FROM tracks")["n"], static_cast<int64_t>(t.spans.size()));
}

TEST(SqliteExport, RefusesADatabaseThatIsNotEmpty) {
  trace::Trace t = generated_trace(5, 1);
  Db db;
  std::string error;
  ASSERT_TRUE(exporter::write_sqlite(t, db.get(), &error)) << error;
  EXPECT_FALSE(exporter::write_sqlite(t, db.get(), &error));
  EXPECT_NE(error.find("already exists"), std::string::npos) << error;
}

}  // namespace
}  // namespace strata

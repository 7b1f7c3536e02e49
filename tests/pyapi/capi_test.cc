#include "pyapi/capi.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

const std::string kKineto = std::string(STRATA_SOURCE_DIR) + "/tests/data/kineto/h100_cuda_sync_small.json";
const std::string kCpuTrace =
    std::string(STRATA_SOURCE_DIR) + "/tests/data/format_1_0/resnet18_library.trace";

strata_capi_trace* open_one(const std::string& path, const char* format = nullptr) {
  const char* paths[] = {path.c_str()};
  return strata_capi_open(paths, 1, format);
}

std::vector<std::string> strings(strata_capi_strings s) {
  std::vector<std::string> out;
  for (uint64_t i = 0; i < s.count; ++i)
    out.emplace_back(s.bytes + s.offsets[i], s.offsets[i + 1] - s.offsets[i]);
  return out;
}

TEST(PyapiCapi, VersionMatchesTheHeader) { EXPECT_EQ(strata_capi_version(), STRATA_CAPI_VERSION); }

TEST(PyapiCapi, MissingFileGivesOneLineNamingIt) {
  EXPECT_EQ(open_one("/nonexistent/trace.strata"), nullptr);
  const std::string error = strata_capi_last_error();
  EXPECT_NE(error.find("/nonexistent/trace.strata"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  EXPECT_EQ(strata_capi_open(nullptr, 0, nullptr), nullptr);
}

TEST(PyapiCapi, UnknownFormatIsRefused) {
  EXPECT_EQ(open_one(kKineto, "no_such_reader"), nullptr);
  EXPECT_NE(std::string(strata_capi_last_error()), "");
}

TEST(PyapiCapi, SpanColumnsAreConsistent) {
  strata_capi_trace* t = open_one(kKineto);
  ASSERT_NE(t, nullptr) << strata_capi_last_error();
  const uint64_t n = strata_capi_span_count(t);
  ASSERT_GT(n, 0u);
  std::vector<uint64_t> id(n), parent_id(n);
  std::vector<int64_t> parent(n), start(n), end(n), duration(n), stream(n);
  std::vector<uint32_t> depth(n);
  std::vector<int32_t> name(n);
  std::vector<uint8_t> level(n);
  strata_capi_span_columns c{};
  c.id = id.data();
  c.parent = parent.data();
  c.parent_id = parent_id.data();
  c.depth = depth.data();
  c.name = name.data();
  c.level = level.data();
  c.start_ns = start.data();
  c.end_ns = end.data();
  c.duration_ns = duration.data();
  c.stream = stream.data();
  ASSERT_EQ(strata_capi_fill_spans(t, &c), 1);
  const std::vector<std::string> names = strings(strata_capi_span_names(t));
  for (uint64_t i = 0; i < n; ++i) {
    EXPECT_EQ(duration[i], end[i] - start[i]);
    ASSERT_GE(name[i], 0);
    ASSERT_LT(static_cast<size_t>(name[i]), names.size());
    if (i > 0) {
      EXPECT_LE(start[i - 1], start[i]);  // sorted by start
    }
    if (parent[i] < 0) {
      EXPECT_EQ(depth[i], 0u);
      EXPECT_EQ(parent_id[i], 0u);
    } else {
      ASSERT_LT(static_cast<uint64_t>(parent[i]), n);
      EXPECT_EQ(depth[i], depth[parent[i]] + 1);
      EXPECT_EQ(parent_id[i], id[parent[i]]);
    }
  }
  EXPECT_STRNE(strata_capi_enum_name(0, level[0]), "");
  EXPECT_STREQ(strata_capi_enum_name(3, 2), "correlation");
  EXPECT_STREQ(strata_capi_enum_name(9, 2), "");
  strata_capi_span_columns none{};  // every column skipped
  EXPECT_EQ(strata_capi_fill_spans(t, &none), 1);
  strata_capi_free(t);
}

TEST(PyapiCapi, AttributesInLongForm) {
  strata_capi_trace* t = open_one(kKineto);
  ASSERT_NE(t, nullptr) << strata_capi_last_error();
  const uint64_t n = strata_capi_attr_count(t);
  ASSERT_GT(n, 0u);
  std::vector<uint32_t> span(n);
  std::vector<int32_t> key(n), text(n);
  std::vector<uint8_t> type(n);
  std::vector<double> real(n);
  strata_capi_attr_columns c{};
  c.span = span.data();
  c.key = key.data();
  c.type = type.data();
  c.double_value = real.data();
  c.text = text.data();
  ASSERT_EQ(strata_capi_fill_attrs(t, &c), 1);
  const std::vector<std::string> table = strings(strata_capi_attr_strings(t));
  for (uint64_t i = 0; i < n; ++i) {
    ASSERT_LT(static_cast<size_t>(key[i]), table.size());
    EXPECT_LT(span[i], strata_capi_span_count(t));
    if (i > 0) {
      EXPECT_LE(span[i - 1], span[i]);
    }
    EXPECT_EQ(text[i] >= 0, type[i] == 3);
    EXPECT_EQ(!std::isnan(real[i]), type[i] == 2 || type[i] == 4) << i;
  }
  // A second fill (another thread's) gives the same codes and leaves the string table in place.
  const strata_capi_strings before = strata_capi_attr_strings(t);
  std::vector<int32_t> key_again(n);
  strata_capi_attr_columns again{};
  again.key = key_again.data();
  ASSERT_EQ(strata_capi_fill_attrs(t, &again), 1);
  EXPECT_EQ(key_again, key);
  EXPECT_EQ(strata_capi_attr_strings(t).bytes, before.bytes);
  EXPECT_EQ(strata_capi_attr_strings(t).count, before.count);
  const std::string info = strata_capi_info_json(t);
  EXPECT_EQ(info.front(), '{');
  EXPECT_NE(info.find("\"processes\":[{"), std::string::npos);
  strata_capi_free(t);
}

TEST(PyapiCapi, AnalysesRunAsTheCliRunsThem) {
  strata_capi_trace* t = open_one(kCpuTrace);
  ASSERT_NE(t, nullptr) << strata_capi_last_error();
  EXPECT_EQ(strata_capi_run_analysis(t, "no_such_analysis", nullptr, nullptr, 0), nullptr);
  EXPECT_NE(std::string(strata_capi_last_error()).find("no_such_analysis"), std::string::npos);
  const char* keys[] = {"not_a_key"};
  const char* values[] = {"1"};
  EXPECT_EQ(strata_capi_run_analysis(t, "op_stats", keys, values, 1), nullptr);
  EXPECT_NE(std::string(strata_capi_last_error()).find("not_a_key"), std::string::npos);

  const char* top_key[] = {"top"};
  const char* top_value[] = {"2"};
  strata_capi_tables* tables = strata_capi_run_analysis(t, "op_stats", top_key, top_value, 1);
  ASSERT_NE(tables, nullptr) << strata_capi_last_error();
  EXPECT_STREQ(strata_capi_missing_input(tables), "");
  ASSERT_EQ(strata_capi_table_count(tables), 1u);
  EXPECT_STREQ(strata_capi_table_name(tables, 0), "op_stats");
  EXPECT_EQ(strata_capi_table_rows(tables, 0), 2u);
  const std::vector<std::string> columns = strings(strata_capi_table_columns(tables, 0));
  ASSERT_FALSE(columns.empty());
  EXPECT_EQ(strata_capi_column_type(tables, 0, 0), 3);  // the op name
  EXPECT_EQ(strings(strata_capi_column_text(tables, 0, 0)).size(), 2u);
  EXPECT_EQ(strata_capi_column_type(tables, 5, 0), -1);  // no such table
  strata_capi_tables_free(tables);

  // A CPU trace has no GPU kernels: no table, and the CLI's line saying what is missing.
  tables = strata_capi_run_analysis(t, "gpu_kernel_summary", nullptr, nullptr, 0);
  ASSERT_NE(tables, nullptr) << strata_capi_last_error();
  EXPECT_EQ(strata_capi_table_count(tables), 0u);
  EXPECT_NE(std::string(strata_capi_missing_input(tables)).find("gpu_kernel_summary: no GPU kernels"),
            std::string::npos);
  strata_capi_tables_free(tables);
  strata_capi_free(t);
}

// Every cell of every table of `analysis` on `t`, table by table (names and columns included).
std::vector<std::string> cells_of(strata_capi_tables* tables) {
  std::vector<std::string> out;
  EXPECT_NE(tables, nullptr) << strata_capi_last_error();
  if (tables == nullptr) return out;
  out.push_back(strata_capi_missing_input(tables));
  for (uint64_t k = 0; k < strata_capi_table_count(tables); ++k) {
    out.push_back(strata_capi_table_name(tables, k));
    const std::vector<std::string> columns = strings(strata_capi_table_columns(tables, k));
    out.insert(out.end(), columns.begin(), columns.end());
    for (uint64_t c = 0; c < columns.size(); ++c) {
      const std::vector<std::string> cells = strings(strata_capi_column_text(tables, k, c));
      out.insert(out.end(), cells.begin(), cells.end());
    }
  }
  strata_capi_tables_free(tables);
  return out;
}

std::vector<std::string> all_cells(strata_capi_trace* t, const char* analysis,
                                   const char* const* keys = nullptr, const char* const* values = nullptr,
                                   size_t n = 0) {
  return cells_of(strata_capi_run_analysis(t, analysis, keys, values, n));
}

// strata.dask's trace partial: each rank opened alone and saved, then the saved files opened
// together, must give the cross-rank analyses the cells of the originals opened together.
TEST(PyapiCapi, SavedRanksOpenToTheSameTraceAsTheOriginals) {
  const std::string data = std::string(STRATA_SOURCE_DIR) + "/tests/data/kineto/";
  const std::string originals[] = {data + "multirank_rank0.json.gz", data + "multirank_rank1.json.gz"};
  char dir[] = "/tmp/strata_capi_save_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::vector<std::string> saved;
  for (const std::string& path : originals) {
    strata_capi_trace* one = open_one(path);
    ASSERT_NE(one, nullptr) << strata_capi_last_error();
    saved.push_back(std::string(dir) + "/rank" + std::to_string(saved.size()) + ".strata");
    EXPECT_EQ(strata_capi_save(one, saved.back().c_str(), 3), 1) << strata_capi_last_error();
    strata_capi_free(one);
  }
  const char* original_paths[] = {originals[0].c_str(), originals[1].c_str()};
  const char* saved_paths[] = {saved[0].c_str(), saved[1].c_str()};
  strata_capi_trace* both = strata_capi_open(original_paths, 2, nullptr);
  strata_capi_trace* reopened = strata_capi_open(saved_paths, 2, "native");
  ASSERT_NE(both, nullptr) << strata_capi_last_error();
  ASSERT_NE(reopened, nullptr) << strata_capi_last_error();
  EXPECT_EQ(strata_capi_span_count(both), strata_capi_span_count(reopened));
  for (const char* analysis : {"collective_wait", "comm_overlap", "step_time", "kernel_distribution",
                               "launch_stats", "queue_length"}) {
    const std::vector<std::string> expected = all_cells(both, analysis);
    EXPECT_GT(expected.size(), 20u) << analysis;  // tables with rows, not only a missing-input line
    EXPECT_EQ(all_cells(reopened, analysis), expected) << analysis;
  }
  strata_capi_free(both);
  strata_capi_free(reopened);
  // A path that cannot be written: 0 and one line naming it.
  strata_capi_trace* one = open_one(originals[0]);
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(strata_capi_save(one, "/nonexistent/dir/x.strata", 0), 0);
  EXPECT_NE(std::string(strata_capi_last_error()).find("/nonexistent/dir/x.strata"), std::string::npos);
  EXPECT_EQ(strata_capi_save(one, "", 0), 0);
  strata_capi_free(one);
  for (const std::string& path : saved) unlink(path.c_str());
  rmdir(dir);
}

// Each rank's partial (analysis/rank_partials.h) of every real rank, combined, gives the cells of the
// ranks opened together (with a --param too); bad partials are one error line.
std::vector<std::string> rank_partials(const std::string (&paths)[2], const char* analysis) {
  std::vector<std::string> partials;
  for (const std::string& path : paths) {
    strata_capi_trace* one = open_one(path);
    EXPECT_NE(one, nullptr) << strata_capi_last_error();
    if (one == nullptr) return partials;
    char* bytes = nullptr;
    uint64_t size = 0;
    EXPECT_EQ(strata_capi_rank_partial(one, analysis, nullptr, nullptr, 0, &bytes, &size), 1)
        << strata_capi_last_error();
    partials.emplace_back(bytes, size);
    strata_capi_buffer_free(bytes);
    EXPECT_GT(size, 0u);  // its size per span count: tests/python/test_dask.py
    strata_capi_free(one);
  }
  return partials;
}

TEST(PyapiCapi, RankPartialsCombineToTheMergedRun) {
  const std::string data = std::string(STRATA_SOURCE_DIR) + "/tests/data/kineto/";
  const std::string originals[] = {data + "multirank_rank0.json.gz", data + "multirank_rank1.json.gz"};
  const char* original_paths[] = {originals[0].c_str(), originals[1].c_str()};
  strata_capi_trace* both = strata_capi_open(original_paths, 2, nullptr);
  ASSERT_NE(both, nullptr) << strata_capi_last_error();
  const char* keys[] = {"top"};
  const char* values[] = {"2"};
  for (const char* analysis : {"launch_stats", "kernel_distribution", "collective_wait", "step_time"}) {
    const std::vector<std::string> partials = rank_partials(originals, analysis);
    ASSERT_EQ(partials.size(), 2u);
    const char* bytes[] = {partials[0].data(), partials[1].data()};
    const uint64_t sizes[] = {partials[0].size(), partials[1].size()};
    for (size_t n_params : {0, 1}) {
      if (n_params == 1 && std::string_view(analysis) == "step_time") continue;  // it takes no --param
      const std::vector<std::string> expected = all_cells(both, analysis, keys, values, n_params);
      EXPECT_GT(expected.size(), 20u);
      EXPECT_EQ(cells_of(strata_capi_combine_partials(analysis, bytes, sizes, 2, keys, values, n_params)),
                expected)
          << analysis << " " << n_params;
    }
  }
  // The same rank twice, a truncated partial, and an analysis with no partial: NULL / 0 and one line.
  for (const char* analysis : {"kernel_distribution", "collective_wait", "step_time"}) {
    const std::vector<std::string> partials = rank_partials(originals, analysis);
    const char* bytes[] = {partials[0].data(), partials[1].data()};
    const uint64_t sizes[] = {partials[0].size(), partials[1].size()};
    const char* twice[] = {bytes[0], bytes[0]};
    const uint64_t twice_sizes[] = {sizes[0], sizes[0]};
    EXPECT_EQ(strata_capi_combine_partials(analysis, twice, twice_sizes, 2, nullptr, nullptr, 0), nullptr);
    EXPECT_NE(std::string(strata_capi_last_error()).find("in two partials"), std::string::npos) << analysis;
    const uint64_t cut[] = {sizes[0] - 3};
    EXPECT_EQ(strata_capi_combine_partials(analysis, bytes, cut, 1, nullptr, nullptr, 0), nullptr);
    EXPECT_NE(std::string(strata_capi_last_error()).find("truncated"), std::string::npos) << analysis;
  }
  char* none = nullptr;
  uint64_t none_size = 0;
  EXPECT_EQ(strata_capi_rank_partial(both, "comm_overlap", nullptr, nullptr, 0, &none, &none_size), 0);
  EXPECT_NE(std::string(strata_capi_last_error()).find("no per-rank partial"), std::string::npos);
  strata_capi_free(both);
}

}  // namespace

// The JSON reader of the trace registry parses a file where it is mapped (format::MappedFile):
// whatever the file's size modulo the page size, the padding simdjson reads past the end is there
// and the trace is the one the same text gives from memory.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "../test_util.h"
#include "import/importer.h"
#include "import_test_util.h"
#include "trace/trace_reader.h"

namespace strata::import {
namespace {

void expect_same_spans(const trace::Trace& a, const trace::Trace& b) {
  ASSERT_EQ(a.spans.size(), b.spans.size());
  ASSERT_EQ(a.attrs.size(), b.attrs.size());
  for (size_t i = 0; i < a.spans.size(); ++i) {
    ASSERT_EQ(a.spans[i].start_ns, b.spans[i].start_ns) << i;
    ASSERT_EQ(a.spans[i].end_ns, b.spans[i].end_ns) << i;
    ASSERT_EQ(a.name(a.spans[i]), b.name(b.spans[i])) << i;
    ASSERT_EQ(a.spans[i].correlation_id, b.spans[i].correlation_id) << i;
  }
}

TEST(JsonReader, MappedFileImportsLikeTheInflatedTextAtEveryPageOffset) {
  register_readers();
  const std::string gz = testing::source_path("tests/data/kineto/multirank_rank0.json.gz");
  const std::string json = testing::gunzip_file(gz);
  ASSERT_FALSE(json.empty());
  trace::Trace reference;
  std::string error;
  ASSERT_TRUE(trace::open_trace(gz, &reference, &error)) << error;  // inflated into memory
  ASSERT_GT(reference.spans.size(), 1000u);
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  strata::testing::TempDir dir;
  // Trailing whitespace (valid JSON) moves the end of the file to each interesting page offset:
  // exactly at a page end, with less than the padding left in the last page, with just enough.
  for (size_t rest : {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{65}, page - 1}) {
    SCOPED_TRACE(rest);
    const size_t end_in_page = (page - rest) % page;  // the file's size modulo the page size
    const std::string text = json + std::string((end_in_page + page - json.size() % page) % page, '\n');
    ASSERT_EQ((page - text.size() % page) % page, rest);
    const std::string path = dir.file("t" + std::to_string(rest) + ".json");
    std::ofstream(path, std::ios::binary).write(text.data(), static_cast<std::streamsize>(text.size()));
    trace::Trace mapped;
    ASSERT_TRUE(trace::open_trace(path, &mapped, &error)) << error;
    expect_same_spans(reference, mapped);
  }
}

}  // namespace
}  // namespace strata::import

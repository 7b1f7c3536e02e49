// Foreign input: every case is one clear error line naming the file and what to do, never a crash.
#include <gtest/gtest.h>
#include <zlib.h>

#include "../test_util.h"
#include "format/file_format.h"
#include "import/importer.h"
#include "import_test_util.h"

namespace strata::import {
namespace {

std::string import_error(std::string_view bytes, const std::string& format = "auto") {
  trace::Trace trace;
  std::string error;
  ImportOptions options;
  options.format = format;
  EXPECT_FALSE(import_buffer(bytes, "in.json", &trace, &error, options));
  EXPECT_EQ(error.find('\n'), std::string::npos) << "one line: " << error;
  EXPECT_TRUE(trace.spans.empty());
  return error;
}

std::string gzip(std::string_view text) {
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, text.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

TEST(ForeignInput, StrataTraceIsRecognized) {
  std::string bytes(format::kFileMagic, 8);
  bytes += std::string(64, '\0');
  EXPECT_NE(import_error(bytes).find("already a Strata trace"), std::string::npos);
}

TEST(ForeignInput, NotJson) {
  std::string e = import_error("hello world");
  EXPECT_NE(e.find("in.json: offset 0: not JSON"), std::string::npos) << e;
  EXPECT_NE(import_error("").find("empty"), std::string::npos);
}

TEST(ForeignInput, JsonButNotATrace) {
  EXPECT_NE(import_error(R"({"model": "resnet", "layers": 50})").find("not a profiler trace"),
            std::string::npos);
  EXPECT_NE(import_error(R"({"traceEvents": []})").find("--format"), std::string::npos);
  EXPECT_NE(import_error(R"([1, 2, 3])").find("not a profiler trace"), std::string::npos);
}

TEST(ForeignInput, TruncatedJsonNamesTheOffset) {
  std::string full =
      strata::testing::read_file(strata::testing::source_path("tests/import/data/kineto_damaged.json"));
  std::string e = import_error(full.substr(0, full.size() / 2));
  EXPECT_NE(e.find("offset"), std::string::npos) << e;
}

TEST(ForeignInput, GzipCutShortNamesTheCompressedOffset) {
  std::string full =
      strata::testing::read_file(strata::testing::source_path("tests/import/data/ort_profile.json"));
  std::string gz = gzip(full);
  std::string e = import_error(gz.substr(0, gz.size() / 2));
  EXPECT_NE(e.find("compressed offset"), std::string::npos) << e;
  trace::Trace trace;
  std::string error;
  EXPECT_TRUE(import_buffer(gz, "in.json.gz", &trace, &error)) << error;  // the whole file imports
}

TEST(ForeignInput, UnknownFormatName) {
  EXPECT_NE(import_error("{}", "caffe").find("unknown format"), std::string::npos);
}

TEST(ForeignInput, ForcedFormatWithNoUsableEventsSaysWhy) {
  std::string e = import_error(R"({"traceEvents": [{"ph": "X", "name": "a"}, 5]})", "kineto");
  EXPECT_NE(e.find("no usable kineto events"), std::string::npos) << e;
  EXPECT_NE(e.find("import.missing_ts=1"), std::string::npos) << e;
  EXPECT_NE(e.find("import.malformed_event=1"), std::string::npos) << e;
}

TEST(ForeignInput, MissingFileAndDirectory) {
  trace::Trace trace;
  std::string error;
  EXPECT_FALSE(import_trace("/nonexistent/trace.json", &trace, &error));
  EXPECT_NE(error.find("/nonexistent/trace.json: cannot open"), std::string::npos) << error;
  EXPECT_FALSE(import_trace(STRATA_SOURCE_DIR, &trace, &error));
  EXPECT_NE(error.find("directory"), std::string::npos) << error;
}

TEST(DetectFormat, ByMarkers) {
  std::string error;
  EXPECT_EQ(detect_format(R"({"traceEvents":[{"cat":"cpu_op"}]})", &error), Format::kKineto);
  EXPECT_EQ(detect_format(R"([{"cat":"Node","args":{"op_name":"Conv"}}])", &error), Format::kOnnxRuntime);
  EXPECT_EQ(detect_format(R"({"traceEvents":[{"ph":"M","args":{"name":"/host:CPU"}}]})", &error),
            Format::kTensorFlow);
  EXPECT_EQ(parse_format("ort"), Format::kOnnxRuntime);
  EXPECT_EQ(format_name(Format::kTensorFlow), "tensorflow");
}

}  // namespace
}  // namespace strata::import

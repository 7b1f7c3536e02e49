// Names in exports and text tables: long kernel names stay distinguishable when shortened, and
// names that are not well-formed UTF-8 never reach a JSON or CSV output as such.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <zlib.h>

#include <fstream>
#include <set>
#include <sstream>

#include "analysis/analysis.h"
#include "export/profile_formats.h"
#include "export/profile_pprof.h"
#include "export/shorten.h"
#include "export/table_render.h"
#include "export/text_escape.h"
#include "profile/profile.h"
#include "trace/trace.h"

namespace strata::exporter {
namespace {

std::vector<std::string> real_kernel_names() {
  std::ifstream in(std::string(STRATA_SOURCE_DIR) + "/tests/export/data/kernel_names.txt");
  std::vector<std::string> names;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) names.push_back(line);
  return names;
}

TEST(ShortenNames, RealKernelNamesStayDistinctWithinTheWidth) {
  const std::vector<std::string> names = real_kernel_names();
  ASSERT_EQ(names.size(), 116u);
  // Cutting at 57 characters (what the text table did) makes 35 of them look like another one.
  std::set<std::string> cut;
  for (const std::string& n : names) cut.insert(n.size() > 60 ? n.substr(0, 57) + "..." : n);
  EXPECT_LT(cut.size(), names.size() - 20);
  size_t shortened = 0;
  std::vector<std::string> out = shorten_column(names, 60, &shortened);
  EXPECT_EQ(std::set<std::string>(out.begin(), out.end()).size(), names.size());
  size_t long_names = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_LE(out[i].size(), 60u) << names[i];
    if (names[i].size() <= 60) {
      EXPECT_EQ(out[i], names[i]);
    }
    long_names += names[i].size() > 60;
  }
  EXPECT_EQ(shortened, long_names);
}

TEST(ShortenNames, TheDifferingMiddleIsKept) {
  // Same 40-character head and same tail: only the middle tells them apart.
  const std::string head = "void at::native::vectorized_elementwise_kernel<4, at::native::";
  const std::string tail = ", at::detail::Array<char*, 3> >(int, at::detail::Array<char*, 3>)";
  std::vector<std::string> names = {head + "CUDAFunctor_add<float>" + tail,
                                    head + "CUDAFunctor_mul<float>" + tail,
                                    head + "CUDAFunctor_sub<float>" + tail};
  std::vector<std::string> out = shorten_column(names, 60, nullptr);
  ASSERT_EQ(std::set<std::string>(out.begin(), out.end()).size(), 3u);
  EXPECT_NE(out[0].find("add"), std::string::npos) << out[0];
  EXPECT_NE(out[1].find("mul"), std::string::npos) << out[1];
  // Names equal except far past any window still differ in the table (numbered).
  std::string a(200, 'x'), b(200, 'x');
  a[100] = 'a', b[100] = 'b';
  out = shorten_column({a, b, a}, 40, nullptr);
  EXPECT_NE(out[0], out[1]);
  EXPECT_EQ(out[0], out[2]);
  // UTF-8 is never cut inside a character.
  std::string euros;
  for (int i = 0; i < 40; ++i) euros += "\xe2\x82\xac";
  out = shorten_column({euros}, 40, nullptr);
  EXPECT_TRUE(simdjson::validate_utf8(out[0].data(), out[0].size())) << out[0];
}

TEST(ShortenNames, TextTablesShortenAndSayWhereTheFullNamesAre) {
  analysis::Table t;
  t.name = "kernels";
  t.title = "Kernels";
  t.columns = {"kernel", "count"};
  for (const std::string& n : real_kernel_names())
    t.rows.push_back({analysis::Cell::text(n), analysis::Cell::integer(1)});
  std::ostringstream text, csv;
  render_table(t, TableFormat::kText, text);
  render_table(t, TableFormat::kCsv, csv);
  std::istringstream lines(text.str());
  std::set<std::string> rows;
  size_t count = 0;
  for (std::string line; std::getline(lines, line);)
    if (line.size() > 1 && line.back() == '1') rows.insert(line), ++count;
  EXPECT_EQ(count, 116u);
  EXPECT_EQ(rows.size(), 116u);  // no two rows read the same
  EXPECT_NE(text.str().find("shortened in the middle; --format csv or json has them in full"),
            std::string::npos);
  for (const std::string& n : real_kernel_names()) {
    std::string field;
    append_csv_field(&field, n);
    EXPECT_NE(csv.str().find(field), std::string::npos) << n;  // full names in CSV
  }
}

TEST(Utf8, IllFormedSequencesBecomeReplacementCharacters) {
  struct Case {
    std::string in, json;
  };
  const Case cases[] = {
      {"bad\xc0\x80", "\"bad\\ufffd\\ufffd\""},                  // overlong NUL
      {"\xe0\x80\xafx", "\"\\ufffd\\ufffd\\ufffdx\""},           // overlong '/'
      {"\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""},             // UTF-16 surrogate D800
      {"\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""},  // above U+10FFFF
      {"\xf8\x88\x80\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\""},
      {"cut\xe2\x82", "\"cut\\ufffd\\ufffd\""},  // truncated euro sign
      {"\x80lone", "\"\\ufffdlone\""},
      {"ok \xe2\x82\xac \xf0\x9f\x98\x80 \xc3\xa9 \xed\x9f\xbf \xf4\x8f\xbf\xbf",
       "\"ok \xe2\x82\xac \xf0\x9f\x98\x80 \xc3\xa9 \xed\x9f\xbf \xf4\x8f\xbf\xbf\""},  // well formed: kept
  };
  for (const Case& c : cases) {
    std::string json;
    append_json_string(&json, c.in);
    EXPECT_EQ(json, c.json);
    EXPECT_TRUE(simdjson::validate_utf8(json.data(), json.size())) << json;
    std::string csv;
    append_csv_field(&csv, c.in);
    EXPECT_TRUE(simdjson::validate_utf8(csv.data(), csv.size())) << csv;
  }
}

// A Python frame whose name is not UTF-8 (read from a process while its code object was freed, as
// happened in CI): every profile format writes valid text, the stray byte shown as U+FFFD.
TEST(Utf8, ProfileFormatsRepairFrameNames) {
  trace::Trace trace;
  trace::SampleFrame frame;
  frame.kind = format::SampleFrameKind::kPython;
  frame.function = trace.strings.intern("bad\xF6name");
  frame.file = trace.strings.intern("/src/\xC0\x80x.py");
  frame.line = 3;
  trace.samples.frames.push_back(frame);
  const uint32_t leaf = static_cast<uint32_t>(trace.samples.frames.size() - 1);
  const uint32_t stack = trace.samples.add_stack(std::span<const uint32_t>(&leaf, 1));
  trace.samples.counts.push_back({0, 7, stack, 0, 0, 0, 5});
  profile::ProfileOptions options;
  profile::FrameNamer namer(trace, nullptr);
  const std::string repaired = "bad\xEF\xBF\xBDname";

  const std::string collapsed = profile::format_collapsed(trace, options, namer);
  EXPECT_TRUE(simdjson::validate_utf8(collapsed.data(), collapsed.size())) << collapsed;
  EXPECT_NE(collapsed.find(repaired), std::string::npos) << collapsed;
  EXPECT_NE(collapsed.find(" 5\n"), std::string::npos) << collapsed;

  const profile::Profile built = profile::build_profile(trace, options, namer);
  for (const std::string& text : {format_profile_csv(built, options), format_profile_json(built, options),
                                  format_profile_speedscope(trace, options, namer)})
    EXPECT_TRUE(simdjson::validate_utf8(text.data(), text.size())) << text;

  std::string error;
  const std::string gz = format_profile_pprof(trace, options, namer, &error);
  ASSERT_FALSE(gz.empty()) << error;
  z_stream z{};
  ASSERT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
  std::string proto(1 << 20, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = static_cast<uInt>(gz.size());
  z.next_out = reinterpret_cast<Bytef*>(proto.data());
  z.avail_out = static_cast<uInt>(proto.size());
  ASSERT_EQ(inflate(&z, Z_FINISH), Z_STREAM_END);
  proto.resize(z.total_out);
  inflateEnd(&z);
  EXPECT_NE(proto.find(repaired), std::string::npos);  // the string table holds the repaired name
  EXPECT_EQ(proto.find("bad\xF6"), std::string::npos);
  EXPECT_EQ(proto.find("\xC0\x80"), std::string::npos);
}

}  // namespace
}  // namespace strata::exporter

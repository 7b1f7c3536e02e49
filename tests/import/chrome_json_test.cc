#include "import/chrome_json.h"

#include <gtest/gtest.h>

namespace strata::import {
namespace {

int64_t ns(std::string_view text) {
  int64_t value = -12345;
  EXPECT_TRUE(parse_us_to_ns(text, &value)) << text;
  return value;
}

TEST(ParseMicroseconds, ExactNanosecondsFromDecimalText) {
  EXPECT_EQ(ns("1712195495505543.2"), 1712195495505543200);  // a double would be off by 50 ns here
  EXPECT_EQ(ns("63.813"), 63813);
  EXPECT_EQ(ns("4203669604595.407"), 4203669604595407);
  EXPECT_EQ(ns("12"), 12000);
  EXPECT_EQ(ns("0"), 0);
  EXPECT_EQ(ns("-2.5"), -2500);
  EXPECT_EQ(ns("1e3"), 1000000);
  EXPECT_EQ(ns("1.5E-3"), 2);  // 1.5 ns rounds half up
  EXPECT_EQ(ns("0.0004"), 0);
  EXPECT_EQ(ns("0.0005"), 1);
  EXPECT_EQ(ns("1.23456789"), 1235);
}

TEST(ParseMicroseconds, RejectsNonNumbers) {
  int64_t v = 0;
  for (std::string_view bad : {"", "-", "abc", "1.2.3", "12us", "1e", "9e30", "99999999999999999999"})
    EXPECT_FALSE(parse_us_to_ns(bad, &v)) << bad;
}

TEST(ChromeJson, ReadsEventsArgsAndMetadata) {
  std::string json = R"({"schemaVersion": 1, "traceEvents": [
      {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": "main", "ts": 10.5, "dur": 2,
       "args": {"Input Dims": [[2, 3], [3, 4]], "External id": 9, "ratio": 0.5, "flag": true, "none": null}},
      17,
      {"ph": "i", "name": "mark", "ts": "33.25", "s": "g"}
    ], "deviceProperties": [{"id": 0}]})";
  std::vector<ChromeEvent> events;
  std::vector<std::vector<ChromeArg>> args;
  ChromeDocument doc;
  std::string error;
  ASSERT_TRUE(parse_chrome_trace(
      json, "t.json", &doc,
      [&](const ChromeEvent& ev) {
        events.push_back(ev);
        args.push_back(ev.args);
      },
      &error))
      << error;
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(doc.events, 3u);
  EXPECT_FALSE(doc.bare_array);
  EXPECT_EQ(events[0].ts_ns, 10500);
  EXPECT_EQ(events[0].dur_ns, 2000);
  EXPECT_EQ(events[0].tid.kind, JsonScalar::kString);
  ASSERT_EQ(args[0].size(), 5u);
  EXPECT_EQ(args[0][0].value.kind, JsonScalar::kRaw);
  EXPECT_EQ(args[0][1].value.kind, JsonScalar::kInt);
  EXPECT_EQ(args[0][1].value.i, 9);
  EXPECT_EQ(args[0][2].value.kind, JsonScalar::kDouble);
  EXPECT_EQ(args[0][3].value.kind, JsonScalar::kBool);
  EXPECT_FALSE(events[1].is_object);
  EXPECT_EQ(events[2].ts_ns, 33250);  // string timestamps accepted
  ASSERT_EQ(doc.metadata.size(), 2u);
  EXPECT_EQ(doc.metadata[0].first, "schemaVersion");
  EXPECT_EQ(doc.metadata[1].first, "deviceProperties");
}

TEST(ChromeJson, SyntaxErrorNamesTheOffset) {
  std::string json = R"({"traceEvents": [{"ph": "X", "ts": 1, "dur": 2}, {"ph": "X", "ts": )";
  ChromeDocument doc;
  std::string error;
  size_t delivered = 0;
  EXPECT_FALSE(parse_chrome_trace(
      json, "cut.json", &doc, [&](const ChromeEvent&) { ++delivered; }, &error));
  EXPECT_NE(error.find("cut.json: offset "), std::string::npos) << error;
  EXPECT_NE(error.find("not valid JSON"), std::string::npos) << error;
}

TEST(ChromeJson, ObjectWithoutEventsIsNotATrace) {
  ChromeDocument doc;
  std::string error;
  EXPECT_FALSE(parse_chrome_trace(R"({"name": "x"})", "o.json", &doc, [](const ChromeEvent&) {}, &error));
  EXPECT_NE(error.find("traceEvents"), std::string::npos) << error;
  EXPECT_FALSE(
      parse_chrome_trace(R"({"traceEvents": 3})", "o.json", &doc, [](const ChromeEvent&) {}, &error));
  EXPECT_NE(error.find("not an array"), std::string::npos) << error;
}

// as_int(): integers as themselves, strings holding only an integer, nothing else (the kInt case is
// inline, the text case out of line).
TEST(ChromeJson, ScalarAsInt) {
  auto scalar = [](JsonScalar::Kind kind, int64_t i, std::string_view text) {
    JsonScalar s;
    s.kind = kind;
    s.i = i;
    s.text = text;
    return s;
  };
  EXPECT_EQ(scalar(JsonScalar::kInt, -7, "").as_int(), -7);
  EXPECT_EQ(scalar(JsonScalar::kInt, INT64_MIN, "12").as_int(), INT64_MIN);
  EXPECT_EQ(scalar(JsonScalar::kString, 0, "42").as_int(), 42);
  EXPECT_EQ(scalar(JsonScalar::kString, 0, "-9223372036854775808").as_int(), INT64_MIN);
  EXPECT_EQ(scalar(JsonScalar::kString, 5, "").as_int(), std::nullopt);
  EXPECT_EQ(scalar(JsonScalar::kString, 5, "4x").as_int(), std::nullopt);
  EXPECT_EQ(scalar(JsonScalar::kString, 5, " 4").as_int(), std::nullopt);
  EXPECT_EQ(scalar(JsonScalar::kString, 5, "9223372036854775808").as_int(), std::nullopt);
  EXPECT_EQ(scalar(JsonScalar::kDouble, 5, "5").as_int(), std::nullopt);
  EXPECT_EQ(scalar(JsonScalar::kRaw, 5, "5").as_int(), std::nullopt);
  EXPECT_EQ(scalar(JsonScalar::kNull, 5, "5").as_int(), std::nullopt);
}

}  // namespace
}  // namespace strata::import

// The Kineto event scanner (src/import/chrome_event_scan.h) against the generic On Demand path as the
// reference: generated events with keys in random orders, missing, repeated and unknown keys, values
// of every JSON type (escapes, numbers of every form, nesting), random whitespace and random damage,
// the windowed parse and the real V100 trace give the same events (every field), the same document
// with the scanner on and off (on damaged input: the same success on valid JSON, one error line, and
// no event the generic path would not give); and the scanner does read the common shape.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../test_util.h"
#include "import/chrome_json.h"
#include "import_test_util.h"

namespace strata::import {
namespace {

std::string describe(const JsonScalar& s) {
  char d[64];
  std::snprintf(d, sizeof(d), "%a", s.d);
  return std::to_string(s.kind) + "/" + std::to_string(s.i) + "/" + d + "/" + std::string(s.text);
}

std::string describe(const ChromeEvent& ev) {
  std::string out =
      std::to_string(ev.index) + "@" + std::to_string(ev.offset) + (ev.is_object ? " obj" : " not");
  for (std::string_view f : {ev.ph, ev.cat, ev.name, ev.bp, ev.scope}) out += " |" + std::string(f);
  out += " pid=" + describe(ev.pid) + " tid=" + describe(ev.tid) + " id=" + describe(ev.id);
  out += " ts=" + (ev.ts_ns ? std::to_string(*ev.ts_ns) : "-") + (ev.ts_malformed ? "!" : "");
  out += " dur=" + (ev.dur_ns ? std::to_string(*ev.dur_ns) : "-") + (ev.dur_malformed ? "!" : "");
  for (const ChromeArg& a : ev.args) out += " [" + std::string(a.key) + "=" + describe(a.value) + "]";
  return out;
}

struct Result {
  bool ok = false;
  std::string error;
  ChromeDocument doc;
  std::vector<std::string> events;
};

// window 0: the whole parse; else the windowed parse with that window.
Result parse(const std::string& json, bool scanner, size_t window = 0) {
  set_chrome_event_scanner(scanner);
  Result r;
  auto on_event = [&](const ChromeEvent& ev) { r.events.push_back(describe(ev)); };
  if (window == 0) {
    r.ok = parse_chrome_trace(json, "t.json", &r.doc, on_event, &r.error);
  } else {
    bool windowed = false;
    r.ok = parse_chrome_trace_in_windows(json, "t.json", &r.doc, on_event, &r.error, window, &windowed);
  }
  set_chrome_event_scanner(true);
  return r;
}

void expect_same(const Result& generic, const Result& scanned, const std::string& json) {
  ASSERT_EQ(generic.ok, scanned.ok) << generic.error << "\n" << scanned.error << "\n" << json.substr(0, 2000);
  EXPECT_EQ(generic.error, scanned.error);
  ASSERT_EQ(generic.events.size(), scanned.events.size()) << json.substr(0, 2000);
  for (size_t i = 0; i < generic.events.size(); ++i)
    ASSERT_EQ(generic.events[i], scanned.events[i]) << "event " << i << "\n" << json.substr(0, 2000);
  EXPECT_EQ(generic.doc.events, scanned.doc.events);
  EXPECT_EQ(generic.doc.metadata, scanned.doc.metadata);
  EXPECT_EQ(generic.doc.devices_problem, scanned.doc.devices_problem);
  EXPECT_EQ(generic.doc.events_scanned, 0u);  // the reference did not use the scanner
}

const char* const kStrings[] = {
    "\"X\"",
    "\"cpu_op\"",
    "\"\"",
    "\"aten::mm\"",
    "\"a\\\"b\"",
    "\"\\u00e9t\\u00e9\"",
    "\"tab\\there\"",
    "\"}, {\"",
    "\"sp ace: [1]\"",
    "\"void at::native::vectorized_elementwise_kernel<4, at::native::add>(int)\"",
    "\"77.25\"",
    "\"1712195495505543.2\"",
    "\"-12\"",
    "\"f\"",
    "\"caf\xC3\xA9 \xE2\x86\x92\""};  // raw UTF-8: the generic path (stage 1 validates it)
const char* const kNumbers[] = {"0",
                                "-0",
                                "12",
                                "-3",
                                "1712195495505543.2",
                                "1e3",
                                "2.5E-2",
                                "-1.5e+2",
                                "3.0",
                                "0.000001",
                                "123456789012345678",
                                "1e400",
                                "1e-400",
                                "-0.5",
                                "1E2",
                                "99999999999999999999",
                                "9223372036854775807",
                                "9223372036854775808",
                                "-9223372036854775809",
                                "1712195495505543"};
const char* const kOthers[] = {"true",
                               "false",
                               "null",
                               "[1, 2]",
                               "[]",
                               "{}",
                               "{\"a\": [true, null, \"s\"]}",
                               "[[1,2],[3]]",
                               "[4, 106, 1]",
                               "{\"k\\\"\": 1}",
                               "[\"a\\nb\"]",
                               "[{}, [[]], -1.5e3]"};
const char* const kKeys[] = {"ph", "cat", "name", "pid",   "tid", "ts",  "dur",  "id",
                             "bp", "s",   "args", "other", "Ph",  "idx", "argz", "p\\u0068"};
const char* const kSpace[] = {"", " ", "\n  ", "\t", " \r\n"};

std::string random_value(std::mt19937& rng) {
  switch (rng() % 3) {
    case 0:
      return kStrings[rng() % std::size(kStrings)];
    case 1:
      return kNumbers[rng() % std::size(kNumbers)];
    default:
      return kOthers[rng() % std::size(kOthers)];
  }
}

std::string random_args(std::mt19937& rng) {
  if (rng() % 8 == 0) return random_value(rng);  // args that are not an object
  const char* const arg_keys[] = {"External id", "Input Dims", "grid",  "correlation",
                                  "k\\\"ey",     "",           "stream"};
  std::string out = "{";
  for (int n = static_cast<int>(rng() % 5), i = 0; i < n; ++i) {
    if (i) out += std::string(",") + kSpace[rng() % 5];
    out += std::string("\"") + arg_keys[rng() % std::size(arg_keys)] + "\":" + kSpace[rng() % 5] +
           random_value(rng);
  }
  return out + kSpace[rng() % 5] + "}";
}

std::string random_event(std::mt19937& rng, bool plain) {
  // plain: the common shape only (what the scanner must read itself).
  std::vector<std::string> fields;
  for (const char* key : {"ph", "cat", "name", "pid", "tid", "ts", "dur", "id", "args"}) {
    if (rng() % 5 == 0) continue;  // missing
    std::string v;
    const std::string k = key;
    if (plain) {
      if (k == "ph" || k == "cat" || k == "name")
        v = "\"" + std::string(k == "ph" ? "X" : "aten::add") + "\"";
      else if (k == "args")
        v = "{\"External id\": 12, \"Input Dims\": [[1, 2], []], \"name\": \"x\", \"f\": 1.5}";
      else
        v = kNumbers[rng() % 10];
    } else {
      v = k == "args" ? random_args(rng) : random_value(rng);
    }
    fields.push_back("\"" + k + "\"" + kSpace[rng() % 5] + ":" + kSpace[rng() % 5] + v);
  }
  if (!plain) {
    for (int extra = static_cast<int>(rng() % 3); extra > 0; --extra)  // unknown and repeated keys
      fields.push_back(std::string("\"") + kKeys[rng() % std::size(kKeys)] +
                       "\": " + (rng() % 2 ? random_args(rng) : random_value(rng)));
  }
  std::shuffle(fields.begin(), fields.end(), rng);
  std::string out = "{" + std::string(kSpace[rng() % 5]);
  for (size_t i = 0; i < fields.size(); ++i)
    out += (i ? std::string(",") + kSpace[rng() % 5] : "") + fields[i];
  return out + kSpace[rng() % 5] + "}";
}

std::string random_trace(std::mt19937& rng, int events, bool plain) {
  std::string json = "{\"schemaVersion\": 1, \"traceEvents\": [";
  for (int i = 0; i < events; ++i) {
    if (i) json += std::string(",") + kSpace[rng() % 5];
    json += (!plain && rng() % 40 == 0) ? random_value(rng) : random_event(rng, plain);  // a few non-objects
  }
  return json + "], \"traceName\": \"t\"}";
}

TEST(ChromeEventScan, GeneratedEventsOfEveryShapeMatchTheGenericPath) {
  std::mt19937 rng(5);
  uint64_t scanned = 0, events = 0;
  // Small documents: the scanner reads each one's events up to the first it refuses (the generic
  // path reads the rest), so every shape reaches the scanner in some document.
  for (int round = 0; round < 6000; ++round) {
    const std::string json = random_trace(rng, 1 + static_cast<int>(rng() % 4), false);
    const Result generic = parse(json, false);
    const Result scanner = parse(json, true);
    ASSERT_TRUE(generic.ok) << generic.error;
    expect_same(generic, scanner, json);
    scanned += scanner.doc.events_scanned;
    events += scanner.doc.events;
  }
  // Both paths were exercised: most generated events hold an escape somewhere, many do not.
  EXPECT_GT(scanned, events / 20);
  EXPECT_LT(scanned, events);
}

TEST(ChromeEventScan, ReadsTheCommonShapeItselfAndCountsFallbacks) {
  std::mt19937 rng(9);
  const std::string json = random_trace(rng, 2000, true);
  const Result generic = parse(json, false);
  const Result scanner = parse(json, true);
  ASSERT_TRUE(generic.ok) << generic.error;
  expect_same(generic, scanner, json);
  EXPECT_EQ(scanner.doc.events_scanned, 2000u);
  // One escape, one non-object, one array nested past the scanner's depth: those three fall back.
  const std::string deep = std::string(20, '[') + std::string(20, ']');
  const std::string mixed =
      R"({"traceEvents": [{"ph": "X", "name": "plain", "ts": 2.5, "dur": 1}, {"ph": "X", "name": "a\nb", "ts": 1}, 17, {"ph": "X", "args": {"d": )" +
      deep + R"(}}, {"ph": "X", "name": "plain", "ts": 2.5, "dur": 1}]})";
  const Result g2 = parse(mixed, false);
  const Result s2 = parse(mixed, true);
  ASSERT_TRUE(g2.ok) << g2.error;
  expect_same(g2, s2, mixed);
  EXPECT_EQ(s2.doc.events, 5u);
  // A raw control byte in a string: simdjson's stage 1 rejects it; the scanner leaves it to the
  // generic path, which fails with its line.
  const std::string control =
      R"({"traceEvents": [{"ph": "X", "name": "ok", "ts": 1}, {"ph": "X", "name": "a)" +
      std::string(1, '\x01') + R"(b", "ts": 2}]})";
  const Result g4 = parse(control, false);
  const Result s4 = parse(control, true);
  EXPECT_FALSE(g4.ok);
  ASSERT_FALSE(s4.ok);
  EXPECT_NE(s4.error.find("t.json: offset "), std::string::npos) << s4.error;
  EXPECT_NE(s4.error.find("unescaped characters"), std::string::npos) << s4.error;
  EXPECT_EQ(s2.doc.events_scanned, 1u);  // the rest is one generic window
  // After a refused event the generic path reads one window of at most 64 KiB, then the scanner
  // takes over again: a long plain trace with an escape in its second event.
  std::string long_trace = random_trace(rng, 6000, true);
  const size_t second = long_trace.find("}, {") + 3;
  long_trace.insert(second + 1, R"("name": "e\u00e9", )");
  const Result g3 = parse(long_trace, false);
  const Result s3 = parse(long_trace, true);
  ASSERT_TRUE(g3.ok) << g3.error;
  expect_same(g3, s3, long_trace);
  EXPECT_EQ(s3.doc.events, 6000u);
  EXPECT_GT(s3.doc.events_scanned, 4000u) << long_trace.size();
  EXPECT_LT(s3.doc.events_scanned, 6000u);
}

TEST(ChromeEventScan, WindowedParseMatchesTheGenericWholeParse) {
  std::mt19937 rng(13);
  const std::string json = random_trace(rng, 3000, false);
  const Result generic = parse(json, false);
  ASSERT_TRUE(generic.ok) << generic.error;
  for (size_t window : {size_t{1}, size_t{300}, size_t{4096}, size_t{1} << 20}) {
    const Result scanner = parse(json, true, window);
    expect_same(generic, scanner, json);
  }
}

// Bytes replaced, inserted or removed: the same success or the same error line, the same events.
TEST(ChromeEventScan, RandomDamageGivesTheSameEventsAndErrors) {
  std::mt19937 rng(17);
  const std::string base = random_trace(rng, 40, false);
  const char kBytes[] = "{}[],:\" \\x1e-.0tn5";
  int failures = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string json = base;
    for (int k = 1 + static_cast<int>(rng() % 3); k > 0; --k) {
      const size_t at = rng() % json.size();
      const char c = kBytes[rng() % (sizeof(kBytes) - 1)];
      switch (rng() % 3) {
        case 0:
          json[at] = c;
          break;
        case 1:
          json.insert(json.begin() + static_cast<ptrdiff_t>(at), c);
          break;
        default:
          json.erase(at, 1);
      }
    }
    const Result generic = parse(json, false);
    const Result scanner = parse(json, true);
    // As for any windowed parse (JsonIngest.WindowedParseAgreesUnderRandomDamage): valid JSON gives
    // the same result; the generic whole parse may accept damage that On Demand steps over and the
    // windows reject, never the reverse; a failure is one line naming the file and an offset.
    simdjson::dom::parser validator;
    if (validator.parse(json).error() == simdjson::SUCCESS) {
      ASSERT_EQ(generic.ok, scanner.ok) << generic.error << "\n" << scanner.error << "\n" << json;
    }
    if (scanner.ok) {
      ASSERT_TRUE(generic.ok) << generic.error << "\n" << json;
      expect_same(generic, scanner, json);
      if (::testing::Test::HasFatalFailure()) return;
    } else {
      ASSERT_EQ(scanner.error.rfind("t.json: ", 0), 0u) << scanner.error;
      ASSERT_EQ(scanner.error.find('\n'), std::string::npos) << scanner.error;
    }
    failures += scanner.ok ? 0 : 1;
  }
  EXPECT_GT(failures, 100);  // the damage did reach the error paths
}

// A ts or dur token of random shape: sign, 0-20 integer digits (leading zeros too), a fraction of
// 0-5 digits or none, an exponent or none; or one near the time limit (2^62 - 1 ns is
// 4611686018427387.903 us, 16 integer digits: the last the plain time path reads itself).
std::string random_time_token(std::mt19937& rng) {
  const char* const kNearLimit[] = {"4611686018427387.903",
                                    "4611686018427387.904",
                                    "4611686018427387.9",
                                    "-4611686018427387.903",
                                    "4611686018427388",
                                    "9999999999999999.999",
                                    "9999999999999999.9999",
                                    "99999999999999999",
                                    "0.0005",
                                    "-0"};
  if (rng() % 8 == 0) return kNearLimit[rng() % std::size(kNearLimit)];
  std::string t = rng() % 4 == 0 ? "-" : rng() % 16 == 0 ? "+" : "";
  for (int n = static_cast<int>(rng() % 21), i = 0; i < n; ++i) t += static_cast<char>('0' + rng() % 10);
  if (rng() % 3 != 0) {
    t += '.';
    for (int n = static_cast<int>(rng() % 6), i = 0; i < n; ++i) t += static_cast<char>('0' + rng() % 10);
  }
  if (rng() % 6 == 0)
    t += std::string(rng() % 2 ? "e" : "E") + (rng() % 2 ? "-" : "") + std::to_string(rng() % 30);
  return t;
}

// The plain time path (digits, at most 16 before the point and 3 after) against the generic path on
// every token shape around its limits: on valid JSON the same events; what the scanner accepts, the
// generic path accepts with the same events; anything else fails with one line.
TEST(ChromeEventScan, TimeTokensOfEveryShapeMatchTheGenericPath) {
  std::mt19937 rng(23);
  int compared = 0;
  for (int round = 0; round < 6000; ++round) {
    std::string json = "{\"traceEvents\": [";
    for (int i = 0; i < 3; ++i) {
      if (i) json += rng() % 2 ? ", " : ",";
      json += "{\"ph\": \"X\", \"ts\": " + random_time_token(rng) + (rng() % 2 ? " " : "") +
              ", \"pid\": 1, \"dur\":" + random_time_token(rng) + (rng() % 2 ? "}" : " }");
    }
    json += "]}";
    const Result generic = parse(json, false);
    const Result scanner = parse(json, true);
    simdjson::dom::parser validator;
    if (validator.parse(json).error() == simdjson::SUCCESS) {
      ASSERT_EQ(generic.ok, scanner.ok) << generic.error << "\n" << scanner.error << "\n" << json;
    }
    if (scanner.ok) {
      ASSERT_TRUE(generic.ok) << generic.error << "\n" << json;
      expect_same(generic, scanner, json);
      if (::testing::Test::HasFatalFailure()) return;
      ++compared;
    } else {
      ASSERT_EQ(scanner.error.rfind("t.json: ", 0), 0u) << scanner.error;
    }
  }
  EXPECT_GT(compared, 300);
}

// Every way of reading `json`: the generic path (whole parse; windowed, small windows too) and the
// scanner (in place; with small windows behind it).
std::vector<Result> every_path(const std::string& json) {
  std::vector<Result> all;
  for (bool scanner : {false, true})
    for (size_t window : {size_t{0}, size_t{1}, size_t{64}, size_t{4096}})
      all.push_back(parse(json, scanner, window));
  return all;
}

// The offset an error line names ("t.json: offset N: ..."), or npos.
size_t error_offset(const std::string& error) {
  const std::string head = "t.json: offset ";
  if (error.rfind(head, 0) != 0) return std::string::npos;
  return std::stoul(error.substr(head.size()));
}

// Every path rejects `json` with the generic whole parse's line, which names the file and the
// offset `expected` (the stray comma, or the bracket or value standing where a value or key should).
void expect_rejected_at(const std::string& json, size_t expected) {
  SCOPED_TRACE(json);
  const std::vector<Result> all = every_path(json);
  for (const Result& r : all) {
    ASSERT_FALSE(r.ok) << "accepted, " << r.events.size() << " events";
    EXPECT_EQ(r.error, all[0].error);  // the generic whole parse's line, word for word
    EXPECT_EQ(r.error.find('\n'), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("not valid JSON"), std::string::npos) << r.error;
    EXPECT_EQ(error_offset(r.error), expected) << r.error;
  }
}

const char* const kPlain[] = {
    R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 5, "args": {"External id": 1}})",
    R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 12.5, "dur": 2})",
    R"({"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 13, "args": {"Bytes": 64}})"};
const char* const kGaps[] = {"", " ", "\n  ", "\t\r\n    "};

// JSON has no trailing commas and no real trace has one (the Kineto traces of tests/data and
// ../shared/traces and a PyTorch 1.13 legacy export parse with Python's strict json): a comma before the
// traceEvents array's "]", before an event's "}" or before its args' "}" is an error on both paths,
// with any whitespace between the comma and the bracket, whether the scanner read the events before
// it or the generic path did (an escape makes the scanner refuse one). The scanner once took ", ]"
// for the array's end (fuzz/corpus/fuzz_import_kineto/trailing_comma_events.json).
TEST(ChromeEventScan, TrailingCommasAreRejectedOnBothPathsAtTheBracket) {
  for (const char* gap : kGaps) {
    for (const char* first : {kPlain[0], R"({"ph": "X", "name": "a\u00e9", "ts": 1})"}) {
      const std::string events = std::string(first) + ", " + kPlain[1] + ",\n" + kPlain[2];
      // The array's end, with the document closed right after it or more fields after it.
      const std::string head = "{\"schemaVersion\": 1, \"traceEvents\": [";
      for (const char* tail : {"]}", "], \"traceName\": \"t\"}"}) {
        const std::string json = head + events + "," + gap + tail;
        expect_rejected_at(json, head.size() + events.size() + 1 + std::strlen(gap));
      }
      // An event's end and its args' end (in the last event; in the first).
      const std::string top = "{\"traceEvents\": [";
      for (size_t at : {events.rfind('}'), events.rfind("}}"), events.find("}}"), events.find('}')}) {
        std::string damaged = events;
        damaged.insert(at, std::string(",") + gap);
        expect_rejected_at(top + damaged + "]}", top.size() + at + 1 + std::strlen(gap));
      }
    }
  }
  // The input the fuzzer found, as kept in its corpus.
  const std::string kept =
      testing::read_file(testing::source_path("fuzz/corpus/fuzz_import_kineto/trailing_comma_events.json"));
  ASSERT_FALSE(kept.empty());
  expect_rejected_at(kept, kept.rfind(']'));
}

// The trailing comma's siblings: a leading comma, a doubled comma, a missing comma between events, a
// comma before an event's first key, text after the document: rejected on both paths at the same
// offset. Repeated keys and a
// second traceEvents array are valid JSON: both paths read them the same way (the last ph/ts wins,
// args and events accumulate).
TEST(ChromeEventScan, StrayAndMissingCommasAndRepeatedKeysAgree) {
  const std::string a = kPlain[0], b = kPlain[1], c = kPlain[2];
  for (const char* gap : kGaps) {
    const std::string g = gap;
    std::string json = "{\"traceEvents\": [" + g + "," + g + a + ", " + b + "]}";
    expect_rejected_at(json, json.find(','));  // [,{
    json = "{\"traceEvents\": [" + a + "," + g + "," + g + b + ", " + c + "]}";
    expect_rejected_at(json, json.find(',', json.find(a) + a.size() + 1));  // },,{
    json = "{\"traceEvents\": [" + a + ", " + b + g + (g.empty() ? " " : "") + c + "]}";
    expect_rejected_at(json, json.find(c));  // }{ with no comma
    json = "{\"traceEvents\": [" + a + ", {" + g + "," + b.substr(1) + "]}";
    expect_rejected_at(json, json.find(',', json.find(a) + a.size() + 1));  // {,"ph"
  }
  // A trailing comma inside a value an importer does not read field by field (an unknown field, an
  // array or object arg): the generic path steps over such values without checking their commas
  // (On Demand validates only what it reads), so the verdict is whatever that path gives; the
  // scanner refuses these values and leaves them to it, so both paths give the same verdict: accepted,
  // the arg kept as its raw text (docs/security.md says so).
  for (const char* value : {R"("other": [1, 2,])", R"("args": {"dims": [[1, 2],]})",
                            R"("args": {"o": {"a": 1,}})", R"("other": {"a": [],})"}) {
    const std::string json = R"({"traceEvents": [)" + a + R"(, {"ph": "X", "ts": 1, )" + value + "}]}";
    SCOPED_TRACE(json);
    const std::vector<Result> all = every_path(json);
    EXPECT_TRUE(all[0].ok) << all[0].error;
    for (const Result& r : all) {
      ASSERT_EQ(r.ok, all[0].ok) << r.error;
      EXPECT_EQ(error_offset(r.error), error_offset(all[0].error)) << r.error;
      if (r.ok) expect_same(all[0], r, json);
    }
  }
  // The same around the array, in the top-level object (the scanner's path reads the fields before
  // the array as a document of their own and those after it with the last window) and in a bare
  // array of events: the same verdict and line. (A comma after the document's "}" once gave offset
  // 0 on the generic path and a spot inside the last event on the scanner's, read in the last
  // window's made-up head.)
  for (const std::string& json :
       {"{\"a\": 1,, \"traceEvents\": [" + a + "]}", "{, \"traceEvents\": [" + a + "]}",
        "{\"traceEvents\": [" + a + "], }", "{\"traceEvents\": [" + a + "],, \"x\": 1}",
        "{\"traceEvents\": [" + a + "] \"x\": 1}", "{\"traceEvents\": [" + a + "]},",
        "{\"traceEvents\": [" + a + "], \"deviceProperties\": [{\"id\": 0,}]}",
        "{\"traceEvents\": [" + a + "], \"x\": [1,]}", "{\"x\": {\"y\": 1,}, \"traceEvents\": [" + a + "]}",
        "{\"traceEvents\": [" + a + "]} x", "{\"traceEvents\": [" + a + "]}]",
        "{\"traceEvents\": [" + a + "]}}", "{\"traceEvents\": [" + a + "]} {\"traceEvents\": []}",
        "\xEF\xBB\xBF{\"traceEvents\": [" + a + ",]}", "[" + a + ",]", "[" + a + ", " + b + "\n,\n]",
        "[," + a + "]"}) {
    SCOPED_TRACE(json);
    const std::vector<Result> all = every_path(json);
    for (const Result& r : all) {
      ASSERT_EQ(r.ok, all[0].ok) << r.error;
      EXPECT_EQ(r.error, all[0].error);
      if (r.ok) expect_same(all[0], r, json);
    }
  }
  // Text after the document (a stray "}", a second document, as when two traces are appended to
  // one file): an error at its first byte, not a second document's events dropped without a word.
  const std::string whole = "{\"traceEvents\": [" + a + "]}";
  expect_rejected_at(whole + "}", whole.size());
  expect_rejected_at(whole + "\n{\"traceEvents\": [" + b + "]}\n", whole.size() + 1);
  expect_rejected_at("[" + a + "] [" + b + "]", a.size() + 3);
  const std::string repeated =
      R"({"traceEvents": [)" + a +
      R"(, {"ph": "B", "ph": "X", "ts": 1, "ts": 2.5, "name": "n", "args": {"k": 1, "k": "two"}, "dur": 3, "args": {"k": 3}, "dur": 4}, )" +
      c + R"(], "traceName": "first", "traceName": "second"})";
  const std::string twice =
      R"({"traceEvents": [)" + a + ", " + b + R"(], "x": 1, "traceEvents": [)" + c + "]}";
  const std::string nested_key = R"({"meta": {"traceEvents": [1]}, "traceEvents": [)" + a + "]}";
  // The windowed path finds the array by its literal key: an escaped spelling of the same key before
  // it must not be stepped over.
  const std::string escaped_key = R"({"trace\u0045vents": [)" + a + R"(], "traceEvents": [)" + b + "]}";
  for (const std::string& json : {repeated, twice, nested_key, escaped_key}) {
    SCOPED_TRACE(json);
    const std::vector<Result> all = every_path(json);
    ASSERT_TRUE(all[0].ok) << all[0].error;
    for (const Result& r : all) expect_same(all[0], r, json);
  }
  const Result r = parse(repeated, true);
  EXPECT_EQ(r.events[1], parse(repeated, false).events[1]);
  EXPECT_NE(r.events[1].find(" |X |"), std::string::npos) << r.events[1];
  EXPECT_NE(r.events[1].find("ts=2500 dur=4000 [k="), std::string::npos) << r.events[1];
  EXPECT_EQ(parse(twice, true).doc.events, 3u);
  EXPECT_EQ(parse(nested_key, true).doc.events, 1u);
  EXPECT_EQ(parse(escaped_key, true).doc.events, 2u);
}

TEST(ChromeEventScan, RealV100TraceMatchesTheGenericPath) {
  const std::string json =
      testing::gunzip_file(testing::source_path("tests/data/kineto/v100_train_rank0.json.gz"));
  ASSERT_FALSE(json.empty());
  const Result generic = parse(json, false);
  const Result scanner = parse(json, true);
  ASSERT_TRUE(generic.ok) << generic.error;
  expect_same(generic, scanner, "v100");
  EXPECT_EQ(scanner.doc.events_scanned, scanner.doc.events);  // no escapes or unusual values there
}

}  // namespace
}  // namespace strata::import

// The fast paths of JSON ingest (docs/performance.md, "JSON ingest speed") give the same results as the
// general ones: strings and keys viewed in the input vs unescaped, input parsed in place vs copied, plain
// decimal times vs the general number path, and flow binding vs the plain scan it replaced.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "core/span_record.h"
#include "import/chrome_json.h"
#include "import/converters.h"
#include "import/correlation_map.h"
#include "import/importer.h"
#include "import_test_util.h"

namespace strata::import {
namespace {

struct Seen {
  std::string ph, cat, name;
  std::optional<int64_t> ts, dur;
  bool ts_malformed = false;
  std::vector<std::pair<std::string, std::string>> args;
  bool operator==(const Seen&) const = default;
};

std::vector<Seen> parse_all(std::string_view json, size_t padding, std::string* error) {
  std::vector<Seen> out;
  ChromeDocument doc;
  const bool ok = parse_chrome_trace(
      json, "test.json", &doc,
      [&](const ChromeEvent& ev) {
        Seen s{std::string(ev.ph),
               std::string(ev.cat),
               std::string(ev.name),
               ev.ts_ns,
               ev.dur_ns,
               ev.ts_malformed,
               {}};
        for (const ChromeArg& a : ev.args) s.args.emplace_back(std::string(a.key), std::string(a.value.text));
        out.push_back(std::move(s));
      },
      error, padding);
  if (!ok) out.clear();
  return out;
}

TEST(JsonIngest, EscapedStringsAndKeysAreUnescapedPlainOnesViewedInPlace) {
  const std::string json =
      R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a\"b\\c\u00e9\n", "ts": 1, "dur": 2,)"
      R"( "args": {"k\"ey": "v\/w", "plain": "text", "n": 5}},)"
      R"( {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1.5e3, "dur": 1e-400}]})";
  std::string padded = json + std::string(kJsonPadding, '\0');
  std::string error;
  for (size_t padding : {size_t{0}, kJsonPadding}) {
    std::vector<Seen> events = parse_all(std::string_view(padded.data(), json.size()), padding, &error);
    ASSERT_EQ(events.size(), 2u) << error;
    EXPECT_EQ(events[0].name, "a\"b\\c\xC3\xA9\n");
    ASSERT_EQ(events[0].args.size(), 3u);
    EXPECT_EQ(events[0].args[0], std::make_pair(std::string("k\"ey"), std::string("v/w")));
    EXPECT_EQ(events[0].args[1], std::make_pair(std::string("plain"), std::string("text")));
    EXPECT_EQ(events[0].ts, 1000);
    EXPECT_EQ(events[1].ts, 1500000);         // with an exponent: the general path
    EXPECT_FALSE(events[1].dur.has_value());  // 1e-400 is no double: malformed, as always
  }
  // A string without escapes points into the caller's buffer when it is parsed in place (by the
  // generic path here: with the event scanner on, the events after the first one it refuses are read
  // from a copied window).
  set_chrome_event_scanner(false);
  ChromeDocument doc;
  bool inside = false;
  ASSERT_TRUE(parse_chrome_trace(
      std::string_view(padded.data(), json.size()), "test.json", &doc,
      [&](const ChromeEvent& ev) {
        if (ev.name == "aten::mm")
          inside = ev.name.data() >= padded.data() && ev.name.data() < padded.data() + json.size();
      },
      &error, kJsonPadding));
  set_chrome_event_scanner(true);
  EXPECT_TRUE(inside);
}

// Random events with escapes, numbers of every shape and nesting: in place and copied agree.
TEST(JsonIngest, InPlaceAndCopiedParsesAgreeOnGeneratedEvents) {
  std::mt19937 rng(7);
  const char* names[] = {"aten::add", "x\\\"y", "tab\\there", "\\u00fc\\u00df", "k", "long name with spaces"};
  const char* numbers[] = {
      "12",        "12.5", "-3",     "1712195495505543.2", "1e3",       "2.5E-2", "0", "99999999999999999999",
      "\"77.25\"", "null", "[1, 2]", "{\"a\": [true]}",    "\"s\\\"t\""};
  std::string json = "{\"traceEvents\": [";
  for (int i = 0; i < 20000; ++i) {
    if (i) json += ",\n";
    json += "{\"ph\": \"X\", \"name\": \"" + std::string(names[rng() % 6]) +
            "\", \"ts\": " + numbers[rng() % 13] + ", \"dur\": " + numbers[rng() % 13] + ", \"args\": {\"" +
            names[rng() % 6] + "\": " + numbers[rng() % 13] + ", \"b\": " + numbers[rng() % 13] + "}}";
  }
  json += "]}";
  std::string padded = json + std::string(kJsonPadding, '\0');
  std::string e1, e2;
  std::vector<Seen> copied = parse_all(json, 0, &e1);
  std::vector<Seen> in_place = parse_all(std::string_view(padded.data(), json.size()), kJsonPadding, &e2);
  ASSERT_EQ(copied.size(), 20000u) << e1;
  EXPECT_TRUE(copied == in_place);
}

struct Parsed {
  bool ok = false;
  bool windowed = false;
  std::string error;
  ChromeDocument doc;
  std::vector<Seen> events;
  std::vector<size_t> offsets, indices;
};

Parsed parse_in_windows(std::string_view json, size_t window) {
  Parsed p;
  auto on_event = [&](const ChromeEvent& ev) {
    Seen s{std::string(ev.ph),
           std::string(ev.cat),
           std::string(ev.name),
           ev.ts_ns,
           ev.dur_ns,
           ev.ts_malformed,
           {}};
    for (const ChromeArg& a : ev.args) s.args.emplace_back(std::string(a.key), std::string(a.value.text));
    p.events.push_back(std::move(s));
    p.offsets.push_back(ev.offset);
    p.indices.push_back(ev.index);
  };
  if (window == 0)
    p.ok = parse_chrome_trace(json, "t.json", &p.doc, on_event, &p.error);
  else
    p.ok = parse_chrome_trace_in_windows(json, "t.json", &p.doc, on_event, &p.error, window, &p.windowed);
  return p;
}

// Events whose strings and nested args hold "}, {" (where a window may be cut), fields before and
// after the array, a second traceEvents array: every window size gives what the whole parse gives.
std::string hostile_trace(int events, unsigned seed) {
  std::mt19937 rng(seed);
  std::string json =
      R"({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "GPU }, {"}], "traceEvents": [)";
  for (int i = 0; i < events; ++i) {
    json += i ? (rng() % 2 ? ",\n  " : ",") : "";
    switch (rng() % 5) {
      case 0:
        json += R"({"ph": "X", "name": "a}, {b", "ts": )" + std::to_string(i) + R"(, "dur": 1})";
        break;
      case 1:
        json +=
            R"({"ph": "X", "name": "n", "ts": 1.5, "dur": 2, "args": {"l": [{"x": 1}, {"y": "}, {"}], "q": "\"}, {\""}})";
        break;
      case 2:
        json += R"({ "ph" : "i" , "name" : "m\\" , "ts" : 7 } )";
        break;
      case 3:
        json += R"({"ph": "X", "name": "big", "ts": 3, "dur": 4, "args": {"s": ")" +
                std::string(rng() % 300, 'z') + R"("}})";
        break;
      default:
        json += "17";  // not an object
    }
  }
  json +=
      R"(], "traceName": "t}, {", "traceEvents": [{"ph": "X", "name": "second", "ts": 1, "dur": 1}], "x": 1})";
  return json;
}

TEST(JsonIngest, WindowedParseEqualsWholeParse) {
  for (unsigned seed : {1u, 2u}) {
    const std::string json = hostile_trace(3000, seed);
    const Parsed whole = parse_in_windows(json, 0);
    ASSERT_TRUE(whole.ok) << whole.error << "\n" << json.substr(0, 600);
    ASSERT_EQ(whole.events.size(), 3001u);
    for (size_t window : {size_t{1}, size_t{37}, size_t{300}, size_t{4096}, size_t{1} << 20}) {
      const Parsed w = parse_in_windows(json, window);
      ASSERT_TRUE(w.ok) << w.error;
      EXPECT_TRUE(w.windowed);
      EXPECT_TRUE(w.events == whole.events) << "window " << window;
      EXPECT_EQ(w.offsets, whole.offsets) << "window " << window;
      EXPECT_EQ(w.indices, whole.indices) << "window " << window;
      EXPECT_EQ(w.doc.events, whole.doc.events);
      EXPECT_EQ(w.doc.metadata, whole.doc.metadata) << "window " << window;
      ASSERT_EQ(w.doc.devices.size(), 1u);
      EXPECT_EQ(w.doc.devices[0].fields, whole.doc.devices[0].fields);
      EXPECT_EQ(w.doc.devices[0].offset, whole.doc.devices[0].offset);
    }
  }
}

// The windowed parse reads nothing before an offset it has reported consumed: the caller's buffer
// (parsed in place) is overwritten there as soon as it is reported, and the events stay those of the
// whole parse. The offsets grow and end at the input's end.
TEST(JsonIngest, WindowedParseNeverReadsWhatItReportedConsumed) {
  const std::string json = hostile_trace(3000, 4);
  const Parsed whole = parse_in_windows(json, 0);
  ASSERT_TRUE(whole.ok) << whole.error;
  for (size_t window : {size_t{1}, size_t{300}, size_t{4096}, size_t{1} << 20}) {
    std::string buffer = json + std::string(kJsonPadding, '\0');
    std::vector<size_t> consumed;
    auto on_consumed = [&](size_t n) {
      consumed.push_back(n);
      std::fill(buffer.begin(), buffer.begin() + static_cast<ptrdiff_t>(n), '#');  // what a free leaves
    };
    Parsed w;
    auto on_event = [&](const ChromeEvent& ev) {
      Seen s{std::string(ev.ph),
             std::string(ev.cat),
             std::string(ev.name),
             ev.ts_ns,
             ev.dur_ns,
             ev.ts_malformed,
             {}};
      for (const ChromeArg& a : ev.args) s.args.emplace_back(std::string(a.key), std::string(a.value.text));
      w.events.push_back(std::move(s));
      w.offsets.push_back(ev.offset);
    };
    w.ok = parse_chrome_trace_in_windows(std::string_view(buffer.data(), json.size()), "t.json", &w.doc,
                                         on_event, &w.error, window, &w.windowed, on_consumed, kJsonPadding);
    ASSERT_TRUE(w.ok) << w.error;
    EXPECT_TRUE(w.events == whole.events) << "window " << window;
    EXPECT_EQ(w.offsets, whole.offsets) << "window " << window;
    EXPECT_EQ(w.doc.metadata, whole.doc.metadata) << "window " << window;
    ASSERT_FALSE(consumed.empty());
    EXPECT_TRUE(std::is_sorted(consumed.begin(), consumed.end()));
    EXPECT_EQ(consumed.back(), json.size());
    if (window < 4096) {
      EXPECT_GT(consumed.size(), 2u) << "window " << window;  // released as it went
    }
  }
}

TEST(JsonIngest, WindowedParseReportsDamageLikeTheWholeParse) {
  const std::string json = hostile_trace(500, 3);
  // Damage in the middle of the events (a bare word) and truncation: the windowed parse fails with
  // one line naming the file and an offset, after delivering no event past the damage.
  std::string damaged = json;
  const size_t middle = damaged.find("\"big\"", damaged.size() / 2);
  ASSERT_NE(middle, std::string::npos);
  damaged.replace(middle, 5, "bog!!");
  // (The whole parse may stop before its first event; the windowed one delivers the events before
  // the damaged window. Either way the import fails with that line and keeps nothing.)
  for (const std::string& bad : {damaged, json.substr(0, json.size() / 2)}) {
    const Parsed whole = parse_in_windows(bad, 0);
    const Parsed w = parse_in_windows(bad, 64);
    EXPECT_FALSE(whole.ok);
    ASSERT_FALSE(w.ok);
    ASSERT_EQ(w.error.rfind("t.json: offset ", 0), 0u) << w.error;
    EXPECT_EQ(w.error.find('\n'), std::string::npos);
    const size_t offset = std::stoul(w.error.substr(15));
    EXPECT_LE(offset, bad.size());
    if (bad == damaged) {
      EXPECT_LE(offset > middle ? offset - middle : middle - offset, 400u) << w.error;
    }
    for (size_t at : w.offsets) EXPECT_LT(at, bad == damaged ? middle : bad.size());
  }
  // Not an object with traceEvents at its top level: parsed whole, as before.
  for (std::string text :
       {std::string(R"([{"ph": "X", "name": "traceEvents", "ts": 1, "dur": 1}])"),
        std::string(R"({"meta": {"traceEvents": []}, "traceEvents": [{"ph": "i", "ts": 1}]})"),
        std::string(R"({"s": "\"traceEvents\": [", "traceEvents": [{"ph": "i", "ts": 1}]})")}) {
    const Parsed whole = parse_in_windows(text, 0);
    const Parsed w = parse_in_windows(text, 8);
    EXPECT_TRUE(whole.ok) << whole.error << "\n" << text;
    EXPECT_TRUE(w.ok) << w.error;
    EXPECT_TRUE(w.events == whole.events) << text;
    EXPECT_EQ(w.offsets, whole.offsets) << text;
  }
}

// Random damage (bytes replaced, inserted or removed, mostly JSON punctuation). On input that is
// still valid JSON (simdjson's validating DOM parser says so) both parses succeed, with the same
// events and metadata, or both fail (no traceEvents array left). On invalid input both may fail (each with
// one line); On Demand does not validate every byte it steps over, so the whole parse accepts some damaged
// files that the windowed one rejects, never the reverse, and when both accept they agree.
TEST(JsonIngest, WindowedParseAgreesUnderRandomDamage) {
  const std::string base = hostile_trace(60, 4);
  const char kBytes[] = "{}[],:\" \\x1e-.0";
  std::mt19937 rng(11);
  int valid_inputs = 0;
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
    const Parsed whole = parse_in_windows(json, 0);
    const Parsed w = parse_in_windows(json, 1 + rng() % 200);
    simdjson::dom::parser validator;
    const bool valid = validator.parse(json).error() == simdjson::SUCCESS;
    if (valid) {
      ++valid_inputs;
      ASSERT_EQ(w.ok, whole.ok) << whole.error << "\n" << w.error << "\n" << json;
    }
    if (w.ok) {
      ASSERT_TRUE(whole.ok) << whole.error << "\n" << json;
      ASSERT_TRUE(w.events == whole.events) << json;
      ASSERT_EQ(w.offsets, whole.offsets) << json;
      ASSERT_EQ(w.doc.metadata, whole.doc.metadata) << json;
    } else {
      ASSERT_EQ(w.error.find('\n'), std::string::npos) << w.error;
    }
  }
  EXPECT_GT(valid_inputs, 100);  // damage inside strings leaves many inputs valid
}

// The real V100 trace imported from a file (read with padding, parsed in place) and from a buffer
// without padding (copied) gives the same spans and attributes.
TEST(JsonIngest, FileAndBufferImportsAgreeOnRealTrace) {
  const std::string path = testing::source_path("tests/data/kineto/v100_train_rank0.json.gz");
  const std::string json = testing::gunzip_file(path);
  ASSERT_FALSE(json.empty());
  trace::Trace from_buffer, from_gz;
  std::string error;
  ASSERT_TRUE(import_buffer(json, "v100.json", &from_buffer, &error)) << error;
  ASSERT_TRUE(import_trace(path, &from_gz, &error)) << error;
  ASSERT_EQ(from_buffer.spans.size(), from_gz.spans.size());
  ASSERT_EQ(from_buffer.attrs.size(), from_gz.attrs.size());
  for (size_t i = 0; i < from_buffer.spans.size(); ++i) {
    const SpanRecord &a = from_buffer.spans[i], &b = from_gz.spans[i];
    ASSERT_EQ(a.start_ns, b.start_ns) << i;
    ASSERT_EQ(a.end_ns, b.end_ns) << i;
    ASSERT_EQ(from_buffer.name(a), from_gz.name(b)) << i;
    ASSERT_EQ(a.correlation_id, b.correlation_id) << i;
  }
}

// The flow binding as it was before the contiguous search and the early stop (the reference).
std::vector<size_t> bind_flows_reference(const std::vector<PendingSpan>& spans,
                                         const std::vector<FlowEvent>& flows) {
  std::vector<size_t> result(flows.size(), SIZE_MAX);
  std::map<std::pair<int64_t, int64_t>, std::vector<uint32_t>> tracks;
  for (size_t i = 0; i < spans.size(); ++i)
    if (spans[i].record.kind != static_cast<uint8_t>(SpanKind::kInstant) &&
        spans[i].record.kind != static_cast<uint8_t>(SpanKind::kCounter))
      tracks[{spans[i].track_pid, spans[i].track_tid}].push_back(static_cast<uint32_t>(i));
  for (auto& [key, members] : tracks)
    std::sort(members.begin(), members.end(),
              [&](uint32_t a, uint32_t b) { return spans[a].record.start_ns < spans[b].record.start_ns; });
  for (size_t k = 0; k < flows.size(); ++k) {
    const FlowEvent& f = flows[k];
    auto it = tracks.find({f.track_pid, f.track_tid});
    if (it == tracks.end()) continue;
    const auto& members = it->second;
    auto upper = std::upper_bound(members.begin(), members.end(), f.ts_ns,
                                  [&](int64_t ts, uint32_t i) { return ts < spans[i].record.start_ns; });
    if (f.enclosing) {
      size_t best = SIZE_MAX;
      int64_t best_duration = INT64_MAX;
      int budget = 256;
      for (auto p = upper; p != members.begin() && budget-- > 0;) {
        --p;
        const SpanRecord& r = spans[*p].record;
        if (r.end_ns >= f.ts_ns && r.duration_ns() < best_duration) {
          best = *p;
          best_duration = r.duration_ns();
        }
      }
      result[k] = best;
    } else {
      auto lower = std::lower_bound(members.begin(), members.end(), f.ts_ns,
                                    [&](uint32_t i, int64_t ts) { return spans[i].record.start_ns < ts; });
      if (lower != members.end()) result[k] = *lower;
    }
  }
  return result;
}

TEST(JsonIngest, FlowBindingEqualsThePlainScan) {
  // Seed 3: many equal starts; seed 4: hundreds per start (the lower bound's fallback search),
  // flows in time order per track (the searches' hint from the previous flow). Seeds 5 and 6: flows
  // in time order across tracks (alternating, as ac2g arrows do: each track keeps its own hint), and
  // tracks whose starts strictly increase (left unsorted) beside tracks with ties (seed 6).
  for (unsigned seed : {1u, 2u, 3u, 4u, 5u, 6u}) {
    std::mt19937_64 rng(seed);
    const int64_t quantum = seed == 3 ? 100 : seed == 4 ? 10000 : 1;
    std::vector<PendingSpan> spans;
    // Nested, overlapping, equal-start and instant slices on a few tracks, in shuffled order.
    for (int i = 0; i < 30000; ++i) {
      PendingSpan s;
      s.track_pid = static_cast<int64_t>(rng() % 2);
      s.track_tid = static_cast<int64_t>(rng() % 3);
      s.record.start_ns = static_cast<int64_t>(rng() % 200000) / quantum * quantum;
      if (seed == 5 || (seed == 6 && s.track_tid == 0))
        s.record.start_ns = i * 7 + static_cast<int64_t>(rng() % 7);
      s.record.end_ns = s.record.start_ns + static_cast<int64_t>(rng() % (rng() % 4 == 0 ? 5000 : 50));
      s.record.kind = static_cast<uint8_t>(rng() % 10 == 0 ? SpanKind::kInstant : SpanKind::kSpan);
      spans.push_back(s);
    }
    std::vector<FlowEvent> flows;
    for (int i = 0; i < 20000; ++i) {
      FlowEvent f;
      f.track_pid = static_cast<int64_t>(rng() % 3);  // pid 2: a track without slices
      f.track_tid = static_cast<int64_t>(rng() % 3);
      f.ts_ns = static_cast<int64_t>(rng() % 210000);
      f.enclosing = rng() % 3 != 0;
      flows.push_back(f);
    }
    std::sort(flows.begin(), flows.end(), [seed](const FlowEvent& a, const FlowEvent& b) {
      if (seed >= 5) return a.ts_ns < b.ts_ns;
      if (seed == 4)
        return std::tie(a.track_pid, a.track_tid, a.ts_ns) < std::tie(b.track_pid, b.track_tid, b.ts_ns);
      return a.track_pid < b.track_pid;  // runs of one track, as in a real file, and switches
    });
    EXPECT_EQ(bind_flows(spans, flows), bind_flows_reference(spans, flows)) << "seed " << seed;
  }
}

// Decimal microseconds to nanoseconds (the plain fast path and the general one) against exact
// 128-bit arithmetic, rounding half away from zero: every digit count around the fast path's limits
// (16 before the point, 3 after), signs, and values past the +-2^62 ns range.
TEST(JsonIngest, MicrosecondsToNanosecondsMatchExactArithmetic) {
  std::mt19937_64 rng(9);
  for (int i = 0; i < 200000; ++i) {
    const int int_digits = 1 + static_cast<int>(rng() % 19), frac_digits = static_cast<int>(rng() % 6);
    std::string text = rng() % 4 == 0 ? "-" : "";
    __int128 whole = 0, fraction = 0, scale = 1;
    for (int k = 0; k < int_digits; ++k) {
      const int d = static_cast<int>(rng() % 10);
      text += static_cast<char>('0' + d);
      whole = whole * 10 + d;
    }
    if (frac_digits > 0) text += '.';
    for (int k = 0; k < frac_digits; ++k) {
      const int d = static_cast<int>(rng() % 10);
      text += static_cast<char>('0' + d);
      fraction = fraction * 10 + d;
      scale *= 10;
    }
    const __int128 scaled = (whole * scale + fraction) * 1000;  // ns * scale
    const __int128 magnitude = (scaled + scale / 2) / scale;
    const bool fits = magnitude <= kMaxTimeNs;
    int64_t ns = 0;
    ASSERT_EQ(parse_us_to_ns(text, &ns), fits) << text;
    if (fits) {
      ASSERT_EQ(ns, static_cast<int64_t>(text[0] == '-' ? -magnitude : magnitude)) << text;
    }
  }
}

// The correlation map against std::unordered_map::emplace/find: first value kept, id 0 refused,
// through many growths, with ids dense (as CUPTI hands them out) and scattered.
TEST(JsonIngest, CorrelationMapMatchesUnorderedMap) {
  std::mt19937_64 rng(5);
  CorrelationMap<int64_t> map;
  std::unordered_map<uint64_t, int64_t> reference;
  for (int i = 0; i < 200000; ++i) {
    const uint64_t id = rng() % 2 ? 135000 + rng() % 100000 : (rng() % 16 == 0 ? 0 : rng());
    const int64_t value = static_cast<int64_t>(rng() % 1000);
    const bool inserted = id != 0 && reference.emplace(id, value).second;
    ASSERT_EQ(map.emplace(id, value), inserted) << id;
  }
  EXPECT_EQ(map.size(), reference.size());
  for (const auto& [id, value] : reference) {
    const int64_t* found = map.find(id);
    ASSERT_NE(found, nullptr) << id;
    ASSERT_EQ(*found, value) << id;
  }
  for (int i = 0; i < 100000; ++i) {
    const uint64_t id = rng();
    EXPECT_EQ(map.contains(id), reference.count(id) == 1) << id;
  }
  EXPECT_FALSE(map.contains(0));
}

// release_pages gives back the whole pages inside the range only: they read as zeros, every byte
// outside them is as it was.
TEST(JsonIngest, ReleasedPagesReadAsZerosAndNothingElseChanges) {
  std::string buffer(size_t{1} << 20, 'x');
  release_pages(buffer.data() + 1000, buffer.data() + 600000);
  const size_t first = buffer.find('\0'), last = buffer.rfind('\0');
  ASSERT_NE(first, std::string::npos);
  EXPECT_GE(first, 1000u);
  EXPECT_LT(last, 600000u);
  EXPECT_GE(last - first + 1, 600000u - 1000u - 2 * 65536u);  // pages of up to 64 KiB
  EXPECT_EQ(std::count(buffer.begin(), buffer.end(), '\0'), static_cast<ptrdiff_t>(last - first + 1));
}

// Late attributes (flow bindings, an "E" event's args, memory totals) are merged into the span's
// run of the attribute column after its own, in the order they came, at most 65,535 a span: checked
// against a reference list per span, with the merge in place (spans in order, as converters make
// them) and by copy (runs out of order).
TEST(JsonIngest, LateAttributesMergeLikeAReferenceList) {
  for (bool scrambled : {false, true}) {
    std::mt19937_64 rng(scrambled ? 11 : 12);
    trace::Trace trace;
    trace::TraceBuilder tb(&trace);
    ImportBuilder b(&tb, Format::kKineto, "gen.json");
    std::vector<std::vector<int64_t>> own, late;  // per span: its int attribute values, in order
    ChromeEvent ev;
    ev.pid.kind = JsonScalar::kInt;
    ev.pid.i = 1;
    ev.tid = ev.pid;
    std::vector<std::pair<size_t, int64_t>> late_added;
    int64_t value = 0;
    for (int i = 0; i < 3000; ++i) {
      ev.ts_ns = static_cast<int64_t>(i);
      ev.dur_ns = 1;
      b.begin_span(ev, static_cast<uint8_t>(Level::kLayer), static_cast<uint8_t>(SpanKind::kSpan), "op",
                   ActivityType::kCpuOp)
          .host_pid = 1;
      own.emplace_back();
      late.emplace_back();
      const int count = i == 5 ? UINT16_MAX - 9 : static_cast<int>(rng() % 4);  // one span near the cap
      for (int k = 0; k < count; ++k) {
        b.add_attr(trace.int_attr("a", ++value));
        own.back().push_back(value);
      }
      for (int k = rng() % 3 == 0 ? static_cast<int>(rng() % 4) : 0; k > 0; --k)
        late_added.emplace_back(rng() % (i + 1), ++value);
    }
    for (int k = 0; k < 20; ++k) late_added.emplace_back(5, ++value);  // past the cap of span 5
    for (const auto& [span, v] : late_added) {
      b.add_late_attr(span, trace.int_attr("late", v));
      late[span].push_back(v);
    }
    if (scrambled) {  // two spans' own runs exchanged: no longer in span order, merged by copy
      std::swap(b.spans()[1].attr_first, b.spans()[2].attr_first);
      std::swap(b.spans()[1].attr_count, b.spans()[2].attr_count);
      std::swap(own[1], own[2]);
    }
    std::vector<std::vector<int64_t>> expected = own;
    uint64_t dropped = 0;
    for (size_t i = 0; i < expected.size(); ++i)
      for (int64_t v : late[i]) {
        if (expected[i].size() < UINT16_MAX)
          expected[i].push_back(v);
        else
          ++dropped;
      }
    ASSERT_GT(dropped, 0u);
    std::string error;
    ImportStats stats;
    ASSERT_TRUE(b.finish(3000, &stats, &error)) << error;
    EXPECT_EQ(stats.get(stats::Stat::kImportAttributeLimit), dropped);
    ASSERT_EQ(trace.spans.size(), expected.size());
    ASSERT_EQ(trace.attr_begin.size(), trace.spans.size() + 1);
    EXPECT_EQ(trace.attr_begin.back(), trace.attrs.size());
    for (size_t i = 0; i < trace.spans.size(); ++i) {  // spans start at i: the order is the same
      std::vector<int64_t> got;
      for (const AttrRecord& a : trace.attributes(i)) got.push_back(a.value.i);
      ASSERT_EQ(got, expected[i]) << "span " << i << (scrambled ? " (by copy)" : " (in place)");
    }
  }
}

// The reader's fast paths for values (the type from the token's first byte, integers of up to 18
// digits summed in place) against the general readers they replaced: od::value::type() and
// std::from_chars, on generated values of every JSON type and integers of 1 to 20 digits.
TEST(JsonIngest, ValueFastPathsMatchTypeProbeAndFromChars) {
  std::mt19937_64 rng(11);
  std::vector<std::string> values = {"0",
                                     "-0",
                                     "007",
                                     "-",
                                     "1.5",
                                     "-2e3",
                                     "true",
                                     "false",
                                     "null",
                                     "\"s\"",
                                     "[1, 2]",
                                     "{\"a\": 1}",
                                     "9223372036854775807",
                                     "-9223372036854775808",
                                     "9223372036854775808"};
  for (int i = 0; i < 4000; ++i) {  // integers of every length, with and without a sign
    std::string digits = std::to_string(1 + rng() % 9);
    const size_t length = 1 + rng() % 20;
    while (digits.size() < length) digits += static_cast<char>('0' + rng() % 10);
    values.push_back((rng() % 2 ? "-" : "") + digits);
  }
  std::string json = "{\"traceEvents\": [";
  for (size_t i = 0; i < values.size(); ++i)
    json += (i ? ", " : "") + std::string("{\"ph\": \"X\", \"pid\": ") +
            (values[i] == "-" ? "1" : values[i]) +
            ", \"args\": {\"v\": " + (values[i] == "-" ? "\"-\"" : values[i]) + "}}";
  json += "]}";
  // The reference: simdjson's own type probe and std::from_chars, as the reader did before.
  auto expect_scalar = [](std::string_view token, const JsonScalar& got) {
    simdjson::padded_string text(token);
    simdjson::ondemand::parser parser;
    simdjson::ondemand::document doc = parser.iterate(text);
    simdjson::ondemand::json_type type = doc.type();
    if (type != simdjson::ondemand::json_type::number) {
      EXPECT_NE(got.kind, JsonScalar::kInt) << token;
      EXPECT_NE(got.kind, JsonScalar::kDouble) << token;
      return;
    }
    int64_t i = 0;
    auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), i);
    if (token.find_first_of(".eE") == std::string_view::npos && ec == std::errc() &&
        end == token.data() + token.size()) {
      EXPECT_EQ(got.kind, JsonScalar::kInt) << token;
      EXPECT_EQ(got.i, i) << token;
      EXPECT_EQ(got.d, static_cast<double>(i)) << token;
    } else {
      EXPECT_EQ(got.kind, JsonScalar::kDouble) << token;
    }
    EXPECT_EQ(got.text, token);
  };
  size_t seen = 0;
  ChromeDocument doc;
  std::string error;
  ASSERT_TRUE(parse_chrome_trace(
      json, "test.json", &doc,
      [&](const ChromeEvent& ev) {
        const std::string& v = values[ev.index];
        const JsonScalar* arg = ev.arg("v");
        ASSERT_NE(arg, nullptr);
        if (v == "-") {
          EXPECT_EQ(arg->kind, JsonScalar::kString);
        } else {
          expect_scalar(v, *arg);
          expect_scalar(v, ev.pid);
        }
        std::optional<JsonScalar::Kind> kind;  // what a value of each other type must read as
        if (v == "true" || v == "false") kind = JsonScalar::kBool;
        if (v == "null") kind = JsonScalar::kNull;
        if (v.front() == '[' || v.front() == '{') kind = JsonScalar::kRaw;
        if (v.front() == '"') kind = JsonScalar::kString;
        if (kind) {
          EXPECT_EQ(arg->kind, *kind) << v;
        }
        ++seen;
      },
      &error))
      << error;
  EXPECT_EQ(seen, values.size());
}

}  // namespace
}  // namespace strata::import

// A streaming reader for Chrome Trace Event JSON (the format Kineto, ONNX Runtime and TensorFlow all
// write): either {"traceEvents": [...], other fields...} or a bare [...] array of events.
//
// Built on simdjson On Demand so numbers keep their exact text: Chrome timestamps are microseconds
// with a fraction ("1712195495505543.2"), and a double cannot hold that to the nanosecond.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::import {

// One JSON value as the importers need it. Strings point into the parser's buffer (valid during the
// callback); arrays and objects are kept as their raw JSON text.
struct JsonScalar {
  enum Kind : uint8_t { kAbsent, kNull, kBool, kInt, kDouble, kString, kRaw } kind = kAbsent;
  int64_t i = 0;          // kInt, kBool
  double d = 0;           // kDouble (and kInt, converted)
  std::string_view text;  // kString: the unescaped string; kInt/kDouble: the number's JSON text; kRaw: JSON
  // kInt, or a kString holding only an integer. The kInt case inline: the Kineto converter asks for
  // correlation, device and stream on every device event (an out-of-line call was 1.3% of an import).
  std::optional<int64_t> as_int() const {
    if (kind == kInt) return i;
    return int_from_text();
  }
  std::optional<int64_t> int_from_text() const;  // as_int() of a kString (nullopt for other kinds)
};

struct ChromeArg {
  std::string_view key;
  JsonScalar value;
};

struct ChromeEvent {
  size_t index = 0;       // position in the event array
  size_t offset = 0;      // byte offset of the event in the (decompressed) input
  bool is_object = true;  // false: the array element is not an object (malformed)
  std::string_view ph, cat, name, bp, scope;
  JsonScalar pid, tid, id;
  // Timestamps converted exactly from decimal microseconds to integer nanoseconds.
  std::optional<int64_t> ts_ns, dur_ns;
  bool ts_malformed = false, dur_malformed = false;  // present but not a number
  std::vector<ChromeArg> args;

  const JsonScalar* arg(std::string_view key) const;
};

// One element of Kineto's top-level "deviceProperties" array (one per GPU the process could see):
// its fields in file order, strings unescaped, numbers as their JSON text, booleans as true/false,
// nested containers as raw JSON.
struct ChromeDevice {
  size_t offset = 0;  // byte offset of the element in the (decompressed) input
  std::vector<std::pair<std::string, std::string>> fields;
  const std::string* field(std::string_view key) const;
};

struct ChromeDocument {
  bool bare_array = false;  // the input is [...], not {"traceEvents": [...]}
  bool has_event_array = false;
  uint64_t events = 0;
  // Of those, events read by the Kineto event scanner (chrome_event_scan.h); the others (not objects,
  // escapes, unusual values) went through the generic On Demand path.
  uint64_t events_scanned = 0;
  // Top-level fields other than traceEvents, scalars as text and containers as raw JSON (each
  // value cut at 64 KiB).
  std::vector<std::pair<std::string, std::string>> metadata;
  // "deviceProperties", read in full (at most kMaxDevices elements of kMaxDeviceFields fields).
  std::vector<ChromeDevice> devices;
  // One line (source, offset, field, what is wrong) when deviceProperties is present but is not an
  // array of objects, or is larger than the limits; the well-formed part is still in `devices`. The
  // events do not depend on it, so this does not fail the parse.
  std::string devices_problem;
};

inline constexpr size_t kMaxDevices = 64;
inline constexpr size_t kMaxDeviceFields = 64;

// Parses `json` and calls `on_event` for every element of the event array, in file order. Returns
// false with *error set to one line (source, byte offset, reason, what to do) on a JSON syntax error
// or when there is no event array; events already delivered stay delivered.
// `readable_padding`: bytes the caller guarantees readable after json's end; with at least
// kJsonPadding the input is parsed where it lies, otherwise it is copied once into a padded buffer
// (as large as the input).
// `on_consumed` (may be empty): called with increasing offsets n when the parser will not read
// json[0, n) again (the windowed parse copies each window before reading it), so the caller may
// free or overwrite those bytes; the events' strings never point there.
bool parse_chrome_trace(std::string_view json, const std::string& source, ChromeDocument* doc,
                        const std::function<void(const ChromeEvent&)>& on_event, std::string* error,
                        size_t readable_padding = 0, const std::function<void(size_t)>& on_consumed = {});

// Whether parsers created from now on read common event objects with the Kineto event scanner (the
// default) or every event through the generic On Demand path; the events are the same either way
// (tests and benchmarks compare the two).
void set_chrome_event_scanner(bool enabled);

// What the parser reads beyond the end of its input (simdjson's SIMDJSON_PADDING).
inline constexpr size_t kJsonPadding = 64;

// From this size on, a {"traceEvents": [...]} input is parsed in windows of about kWindowBytes of
// events (simdjson's index of one window at a time instead of one as large as the file); the events,
// their order, offsets and the metadata are the same as from a whole-document parse.
inline constexpr size_t kWindowedFrom = size_t{64} << 20;
inline constexpr size_t kWindowBytes = size_t{8} << 20;

// The windowed parse at any size and window (tests). *windowed: false when the input does not begin
// like {"...": ..., "traceEvents": [ and was parsed whole. `on_consumed` and `readable_padding` as
// for parse_chrome_trace.
bool parse_chrome_trace_in_windows(std::string_view json, const std::string& source, ChromeDocument* doc,
                                   const std::function<void(const ChromeEvent&)>& on_event,
                                   std::string* error, size_t window_bytes, bool* windowed,
                                   const std::function<void(size_t)>& on_consumed = {},
                                   size_t readable_padding = 0);

// "123.4567" microseconds -> 123456 ns (rounded to nearest, exact for up to 18 digits). Accepts an
// optional sign, fraction and exponent. Returns false for anything that is not a JSON number, and
// for times beyond +-2^62 ns (kMaxTimeNs), which no trace holds.
bool parse_us_to_ns(std::string_view number_text, int64_t* ns);

}  // namespace strata::import

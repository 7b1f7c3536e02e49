#include "import/chrome_json.h"

#include <simdjson.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstring>

#include "core/span_record.h"
#include "import/chrome_event_scan.h"
#include "import/chrome_json_values.h"

namespace strata::import {
namespace {

namespace od = simdjson::ondemand;

std::atomic<bool> g_event_scanner{true};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

// A string without escapes is viewed where it lies in the input (stage 1 has already checked its
// UTF-8 and control characters); only one with a backslash is unescaped into the parser's string
// buffer. Copying every string there would touch memory as large as the strings of the whole file.
simdjson::error_code read_string(od::value& value, std::string_view* out) {
  std::string_view token = trim(value.raw_json_token());  // "text" as written; does not consume
  if (token.size() >= 2 && token.front() == '"' && token.back() == '"' &&
      std::memchr(token.data(), '\\', token.size()) == nullptr) {
    *out = token.substr(1, token.size() - 2);
    return value.get_raw_json_string().error();  // consumes the value
  }
  return value.get_string().get(*out);
}

// The same for an object key: the raw key runs up to its closing quote unless it holds a backslash.
simdjson::error_code read_key(od::field& field, std::string_view* out) {
  const char* begin = field.key().raw();
  const char* p = begin;
  while (*p != '"' && *p != '\\') ++p;  // stage 1 found the closing quote, so this stops in the input
  if (*p == '"') {
    *out = std::string_view(begin, static_cast<size_t>(p - begin));
    return simdjson::SUCCESS;
  }
  return field.unescaped_key().get(*out);
}

// The JSON type of a value from the first byte of its token, as od::value::type() decides it
// (the token is at hand anyway; type() is one more walk through the iterator per value).
inline __attribute__((always_inline)) simdjson::error_code value_type(od::value& value,
                                                                      std::string_view token,
                                                                      od::json_type* type) {
  if (token.empty()) return value.type().get(*type);
  switch (token[0]) {
    case '{':
      *type = od::json_type::object;
      return simdjson::SUCCESS;
    case '[':
      *type = od::json_type::array;
      return simdjson::SUCCESS;
    case '"':
      *type = od::json_type::string;
      return simdjson::SUCCESS;
    case 'n':
      *type = od::json_type::null;
      return simdjson::SUCCESS;
    case 't':
    case 'f':
      *type = od::json_type::boolean;
      return simdjson::SUCCESS;
    case '-':
    case '0':
    case '1':
    case '2':
    case '3':
    case '4':
    case '5':
    case '6':
    case '7':
    case '8':
    case '9':
      *type = od::json_type::number;
      return simdjson::SUCCESS;
    default:
      return value.type().get(*type);  // whatever type() says of a byte no JSON value starts with
  }
}

// Reads one value; a structural error is returned to the caller, everything else becomes a kind.
simdjson::error_code read_scalar(od::value& value, JsonScalar* out) {
  const std::string_view raw = value.raw_json_token();  // does not consume
  od::json_type type;
  if (auto err = value_type(value, raw, &type)) return err;
  switch (type) {
    case od::json_type::number:
      detail::number_scalar(trim(raw), out);
      return simdjson::SUCCESS;
    case od::json_type::string:
      out->kind = JsonScalar::kString;
      return read_string(value, &out->text);
    case od::json_type::boolean: {
      bool b = false;
      if (auto err = value.get_bool().get(b)) return err;
      out->kind = JsonScalar::kBool;
      out->i = b ? 1 : 0;
      return simdjson::SUCCESS;
    }
    case od::json_type::null:
      out->kind = JsonScalar::kNull;
      return simdjson::SUCCESS;
    case od::json_type::array:
    case od::json_type::object:
      out->kind = JsonScalar::kRaw;
      return simdjson::to_json_string(value).get(out->text);
  }
  return simdjson::INCORRECT_TYPE;
}

simdjson::error_code read_time(od::value& value, std::optional<int64_t>* out, bool* malformed) {
  // A plain decimal number (what every profiler writes) goes straight to exact nanoseconds; with an
  // exponent it takes the general path, which also requires the number to fit a double.
  const std::string_view raw = value.raw_json_token();
  od::json_type type;
  if (auto err = value_type(value, raw, &type)) return err;
  if (type == od::json_type::number) {
    detail::time_from_number(trim(raw), out, malformed);
    return simdjson::SUCCESS;
  }
  JsonScalar s;
  if (auto err = read_scalar(value, &s)) return err;
  detail::time_from_scalar(s, out, malformed);
  return simdjson::SUCCESS;
}

simdjson::error_code read_string_field(od::value& value, std::string_view* out) {
  // A string (what ph, cat and name always are) straight away; anything else through read_scalar,
  // which steps over it as before (building a JsonScalar for every string field was a fifth of the
  // event loop).
  const std::string_view raw = value.raw_json_token();
  if (!raw.empty() && raw[0] == '"') return read_string(value, out);
  JsonScalar s;
  if (auto err = read_scalar(value, &s)) return err;
  if (s.kind == JsonScalar::kString) *out = s.text;
  return simdjson::SUCCESS;
}

class Parser {
 public:
  Parser(const std::string& source, std::string_view json, size_t readable_padding,
         const std::function<void(const ChromeEvent&)>& cb, const std::function<void(size_t)>& on_consumed)
      : source_(source), on_event_(cb), on_consumed_(on_consumed) {
    if (readable_padding >= simdjson::SIMDJSON_PADDING) {
      input_ = json;
    } else {
      copy_ = simdjson::padded_string(json);
      input_ = copy_;
    }
  }

  bool run(ChromeDocument* doc, std::string* error) {
    doc_out_ = doc;
    if (auto err = parser_.iterate(input_.data(), input_.size(), input_.size() + simdjson::SIMDJSON_PADDING)
                       .get(doc_))
      return fail(err, 0, error);
    od::json_type type;
    if (auto err = doc_.type().get(type)) return fail(err, location(), error);
    if (type == od::json_type::array) {
      doc->bare_array = true;
      od::array events;
      if (auto err = doc_.get_array().get(events)) return fail(err, location(), error);
      if (auto err = read_events(events)) return fail(err, location(), error);
      doc->has_event_array = true;
    } else if (type == od::json_type::object) {
      od::object top;
      if (auto err = doc_.get_object().get(top)) return fail(err, location(), error);
      for (auto field : top) {
        std::string_view key;
        if (auto err = field.unescaped_key().get(key)) return fail(err, location(), error);
        od::value value;
        if (auto err = field.value().get(value)) return fail(err, location(), error);
        if (key == "traceEvents") {
          od::array events;
          if (value.get_array().get(events) != simdjson::SUCCESS) {
            *error = source_ + ": field traceEvents is not an array; this is not a Chrome trace";
            return false;
          }
          if (auto err = read_events(events)) return fail(err, location(), error);
          doc->has_event_array = true;
        } else {
          JsonScalar s;
          if (auto err = read_scalar(value, &s)) return fail(err, location(), error);
          if (s.kind != JsonScalar::kAbsent && s.kind != JsonScalar::kNull)
            doc->metadata.emplace_back(std::string(key), std::string(s.text.substr(0, 1 << 16)));
          if (key == "deviceProperties") {
            if (s.kind == JsonScalar::kRaw && !s.text.empty() && s.text.front() == '[')
              read_devices(s.text, doc);
            else
              doc->devices_problem =
                  source_ + ": offset " + std::to_string(offset_in_input(s.text, location())) +
                  ": field deviceProperties is not an array; device properties not imported";
          }
        }
      }
    } else {
      *error = source_ + ": offset 0: JSON " + (type == od::json_type::string ? "string" : "scalar") +
               ", not a trace (expected {\"traceEvents\": [...]} or an array of events)";
      return false;
    }
    // Text after the root (a second document, a stray "}"): On Demand stops at the root's end and
    // would leave it unread, and a second document's events would be lost without a word.
    const char* rest = nullptr;
    if (doc_.current_location().get(rest) == simdjson::SUCCESS)
      return fail(simdjson::TRAILING_CONTENT, location(), error);
    if (!doc->has_event_array) {
      *error = source_ +
               ": JSON object without a \"traceEvents\" array; not a Chrome/Kineto/TensorFlow trace "
               "(an ONNX Runtime profile is a bare array)";
      return false;
    }
    return true;
  }

 private:
  size_t location() {
    const char* at = nullptr;
    if (doc_.current_location().get(at) != simdjson::SUCCESS || at == nullptr) return base_ + input_.size();
    // An error in the last window's made-up head ({"traceEvents": [) is one at the document itself
    // (its root): offset 0, as the whole parse names it, not a spot in the event before the window.
    if (static_cast<size_t>(at - input_.data()) < synthetic_head_) return 0;
    return base_ + static_cast<size_t>(at - input_.data());
  }

  // Offset of a view into the input (raw JSON and number tokens point there), else `fallback`.
  size_t offset_in_input(std::string_view view, size_t fallback) const {
    if (view.data() >= input_.data() && view.data() < input_.data() + input_.size())
      return base_ + static_cast<size_t>(view.data() - input_.data());
    return fallback;
  }

  // Kineto's top-level "deviceProperties": [{"id": 0, "name": "NVIDIA A100-...", ...}, ...]. Read from
  // the raw text the main pass stepped over, with a parser of its own (On Demand cannot go back
  // into a value it has consumed). Problems are reported in doc->devices_problem, never fatal: the
  // events do not depend on this field.
  void read_devices(std::string_view raw, ChromeDocument* doc) {
    const size_t base = offset_in_input(raw, 0);
    simdjson::padded_string text(raw);
    od::parser parser;
    od::document d;
    auto problem = [&](size_t at, const std::string& what) {
      if (doc->devices_problem.empty())
        doc->devices_problem =
            source_ + ": offset " + std::to_string(base + at) + ": field deviceProperties: " + what;
    };
    auto at_of = [&](od::value& v) -> size_t {
      const char* p = nullptr;
      if (v.current_location().get(p) != simdjson::SUCCESS || p == nullptr || p < text.data()) return 0;
      return static_cast<size_t>(p - text.data());
    };
    od::array array;
    if (parser.iterate(text).get(d) != simdjson::SUCCESS || d.get_array().get(array) != simdjson::SUCCESS) {
      problem(0, "not an array; device properties not imported");
      return;
    }
    simdjson::error_code err = simdjson::SUCCESS;
    size_t position = 0, err_at = 0;
    for (auto element : array) {
      od::value value;
      if ((err = element.get(value))) break;
      const size_t at = at_of(value);
      err_at = at;
      od::json_type type;
      if ((err = value.type().get(type))) break;
      if (type != od::json_type::object) {
        problem(at, "element " + std::to_string(position++) + " is not an object; skipped");
        continue;
      }
      if (doc->devices.size() >= kMaxDevices) {
        problem(at, "more than " + std::to_string(kMaxDevices) + " devices; the rest ignored");
        break;
      }
      ChromeDevice device;
      device.offset = base + at;
      od::object object;
      if ((err = value.get_object().get(object))) break;
      for (auto field : object) {
        std::string_view key;
        if ((err = field.unescaped_key().get(key))) break;
        od::value v;
        if ((err = field.value().get(v))) break;
        JsonScalar s;
        if ((err = read_scalar(v, &s))) break;
        if (s.kind == JsonScalar::kNull || s.kind == JsonScalar::kAbsent) continue;
        if (device.fields.size() >= kMaxDeviceFields) {
          problem(at, "element " + std::to_string(position) + " has more than " +
                          std::to_string(kMaxDeviceFields) + " fields; the rest ignored");
          continue;
        }
        device.fields.emplace_back(std::string(key), s.kind == JsonScalar::kBool
                                                         ? (s.i ? "true" : "false")
                                                         : std::string(s.text.substr(0, 4096)));
      }
      if (err) break;
      doc->devices.push_back(std::move(device));
      ++position;
    }
    if (err)
      problem(err_at, std::string("not valid JSON (") + simdjson::error_message(err) +
                          "); devices from there on not imported");
  }

  static size_t skip_space(std::string_view s, size_t p) {
    while (p < s.size() && (s[p] == ' ' || s[p] == '\n' || s[p] == '\r' || s[p] == '\t')) ++p;
    return p;
  }

  // The last "}" in (begin, end) followed by "," and "{" (whitespace between): where one event of the
  // array likely ends and the next begins. Returns the position after the "}" and sets *next to the
  // "{"; npos when there is none.
  static size_t find_cut(std::string_view s, size_t begin, size_t end, size_t* next) {
    for (size_t c = s.rfind('}', end - 1); c != std::string_view::npos && c > begin;
         c = s.rfind('}', c - 1)) {
      size_t p = skip_space(s, c + 1);
      if (p >= s.size() || s[p] != ',') continue;
      p = skip_space(s, p + 1);
      if (p < s.size() && s[p] == '{') {
        *next = p;
        return c + 1;
      }
    }
    return std::string_view::npos;
  }

 public:
  enum class Windowed { kNotApplicable, kDone, kFailed };

  // {"traceEvents": [...]} read window by window: simdjson indexes one window of events at a time
  // (a few MB, in cache) instead of the whole file (4 bytes per structural character, about the
  // input's size again). A window is cut after a "}" followed by ", {"; such a cut can fall inside a
  // string or a nested array, and then the window is not valid JSON from that point: the events read
  // whole before it stand (JSON parses a prefix the same way whatever follows), the window is read
  // again from the same start, twice as large, stepping over the events already delivered. Only the
  // last window, which runs to the end of the input, can report a real syntax error. The fields
  // before the array are parsed as a small document of their own, the last window with the fields
  // after it. kNotApplicable (nothing delivered) when the text before the first "traceEvents" is not
  // a JSON object's start with that key at its top level.
  // With the event scanner on, events of the common shape are read in place before any window
  // (no stage 1, no On Demand walk, no copy); the windows above read only what the scanner refused.
  Windowed run_windowed(ChromeDocument* doc, size_t window, std::string* error) {
    const std::string_view json = input_;
    const size_t n = json.size();
    const size_t key = json.find("\"traceEvents\"");
    if (key == std::string_view::npos) return Windowed::kNotApplicable;
    size_t at = skip_space(json, key + 13);
    if (at >= n || json[at] != ':') return Windowed::kNotApplicable;
    at = skip_space(json, at + 1);
    if (at >= n || json[at] != '[') return Windowed::kNotApplicable;
    {
      ChromeDocument head;
      std::string ignored;
      // Events in the prefix (an earlier array under an escaped spelling of the key, read as
      // traceEvents too) make this kNotApplicable and the whole parse reads them: not delivered here.
      const std::function<void(const ChromeEvent&)> not_delivered = [](const ChromeEvent&) {};
      Parser prefix(source_, std::string(json.substr(0, at + 1)) + "]}", 0, not_delivered, {});
      if (!prefix.run(&head, &ignored) || head.events != 0) return Windowed::kNotApplicable;
      *doc = std::move(head);
    }
    doc_out_ = doc;
    std::string buffer;
    size_t size = window;
    uint64_t window_first = doc->events;  // events delivered before this window
    uint64_t window_done = 0;             // events of this window delivered by failed tries
    bool array_closed = false;            // the scanner reached the array's "]"
    bool retry = false;                   // the window from `at` failed: read it again larger, generic
    for (at = skip_space(json, at + 1);;) {
      if (scanner_ && !retry && !array_closed) {
        // The Kineto event scanner reads the events in place until one is not of its common shape
        // (then a generic window of at most kFallbackWindow bytes from that event on) or the array ends.
        size_t stray_bracket = std::string_view::npos;
        const size_t stop = scan_in_place(json, at, &array_closed, &stray_bracket);
        if (stray_bracket != std::string_view::npos) {
          fail(simdjson::TAPE_ERROR, stray_bracket, error);  // the generic path's line, at its offset
          return Windowed::kFailed;
        }
        if (stop != at) {
          at = stop;
          window_first = doc->events;
          if (on_consumed_) on_consumed_(at);
        }
        size = array_closed ? n : std::min(window, kFallbackWindow);
      }
      if (at + size >= n) {
        // The last window runs to the end of the input: {"traceEvents": [ + the rest is the
        // top-level object without the fields before the array, read as a whole document.
        static constexpr std::string_view kHead = "{\"traceEvents\": [";
        buffer.assign(kHead);
        buffer.append(json.substr(at));
        const size_t text_size = buffer.size();
        buffer.append(simdjson::SIMDJSON_PADDING, '\0');
        input_ = std::string_view(buffer.data(), text_size);
        base_ = at - kHead.size();  // modular: offsets past the head map back into the input
        synthetic_head_ = kHead.size();
        if (on_consumed_) on_consumed_(n);  // all of it is in the buffer now
        return run(doc, error) ? Windowed::kDone : Windowed::kFailed;
      }
      size_t next = n;
      const size_t cut = find_cut(json, at, at + size, &next);
      if (cut == std::string_view::npos) {
        size *= 2;
        retry = true;
        continue;
      }
      buffer.assign(1, '[');
      buffer.append(json.substr(at, cut - at));
      buffer += ']';
      const size_t text_size = buffer.size();
      buffer.append(simdjson::SIMDJSON_PADDING, '\0');
      input_ = std::string_view(buffer.data(), text_size);
      base_ = at - 1;  // the '[' added in front
      delivered_ = 0;
      simdjson::error_code err = read_window();
      const char* rest = nullptr;
      if (!err && doc_.current_location().get(rest) == simdjson::SUCCESS) err = simdjson::TAPE_ERROR;
      if (err) {  // a cut inside a string or a nested array: again from the same start, larger
        window_done += delivered_;
        skip_ = window_done;
        doc->events = window_first + window_done;
        size *= 2;
        retry = true;
        continue;
      }
      window_first = doc->events;
      window_done = 0;
      skip_ = 0;
      retry = false;
      size = window;
      at = next;
      if (on_consumed_) on_consumed_(at);
    }
  }

 private:
  static constexpr size_t kFallbackWindow = size_t{64} << 10;

  // From `at` (an element's first byte, after "[" or ","): events of the common shape read by the
  // Kineto event scanner from the input in place and delivered, while each is followed by "," or by
  // the array's "]" (then *closed and the "]"'s position is returned). Returns the position of the
  // first element not read (or of a second comma: "{...},, {"): the generic path reads it, and
  // reports whatever is wrong there. A trailing comma ("{...}, ]") sets *stray_bracket to the "]".
  size_t scan_in_place(std::string_view json, size_t at, bool* closed, size_t* stray_bracket) {
    const char* const begin = json.data();
    const char* const end = begin + json.size();
    const char* element = begin + at;
    const char* reported = element;  // on_consumed_ has been told of the input before this
    ChromeEvent& ev = scanned_;      // reused: its args keep their capacity
    for (;;) {
      if (on_consumed_ && static_cast<size_t>(element - reported) >= kWindowBytes) {
        // As a window would: the caller gives back the pages read so far (the text and the spans
        // made of it are not resident together: peak memory).
        reported = element;
        on_consumed_(static_cast<size_t>(element - begin));
      }
      reset_event(&ev);
      const char* after = detail::scan_chrome_event(element, end, &ev);
      if (after == nullptr) return static_cast<size_t>(element - begin);
      const char* p = after;
      while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) ++p;
      if (p >= end || (*p != ',' && *p != ']')) return static_cast<size_t>(element - begin);
      ev.index = doc_out_->events++;
      ev.offset = static_cast<size_t>(element - begin);
      ev.is_object = true;
      ++doc_out_->events_scanned;
      on_event_(ev);
      if (*p == ']') {
        *closed = true;
        return static_cast<size_t>(p - begin);
      }
      element = p + 1;
      while (element < end && (*element == ' ' || *element == '\n' || *element == '\r' || *element == '\t'))
        ++element;
      // A comma before the array's "]" (JSON has no trailing commas): the error the generic path
      // gives, at the "]" where it wanted a value. Returning the "]" as the next element would let
      // the caller take the array as ended normally and accept what the generic path rejects.
      if (element < end && *element == ']') {
        *stray_bracket = static_cast<size_t>(element - begin);
        return static_cast<size_t>(element - begin);
      }
    }
  }

  simdjson::error_code read_window() {
    if (auto err = parser_.iterate(input_.data(), input_.size(), input_.size() + simdjson::SIMDJSON_PADDING)
                       .get(doc_))
      return err;
    od::array events;
    if (auto err = doc_.get_array().get(events)) return err;
    return read_events(events);
  }

  bool fail(simdjson::error_code err, size_t offset, std::string* error) {
    if (err == simdjson::MEMALLOC) {  // the parser's index could not be allocated: not the file's fault
      *error = source_ + ": out of memory while parsing " + std::to_string(input_.size()) +
               " bytes of JSON; free memory, read ranks one by one (STRATA_JOBS=1) or use a larger machine";
      return false;
    }
    *error = source_ + ": offset " + std::to_string(offset) + ": not valid JSON (" +
             simdjson::error_message(err) +
             (err == simdjson::TRAILING_CONTENT
                  ? "); the file goes on after its JSON document: two traces in one file? split them"
                  : "); the file is damaged or truncated, or not JSON");
    return false;
  }

  simdjson::error_code read_events(od::array& events) {
    ChromeEvent ev;
    for (auto element : events) {
      od::value value;
      if (auto err = element.get(value)) return err;
      if (skip_ > 0) {  // delivered by an earlier try of this window (run_windowed)
        --skip_;
        continue;
      }
      ev.index = doc_out_->events++;
      reset_event(&ev);
      const char* at = nullptr;
      ev.offset = value.current_location().get(at) == simdjson::SUCCESS && at
                      ? base_ + static_cast<size_t>(at - input_.data())
                      : 0;
      od::json_type type;
      if (auto err = value.type().get(type)) return err;
      ev.is_object = type == od::json_type::object;
      if (ev.is_object) {
        od::object obj;
        if (auto err = value.get_object().get(obj)) return err;
        if (auto err = read_event(obj, &ev)) return err;
      }
      on_event_(ev);
      ++delivered_;
    }
    return simdjson::SUCCESS;
  }

  static void reset_event(ChromeEvent* ev) {
    ev->ph = ev->cat = ev->name = ev->bp = ev->scope = {};
    ev->pid = ev->tid = ev->id = JsonScalar{};
    ev->ts_ns.reset();
    ev->dur_ns.reset();
    ev->ts_malformed = ev->dur_malformed = false;
    ev->args.clear();
  }

  simdjson::error_code read_event(od::object& obj, ChromeEvent* ev) {
    for (auto result : obj) {
      // The field is used where the iterator built it: copying it into an od::field (get) loads 16
      // bytes just written as 8 + 4, a store-forwarding stall that took a quarter of this loop.
      if (auto err = result.error()) return err;
      od::field&& field = std::move(result).value_unsafe();
      std::string_view key;
      if (auto err = read_key(field, &key)) return err;
      od::value& value = field.value();
      simdjson::error_code err = simdjson::SUCCESS;
      switch (detail::event_field(key)) {
        case detail::Field::kPh:
          err = read_string_field(value, &ev->ph);
          break;
        case detail::Field::kCat:
          err = read_string_field(value, &ev->cat);
          break;
        case detail::Field::kName:
          err = read_string_field(value, &ev->name);
          break;
        case detail::Field::kBp:
          err = read_string_field(value, &ev->bp);
          break;
        case detail::Field::kScope:
          err = read_string_field(value, &ev->scope);
          break;
        case detail::Field::kPid:
          err = read_scalar(value, &ev->pid);
          break;
        case detail::Field::kTid:
          err = read_scalar(value, &ev->tid);
          break;
        case detail::Field::kId:
          err = read_scalar(value, &ev->id);
          break;
        case detail::Field::kTs:
          err = read_time(value, &ev->ts_ns, &ev->ts_malformed);
          break;
        case detail::Field::kDur:
          err = read_time(value, &ev->dur_ns, &ev->dur_malformed);
          break;
        case detail::Field::kArgs:
          err = read_args(value, ev);
          break;
        case detail::Field::kOther:
          break;
      }
      if (err) return err;
    }
    return simdjson::SUCCESS;
  }

  // An event's "args": its members in order (args that are not an object are stepped over).
  simdjson::error_code read_args(od::value& value, ChromeEvent* ev) {
    od::json_type type;
    if (auto err = value.type().get(type)) return err;
    if (type != od::json_type::object) return simdjson::SUCCESS;
    od::object args;
    if (auto err = value.get_object().get(args)) return err;
    for (auto result : args) {
      if (auto err = result.error()) return err;  // the field in place, as in read_event
      od::field&& arg = std::move(result).value_unsafe();
      ChromeArg& a = ev->args.emplace_back();  // filled in place: no 56-byte copy per arg
      if (auto err = read_key(arg, &a.key)) return err;
      if (auto err = read_scalar(arg.value(), &a.value)) return err;
    }
    return simdjson::SUCCESS;
  }

  const std::string& source_;
  std::string_view input_;        // the JSON, with simdjson::SIMDJSON_PADDING readable bytes after it
  simdjson::padded_string copy_;  // a padded copy, when the caller's buffer has no padding
  size_t base_ = 0;               // offset of input_[0] in the caller's input (windows, parts)
  size_t synthetic_head_ = 0;     // bytes at input_'s start that are not the caller's (last window)
  uint64_t delivered_ = 0;        // events handed to on_event_
  uint64_t skip_ = 0;             // elements to step over before delivering again
  const std::function<void(const ChromeEvent&)>& on_event_;
  std::function<void(size_t)> on_consumed_;
  od::parser parser_;
  od::document doc_;
  ChromeDocument* doc_out_ = nullptr;
  bool scanner_ = g_event_scanner.load(std::memory_order_relaxed);
  ChromeEvent scanned_;  // the scanner's event
};

}  // namespace

void set_chrome_event_scanner(bool enabled) { g_event_scanner.store(enabled, std::memory_order_relaxed); }

std::optional<int64_t> JsonScalar::int_from_text() const {
  if (kind == kString && !text.empty()) {
    int64_t v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec == std::errc() && end == text.data() + text.size()) return v;
  }
  return std::nullopt;
}

const std::string* ChromeDevice::field(std::string_view key) const {
  for (const auto& [k, v] : fields)
    if (k == key) return &v;
  return nullptr;
}

const JsonScalar* ChromeEvent::arg(std::string_view key) const {
  for (const ChromeArg& a : args)
    if (a.key == key) return &a.value;
  return nullptr;
}

bool parse_chrome_trace(std::string_view json, const std::string& source, ChromeDocument* doc,
                        const std::function<void(const ChromeEvent&)>& on_event, std::string* error,
                        size_t readable_padding, const std::function<void(size_t)>& on_consumed) {
  static_assert(kJsonPadding == simdjson::SIMDJSON_PADDING);
  Parser parser(source, json, readable_padding, on_event, on_consumed);
  // With the event scanner, every size takes the windowed path: the scanner reads the events in
  // place and the windows only what it refuses.
  if (json.size() >= kWindowedFrom || g_event_scanner.load(std::memory_order_relaxed)) {
    const Parser::Windowed windowed = parser.run_windowed(doc, kWindowBytes, error);
    if (windowed != Parser::Windowed::kNotApplicable) return windowed == Parser::Windowed::kDone;
  }
  return parser.run(doc, error);
}

bool parse_chrome_trace_in_windows(std::string_view json, const std::string& source, ChromeDocument* doc,
                                   const std::function<void(const ChromeEvent&)>& on_event,
                                   std::string* error, size_t window_bytes, bool* windowed,
                                   const std::function<void(size_t)>& on_consumed, size_t readable_padding) {
  Parser parser(source, json, readable_padding, on_event, on_consumed);
  const Parser::Windowed result = parser.run_windowed(doc, std::max<size_t>(window_bytes, 1), error);
  *windowed = result != Parser::Windowed::kNotApplicable;
  if (*windowed) return result == Parser::Windowed::kDone;
  return parser.run(doc, error);
}

}  // namespace strata::import

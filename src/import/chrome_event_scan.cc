#include "import/chrome_event_scan.h"

#include <cstdint>
#include <cstring>
#include <string_view>

#include "core/span_record.h"
#include "import/chrome_json_values.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace strata::import::detail {
namespace {

inline bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

inline const char* skip_space(const char* p, const char* end) {
  while (p < end && is_space(*p)) ++p;
  return p;
}

// The bytes that may follow a value: what ends it in every context the scanner reads.
inline bool ends_value(const char* p, const char* end) {
  return p >= end || is_space(*p) || *p == ',' || *p == '}' || *p == ']';
}

// `p` at an opening quote: the string's contents up to its closing quote, or nullptr when it holds a
// backslash (the generic path unescapes it), a control character or a byte above 0x7F (the generic
// path's stage 1 validates UTF-8; the scanner reads text no stage 1 has seen), or is not closed
// before `end`.
inline const char* scan_string(const char* p, const char* end, std::string_view* out) {
  const char* const start = p + 1;
  const char* q = start;
#if defined(__SSE2__)
  // 16 bytes at a time: a Kineto name is often 30-200 bytes (kernel signatures). The loads may run
  // up to 15 bytes past `end`, into the padding the caller guarantees readable.
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i space = _mm_set1_epi8(0x20);  // signed compare: below it are 0x00-0x1F and 0x80-0xFF
  for (;;) {
    if (q >= end) return nullptr;
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    const __m128i stop = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                                      _mm_cmplt_epi8(v, space));
    const unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(stop));
    if (mask != 0) {
      q += __builtin_ctz(mask);
      break;
    }
    q += 16;
  }
#else
  while (q < end && *q != '"' && *q != '\\' && static_cast<unsigned char>(*q) >= 0x20 &&
         static_cast<unsigned char>(*q) < 0x80)
    ++q;
#endif
  if (q >= end || *q != '"') return nullptr;
  *out = std::string_view(start, static_cast<size_t>(q - start));
  return q + 1;
}

inline bool is_digit(char c) { return c >= '0' && c <= '9'; }

// A JSON number exactly as the grammar has it (-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?),
// followed by a byte that ends a value; nullptr otherwise.
inline const char* scan_number(const char* p, const char* end) {
  if (p < end && *p == '-') ++p;
  if (p >= end) return nullptr;
  if (*p == '0') {
    ++p;
  } else if (*p >= '1' && *p <= '9') {
    while (p < end && is_digit(*p)) ++p;
  } else {
    return nullptr;
  }
  if (p < end && *p == '.') {
    const char* digits = ++p;
    while (p < end && is_digit(*p)) ++p;
    if (p == digits) return nullptr;
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    ++p;
    if (p < end && (*p == '+' || *p == '-')) ++p;
    const char* digits = p;
    while (p < end && is_digit(*p)) ++p;
    if (p == digits) return nullptr;
  }
  return ends_value(p, end) ? p : nullptr;
}

inline const char* scan_literal(const char* p, const char* end, std::string_view word) {
  if (static_cast<size_t>(end - p) < word.size() || std::memcmp(p, word.data(), word.size()) != 0)
    return nullptr;
  p += word.size();
  return ends_value(p, end) ? p : nullptr;
}

// Any value of the common shape, stepped over: the position after it, or nullptr.
const char* skip_value(const char* p, const char* end, int depth) {
  if (p >= end) return nullptr;
  std::string_view ignored;
  switch (*p) {
    case '"':
      return scan_string(p, end, &ignored);
    case 't':
      return scan_literal(p, end, "true");
    case 'f':
      return scan_literal(p, end, "false");
    case 'n':
      return scan_literal(p, end, "null");
    case '[':
    case '{': {
      if (depth >= kScanMaxDepth) return nullptr;
      const bool object = *p == '{';
      const char close = object ? '}' : ']';
      p = skip_space(p + 1, end);
      if (p < end && *p == close) return p + 1;
      for (;;) {
        if (object) {
          if (p >= end || *p != '"' || !(p = scan_string(p, end, &ignored))) return nullptr;
          p = skip_space(p, end);
          if (p >= end || *p != ':') return nullptr;
          p = skip_space(p + 1, end);
        }
        if (!(p = skip_value(p, end, depth + 1))) return nullptr;
        p = skip_space(p, end);
        if (p >= end) return nullptr;
        if (*p == close) return p + 1;
        if (*p != ',') return nullptr;
        p = skip_space(p + 1, end);
      }
    }
    default:
      return scan_number(p, end);
  }
}

// A number into a JsonScalar. An integer of at most 18 digits (pids, tids, ids, counts: most numbers
// of a trace) is summed while it is scanned, to the value number_scalar's small_integer gives;
// anything else is scanned by the grammar and converted by number_scalar.
inline const char* scan_number_scalar(const char* p, const char* end, JsonScalar* out) {
  const char* q = p;
  const bool negative = q < end && *q == '-';
  if (negative) ++q;
  const char* const digits = q;
  uint64_t v = 0;  // unsigned: past 18 digits it may wrap, and is not used then
  if (q < end && *q == '0') {
    ++q;
  } else {
    while (q < end && is_digit(*q)) v = v * 10 + static_cast<uint64_t>(*q++ - '0');
  }
  if (q != digits && q - digits <= 18 &&
      (q >= end || (*q != '.' && *q != 'e' && *q != 'E' && !is_digit(*q)))) {
    if (!ends_value(q, end)) return nullptr;
    out->text = std::string_view(p, static_cast<size_t>(q - p));
    out->kind = JsonScalar::kInt;
    out->i = negative ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
    out->d = static_cast<double>(out->i);
    return q;
  }
  const char* after = scan_number(p, end);
  if (after) number_scalar(std::string_view(p, static_cast<size_t>(after - p)), out);
  return after;
}

// A value into a JsonScalar as the generic read_scalar fills it (fields it does not set keep theirs).
const char* scan_scalar(const char* p, const char* end, JsonScalar* out) {
  if (p >= end) return nullptr;
  switch (*p) {
    case '"':
      out->kind = JsonScalar::kString;
      return scan_string(p, end, &out->text);
    case 't':
    case 'f': {
      const bool b = *p == 't';
      const char* after = scan_literal(p, end, b ? "true" : "false");
      if (after) {
        out->kind = JsonScalar::kBool;
        out->i = b ? 1 : 0;
      }
      return after;
    }
    case 'n': {
      const char* after = scan_literal(p, end, "null");
      if (after) out->kind = JsonScalar::kNull;
      return after;
    }
    case '[':
    case '{': {  // the raw JSON text, from the bracket to its match (the generic path's trimmed raw_json)
      const char* after = skip_value(p, end, 1);
      if (after) {
        out->kind = JsonScalar::kRaw;
        out->text = std::string_view(p, static_cast<size_t>(after - p));
      }
      return after;
    }
    default:
      return scan_number_scalar(p, end, out);
  }
}

// ph, cat, name, bp, s: a string is taken; any other value is stepped over (the field keeps what it had).
inline const char* scan_string_field(const char* p, const char* end, std::string_view* out) {
  if (p < end && *p == '"') return scan_string(p, end, out);
  return skip_value(p, end, 1);
}

inline bool number_byte(char c) {
  return is_digit(c) || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E';
}

// The time token every profiler writes ("1712195495505543.2", "7.583"): -?digits{1,16}(.digits{1,3})?
// followed by a byte that ends a value, read to exact nanoseconds in the pass that delimits it. Such a
// token is a whole run of number bytes without an exponent, which time_from_number gives to
// plain_us_to_ns: the same digits, the same value. nullptr for anything else (the general path).
inline const char* scan_plain_time(const char* p, const char* end, int64_t* ns) {
  const bool negative = *p == '-';
  const char* q = p + negative;
  const char* const digits = q;
  uint64_t v = 0;  // at most 19 digits: below 2^64
  while (q < end && is_digit(*q) && q - digits < 16) v = v * 10 + static_cast<uint64_t>(*q++ - '0');
  if (q == digits) return nullptr;
  int fraction = 0;
  if (q < end && *q == '.') {
    ++q;
    for (; q < end && is_digit(*q) && fraction < 3; ++fraction)
      v = v * 10 + static_cast<uint64_t>(*q++ - '0');
    if (fraction == 0) return nullptr;
  }
  if (!ends_value(q, end)) return nullptr;  // a 17th digit, a 4th decimal, an exponent, ...
  for (; fraction < 3; ++fraction) v *= 10;
  if (v > static_cast<uint64_t>(kMaxTimeNs)) return nullptr;
  *ns = negative ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
  return q;
}

inline const char* scan_time(const char* p, const char* end, std::optional<int64_t>* out, bool* malformed) {
  if (p < end && (*p == '-' || is_digit(*p))) {
    int64_t ns = 0;
    if (const char* after = scan_plain_time(p, end, &ns)) {
      *out = ns;
      return after;
    }
    // The token as the generic path delimits it (a run of number bytes up to what ends a value) and
    // the same conversion of it, which also tells a token that is not a number ("1.2.3": malformed
    // there too); the grammar is not walked a second time.
    const char* after = p;
    while (after < end && number_byte(*after)) ++after;
    if (!ends_value(after, end)) return nullptr;
    time_from_number(std::string_view(p, static_cast<size_t>(after - p)), out, malformed);
    return after;
  }
  JsonScalar s;
  const char* after = scan_scalar(p, end, &s);
  if (after) time_from_scalar(s, out, malformed);
  return after;
}

// "args": an object's members appended in order; any other value is stepped over.
const char* scan_args(const char* p, const char* end, ChromeEvent* ev) {
  if (p >= end || *p != '{') return skip_value(p, end, 1);
  p = skip_space(p + 1, end);
  if (p < end && *p == '}') return p + 1;
  for (;;) {
    if (p >= end || *p != '"') return nullptr;
    ChromeArg& arg = ev->args.emplace_back();
    if (!(p = scan_string(p, end, &arg.key))) return nullptr;
    p = skip_space(p, end);
    if (p >= end || *p != ':') return nullptr;
    if (!(p = scan_scalar(skip_space(p + 1, end), end, &arg.value))) return nullptr;
    p = skip_space(p, end);
    if (p >= end) return nullptr;
    if (*p == '}') return p + 1;
    if (*p != ',') return nullptr;
    p = skip_space(p + 1, end);
  }
}

// The event keys the importers read, told from the bytes after the opening quote by one or two
// loads (most keys of a Kineto event are these): the field and the position after the closing
// quote, or nullptr for any other key (then scan_string and event_field). The caller guarantees
// kJsonPadding readable bytes after `end`, so the loads may pass it.
constexpr uint32_t bytes_le(const char* s, int n) {
  uint32_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[i]);
  return v;
}

inline const char* known_key(const char* q, Field* field) {
  uint32_t w4;
  std::memcpy(&w4, q, 4);
  const uint32_t w3 = w4 & 0xFFFFFFu;
  switch (w3) {
    case bytes_le("ph\"", 3):
      *field = Field::kPh;
      return q + 3;
    case bytes_le("ts\"", 3):
      *field = Field::kTs;
      return q + 3;
    case bytes_le("id\"", 3):
      *field = Field::kId;
      return q + 3;
    case bytes_le("bp\"", 3):
      *field = Field::kBp;
      return q + 3;
    default:
      break;
  }
  switch (w4) {
    case bytes_le("cat\"", 4):
      *field = Field::kCat;
      return q + 4;
    case bytes_le("pid\"", 4):
      *field = Field::kPid;
      return q + 4;
    case bytes_le("tid\"", 4):
      *field = Field::kTid;
      return q + 4;
    case bytes_le("dur\"", 4):
      *field = Field::kDur;
      return q + 4;
    case bytes_le("name", 4):
      if (q[4] != '"') return nullptr;
      *field = Field::kName;
      return q + 5;
    case bytes_le("args", 4):
      if (q[4] != '"') return nullptr;
      *field = Field::kArgs;
      return q + 5;
    default:
      return nullptr;
  }
}

}  // namespace

const char* scan_chrome_event(const char* begin, const char* end, ChromeEvent* ev) {
  const char* p = begin;
  if (p >= end || *p != '{') return nullptr;
  p = skip_space(p + 1, end);
  if (p < end && *p == '}') return p + 1;
  for (;;) {
    if (p >= end || *p != '"') return nullptr;
    Field field = Field::kOther;
    if (const char* after_key = known_key(p + 1, &field)) {
      p = after_key;
    } else {
      std::string_view key;
      if (!(p = scan_string(p, end, &key))) return nullptr;
      field = event_field(key);
    }
    p = skip_space(p, end);
    if (p >= end || *p != ':') return nullptr;
    p = skip_space(p + 1, end);
    switch (field) {
      case Field::kPh:
        p = scan_string_field(p, end, &ev->ph);
        break;
      case Field::kCat:
        p = scan_string_field(p, end, &ev->cat);
        break;
      case Field::kName:
        p = scan_string_field(p, end, &ev->name);
        break;
      case Field::kBp:
        p = scan_string_field(p, end, &ev->bp);
        break;
      case Field::kScope:
        p = scan_string_field(p, end, &ev->scope);
        break;
      case Field::kPid:
        p = scan_scalar(p, end, &ev->pid);
        break;
      case Field::kTid:
        p = scan_scalar(p, end, &ev->tid);
        break;
      case Field::kId:
        p = scan_scalar(p, end, &ev->id);
        break;
      case Field::kTs:
        p = scan_time(p, end, &ev->ts_ns, &ev->ts_malformed);
        break;
      case Field::kDur:
        p = scan_time(p, end, &ev->dur_ns, &ev->dur_malformed);
        break;
      case Field::kArgs:
        p = scan_args(p, end, ev);
        break;
      case Field::kOther:
        p = skip_value(p, end, 1);
        break;
    }
    if (!p) return nullptr;
    p = skip_space(p, end);
    if (p >= end) return nullptr;
    if (*p == '}') return p + 1;
    if (*p != ',') return nullptr;
    p = skip_space(p + 1, end);
  }
}

}  // namespace strata::import::detail

// How the Chrome JSON reader turns a value's token into a JsonScalar or a time: shared by the generic
// On Demand path (chrome_json.cc) and the Kineto event scanner (chrome_event_scan.cc), so the two
// cannot give different events for the same text. Internal to src/import.
#pragma once

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>

#include "import/chrome_json.h"

namespace strata::import::detail {

// Whether a number token has a fraction or an exponent (one pass; find_first_of(".eE") calls memchr
// on the set once per character of the token, for every number of the file).
inline bool has_fraction_or_exponent(std::string_view token) {
  for (char c : token)
    if (c == '.' || c == 'e' || c == 'E') return true;
  return false;
}

inline bool has_exponent(std::string_view token) {
  for (char c : token)
    if (c == 'e' || c == 'E') return true;
  return false;
}

// An integer token of at most 18 digits (every pid, tid, id and count in practice) without
// std::from_chars' general machinery; the same value from_chars gives. False: use from_chars.
inline bool small_integer(std::string_view token, int64_t* out) {
  const bool negative = !token.empty() && token[0] == '-';
  const size_t first = negative ? 1 : 0;
  if (token.size() == first || token.size() - first > 18) return false;
  int64_t v = 0;
  for (size_t p = first; p < token.size(); ++p) {
    const unsigned digit = static_cast<unsigned char>(token[p]) - unsigned{'0'};
    if (digit > 9) return false;
    v = v * 10 + static_cast<int64_t>(digit);
  }
  *out = negative ? -v : v;
  return true;
}

// A number token (whitespace trimmed) into *out: kInt when it is an integer that fits, kDouble when
// from_chars reads a double from it, else kRaw; out->text is the token.
inline void number_scalar(std::string_view token, JsonScalar* out) {
  out->text = token;
  if (small_integer(token, &out->i)) {
    out->kind = JsonScalar::kInt;
    out->d = static_cast<double>(out->i);
    return;
  }
  if (!has_fraction_or_exponent(token)) {
    auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), out->i);
    if (ec == std::errc() && end == token.data() + token.size()) {
      out->kind = JsonScalar::kInt;
      out->d = static_cast<double>(out->i);
      return;
    }
  }
  auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), out->d);
  out->kind = (ec == std::errc()) ? JsonScalar::kDouble : JsonScalar::kRaw;
  (void)end;
}

// A time field read as a scalar of any kind: numbers and numeric strings are microseconds.
inline void time_from_scalar(const JsonScalar& s, std::optional<int64_t>* out, bool* malformed) {
  int64_t ns = 0;
  const bool numeric =
      s.kind == JsonScalar::kInt || s.kind == JsonScalar::kDouble || s.kind == JsonScalar::kString;
  if (numeric && parse_us_to_ns(s.text, &ns))
    *out = ns;
  else
    *malformed = true;
}

// A time field whose value is a number token: a plain decimal (what every profiler writes) goes
// straight to exact nanoseconds; with an exponent it takes the general path, which also requires
// the number to fit a double.
inline void time_from_number(std::string_view token, std::optional<int64_t>* out, bool* malformed) {
  if (!has_exponent(token)) {
    int64_t ns = 0;
    if (parse_us_to_ns(token, &ns))
      *out = ns;
    else
      *malformed = true;
    return;
  }
  JsonScalar s;
  number_scalar(token, &s);
  time_from_scalar(s, out, malformed);
}

// The event fields the importers read, told apart by length and bytes (a chain of string compares
// ran for every field of every event).
enum class Field : uint8_t { kOther, kPh, kCat, kName, kBp, kScope, kPid, kTid, kId, kTs, kDur, kArgs };

inline Field event_field(std::string_view key) {
  switch (key.size()) {
    case 1:
      return key[0] == 's' ? Field::kScope : Field::kOther;
    case 2:
      if (key == "ph") return Field::kPh;
      if (key == "ts") return Field::kTs;
      if (key == "id") return Field::kId;
      if (key == "bp") return Field::kBp;
      return Field::kOther;
    case 3:
      if (key == "cat") return Field::kCat;
      if (key == "pid") return Field::kPid;
      if (key == "tid") return Field::kTid;
      if (key == "dur") return Field::kDur;
      return Field::kOther;
    case 4:
      if (key == "name") return Field::kName;
      if (key == "args") return Field::kArgs;
      return Field::kOther;
    default:
      return Field::kOther;
  }
}

}  // namespace strata::import::detail

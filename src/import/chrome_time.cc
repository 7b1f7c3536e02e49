// Chrome-trace times: decimal microseconds ("1712195495505543.2") to exact integer nanoseconds
// (parse_us_to_ns, chrome_json.h), apart from the JSON reader that calls it for every ts and dur.
#include <cstdint>
#include <cstring>
#include <string_view>

#include "core/span_record.h"
#include "import/chrome_json.h"

namespace strata::import {

namespace {

// Whether the 8 bytes at p are all ASCII digits, and their value (SWAR: the 16 integer digits of a
// microsecond timestamp in two steps instead of 16 multiply-adds).
bool eight_digits(const char* p, uint64_t* value) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  if ((((v & 0xF0F0F0F0F0F0F0F0) | (((v + 0x0606060606060606) & 0xF0F0F0F0F0F0F0F0) >> 4)) !=
       0x3333333333333333))
    return false;
  v = ((v & 0x0F0F0F0F0F0F0F0F) * 2561) >> 8;
  v = ((v & 0x00FF00FF00FF00FF) * 6553601) >> 16;
  *value = ((v & 0x0000FFFF0000FFFF) * 42949672960001) >> 32;
  return true;
}

// What profilers write ("1712195495505543.2", "7.583", "12"): [-]digits[.digits] with at most 16
// digits before the point and 3 after, exact in 64 bits. False for anything else, which the general
// path below then reads (the same result where both apply: no rounding, no exponent).
bool plain_us_to_ns(std::string_view text, int64_t* ns) {
  size_t p = 0;
  const bool negative = !text.empty() && text[0] == '-';
  p += negative;
  uint64_t v = 0;
  const size_t int_begin = p;
  for (uint64_t eight = 0;
       p + 8 <= text.size() && p - int_begin < 16 && eight_digits(text.data() + p, &eight); p += 8)
    v = v * 100000000 + eight;
  while (p < text.size() && text[p] >= '0' && text[p] <= '9')
    v = v * 10 + static_cast<uint64_t>(text[p++] - '0');
  if (p == int_begin || p - int_begin > 16) return false;
  int fraction = 0;
  if (p < text.size() && text[p] == '.') {
    ++p;
    while (p < text.size() && text[p] >= '0' && text[p] <= '9' && fraction < 3) {
      v = v * 10 + static_cast<uint64_t>(text[p++] - '0');
      ++fraction;
    }
    if (fraction == 0) return false;
  }
  if (p != text.size()) return false;  // a 4th decimal, an exponent, anything else
  for (; fraction < 3; ++fraction) v *= 10;
  if (v > static_cast<uint64_t>(kMaxTimeNs)) return false;
  *ns = negative ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
  return true;
}

}  // namespace

bool parse_us_to_ns(std::string_view text, int64_t* ns) {
  if (plain_us_to_ns(text, ns)) return true;
  size_t p = 0;
  bool negative = false;
  if (p < text.size() && (text[p] == '-' || text[p] == '+')) negative = text[p++] == '-';
  __int128 digits = 0;
  int exponent = 3;  // microseconds -> nanoseconds
  int significant = 0;
  bool any_digit = false;
  auto take_digit = [&](char c, bool fraction) {
    any_digit = true;
    if (significant < 36) {
      digits = digits * 10 + (c - '0');
      if (digits != 0) ++significant;
      if (fraction) --exponent;
    } else if (!fraction) {
      ++exponent;  // too many digits: keep the magnitude, drop precision beyond 36 digits
    }
  };
  while (p < text.size() && text[p] >= '0' && text[p] <= '9') take_digit(text[p++], false);
  if (p < text.size() && text[p] == '.') {
    ++p;
    while (p < text.size() && text[p] >= '0' && text[p] <= '9') take_digit(text[p++], true);
  }
  if (!any_digit) return false;
  if (p < text.size() && (text[p] == 'e' || text[p] == 'E')) {
    ++p;
    bool exp_negative = false;
    if (p < text.size() && (text[p] == '-' || text[p] == '+')) exp_negative = text[p++] == '-';
    int e = 0;
    bool exp_digit = false;
    while (p < text.size() && text[p] >= '0' && text[p] <= '9') {
      exp_digit = true;
      if (e < 10000) e = e * 10 + (text[p] - '0');
      ++p;
    }
    if (!exp_digit) return false;
    exponent += exp_negative ? -e : e;
  }
  if (p != text.size()) return false;
  constexpr __int128 kMax = kMaxTimeNs;  // the times a trace holds (core/span_record.h)
  if (digits == 0) {
    *ns = 0;
    return true;
  }
  if (exponent >= 0) {
    if (exponent > 19) return false;
    for (int k = 0; k < exponent; ++k) {
      digits *= 10;
      if (digits > kMax) return false;
    }
  } else {
    if (exponent < -36) {  // digits < 10^36: rounds to zero
      digits = 0;
    } else {
      __int128 divisor = 1;
      for (int k = 0; k < -exponent; ++k) divisor *= 10;
      digits = (digits + divisor / 2) / divisor;
    }
  }
  if (digits > kMax) return false;
  *ns = static_cast<int64_t>(negative ? -digits : digits);
  return true;
}

}  // namespace strata::import

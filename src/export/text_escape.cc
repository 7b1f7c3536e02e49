#include "export/text_escape.h"

#include <cstdint>
#include <cstdio>

namespace strata::exporter {

namespace {
// Length of a well-formed UTF-8 sequence starting at s[i] (Unicode 15, table 3-7), or 0. Overlong
// forms (C0 80 for NUL, E0 80..9F .., F0 80..8F ..), UTF-16 surrogates (ED A0..BF ..) and code
// points above U+10FFFF are not well formed: strict decoders (Python's, browsers') reject them.
size_t utf8_length(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;  // continuation byte, C0/C1 (always overlong), F5..FF
  }
  if (i + n > s.size() || byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if ((byte(i + k) >> 6) != 0x2) return 0;
  return n;
}
}  // namespace

void append_json_string(std::string* out, std::string_view text) {
  out->push_back('"');
  for (size_t i = 0; i < text.size();) {
    char c = text[i];
    switch (c) {
      case '"': *out += "\\\""; ++i; continue;
      case '\\': *out += "\\\\"; ++i; continue;
      case '\n': *out += "\\n"; ++i; continue;
      case '\r': *out += "\\r"; ++i; continue;
      case '\t': *out += "\\t"; ++i; continue;
      default: break;
    }
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", u);
      *out += buf;
      ++i;
      continue;
    }
    size_t n = utf8_length(text, i);
    if (n == 0) {
      *out += "\\ufffd";
      ++i;
      continue;
    }
    out->append(text.data() + i, n);
    i += n;
  }
  out->push_back('"');
}

void append_csv_field(std::string* out, std::string_view text) {
  const bool quote = text.find_first_of(",\"\r\n") != std::string_view::npos;
  if (quote) out->push_back('"');
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8_length(text, i);
    if (n == 0) {  // not well-formed UTF-8: U+FFFD, as in JSON
      *out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    if (quote && text[i] == '"') out->push_back('"');
    out->append(text.data() + i, n);
    i += n;
  }
  if (quote) out->push_back('"');
}

}  // namespace strata::exporter

#include "export/text_escape.h"

#include <cstdint>
#include <cstdio>

#include "core/utf8.h"

namespace strata::exporter {

namespace {
// Length of a well-formed UTF-8 sequence at s[i], or 0: overlong forms (C0 80 for NUL), UTF-16
// surrogates and code points above U+10FFFF are not, and strict decoders (Python's, browsers')
// reject them; JSON and CSV outputs replace them with U+FFFD.
size_t utf8_length(std::string_view s, size_t i) {
  uint32_t code_point = 0;
  return core::decode_utf8(s, i, &code_point);
}

bool unsafe_on_terminal(uint32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

}  // namespace

bool needs_terminal_escape(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    size_t n = core::decode_utf8(text, i, &cp);
    if (n == 0 || unsafe_on_terminal(cp)) return true;
    i += n;
  }
  return false;
}

std::string escape_terminal(std::string_view text) {
  if (!needs_terminal_escape(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 16);
  char buf[16];
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    size_t n = core::decode_utf8(text, i, &cp);
    if (n == 0) {  // not UTF-8: the byte's value
      std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned char>(text[i]));
      out += buf;
      ++i;
      continue;
    }
    if (!unsafe_on_terminal(cp)) {
      out.append(text.data() + i, n);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp < 0x80) {
      std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned>(cp));
      out += buf;
    } else {
      std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(cp));
      out += buf;
    }
    i += n;
  }
  return out;
}

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

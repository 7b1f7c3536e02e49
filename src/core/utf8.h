// Well-formed UTF-8: what strict decoders (Python's, browsers', protobuf's) accept. Names in a trace
// come from places that do not promise it (another process's memory read while it changes, ELF
// symbol tables, foreign trace files); every text output passes them through here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace strata::core {

// The well-formed UTF-8 sequence at s[i] (no overlong form, no UTF-16 surrogate, at most U+10FFFF):
// its length, with its code point in *code_point; 0 when the bytes there are not one.
size_t decode_utf8(std::string_view s, size_t i, uint32_t* code_point);

// Whether all of `s` is well-formed UTF-8.
bool is_valid_utf8(std::string_view s);

// Appends `s` with every byte that does not begin a well-formed sequence replaced by U+FFFD (one per
// byte, as Python's errors="replace" and the WHATWG decoder do).
void append_valid_utf8(std::string* out, std::string_view s);

// Appends code point `c` as UTF-8; a surrogate or a value above U+10FFFF becomes U+FFFD.
void append_code_point(std::string* out, uint32_t c);

}  // namespace strata::core

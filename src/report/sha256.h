// SHA-256 (FIPS 180-4) of the page's inline scripts, for the Content-Security-Policy's hash sources:
// the report's policy lets exactly the scripts it was written with run, and no other (docs/report.md).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace strata::report {

std::array<uint8_t, 32> sha256(std::string_view bytes);

// Standard base64 (RFC 4648 section 4, with '=' padding), the encoding CSP hash sources use.
std::string base64(const uint8_t* bytes, size_t size);

// "'sha256-BASE64'": the CSP source that allows an inline <script> whose text is exactly `script`.
std::string csp_script_hash(std::string_view script);

}  // namespace strata::report

// Escaping for the text formats Strata writes (JSON strings, CSV fields).
#pragma once

#include <string>
#include <string_view>

namespace strata::exporter {

// Appends `text` as a JSON string literal (with quotes). Invalid UTF-8 bytes become U+FFFD so the
// output always parses.
void append_json_string(std::string* out, std::string_view text);
// Appends a CSV field, quoted when it holds a comma, quote or line break (RFC 4180).
void append_csv_field(std::string* out, std::string_view text);

}  // namespace strata::exporter

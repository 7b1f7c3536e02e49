// Escaping for the text formats Strata writes (JSON strings, CSV fields).
#pragma once

#include <string>
#include <string_view>

namespace strata::exporter {

// Appends `text` as a JSON string literal (with quotes). Bytes that are not well-formed UTF-8
// (stray or truncated sequences, overlong forms, surrogates, > U+10FFFF) become U+FFFD, one per
// byte, so the output always passes a strict UTF-8 decoder.
void append_json_string(std::string* out, std::string_view text);
// Appends a CSV field, quoted when it holds a comma, quote or line break (RFC 4180); bytes that are
// not well-formed UTF-8 become U+FFFD as in JSON.
void append_csv_field(std::string* out, std::string_view text);

// Text from a trace shown on a terminal (span names, host names, command lines, warnings): control
// characters (C0, DEL, C1), the bidirectional overrides and bytes that are not valid UTF-8 are
// written as escapes (\n, \t, \x1b, \u009b, \u202e), so a crafted name cannot move the cursor,
// rewrite the screen, retitle the window or reorder what is shown. Everything else is unchanged.
std::string escape_terminal(std::string_view text);
// Whether escape_terminal would change `text`.
bool needs_terminal_escape(std::string_view text);

}  // namespace strata::exporter

// The Kineto event scanner: reads one trace event object straight from its bytes, for the common
// shape (keys without escapes; ph/cat/name/pid/tid/ts/dur/id/bp/s/args and any others in any order;
// strings without escapes, numbers, true/false/null, and arrays or objects of those as arg values or
// unknown fields), instead of simdjson On Demand's generic walk. Anything else (an escape, a value
// where the grammar is not followed exactly, nesting deeper than kScanMaxDepth, a string byte outside
// printable ASCII: no stage 1 has validated the text) makes it refuse, and
// the caller reads that event through the generic path, which also reports any error: the scanner
// accepts a strict subset of what the generic path accepts and fills the same ChromeEvent fields
// the same way (the value conversions are shared: chrome_json_values.h). Internal to src/import.
#pragma once

#include <cstddef>

#include "import/chrome_json.h"

namespace strata::import::detail {

inline constexpr int kScanMaxDepth = 16;

// `begin` points at the event's '{'; `end` is the end of the parsed text, with at least kJsonPadding
// readable bytes after it. Returns the position after the event's '}' with *ev's fields set as the
// generic path sets them (ev must be reset by the caller: index and offset are not touched), or
// nullptr when the event is not of the common shape (*ev is then partly written: reset it again).
const char* scan_chrome_event(const char* begin, const char* end, ChromeEvent* ev);

}  // namespace strata::import::detail

// What the --db string fuzzer runs on one input, shared with the gtest that replays its corpus
// (tests/fuzz): a broken invariant aborts.
#pragma once

#include <string_view>

namespace strata::fuzz {

// Any string is a URI, a file or one refusal line, and redaction never leaves a password readable:
// redacting is idempotent and what it returns holds no password but "***".
void run_db_url(std::string_view text);

}  // namespace strata::fuzz

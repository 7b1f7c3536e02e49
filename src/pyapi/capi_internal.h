// What the C API's objects hold (capi.h declares them opaque to callers).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "pyapi/capi.h"
#include "table/table.h"
#include "trace/trace.h"

namespace strata::pyapi {

// Strings as capi.h hands them out: one buffer, count+1 offsets.
struct StringColumn {
  std::string bytes;
  std::vector<uint64_t> offsets{0};
  void add(std::string_view s) {
    bytes.append(s);
    offsets.push_back(bytes.size());
  }
  strata_capi_strings view() const { return {bytes.data(), offsets.data(), offsets.size() - 1}; }
};

// The error line of the last failed call on this thread.
void set_error(std::string message);
void clear_error();

}  // namespace strata::pyapi

struct strata_capi_trace {
  strata::trace::Trace trace;
  // Span name codes: distinct names in order of first use, and each string id's code (-1: unused).
  strata::pyapi::StringColumn span_names;
  std::vector<int32_t> name_code_of_string;
  // Attribute keys and string values, built by strata_capi_fill_attrs, and the info document, built
  // on first use: under this lock (ctypes lets Python threads call in at the same time).
  std::mutex lazy_mu;
  strata::pyapi::StringColumn attr_strings;
  std::vector<int32_t> attr_code_of_string;
  std::string info_json;
  std::string summary_json;
};

struct strata_capi_tables {
  std::vector<strata::table::Table> tables;
  std::vector<strata::pyapi::StringColumn> columns;  // per table: its column names
  std::vector<std::string> notes;                    // per table: its notes joined by '\n'
  strata::pyapi::StringColumn text;                  // the last strata_capi_column_text
  std::string missing_input;                         // the analysis's missing_input line
};

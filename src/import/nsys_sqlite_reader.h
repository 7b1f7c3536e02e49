// Nsight Systems SQLite reader (see nsys_sqlite_reader.cc for the table mapping).
#pragma once

#include <string>

#include "import/importer.h"
#include "trace/trace_builder.h"

namespace strata::import {

// Reads an nsys SQLite export into the builder (not finished). *stats (optional) gets import.* stats.
bool import_nsys_sqlite(const std::string& path, trace::TraceBuilder& builder, std::string* error,
                        ImportStats* stats);
// Registers the "nsys" reader (formats nsys, nsys-sqlite, sqlite). Idempotent.
void register_nsys_reader();

}  // namespace strata::import

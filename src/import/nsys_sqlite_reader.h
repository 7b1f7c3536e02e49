// Nsight Systems SQLite reader (see nsys_sqlite_reader.cc for the table mapping).
#pragma once

#include <string>

#include "import/importer.h"
#include "trace/trace_builder.h"

namespace strata::import {

// The export's tables as Kineto-vocabulary trace JSON (what the Kineto converter reads). False with
// *error set to one line naming the file and the table or column when the database is not a usable
// nsys export.
bool nsys_to_kineto_json(const std::string& path, std::string* json, std::string* error);
// Reads an nsys SQLite export into the builder (not finished). *stats (optional) gets import.* stats.
bool import_nsys_sqlite(const std::string& path, trace::TraceBuilder& builder, std::string* error,
                        ImportStats* stats);
// Registers the "nsys" reader (formats nsys, nsys-sqlite, sqlite). Idempotent.
void register_nsys_reader();

}  // namespace strata::import

// Small helpers shared by the subcommands: error lines, option values, printing a trace summary.
#pragma once

#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trace/trace.h"
#include "trace/trace_reader.h"
#include "trace/trace_summary.h"

namespace strata::cli {

// Prints "strata <command>: <message>" to stderr; returns `code` for `return fail(...)`.
int fail(std::string_view command, std::string_view message, int code = 2);

// "warning: ..." for each of a trace's warnings (escaped for the terminal); nothing with --quiet.
void print_warnings(const std::vector<std::string>& warnings);
// One warning line when files a trace names (modules, debug files) were refused unopened during
// the command (core/input_file.h: not regular files, or too large): how many, and the first.
void print_named_file_refusals();

// What a command reads: a trace (a file, or a directory of per-process files) or one file.
enum class InputKind { kTrace, kFile };
// The check every command makes on the paths it reads, before loading anything: each exists and
// is a regular file (or, for kTrace, a directory). A named pipe, a device (/dev/zero) or a socket
// is refused with one line naming it and what to do, so nothing blocks on it or reads it forever;
// the readers refuse them again if a path changes in between.
bool check_inputs(const std::vector<std::string>& paths, InputKind kind, std::string* error);

// Opens traces of every format this build reads (native; with the importer, Kineto/PyTorch, ONNX
// Runtime and TensorFlow JSON) through the model's reader registry, after check_inputs; several
// paths become one trace (sorted once, one span tree). One error line on failure. With --verbose,
// says which reader reads each path and what was read in how long; a progress line on a terminal.
bool open_inputs(std::span<const std::string> paths, trace::Trace* trace, std::string* error,
                 const trace::OpenOptions& options = {});
// The same for one path.
bool load_native_or_import(const std::string& path, trace::Trace* trace, std::string* error);

// Directory holding the running `strata` executable.
std::string executable_dir();

// The closing summary: spans per level and process, lost events by cause (with what to do when a
// full buffer lost spans), events kept with damage, load problems, warnings. Text from the trace
// is escaped for the terminal.
void print_summary(const trace::TraceSummary& summary, FILE* out, size_t max_warnings = 10);

// Every non-zero stat, of the trace and of each process: scope, name, value, severity, description.
void print_stats(const stats::StatSet& trace_stats, std::span<const trace::Process> processes, FILE* out);

std::string format_duration_ns(int64_t ns);

}  // namespace strata::cli

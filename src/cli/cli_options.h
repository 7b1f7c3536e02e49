// One usage style for every `strata` subcommand: options parsed by CLI11 (GNU style: --opt VALUE,
// --opt=VALUE, -o VALUE, -oVALUE), values validated while parsing, `strata CMD --help` generated from
// the same declarations (and man pages from that help, by help2man), and a usage error reported as one
// line with exit code 2. The flags every command shares (--quiet, --verbose, --force, -o, --format)
// are declared here once, with the same names and words everywhere.
//
// Also what every command does around its work: messages by verbosity, output files (never through a
// link, an existing one replaced only with --force, a name ending in .gz gzip-compressed), and a
// progress line on stderr while long work runs (only when stderr is a terminal).
#pragma once

#include <CLI/CLI.hpp>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cli/safe_files.h"

namespace strata::cli {

// How much a command prints on stderr besides its errors (set by --quiet / --verbose).
enum class Verbosity { kQuiet, kNormal, kVerbose };
Verbosity verbosity();
void set_verbosity(Verbosity v);
inline bool is_quiet() { return verbosity() == Verbosity::kQuiet; }
inline bool is_verbose() { return verbosity() == Verbosity::kVerbose; }

// The running subcommand's name (set by CommandLine), for messages of shared code.
const char* current_command();

// "strata CMD: ..." on stderr unless --quiet (notes, warnings about the input, where a file went).
void inform(const char* command, const char* format, ...) __attribute__((format(printf, 2, 3)));
// The same, only with --verbose: what was read, by which reader, counts, timings.
void detail(const char* command, const char* format, ...) __attribute__((format(printf, 2, 3)));

class CommandLine {
 public:
  // `command` is the subcommand's name; `description` the first paragraph of its --help.
  CommandLine(std::string command, std::string description);

  CLI::App& app() { return app_; }
  const std::string& command() const { return command_; }

  // --force: replace an existing output (only a regular file of the user's).
  CLI::Option* add_force(bool* force);
  // -o/--output FILE (or `names` for a command whose output has other spellings).
  CLI::Option* add_output(std::string* path, const std::string& description,
                          const std::string& names = "-o,--output");
  // -f/--format NAME, one of `choices` (checked while parsing).
  CLI::Option* add_format(std::string* format, const std::vector<std::string>& choices,
                          const std::string& description);
  // What an extra positional argument means for this command ("one trace at a time").
  void set_extra_argument_note(const std::string& note) { extra_argument_note_ = note; }
  // Text after the option list in --help (details, examples).
  void set_footer(const std::string& text) { app_.footer(text); }

  // Parses argv (argv[0]: the subcommand). Returns -1 to go on, 0 after --help (printed on stdout),
  // or 2 after a usage error (one line on stderr naming the option and pointing at --help).
  int parse(int argc, char** argv);
  // A usage error found after parsing (two options that do not go together, ...): one line, 2.
  int usage_error(const std::string& message) const;

 private:
  std::string command_;
  CLI::App app_;
  std::string extra_argument_note_;
  bool quiet_ = false, verbose_ = false;
};

// Validators for the common kinds of values.
CLI::Validator positive_count(int64_t max);  // an integer from 1 to max
// A number in [min, max] (inclusive ends unless `open`), described by `what` in the error:
// "--alpha: 2 is not a probability between 0 and 1".
CLI::Validator number_in(double min, double max, const std::string& what, bool open = false);

bool is_gzip_name(const std::string& path);
// A native .strata trace is written chunk by chunk and read by seeking (zstd per chunk with
// --compress N), so it is never gzip'd: a .gz output name for it is refused with this line.
bool refuse_gzip_native(const std::string& path, std::string* error);

// An output file of any format: begin() checks the target (as OutputFile does), path() is where the
// caller writes the plain content, commit() gzip-compresses it when the target's name ends in .gz
// and moves the result into place. Nothing is left behind without commit().
class Output {
 public:
  Output() = default;
  ~Output();
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;

  bool begin(const std::string& target, bool force, std::string* error);
  // `name` inside an output directory (OutputFile::begin_in).
  bool begin_in(const OutputDir& dir, const std::string& name, bool force, std::string* error);
  const std::string& path() const { return gzip_ ? plain_ : file_.temp_path(); }
  bool gzip() const { return gzip_; }
  // The content is complete: gzip-compresses it for a .gz target (the step that may fail for want of
  // space), so that commit() only moves it into place. commit() does it when not done yet.
  bool finish_content(std::string* error);
  bool commit(std::string* error);

 private:
  bool begin_plain(const std::string& shown, std::string* error);

  OutputFile file_;
  std::string plain_;  // the uncompressed content of a .gz target, next to it
  bool gzip_ = false;
};

// A progress line on stderr for long work ("strata import: reading x.json  12.3 s"): shown only
// when stderr is a terminal and not --quiet, redrawn at most 4 times a second, erased when done.
class Progress {
 public:
  explicit Progress(const char* command);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // What is being done now; `total` > 0 shows "done/total" (set with step()).
  void phase(const std::string& text, uint64_t total = 0);
  void step(uint64_t done);
  void done();  // erases the line (also done by the destructor)
  bool active() const { return active_; }

 private:
  void run();
  void draw_locked();

  const char* command_;
  bool active_ = false;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::string phase_;
  uint64_t done_ = 0, total_ = 0;
  int64_t phase_start_ns_ = 0;
  bool stop_ = false, drawn_ = false;
  std::thread thread_;
};

}  // namespace strata::cli

#include "cli/cli_options.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "export/text_escape.h"

namespace strata::cli {
namespace {

std::atomic<Verbosity> g_verbosity{Verbosity::kNormal};
std::string g_command = "strata";

// Notes and details quote files too: the formatted line is escaped for the terminal as a whole.
void vprint(const char* command, const char* format, va_list args) {
  va_list again;
  va_copy(again, args);
  const int length = std::vsnprintf(nullptr, 0, format, args);
  std::string line(length > 0 ? static_cast<size_t>(length) : 0, '\0');
  if (length > 0) std::vsnprintf(line.data(), line.size() + 1, format, again);
  va_end(again);
  std::fprintf(stderr, "strata %s: %s\n", command, exporter::escape_terminal(line).c_str());
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// gzip of `plain` into `gz` (already created, empty), level 6 as gzip(1) uses.
bool gzip_file(const std::string& plain, const std::string& gz, std::string* error) {
  FILE* in = std::fopen(plain.c_str(), "rb");
  if (in == nullptr) {
    *error = plain + ": cannot read back for compression: " + std::strerror(errno);
    return false;
  }
  gzFile out = gzopen(gz.c_str(), "wb6");
  if (out == nullptr) {
    std::fclose(in);
    *error = gz + ": cannot open for gzip output";
    return false;
  }
  std::vector<char> buf(1 << 20);
  bool ok = true;
  int write_errno = 0;  // zlib writes with write(2): errno says why it failed
  size_t n;
  while (ok && (n = std::fread(buf.data(), 1, buf.size(), in)) > 0) {
    errno = 0;
    ok = gzwrite(out, buf.data(), static_cast<unsigned>(n)) == static_cast<int>(n);
    if (!ok) write_errno = errno;
  }
  const bool read_ok = !std::ferror(in);
  std::fclose(in);
  errno = 0;
  if (gzclose(out) != Z_OK && ok) {
    ok = false;
    write_errno = errno;
  }
  if (!read_ok)
    *error = plain + ": cannot read back for compression";
  else if (!ok)
    *error = gz + ": write failed: " + (write_errno ? std::strerror(write_errno) : "gzip compression failed");
  return ok && read_ok;
}

// CLI11's help, with a flag's default value ("--sample{999}") left out of its name: the
// description says it.
class Formatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* opt, bool positional) const override {
    std::string name = CLI::Formatter::make_option_name(opt, positional);
    for (size_t open; (open = name.find('{')) != std::string::npos;) {
      const size_t close = name.find('}', open);
      if (close == std::string::npos) break;
      name.erase(open, close - open + 1);
    }
    return name;
  }
};

}  // namespace

const char* current_command() { return g_command.c_str(); }

Verbosity verbosity() { return g_verbosity.load(std::memory_order_relaxed); }
void set_verbosity(Verbosity v) { g_verbosity.store(v, std::memory_order_relaxed); }

void inform(const char* command, const char* format, ...) {
  if (is_quiet()) return;
  va_list args;
  va_start(args, format);
  vprint(command, format, args);
  va_end(args);
}

void detail(const char* command, const char* format, ...) {
  if (!is_verbose()) return;
  va_list args;
  va_start(args, format);
  vprint(command, format, args);
  va_end(args);
}

CommandLine::CommandLine(std::string command, std::string description)
    : command_(std::move(command)), app_(std::move(description), "strata " + command_) {
  g_command = command_;
  app_.formatter(std::make_shared<Formatter>());
  app_.get_formatter()->column_width(34);
  app_.add_flag("-q,--quiet", quiet_, "print errors only");
  app_.add_flag("-v,--verbose", verbose_, "also print what was read, by which reader, counts and timings");
  app_.get_option("--quiet")->excludes("--verbose");
}

CLI::Option* CommandLine::add_force(bool* force) {
  return app_.add_flag("--force", *force, "replace an output that exists (only a regular file of yours)");
}

CLI::Option* CommandLine::add_output(std::string* path, const std::string& description,
                                     const std::string& names) {
  return app_.add_option(names, *path, description)->type_name("FILE");
}

CLI::Option* CommandLine::add_format(std::string* format, const std::vector<std::string>& choices,
                                     const std::string& description) {
  return app_.add_option("-f,--format", *format, description)
      ->check(CLI::IsMember(choices))
      ->type_name("NAME");
}

int CommandLine::parse(int argc, char** argv) {
  // "-o=FILE" meant FILE before CLI11 (which would read "=FILE"): split it for a short option
  // this command has. Not for record, whose words after the options are the traced command's.
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--" || app_.get_prefix_command()) {
      args.insert(args.end(), argv + i, argv + argc);
      break;
    }
    if (word.size() > 3 && word[0] == '-' && word[1] != '-' && word[2] == '=' &&
        app_.get_option_no_throw(word.substr(0, 2)) != nullptr) {
      args.push_back(word.substr(0, 2));
      args.push_back(word.substr(3));
    } else {
      args.push_back(word);
    }
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes the words last first
  try {
    app_.parse(args);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app_.help().c_str(), stdout);
    return 0;
  } catch (const CLI::ExtrasError& e) {
    // Said the way every command said it before CLI11: what the word is, and what to do.
    const std::vector<std::string> extras = app_.remaining();
    if (extras.empty()) return usage_error(e.what());
    const std::string& word = extras.front();
    if (word.size() > 1 && word[0] == '-') return usage_error("unknown option " + word);
    return usage_error(extra_argument_note_.empty() ? "unexpected argument '" + word + "'"
                                                    : extra_argument_note_ + " (got '" + word + "' too)");
  } catch (const CLI::ParseError& e) {
    // An unknown option explains a missing argument (CLI11 checks requirements first).
    const std::vector<std::string> extras = app_.remaining();
    if (!extras.empty() && extras.front().size() > 1 && extras.front()[0] == '-' && extras.front() != "--")
      return usage_error("unknown option " + extras.front());
    return usage_error(e.what());
  }
  set_verbosity(quiet_ ? Verbosity::kQuiet : verbose_ ? Verbosity::kVerbose : Verbosity::kNormal);
  return -1;
}

int CommandLine::usage_error(const std::string& message) const {
  std::string line = message;
  while (!line.empty() && line.back() == '\n') line.pop_back();
  for (char& c : line)  // one line, whatever CLI11 or the caller put in it
    if (c == '\n') c = ' ';
  std::fprintf(stderr, "strata %s: %s (see 'strata %s --help')\n", command_.c_str(),
               exporter::escape_terminal(line).c_str(), command_.c_str());
  return 2;
}

CLI::Validator positive_count(int64_t max) { return CLI::Range(int64_t{1}, max); }

CLI::Validator number_in(double min, double max, const std::string& what, bool open) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        const bool inside = open ? v > min && v < max : v >= min && v <= max;
        if (text.empty() || *end != '\0' || !std::isfinite(v) || !inside) return text + " is not " + what;
        return "";
      },
      "", "number");
}

bool is_gzip_name(const std::string& path) { return path.size() > 3 && path.ends_with(".gz"); }

bool refuse_gzip_native(const std::string& path, std::string* error) {
  if (!is_gzip_name(path)) return false;
  *error = path +
           ": a native Strata trace is not gzip-compressed (readers seek in it; --compress N compresses its "
           "chunks with zstd); drop the .gz";
  return true;
}

Output::~Output() {
  if (!plain_.empty()) ::unlink(plain_.c_str());
}

bool Output::begin(const std::string& target, bool force, std::string* error) {
  if (!file_.begin(target, force, error)) return false;
  gzip_ = is_gzip_name(target);
  return begin_plain(target, error);
}

bool Output::begin_in(const OutputDir& dir, const std::string& name, bool force, std::string* error) {
  if (!file_.begin_in(dir, name, force, error)) return false;
  gzip_ = is_gzip_name(name);
  return begin_plain(dir.path() + "/" + name, error);
}

bool Output::begin_plain(const std::string& shown, std::string* error) {
  if (!gzip_) return true;
  std::string tmpl = file_.temp_path() + ".plain-XXXXXX";
  int fd = ::mkostemp(tmpl.data(), O_CLOEXEC);  // exclusive, mode 0600: the content before gzip
  if (fd < 0) {
    *error = shown + ": cannot create a temporary file next to it: " + std::strerror(errno);
    file_.discard();
    return false;
  }
  ::close(fd);
  plain_ = tmpl;
  return true;
}

bool Output::finish_content(std::string* error) {
  if (!gzip_ || plain_.empty()) return true;
  bool ok = gzip_file(plain_, file_.temp_path(), error);
  ::unlink(plain_.c_str());
  plain_.clear();
  return ok;
}

bool Output::commit(std::string* error) { return finish_content(error) && file_.commit(error); }

Progress::Progress(const char* command) : command_(command) {
  active_ = ::isatty(STDERR_FILENO) == 1 && !is_quiet();
  if (active_) thread_ = std::thread([this] { run(); });
}

Progress::~Progress() { done(); }

void Progress::phase(const std::string& text, uint64_t total) {
  if (!active_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  phase_ = exporter::escape_terminal(text);
  total_ = total;
  done_ = 0;
  phase_start_ns_ = now_ns();
}

void Progress::step(uint64_t done) {
  if (!active_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  done_ = done;
}

void Progress::done() {
  if (!active_) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  active_ = false;
  if (drawn_) std::fputs("\r\033[K", stderr);  // erase the line: what follows starts clean
  std::fflush(stderr);
}

void Progress::draw_locked() {
  if (phase_.empty()) return;
  const double seconds = static_cast<double>(now_ns() - phase_start_ns_) / 1e9;
  char counts[64] = "";
  if (total_ > 0)
    std::snprintf(counts, sizeof(counts), " %llu/%llu", static_cast<unsigned long long>(done_),
                  static_cast<unsigned long long>(total_));
  std::string line = "strata " + std::string(command_) + ": " + phase_ + counts;
  if (line.size() > 100) line = line.substr(0, 97) + "...";  // one terminal line: \r must reach its start
  std::fprintf(stderr, "\r\033[K%s  %.1f s", line.c_str(), seconds);
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::run() {
  // The first draw waits a little: work that ends quickly shows no progress line at all.
  std::unique_lock<std::mutex> lock(mutex_);
  if (wake_.wait_for(lock, std::chrono::milliseconds(500), [this] { return stop_; })) return;
  while (!stop_) {
    draw_locked();
    wake_.wait_for(lock, std::chrono::milliseconds(250), [this] { return stop_; });
  }
}

}  // namespace strata::cli

#include "annotate/mca.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/env_vars.h"

extern char** environ;

namespace strata::annotate {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// "Key:   value" -> value, when the line starts with the key.
bool field(std::string_view line, std::string_view key, std::string_view* value) {
  if (line.substr(0, key.size()) != key || line.size() <= key.size() || line[key.size()] != ':') return false;
  *value = trim(line.substr(key.size() + 1));
  return true;
}

bool read_number(std::string_view text, double* out) {
  const std::string s(text);
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return !s.empty() && end == s.c_str() + s.size();
}

}  // namespace

bool parse_mca_output(std::string_view text, std::map<std::string, BlockCost>* regions, std::string* error) {
  std::string region;
  BlockCost cost;
  bool in_summary = false;
  size_t line_no = 0;
  auto finish = [&] {
    if (in_summary) (*regions)[region] = cost;
    in_summary = false;
    cost = BlockCost{};
  };
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view line = trim(text.substr(pos, nl - pos));
    pos = nl + 1;
    ++line_no;
    std::string_view value;
    double number = 0;
    if (line.size() > 1 && line[0] == '[' && line.find("] Code Region") != std::string_view::npos) {
      finish();
      const size_t dash = line.find(" - ");
      region = dash == std::string_view::npos ? std::string() : std::string(trim(line.substr(dash + 3)));
    } else if (field(line, "Iterations", &value) || field(line, "Total Cycles", &value) ||
               field(line, "Block RThroughput", &value)) {
      if (!read_number(value, &number) || number < 0) {
        *error = "llvm-mca output line " + std::to_string(line_no) + ": '" + std::string(line) +
                 "' is not a number";
        return false;
      }
      if (line.substr(0, 10) == "Iterations") {
        if (in_summary) finish();  // a second summary without a region header
        in_summary = true;
        cost.iterations = static_cast<uint64_t>(number);
      } else if (line.substr(0, 5) == "Total") {
        cost.total_cycles = static_cast<uint64_t>(number);
      } else {
        cost.block_rthroughput = number;
      }
    }
    if (nl == text.size()) break;
  }
  finish();
  if (regions->empty()) {
    *error = "llvm-mca output has no summary (no 'Iterations:' line)";
    return false;
  }
  return true;
}

std::string mca_input(std::span<const std::vector<Instruction>> blocks) {
  std::ostringstream out;
  out << ".intel_syntax noprefix\n";
  for (size_t b = 0; b < blocks.size(); ++b) {
    out << "# LLVM-MCA-BEGIN " << mca_region_name(b) << "\n";
    for (const Instruction& ins : blocks[b]) {
      if (!ins.valid) continue;
      out << (ins.target ? ins.mnemonic + " strata_target" : ins.text()) << "\n";
    }
    out << "# LLVM-MCA-END\n";
  }
  return out.str();
}

namespace {

bool is_executable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

std::string find_program(const std::string& wanted) {
  if (!wanted.empty()) return wanted;
  if (const char* env = std::getenv(strata::env::kLlvmMca); env != nullptr && *env) return env;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (const char* name : {"llvm-mca-14", "llvm-mca"}) {
    size_t start = 0;
    while (start <= dirs.size()) {
      size_t colon = dirs.find(':', start);
      if (colon == std::string::npos) colon = dirs.size();
      const std::string candidate = dirs.substr(start, colon - start) + "/" + name;
      if (colon > start && is_executable(candidate)) return candidate;
      start = colon + 1;
    }
  }
  return "";
}

class LlvmMca : public CostModel {
 public:
  explicit LlvmMca(LlvmMcaOptions options) : options_(std::move(options)) {}

  std::string describe() const override {
    return (program_.empty() ? find_program(options_.program) : program_) + " -mcpu=" + options_.mcpu;
  }

  bool estimate(std::span<const std::vector<Instruction>> blocks,
                std::vector<std::optional<BlockCost>>* costs, std::vector<std::string>* notes,
                std::string* error) override {
    program_ = find_program(options_.program);
    if (program_.empty() || !is_executable(program_)) {
      *error =
          "llvm-mca not found (apt-get install llvm-14, or set STRATA_LLVM_MCA): no static cycle estimates";
      return false;
    }
    costs->assign(blocks.size(), std::nullopt);
    std::map<std::string, BlockCost> regions;
    std::string output, first_error;
    // One run for the whole function; if llvm-mca rejects any instruction the run fails as a
    // whole, and each block is then estimated on its own so one odd instruction costs one block.
    if (run(mca_input(blocks), &output, error) && parse_mca_output(output, &regions, &first_error)) {
      for (size_t b = 0; b < blocks.size(); ++b)
        if (auto it = regions.find(mca_region_name(b)); it != regions.end()) (*costs)[b] = it->second;
      return true;
    }
    if (!error->empty()) return false;
    for (size_t b = 0; b < blocks.size(); ++b) {
      std::map<std::string, BlockCost> one;
      std::string why;
      if (run(mca_input(blocks.subspan(b, 1)), &output, error) && parse_mca_output(output, &one, &why) &&
          one.count(mca_region_name(0))) {
        (*costs)[b] = one[mca_region_name(0)];
      } else {
        if (!error->empty()) return false;
        const size_t nl = output.find('\n');
        notes->push_back("llvm-mca could not read block " + std::to_string(b) + ": " + output.substr(0, nl));
      }
    }
    return true;
  }

 private:
  // Runs llvm-mca on `input` (a temporary file); its stdout and stderr go to *output. False with
  // *error only when the program cannot be started; a failing run returns false with *error empty.
  bool run(const std::string& input, std::string* output, std::string* error) {
    output->clear();
    const char* tmp = std::getenv("TMPDIR");
    std::string in_path = std::string(tmp && *tmp ? tmp : "/tmp") + "/strata-mca-XXXXXX";
    int in_fd = mkstemp(in_path.data());
    if (in_fd < 0) {
      *error = "cannot create a temporary file for llvm-mca in " + std::string(tmp && *tmp ? tmp : "/tmp");
      return false;
    }
    std::string out_path = in_path + ".out";
    bool ok = write(in_fd, input.data(), input.size()) == static_cast<ssize_t>(input.size());
    close(in_fd);
    int out_fd = ok ? open(out_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600) : -1;
    int status = -1;
    if (out_fd >= 0) {
      posix_spawn_file_actions_t actions;
      posix_spawn_file_actions_init(&actions);
      posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
      posix_spawn_file_actions_adddup2(&actions, out_fd, 2);
      const std::string mcpu = "-mcpu=" + options_.mcpu,
                        iterations = "-iterations=" + std::to_string(options_.iterations);
      std::vector<char*> argv{program_.data(),
                              const_cast<char*>(mcpu.c_str()),
                              const_cast<char*>(iterations.c_str()),
                              const_cast<char*>("-all-views=false"),
                              const_cast<char*>("-summary-view"),
                              in_path.data(),
                              nullptr};
      pid_t pid = 0;
      if (posix_spawn(&pid, program_.c_str(), &actions, nullptr, argv.data(), environ) == 0) {
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
      } else {
        *error = "cannot run " + program_;
      }
      posix_spawn_file_actions_destroy(&actions);
      close(out_fd);
      std::ifstream in(out_path, std::ios::binary);
      std::stringstream text;
      text << in.rdbuf();
      *output = text.str();
    }
    unlink(in_path.c_str());
    if (out_fd >= 0) unlink(out_path.c_str());  // only the file created here, never a name found there
    if (out_fd < 0 && error->empty()) *error = "cannot write llvm-mca's input in " + in_path;
    return error->empty() && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }

  LlvmMcaOptions options_;
  std::string program_;
};

}  // namespace

std::unique_ptr<CostModel> make_llvm_mca(LlvmMcaOptions options) {
  return std::make_unique<LlvmMca>(std::move(options));
}

}  // namespace strata::annotate

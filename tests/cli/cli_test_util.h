// Running the `strata` tool from the CLI tests: exit status, output and peak memory of one run.
#pragma once

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "../test_util.h"

namespace strata::testing {

inline const std::string kStrataTool = std::string(STRATA_BINARY_DIR) + "/bin/strata";
inline const std::string kTestProgram = std::string(STRATA_BINARY_DIR) + "/bin/strata_test_program";

struct ToolRun {
  int exit_code = -1;  // -1: killed by a signal
  int signal = 0;
  long max_rss_kb = 0;  // peak resident memory of the tool (and its waited-for children)
  std::string out, err;
};

// Runs argv (argv[0] a path) with stdout and stderr captured, in `cwd` when given.
inline ToolRun run_tool(const std::vector<std::string>& argv, const std::string& cwd = "") {
  TempDir capture;
  const std::string out_path = capture.file("out"), err_path = capture.file("err");
  pid_t pid = fork();
  if (pid == 0) {
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    if (!freopen(out_path.c_str(), "w", stdout) || !freopen(err_path.c_str(), "w", stderr)) _exit(126);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  ToolRun run;
  int status = 0;
  struct rusage usage {};
  wait4(pid, &status, 0, &usage);
  run.max_rss_kb = usage.ru_maxrss;
  if (WIFEXITED(status))
    run.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    run.signal = WTERMSIG(status);
  run.out = read_file(out_path);
  run.err = read_file(err_path);
  return run;
}

inline ToolRun strata(const std::vector<std::string>& args, const std::string& cwd = "") {
  std::vector<std::string> argv{kStrataTool};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_tool(argv, cwd);
}

}  // namespace strata::testing

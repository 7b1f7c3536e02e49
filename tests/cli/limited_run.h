// Running `strata` on hostile input from the CLI tests: every run is a child under an address-space
// limit and a time limit, so a regression fails (killed, or out of memory) instead of hanging the
// suite or taking the machine's memory.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli_test_util.h"

#if defined(__SANITIZE_ADDRESS__)
#define STRATA_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STRATA_UNDER_ASAN 1
#endif
#endif

namespace strata::testing {

struct LimitedRun {
  int exit_code = -1;  // -1: killed by a signal
  int signal = 0;
  std::string out, err;
};

// Runs `strata ARGS` with at most `memory` bytes of address space (not under ASan, whose shadow
// needs terabytes of it) and `seconds` of wall time (SIGALRM), plus `env` ("NAME=value"), in `cwd`
// when given.
inline LimitedRun run_limited(const std::vector<std::string>& args, long memory, unsigned seconds,
                              const std::vector<std::string>& env = {}, const std::string& cwd = "") {
  TempDir capture;
  const std::string out_path = capture.file("out"), err_path = capture.file("err");
  pid_t pid = fork();
  if (pid == 0) {
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    if (!freopen(out_path.c_str(), "w", stdout) || !freopen(err_path.c_str(), "w", stderr)) _exit(126);
#ifndef STRATA_UNDER_ASAN
    struct rlimit rl {
      static_cast<rlim_t>(memory), static_cast<rlim_t>(memory)
    };
    setrlimit(RLIMIT_AS, &rl);
#else
    (void)memory;
#endif
    for (const std::string& e : env) putenv(const_cast<char*>(e.c_str()));
    alarm(seconds);  // survives exec: a blocked run dies of SIGALRM
    std::vector<char*> argv{const_cast<char*>(kStrataTool.c_str())};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  LimitedRun run;
  if (WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) run.signal = WTERMSIG(status);
  run.out = read_file(out_path);
  run.err = read_file(err_path);
  return run;
}

constexpr long kMiB = 1L << 20;

// One line on stderr, exit status 1, not killed: the standard for bad input.
inline void expect_one_line_refusal(const LimitedRun& r, const std::string& command,
                                    const std::string& text) {
  EXPECT_EQ(r.signal, 0) << command << ": killed by signal " << r.signal
                         << (r.signal == SIGALRM ? " (it blocked)" : "") << "\n"
                         << r.err;
  EXPECT_EQ(r.exit_code, 1) << command << "\n" << r.err;
  EXPECT_NE(r.err.find(text), std::string::npos) << command << ": " << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << command << ": " << r.err;
}

}  // namespace strata::testing

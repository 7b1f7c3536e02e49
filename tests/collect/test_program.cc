// A small program the tests run under `strata record` (or with STRATA_OUTPUT set):
//   spans N     N model spans, then exit 0
//   spawn       a span, then runs itself as `child` under that span (TRACEPARENT injected)
//   child       one span
//   crash       a span, then SIGSEGV
//   loop        spans forever, flushing; prints "ready" once the first flush is on disk
//   exit N      exit with code N
//   wait N      N spans, prints "ready", then waits for a signal (default dispositions)
//   handled N   like wait, with its own SIGTERM handler installed first: returns 7 when it fires
//   _exit N     N spans, then _exit(3) (no exit handlers)
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "strata/strata.hpp"

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "spans";
  if (mode == "spans") {
    int n = argc > 2 ? std::atoi(argv[2]) : 10;
    for (int i = 0; i < n; ++i) {
      STRATA_SPAN("step", model);
    }
    return 0;
  }
  if (mode == "spawn") {
    strata::Span work("parent_work", STRATA_LEVEL_MODEL);
    if (!strata_inject_traceparent_env()) return 10;
    pid_t pid = fork();
    if (pid == 0) {
      execl("/proc/self/exe", argv[0], "child", static_cast<char*>(nullptr));
      _exit(11);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 12;
  }
  if (mode == "child") {
    strata::Span work("child_work", STRATA_LEVEL_MODEL);
    return 0;
  }
  if (mode == "crash") {
    {
      STRATA_SPAN("before_crash", model);
    }
    raise(SIGSEGV);
    return 0;
  }
  if (mode == "loop") {
    bool announced = false;
    for (long i = 0;; ++i) {
      {
        STRATA_SPAN("loop_step", model);
      }
      if (i % 1000 == 999) {
        strata_flush();
        if (!announced) {
          std::printf("ready\n");
          std::fflush(stdout);
          announced = true;
        }
      }
    }
  }
  if (mode == "exit") return argc > 2 ? std::atoi(argv[2]) : 0;
  if (mode == "wait" || mode == "handled" || mode == "_exit") {
    static volatile sig_atomic_t terminated = 0;
    if (mode == "handled") signal(SIGTERM, [](int) { terminated = 1; });
    int n = argc > 2 ? std::atoi(argv[2]) : 10;
    for (int i = 0; i < n; ++i) {
      STRATA_SPAN("before_signal", model);
    }
    if (mode == "_exit") _exit(3);
    std::printf("ready\n");
    std::fflush(stdout);
    while (!terminated) pause();
    return 7;
  }
  std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}

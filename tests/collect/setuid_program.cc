// Installed setuid-root by Privileged.* tests and run as another user: a privileged program linked
// with libstrata must not let its caller choose where root writes (STRATA_OUTPUT and friends).
//   env        record whatever the environment asks for (a span), print "recording" or "idle"
//   self PATH  the program itself chooses to record into PATH (the owner's explicit opt-in)
#include <cstdio>
#include <cstring>

#include "strata/strata.hpp"

int main(int argc, char** argv) {
  if (argc > 2 && std::strcmp(argv[1], "self") == 0) {
    if (!strata_start(argv[2], STRATA_LEVEL_MODEL)) return 3;
  }
  { STRATA_SPAN("privileged_work", model); }
  std::printf("%s\n", strata_is_recording() ? "recording" : "idle");
  strata_stop();
  return 0;
}

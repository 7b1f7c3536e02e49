#include "cli/record_signals.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

namespace strata::cli {
namespace {

// Signals. Terminal signals (Ctrl-C's SIGINT, Ctrl-\'s SIGQUIT) go to the whole foreground
// process group, the command included: the recorder ignores them while the command runs, as a
// shell waits for its foreground job, and finishes the trace once the command ends. The command
// gets the dispositions the recorder started with (SIG_DFL normally), never the recorder's ignore:
// ignored dispositions survive exec, and Python would never raise KeyboardInterrupt. Signals sent
// to the recorder alone (SIGTERM, SIGHUP, SIGUSR1, SIGUSR2) are passed on to the command, except
// those the recorder was started ignoring (`nohup strata record ...`): they stay ignored for both.
volatile sig_atomic_t g_child = 0;  // the command being recorded, or 0
constexpr int kTerminalSignals[] = {SIGINT, SIGQUIT};
constexpr int kForwardedSignals[] = {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};
struct sigaction g_inherited_terminal[2], g_inherited_forwarded[4];  // the recorder's own at start

void forward_signal(int sig) {
  if (g_child > 0) kill(g_child, sig);
}

}  // namespace

void install_signal_handling() {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  for (size_t k = 0; k < 2; ++k) sigaction(kTerminalSignals[k], &ignore, &g_inherited_terminal[k]);
  struct sigaction forward {};
  forward.sa_handler = forward_signal;
  forward.sa_flags = SA_RESTART;
  sigemptyset(&forward.sa_mask);
  for (size_t k = 0; k < 4; ++k) {
    sigaction(kForwardedSignals[k], nullptr, &g_inherited_forwarded[k]);
    if (g_inherited_forwarded[k].sa_handler != SIG_IGN) sigaction(kForwardedSignals[k], &forward, nullptr);
  }
}

void prepare_child_signals(pid_t recorder) {
  for (size_t k = 0; k < 2; ++k) sigaction(kTerminalSignals[k], &g_inherited_terminal[k], nullptr);
  for (size_t k = 0; k < 4; ++k) {
    struct sigaction original = g_inherited_forwarded[k];
    if (original.sa_handler != SIG_IGN) original.sa_handler = SIG_DFL;  // exec resets handlers anyway
    sigaction(kForwardedSignals[k], &original, nullptr);
  }
  // A recorder killed (even by SIGKILL) takes the command with it instead of leaving it running,
  // reparented to init and still writing; SIGTERM lets its runtime flush what it holds.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != recorder) raise(SIGTERM);  // the recorder died before prctl took effect
}

void set_forwarded_child(pid_t child) { g_child = child; }

}  // namespace strata::cli

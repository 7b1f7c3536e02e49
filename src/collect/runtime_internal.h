// Internal to libstrata's process-wide runtime (runtime.cc, env_start.cc, exit_hooks.cc): the one
// session of the process, how it starts (explicitly, from the environment, lazily after fork) and
// how it is flushed on every way out of the process. Not an API.
#pragma once

#include <atomic>
#include <mutex>
#include <optional>
#include <string>

#include "collect/session.h"

namespace strata::collect::rt {

extern std::atomic<Session*> g_session;
extern std::mutex g_control_mu;

// Starts a session (g_control_mu must be held by the caller for the _locked form).
bool start_session(SessionConfig config);
bool start_session_locked(SessionConfig config);
// Stops the session, and for the process that owns a STRATA_OUTPUT file, merges its descendants'
// streams into it. Safe to call more than once.
void stop_session();

// From the environment (secure_getenv: nothing in a setuid/setgid process). `after_fork`: the
// process is a fork of a recorded one.
std::optional<SessionConfig> config_from_env(bool after_fork);
// The STRATA_OUTPUT owner's end of run: appends the streams its descendants wrote into its private
// parts directory to the output file. Called by stop_session with g_control_mu held.
void merge_descendants_if_owner();
// A forked child starts recording at its first event, not at fork (a child that only execs writes
// nothing). Returns the session, or null.
Session* start_pending_after_fork();
extern std::atomic<bool> g_pending_fork_start;

// Exit paths (exit_hooks.cc).
void install_fatal_signal_handlers();
// SIGTERM and SIGINT, where their disposition is still the default: installed at the first thread
// that records, so a language runtime (Python) that sets up its own handlers at start sees the
// default dispositions it expects.
void install_terminate_handlers_once();
// Starts the dormant thread that exit paths wake to stop the session (once per process).
void ensure_exit_helper();
// Session's hook at a thread's first event: the helper, then the terminate handlers.
void on_thread_registered();
// Stops the session from a helper thread and waits at most `timeout_ms` (the calling context may be
// a signal handler or hold locks the stop needs). Returns true when the stop finished.
bool stop_with_deadline(int timeout_ms);
void reset_exit_state_after_fork();

std::string read_argv();

}  // namespace strata::collect::rt

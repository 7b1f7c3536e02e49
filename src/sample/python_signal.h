// Python stacks read in the sampled thread itself (CPython 3.11, in-process sampling only).
//
// perf_event's `sigtrap` (Linux 5.13+) sends SIGTRAP (si_code TRAP_PERF, si_perf_data our tag) to
// the thread whose task clock overflowed, inherited threads included; its handler runs on that
// thread when it next returns to user space, while its Python frames cannot change, and walks them
// with plain loads: no system call, and no wake-up of the sampling thread per sample. It writes the
// frames (code object address, the code's name/file/qualname/line-table pointers and first line as
// an identity check, the last instruction, the entry flag; for a code the sampling thread has not
// named yet also its qualname's and file's first bytes) with its time into the thread's own
// single-producer byte ring; the sampling thread drains the rings at its own pace and pairs each
// perf sample with the first record of its thread at or after the sample's time
// (docs/sampling.md, "Python frames").
//
// SIGTRAP belongs to the program: a program (or a debugger-aware library) that installs its own
// SIGTRAP handler while ours is installed (libstrata_sample.so interposes sigaction and signal) gets
// it as its disposition: every SIGTRAP that is not one of our samples reaches it with its flags and
// mask, and ours never do; its masks are left alone from then on; and the sampling thread moves the
// process to reading Python stacks itself (collector.cc, counted as sample.python_reader_moved):
// in-thread reads stop. Our handler stays installed underneath to drop samples' SIGTRAPs still
// pending when the events are reopened without sigtrap (docs/sampling.md, "Python frames").
//
// Why SIGTRAP and not a real-time signal through fcntl(F_SETSIG, F_SETOWN_EX): the kernel keeps an
// inherited event's fasync owner on the parent event, so threads created after sampling starts
// would signal the thread that opened the events; `sigtrap` always signals the overflowing thread.
//
// Safety of the loads (each one checked before it is made):
//  - the thread state comes from the interpreter's own thread-state key (pthread_getspecific);
//  - a data-stack frame is loaded only when it lies in one of the thread's chunks; the top frame
//    past the data-stack top was popped (its code may be freed): skipped, counted; a top frame in
//    no chunk is read with one process_vm_readv on ourselves (a generator's frame, or a frame whose
//    chunk was just freed: the read fails instead of faulting);
//  - every other frame is reached through `previous` of a live frame: its frame and its code object
//    are alive (the frame holds a strong reference to the code);
//  - a code object must have PyCode_Type as its type; the depth is bounded; anything odd stops the
//    walk and sets a status bit the sampling thread counts.
#pragma once

#include <signal.h>

#include <cstdint>
#include <functional>
#include <string>

namespace strata::sample {

// One Python frame as the handler saw it.
struct PySignalFrame {
  uint64_t code = 0;
  uint64_t name = 0, file = 0, qualname = 0, linetable = 0;  // the code's fields: identity check
  uint64_t prev_instr = 0;
  int32_t first_line = 0;
  uint16_t entry = 0;
  // A code object the sampling thread has not named yet: the first bytes of its qualname and file
  // objects, copied by the handler (the code may be freed before it is named: a module's body),
  // at `strings` bytes from the record's start (0: none), qualname first.
  uint16_t qualname_bytes = 0, file_bytes = 0;
  uint16_t pad = 0;
  uint32_t strings = 0;
  uint32_t pad2 = 0;
};
constexpr uint32_t kPySignalStringBytes = 192;  // copied per object at most

// Status bits of a record.
enum PySignalStatus : uint32_t {
  kPySignalNoThreadState = 1,  // not a Python thread (no frames: the sample is native only)
  kPySignalTopPopped = 2,      // the top frame was being popped: left out
  kPySignalBadFrame = 4,       // the walk stopped at a frame that failed a check
  kPySignalTruncated = 8,      // deeper than kMaxPySignalFrames
};
constexpr uint32_t kMaxPySignalFrames = 256;

struct PySignalRecordHeader {
  uint32_t bytes = 0;  // this record's size in the ring (header + frames), 0: padding to the end
  uint32_t frames = 0;
  int64_t time_ns = 0;  // CLOCK_MONOTONIC when the handler ran
  uint32_t status = 0;
  uint32_t tid = 0;
};

struct PySignalCounters {
  uint64_t records = 0;        // written by handlers
  uint64_t buffer_full = 0;    // a thread's ring was full: the record was not written
  uint64_t no_buffer = 0;      // more threads than buffers
  uint64_t foreign_traps = 0;  // SIGTRAPs that were not ours, handed to the program's handler
  uint64_t safe_reads = 0;     // top frames outside the data stack read with process_vm_readv
  // The handler's own time (CLOCK_MONOTONIC, vDSO, at its entry and just before it returns) summed
  // over every call for a sample of ours, and the number of those calls. The kernel's signal
  // delivery and sigreturn around the handler are not in it (bench/sample/signal_cost measures them).
  uint64_t handler_ns = 0;
  uint64_t handler_calls = 0;
};

class PySignalRecorder {
 public:
  // Installs the SIGTRAP handler for the Python at `runtime` (the _PyRuntime address) whose code
  // type is `code_type`. False (with *why) when SIGTRAP already has a handler in this program, or no
  // buffer memory: sampling then reads Python stacks from the sampling thread.
  static bool start(uint64_t runtime, uint64_t code_type, std::string* why);
  // Records stop (the handler stays installed: a SIGTRAP still pending must not kill the process).
  static void stop();
  // True while the handler is installed and records: a sampled thread must then not block SIGTRAP
  // (a blocked SIGTRAP stays pending and every sample of the thread loses its Python stack), so
  // libstrata_sample.so's pthread_sigmask/sigprocmask leave SIGTRAP out of a mask they block.
  static bool needs_sigtrap();
  // The program's sigaction(SIGTRAP, act, old) while our handler is installed: `act` (when given)
  // becomes the program's disposition, *old (when given) receives the previous one, as the kernel
  // would. False when our handler is not installed: the caller makes the real call.
  static bool program_sigaction(const struct sigaction* act, struct sigaction* old);
  // Whether the program installed a SIGTRAP handler of its own while ours was: in-thread reads have
  // stopped, and the sampling thread must move to reading Python stacks itself.
  static bool program_took_sigtrap();
  // The sampling thread has named `code`: handlers stop copying its strings (a lock-free set; a
  // full set only means more copies).
  static void note_named(uint64_t code);
  // Hands out every record written since the last call, oldest first per thread.
  static void drain(const std::function<void(const PySignalRecordHeader&, const PySignalFrame*)>& sink);
  static PySignalCounters counters();
  // The value perf_event_attr.sig_data carries (the handler ignores other TRAP_PERF signals).
  static uint64_t tag();
};

}  // namespace strata::sample

// Every STRATA_* environment variable, declared once: its constant, name, default, who reads it and
// what it means. The code reads and sets them only through these constants
// (scripts/check_env_vars.py fails on a "STRATA_..." name literal anywhere else in src/, and on a
// variable python/strata uses that is not here); docs/environment.md is this table as Markdown
// (tests/core/env_vars_test.cc fails when the two differ).
//
// Readers: "collector" (a library loaded into the traced process: libstrata, the sampler, the
// CUPTI, oneDNN and PyTorch tracers), "tool" (the strata command and the trace-reading libraries,
// which strata.load also runs), "Python" (the python/strata package). Several, comma-separated.
// A default of "unset" means the variable has no value unless something sets it.
#ifndef STRATA_CORE_ENV_VARS_H_
#define STRATA_CORE_ENV_VARS_H_

#include <string_view>

// F(constant, name, default, read by, meaning)
// clang-format off
#define STRATA_ENV_VARS(F)                                                                                  \
  /* Recording: libstrata (src/collect/env_start.cc) */                                                     \
  F(kOutput, "STRATA_OUTPUT", "unset", "collector, Python",                                                 \
    "The trace file that libstrata, linked or preloaded, records into from the process's start (set and "   \
    "not empty: recording starts); child processes write their own streams into a private directory next "  \
    "to it; the Python package warns when it is set but no libstrata is found.")                            \
  F(kOutputDir, "STRATA_OUTPUT_DIR", "unset", "collector, Python",                                          \
    "A directory where each recorded process writes PID.strata (created new, never an existing file); "     \
    "strata record sets it, and a STRATA_OUTPUT owner sets it for its descendants; the Python package "     \
    "copies libstrata's value into os.environ, so the child processes it starts inherit it.")               \
  F(kOutputOwner, "STRATA_OUTPUT_OWNER", "unset", "collector, Python",                                      \
    "Internal, set by libstrata: the pid of the process that owns the STRATA_OUTPUT file (after exec it "   \
    "appends to its own file, its descendants write into STRATA_OUTPUT_DIR); the Python package copies it " \
    "into os.environ like STRATA_OUTPUT_DIR.")                                                              \
  F(kLevel, "STRATA_LEVEL", "model", "collector",                                                           \
    "The recording level: a level name (application, iteration, model, layer, library, runtime_api or "     \
    "runtime, device, cpu_sample) or its number, which strata record sets; an unknown value records at "    \
    "model level with a warning; libstrata_cupti reads the number (device when unset).")                    \
  F(kBufferMb, "STRATA_BUFFER_MB", "unset", "collector",                                                    \
    "The event buffer's hard budget in MiB (a positive integer; strata record --buffer-mb); unset: 64 MiB " \
    "that grows under a burst up to STRATA_BUFFER_MAX_MB and shrinks back.")                                \
  F(kBufferMaxMb, "STRATA_BUFFER_MAX_MB", "min(512, RAM/16)", "collector",                                  \
    "The ceiling in MiB the growing event buffer may reach when STRATA_BUFFER_MB is unset (a positive "     \
    "integer, never below 64); the default is 1/16 of the machine's memory, at most 512 MiB.")              \
  F(kFlushMs, "STRATA_FLUSH_MS", "100", "collector",                                                        \
    "Milliseconds between the writer thread's chunk flushes to the trace file (a positive integer).")       \
  F(kCompress, "STRATA_COMPRESS", "0", "collector",                                                         \
    "The zstd level of the trace's chunks (a positive integer; 0 or anything else stores them "             \
    "uncompressed; strata record --compress).")                                                             \
  /* CPU sampling: libstrata_sample (src/sample/in_process.cc, perf_map_guard.cc) */                        \
  F(kSample, "STRATA_SAMPLE", "unset", "collector, Python",                                                 \
    "CPU sampling in the recorded process, set by strata record --sample: a positive integer is the rate "  \
    "in Hz, any other value but empty or 0 means 999 Hz; unset, empty or 0: no sampling.")                  \
  F(kSampleUnwind, "STRATA_SAMPLE_UNWIND", "fp", "collector",                                               \
    "How samples are unwound: dwarf copies registers and the top of the stack and unwinds with the "        \
    "binaries' .eh_frame; any other value follows frame pointers (strata record --unwind).")                \
  F(kSampleStackBytes, "STRATA_SAMPLE_STACK_BYTES", "16384", "collector",                                   \
    "Bytes of user stack copied per sample for DWARF unwinding (a positive integer).")                      \
  F(kSampleEpochMs, "STRATA_SAMPLE_EPOCH_MS", "1000", "collector",                                          \
    "Milliseconds of samples aggregated into one epoch of the sample store before it is written (a "        \
    "positive integer).")                                                                                   \
  F(kSamplePython, "STRATA_SAMPLE_PYTHON", "1", "collector",                                                \
    "0 leaves CPython frames out of the samples; any other value reads them.")                              \
  F(kSampleMode, "STRATA_SAMPLE_MODE", "unset", "collector",                                                \
    "Set and not empty: perf_event is not tried and the signal-timer fallback samples (itimer: one "        \
    "process-wide setitimer(ITIMER_PROF); any other value, e.g. timer: timer_create per thread); for "      \
    "tests.")                                                                                               \
  F(kSamplePyread, "STRATA_SAMPLE_PYREAD", "unset", "collector",                                            \
    "process: Python stacks are read by the sampling thread, woken at every sample, instead of in the "     \
    "sampled thread (to debug the in-thread read); any other value keeps the in-thread read.")              \
  F(kSampleJitMapOwned, "STRATA_SAMPLE_JIT_MAP_OWNED", "unset", "collector",                                \
    "Internal, set by strata record: 1 when it asked oneDNN for perf maps (/tmp/perf-PID.map); the sampler "\
    "then lets a process write its map only as a file Strata created, and removes it at exit.")             \
  F(kSampleJitMapPid, "STRATA_SAMPLE_JIT_MAP_PID", "unset", "collector",                                    \
    "Internal, set by strata record: the pid whose perf map strata record created before exec, so that "    \
    "process may open it for writing.")                                                                     \
  F(kSampleJitMapRefused, "STRATA_SAMPLE_JIT_MAP_REFUSED", "unset", "collector",                            \
    "Internal, set by strata record: the pid whose perf map could not be created safely; the sampler "      \
    "counts the refusal in that process.")                                                                  \
  /* GPU: libstrata_cupti (src/gpu/cupti_injection.cc) */                                                   \
  F(kCuptiBufferMb, "STRATA_CUPTI_BUFFER_MB", "8", "collector",                                             \
    "The size in MiB of each CUPTI activity buffer (an integer; below 1 means 1).")                         \
  F(kGpuMetrics, "STRATA_GPU_METRICS", "unset", "collector",                                                \
    "Per-kernel GPU metrics to measure with CUPTI's Range Profiler, comma-separated (flops, flops_sp, "     \
    "flops_dp, flops_hp, dram, dram_bytes, dram_read, dram_write, occupancy; strata record --gpu-metrics); "\
    "ignored unless STRATA_GPU_METRICS_UNVALIDATED=1.")                                                     \
  F(kGpuMetricsUnvalidated, "STRATA_GPU_METRICS_UNVALIDATED", "unset", "collector",                         \
    "1 lets STRATA_GPU_METRICS start the Range Profiler, which hung at the first kernel on an H100 "        \
    "(docs/gpu-collector.md); any other value keeps GPU metrics off.")                                      \
  F(kCudaGraphTrace, "STRATA_CUDA_GRAPH_TRACE", "node", "collector",                                        \
    "graph: one span per CUDA graph launch; node: one span per graph node; another value warns and records "\
    "nodes.")                                                                                               \
  F(kGpuPcSampling, "STRATA_GPU_PC_SAMPLING", "unset", "collector",                                         \
    "GPU PC sampling: continuous (or 1) or serialized (strata record --gpu-pc-sampling); unset or empty: "  \
    "off; another value warns and records without PC sampling.")                                            \
  F(kGpuPcSamplingPeriod, "STRATA_GPU_PC_SAMPLING_PERIOD", "0", "collector",                                \
    "The PC sampling period as n in 2^n cycles between samples, 5 to 31; 0 or a value outside that range "  \
    "uses CUPTI's default.")                                                                                \
  F(kGpuPcSamplingWorkerMs, "STRATA_GPU_PC_SAMPLING_WORKER_MS", "0", "collector",                           \
    "Milliseconds between wake-ups of CUPTI's PC sampling worker thread; 0 (or negative) keeps CUPTI's "    \
    "default.")                                                                                             \
  F(kGpuPcSamplingHwBufferMb, "STRATA_GPU_PC_SAMPLING_HW_BUFFER_MB", "0", "collector",                      \
    "The PC sampling hardware buffer in MiB; 0 (or negative) keeps CUPTI's default.")                       \
  F(kGpuPcSamplingPollMs, "STRATA_GPU_PC_SAMPLING_POLL_MS", "100", "collector",                             \
    "Milliseconds between Strata's fetches of CUPTI's decoded PC samples (at least 10).")                   \
  /* oneDNN and PyTorch tracers (src/onednn/verbose_capture.cc, src/torch/memory_tracker.cc) */             \
  F(kOnednnMode, "STRATA_ONEDNN_MODE", "auto", "collector",                                                 \
    "How oneDNN primitives are traced: auto, interpose, verbose or off (strata record --onednn-mode); "     \
    "another value warns and uses auto.")                                                                   \
  F(kOnednnVerboseOwned, "STRATA_ONEDNN_VERBOSE_OWNED", "unset", "collector",                               \
    "Internal, set by the oneDNN tracer: 1 when it turned ONEDNN_VERBOSE on itself, so child processes "    \
    "swallow the verbose lines instead of taking them for the user's.")                                     \
  F(kMemoryIntervalUs, "STRATA_MEMORY_INTERVAL_US", "100", "collector",                                     \
    "Microseconds between two emitted samples of PyTorch's CPU allocator's live bytes (a number >= 0; 0: "  \
    "every change); an invalid value warns and uses 100.")                                                  \
  /* The strata tool and the libraries that read traces */                                                  \
  F(kJobs, "STRATA_JOBS", "unset", "tool",                                                                  \
    "Threads that read several input traces at once when no --jobs is given (a positive integer); unset or "\
    "0: every hardware thread.")                                                                            \
  F(kMemoryCheck, "STRATA_MEMORY_CHECK", "unset", "tool",                                                   \
    "0 skips the check that refuses to load traces needing more memory than is available; any other value " \
    "keeps it.")                                                                                            \
  F(kMaxInflateRatio, "STRATA_MAX_INFLATE_RATIO", "128", "tool",                                            \
    "The most a compressed chunk or imported file may expand, as a multiple of its size (a positive "       \
    "integer), raised for an input known to be genuine.")                                                   \
  F(kMaxInflateMb, "STRATA_MAX_INFLATE_MB", "4096", "tool",                                                 \
    "The most MiB decompressed from one input in all (a positive integer).")                                \
  F(kMaxSqliteSteps, "STRATA_MAX_SQLITE_STEPS", "unset", "tool",                                            \
    "The SQLite virtual-machine step budget for an SQLite file Strata did not write (a positive integer); " \
    "unset: 100,000,000 plus 64 per byte of the file.")                                                     \
  F(kPython, "STRATA_PYTHON", "/usr/bin/python3", "tool",                                                   \
    "The Python interpreter (an absolute path) that runs Strata's own Python, e.g. strata analyze --dask.") \
  F(kLlvmMca, "STRATA_LLVM_MCA", "unset", "tool",                                                           \
    "The llvm-mca program strata annotate runs when no path is given; unset or empty: llvm-mca-14, else "   \
    "llvm-mca, on PATH.")                                                                                   \
  F(kPerfDb, "STRATA_PERF_DB", "unset", "tool",                                                             \
    "The lower-bound performance database when --db is not given: an SQLite file or a postgresql:// URI; "  \
    "unset or empty: ~/.cache/strata/perf.sqlite.")                                                         \
  F(kLowerboundCudaPlugin, "STRATA_LOWERBOUND_CUDA_PLUGIN", "unset", "tool",                                \
    "The path of the lower-bound CUDA measuring plugin; unset or empty: libstrata_lowerbound_cuda.so in "   \
    "the library folder next to the strata binary.")                                                        \
  /* The Python package (python/strata) */                                                                  \
  F(kLib, "STRATA_LIB", "unset", "Python",                                                                  \
    "The libstrata.so the Python package loads when none is in the process yet (strata record sets it to "  \
    "the one it preloads), and next to which the PyTorch tracer looks for libstrata_torch_rt.so; unset: "   \
    "the installed one, else $STRATA_BUILD_DIR/lib, else <repo>/build/lib.")                                \
  F(kBuildDir, "STRATA_BUILD_DIR", "unset", "Python",                                                       \
    "A Strata build folder whose lib/ the Python package of a source checkout searches for Strata's native "\
    "libraries.")                                                                                           \
  F(kTorchAutotrace, "STRATA_TORCH_AUTOTRACE", "1", "Python",                                               \
    "0: a recorded process does not trace PyTorch ops when torch is imported (the program may still call "  \
    "strata.torch.enable_layer_tracing()); any other value traces them.")                                   \
  F(kTorchBridge, "STRATA_TORCH_BRIDGE", "auto", "Python",                                                  \
    "Which PyTorch bridge the layer tracer uses: auto, prebuilt, compile or python (the Python hooks); "    \
    "another value warns and uses auto.")                                                                   \
  F(kTorchLib, "STRATA_TORCH_LIB", "unset", "Python",                                                       \
    "A PyTorch bridge library loaded as is, before any other route (a developer's override).")              \
  F(kCxx, "STRATA_CXX", "unset", "Python",                                                                  \
    "The C++ compiler that compiles the PyTorch bridge; unset or empty: $CXX, else c++, g++, clang++ on "   \
    "PATH.")                                                                                                \
  F(kDaskTimeout, "STRATA_DASK_TIMEOUT", "600", "Python",                                                   \
    "Seconds a strata analyze --dask run may take in all when --dask-timeout is not given (a number).")
// clang-format on

namespace strata::env {

struct EnvVar {
  std::string_view name;
  std::string_view default_value;  // as text; "unset" where unset is the default
  std::string_view read_by;        // "collector", "tool", "Python", comma-separated
  std::string_view meaning;        // one sentence
};

#define STRATA_ENV_CONSTANT(constant, name, default_value, read_by, meaning) \
  inline constexpr const char constant[] = name;
STRATA_ENV_VARS(STRATA_ENV_CONSTANT)
#undef STRATA_ENV_CONSTANT

#define STRATA_ENV_ENTRY(constant, name, default_value, read_by, meaning) \
  EnvVar{name, default_value, read_by, meaning},
inline constexpr EnvVar kAll[] = {STRATA_ENV_VARS(STRATA_ENV_ENTRY)};
#undef STRATA_ENV_ENTRY

}  // namespace strata::env

#endif  // STRATA_CORE_ENV_VARS_H_

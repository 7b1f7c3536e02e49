// The verdict and the findings of `strata summary` (docs/summary.md lists every rule with its
// threshold; tests/python/test_summary_device_rules.py and test_summary_planted.py plant a trigger for
// each, test_summary_traces.py runs them on real traces). Rules read activity
// types, levels, attribute keys and the recognized run (run_recognition.h), never a tracer's name.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <string>

#include "analysis/run_summary.h"
#include "analysis/stats.h"
#include "core/attr_keys.h"
#include "core/kernel_names.h"
#include "core/level.h"
#include "core/memory_keys.h"
#include "format/payloads.h"

namespace strata::analysis {
namespace {

// Thresholds (docs/summary.md).
constexpr double kInputVerdictShare = 0.30;  // data wait share of training step time: input-bound
constexpr double kInputFindingShare = 0.15;  // ... worth a finding
constexpr double kCommVerdictShare = 0.30;   // exposed communication
constexpr double kBusyComputeShare = 0.70;   // device busy: the device is the bottleneck
constexpr double kSyncVerdictShare = 0.20;   // host time waiting in syncs, of step time
constexpr double kWarmupRatio = 2.0;         // first step vs the median of the others
constexpr double kOutlierRatio = 1.5;        // step vs the median (and 4 MADs above it)
constexpr double kLowUtilShare = 0.50;       // device busy share below which utilisation is low
constexpr double kSyncFindingShare = 0.05;
constexpr int64_t kLaunchKernelsPerStep = 50;  // many kernels ...
constexpr int64_t kShortKernelNs = 10'000;     // ... that are short (median)
constexpr double kFp32GemmShare = 0.10;        // of kernel time
constexpr double kThreadsPerCore = 1.5;        // compute threads of concurrent processes per core
constexpr int64_t kMemoryGrowthBytes = 1 << 20;
constexpr size_t kMinStepsForTrends = 5;

std::string fmt(const char* format, double a = 0, double b = 0, double c = 0, double d = 0, double e = 0) {
  char buf[320];
  std::snprintf(buf, sizeof buf, format, a, b, c, d, e);
  return buf;
}

double ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

int severity_rank(std::string_view s) { return s == "high" ? 3 : s == "medium" ? 2 : s == "low" ? 1 : 0; }

void add(RunSummary* s, std::string rule, std::string severity, std::string message, std::string evidence,
         double share) {
  Finding f;
  f.weight = severity_rank(severity) * 1000.0 + 100.0 * share;
  f.rule = std::move(rule);
  f.severity = std::move(severity);
  f.message = std::move(message);
  f.evidence = std::move(evidence);
  s->findings.push_back(std::move(f));
}

std::string confidence(double margin, size_t steps) {
  if (steps > 0 && steps < 3) return "low";
  return margin >= 0.25 ? "high" : margin >= 0.10 ? "medium" : "low";
}

struct DeviceFacts {
  int64_t sync_ns = 0, syncs = 0;
  int64_t pageable_h2d = 0, pageable_h2d_ns = 0, pageable_bytes = 0;
  int64_t kernels = 0;
  std::vector<double> kernel_ns;
  int64_t gemm_ns = 0, gemm_simt_ns = 0, kernel_total_ns = 0;
};

bool in_windows(const std::vector<std::pair<int64_t, int64_t>>& w, int64_t t) {
  auto it = std::upper_bound(w.begin(), w.end(), t,
                             [](int64_t v, const std::pair<int64_t, int64_t>& x) { return v < x.first; });
  return it != w.begin() && t < std::prev(it)->second;
}

bool names_gemm_or_conv(std::string_view name) {
  std::string lower(name.substr(0, 256));
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find("gemm") != std::string::npos || lower.find("conv") != std::string::npos;
}

DeviceFacts device_facts(const trace::Trace& trace, const RunSummary& s) {
  DeviceFacts f;
  const auto windows = s.run.windows();
  const uint16_t main = static_cast<uint16_t>(s.run.main_process);
  const uint32_t api_class = trace.strings.find(attr_keys::kApiClass);
  const uint32_t src_kind = trace.strings.find(attr_keys::kSrcKind);
  const uint32_t bytes_key = trace.strings.find(attr_keys::kBytes);
  auto string_attr = [&](size_t i, uint32_t key) -> std::string_view {
    if (key == UINT32_MAX) return {};
    for (const AttrRecord& a : trace.attributes(i))
      if (a.key == key && a.type == static_cast<uint8_t>(AttrType::kString))
        return trace.strings.get(static_cast<uint32_t>(a.value.u));
    return {};
  };
  for (size_t i = 0; i < trace.spans.size(); ++i) {
    const SpanRecord& sp = trace.spans[i];
    if (sp.process != main || !in_windows(windows, sp.start_ns)) continue;
    const ActivityType t = sp.activity_type();
    const bool host_call = t == ActivityType::kRuntimeCall || t == ActivityType::kDriverCall;
    if (t == ActivityType::kSync || (host_call && string_attr(i, api_class) == "sync")) {
      ++f.syncs;
      f.sync_ns += sp.duration_ns();
      continue;
    }
    if (sp.level != static_cast<uint8_t>(Level::kDevice) ||
        sp.kind != static_cast<uint8_t>(SpanKind::kExecution))
      continue;
    if (t == ActivityType::kMemcpyHtoD && string_attr(i, src_kind) == "pageable") {
      ++f.pageable_h2d;
      f.pageable_h2d_ns += sp.duration_ns();
      if (bytes_key != UINT32_MAX)
        for (const AttrRecord& a : trace.attributes(i))
          if (a.key == bytes_key && a.type == static_cast<uint8_t>(AttrType::kInt))
            f.pageable_bytes += a.value.i;
    }
    if (t == ActivityType::kKernel) {
      ++f.kernels;
      f.kernel_ns.push_back(static_cast<double>(sp.duration_ns()));
      f.kernel_total_ns += sp.duration_ns();
      const std::string_view name = trace.name(sp);
      if (names_gemm_or_conv(name)) {
        f.gemm_ns += sp.duration_ns();
        if (!is_tensor_core_kernel(name)) f.gemm_simt_ns += sp.duration_ns();
      }
    }
  }
  return f;
}

// The highest compute capability the trace lists for a GPU: a process property "...computeMajor"
// (Kineto's deviceProperties, Nsight Systems' TARGET_INFO_GPU after import); -1 when it lists none.
int listed_gpu_compute_major(const trace::Trace& trace) {
  int major = -1;
  for (const trace::Process& p : trace.processes)
    for (const auto& [key, value] : p.properties.entries())
      if (std::string_view(key).ends_with("computeMajor")) major = std::max(major, std::atoi(value.c_str()));
  return major;
}

// A GPU with tensor cores ran the trace (compute capability 7 or more).
bool tensor_core_gpu(const trace::Trace& trace) { return listed_gpu_compute_major(trace) >= 7; }

// A GPU run traced without its device activity: runtime or driver calls of the main process, or a GPU
// the trace lists (Kineto's deviceProperties), and no device span. The host's op times then hold the
// waits for work the trace cannot show (kernels replayed for CUPTI's counters in the A100 counters
// trace: a 491 ms cudnn_convolution), so no CPU verdict is read from them.
struct UntracedDevice {
  int64_t gpu_calls = 0;
  bool gpu_listed = false;
  bool present() const { return gpu_calls > 0 || gpu_listed; }
};

UntracedDevice untraced_device(const trace::Trace& trace, const RunSummary& s) {
  UntracedDevice u;
  if (s.breakdown.has_device) return u;
  const uint16_t main = static_cast<uint16_t>(s.run.main_process);
  for (const SpanRecord& sp : trace.spans)
    if (sp.process == main &&
        (sp.activity_type() == ActivityType::kRuntimeCall || sp.activity_type() == ActivityType::kDriverCall))
      ++u.gpu_calls;
  u.gpu_listed = listed_gpu_compute_major(trace) >= 0;
  return u;
}

void verdict(const RunSummary& in, const DeviceFacts& dev, const UntracedDevice& untraced, Bottleneck* b) {
  const StepTime& t = in.breakdown.total;
  const double train = static_cast<double>(std::max<int64_t>(1, t.wall_ns - t.phase(Phase::kEval)));
  const double data = static_cast<double>(t.phase(Phase::kData)) / train;
  const size_t steps = in.run.steps.size();
  if (t.wall_ns <= 0) return;
  if (data >= kInputVerdictShare) {
    b->kind = "input";
    b->confidence = confidence(data - kInputVerdictShare + 0.1, steps);
    b->evidence = fmt("steps wait for input %.1f%% of their training time (%.1f ms; >= %.0f%%)", 100 * data,
                      ms(t.phase(Phase::kData)), 100 * kInputVerdictShare);
    return;
  }
  if (untraced.present()) {
    b->kind = "none";
    b->confidence = "high";
    b->evidence = "a GPU run without device activity in the trace (" + std::to_string(untraced.gpu_calls) +
                  " GPU runtime/driver calls" + (untraced.gpu_listed ? ", a GPU listed" : "") +
                  "): the host's op times include waiting for device work it cannot show, so no CPU verdict; "
                  "record with --level device (or a Kineto trace with kernels) for one";
    return;
  }
  if (!in.breakdown.has_device) {
    // CPU only: ops long enough to compute vs the framework's own time (short ops, Python between ops).
    const double rest = train - static_cast<double>(t.phase(Phase::kData));
    const double compute = static_cast<double>(t.compute_op_ns) / train;
    const double overhead = std::max(0.0, rest / train - compute);
    b->kind = compute >= overhead ? "cpu_compute" : "framework_overhead";
    b->confidence = confidence(std::abs(compute - overhead), steps);
    b->evidence =
        fmt("ops of >= %.0f us self time per call compute %.1f%% of the step time (less evaluation); "
            "short ops, dispatch and Python between ops %.1f%%; data wait %.1f%%",
            static_cast<double>(kComputeOpMinNs) / 1e3, 100 * compute, 100 * overhead, 100 * data);
    return;
  }
  const double wall = static_cast<double>(t.wall_ns);
  const double busy = static_cast<double>(t.device.busy_ns) / wall;
  const double comm = static_cast<double>(t.phase(Phase::kCommunication)) / wall;
  const double sync = static_cast<double>(dev.sync_ns) / wall;
  const std::string device_numbers =
      fmt("device busy %.1f%% of step time (kernels %.1f%%, copies %.1f%%, memsets %.1f%%)", 100 * busy,
          100 * static_cast<double>(t.device.kernel_ns) / wall,
          100 * static_cast<double>(t.device.memcpy_ns) / wall,
          100 * static_cast<double>(t.device.memset_ns) / wall);
  if (comm >= kCommVerdictShare) {
    b->kind = "communication";
    b->confidence = confidence(comm - kCommVerdictShare + 0.1, steps);
    b->evidence = fmt("collectives run with no compute kernel beside them %.1f%% of step time (>= %.0f%%); ",
                      100 * comm, 100 * kCommVerdictShare) +
                  device_numbers;
  } else if (busy >= kBusyComputeShare) {
    const bool copies = t.device.memcpy_ns > t.device.kernel_ns;
    b->kind = copies ? "memcpy" : "gpu_compute";
    b->confidence = confidence(busy - kBusyComputeShare + 0.1, steps);
    b->evidence = device_numbers + fmt(" (>= %.0f%%)", 100 * kBusyComputeShare);
  } else if (sync >= kSyncVerdictShare) {
    b->kind = "sync";
    b->confidence = confidence(sync - kSyncVerdictShare + 0.1, steps);
    b->evidence = fmt("the host waits in %.0f synchronizations %.1f%% of step time (>= %.0f%%); ",
                      static_cast<double>(dev.syncs), 100 * sync, 100 * kSyncVerdictShare) +
                  device_numbers;
  } else {
    b->kind = "gpu_idle";
    b->confidence = confidence(kBusyComputeShare - busy, steps);
    b->evidence = device_numbers + fmt("; idle %.1f%% (< %.0f%% busy): the host does not keep it fed",
                                       100 * (1 - busy), 100 * kBusyComputeShare);
  }
}

void step_rules(RunSummary* s) {
  const auto& steps = s->run.steps;
  if (steps.size() < 3) return;
  std::vector<double> rest;
  for (size_t k = 1; k < steps.size(); ++k)
    if (!steps[k].eval) rest.push_back(static_cast<double>(steps[k].duration_ns()));
  const double typical = median(rest);  // of the steps after the first, not eval
  if (typical <= 0) return;
  const double first = static_cast<double>(steps[0].duration_ns());
  if (first >= kWarmupRatio * typical)
    add(s, "warmup_step", "low",
        "the first step is a warm-up (lazy initialization, first batch, allocator growth): leave it out of "
        "timings",
        fmt("step 0 %.2f ms = %.1fx the median of the others (%.2f ms; >= %.1fx)", first / 1e6,
            first / typical, typical / 1e6, kWarmupRatio),
        (first - typical) / std::max(1.0, static_cast<double>(s->breakdown.total.wall_ns)));
  std::vector<double> dev;
  for (double v : rest) dev.push_back(std::abs(v - typical));
  const double mad = median(dev);
  int64_t outliers = 0, worst = -1;
  double excess = 0;
  for (size_t k = 1; k < steps.size(); ++k) {
    const double d = static_cast<double>(steps[k].duration_ns());
    if (steps[k].eval || d < kOutlierRatio * typical || d < typical + 4 * 1.4826 * mad) continue;
    ++outliers;
    excess += d - typical;
    if (worst < 0 || d > static_cast<double>(steps[static_cast<size_t>(worst)].duration_ns()))
      worst = static_cast<int64_t>(k);
  }
  if (outliers > 0)
    add(s, "outlier_steps", outliers * 20 >= static_cast<int64_t>(steps.size()) ? "medium" : "low",
        "some steps take much longer than the rest (a slow batch, garbage collection, another process): look "
        "at "
        "the slowest step's timeline",
        fmt("%.0f steps >= %.1fx the median (%.2f ms) and 4 MADs above it; the slowest is step %.0f (%.2f "
            "ms)",
            static_cast<double>(outliers), kOutlierRatio, typical / 1e6, static_cast<double>(worst),
            ms(steps[static_cast<size_t>(worst)].duration_ns())),
        excess / std::max(1.0, static_cast<double>(s->breakdown.total.wall_ns)));
  int64_t evals = 0;
  for (const Step& st : steps) evals += st.eval ? 1 : 0;
  const int64_t eval_ns = s->breakdown.total.phase(Phase::kEval);
  if (evals > 0)
    add(s, "eval_passes", "info",
        "evaluation passes run inside the training loop; their time is the eval phase, not training",
        fmt("%.0f steps hold an evaluation pass: %.1f ms, %.1f%% of step time", static_cast<double>(evals),
            ms(eval_ns),
            100.0 * static_cast<double>(eval_ns) / static_cast<double>(s->breakdown.total.wall_ns)),
        0);
}

void input_rule(RunSummary* s) {
  const StepTime& t = s->breakdown.total;
  const double train = static_cast<double>(std::max<int64_t>(1, t.wall_ns - t.phase(Phase::kEval)));
  const double data = static_cast<double>(t.phase(Phase::kData)) / train;
  if (data < kInputFindingShare) return;
  std::string message;
  if (s->run.single_process_loader && !s->run.multi_process_loader)
    message =
        "the DataLoader loads in the training process (num_workers=0): set num_workers > 0 so worker "
        "processes prepare batches while the step computes";
  else if (s->run.multi_process_loader)
    message = "the DataLoader's " + std::to_string(s->run.dataloader_workers) +
              " worker processes do not keep up: add workers, or make __getitem__/collate cheaper";
  else
    message = "the steps wait for their input: prefetch it or make it cheaper";
  add(s, "input_bound",
      data >= 0.5                  ? "high"
      : data >= kInputVerdictShare ? "medium"
                                   : "low",
      message,
      fmt("data wait %.1f ms, %.1f%% of the training step time (>= %.0f%%)", ms(t.phase(Phase::kData)),
          100 * data, 100 * kInputFindingShare),
      data);
}

// Live bytes of each allocator at the end of each step (the memory counter tracks of the main process).
void memory_rule(const trace::Trace& trace, RunSummary* s) {
  const auto& steps = s->run.steps;
  if (steps.size() < kMinStepsForTrends) return;
  const uint32_t allocator = trace.strings.find(memory_keys::kCounterAllocator);
  const uint32_t value_key = trace.strings.find("value");
  if (allocator == UINT32_MAX || value_key == UINT32_MAX) return;
  std::map<uint32_t, std::vector<std::pair<int64_t, double>>> tracks;  // name -> (time, live bytes)
  for (size_t i = 0; i < trace.spans.size(); ++i) {
    const SpanRecord& sp = trace.spans[i];
    if (sp.process != s->run.main_process || sp.kind != static_cast<uint8_t>(SpanKind::kCounter)) continue;
    bool is_memory = false;
    double value = 0;
    bool has_value = false;
    for (const AttrRecord& a : trace.attributes(i)) {
      is_memory = is_memory || a.key == allocator;
      if (a.key == value_key && (a.type == static_cast<uint8_t>(AttrType::kMetric) ||
                                 a.type == static_cast<uint8_t>(AttrType::kDouble)))
        value = a.value.d, has_value = true;
    }
    if (is_memory && has_value) tracks[sp.name].emplace_back(sp.start_ns, value);
  }
  for (auto& [name, samples] : tracks) {
    std::sort(samples.begin(), samples.end());
    std::vector<double> at_end;
    for (const Step& st : steps) {
      auto it = std::upper_bound(samples.begin(), samples.end(), std::make_pair(st.end_ns, 1e300));
      if (it == samples.begin()) continue;
      at_end.push_back(std::prev(it)->second);
    }
    if (at_end.size() < kMinStepsForTrends) continue;
    int64_t ups = 0, downs = 0;
    for (size_t k = 1; k < at_end.size(); ++k)
      ups += at_end[k] > at_end[k - 1], downs += at_end[k] < at_end[k - 1];
    const double growth = at_end.back() - at_end.front();
    if (growth < kMemoryGrowthBytes || ups < 3 * std::max<int64_t>(1, downs)) continue;
    add(s, "memory_growth", "high",
        "memory grows from step to step: something keeps each step's tensors alive (a list of losses, a "
        "graph "
        "kept by a tensor that requires grad); use loss.item() or detach() for what you keep",
        std::string(trace.strings.get(name)) +
            fmt(": %.1f MB more after the last step than after the first, rising in %.0f of %.0f steps",
                growth / 1e6, static_cast<double>(ups), static_cast<double>(at_end.size() - 1)),
        0.5);
    return;
  }
}

// Compute threads of the processes that ran at once (the main process and its DataLoader workers:
// threads that used a tenth of the CPU time of their process's busiest thread, "end.busy_threads" of
// the End chunk)
// against the cores the main process could use ("end.cpus").
void threads_rule(const trace::Trace& trace, RunSummary* s) {
  const std::string threads_key = "end." + std::string(format::keys::kEndBusyThreads);
  const std::string cpus_key = "end." + std::string(format::keys::kEndCpus);
  const auto& main_props = trace.processes[static_cast<size_t>(s->run.main_process)].properties;
  const auto cpus = main_props.get_int(cpus_key);
  if (!cpus || *cpus <= 0) return;
  int64_t threads = 0, processes = 0;
  for (const ProcessInfo& p : s->run.processes) {
    if (p.role != ProcessRole::kMain && p.role != ProcessRole::kDataloaderWorker) continue;
    auto t = trace.processes[p.process].properties.get_int(threads_key);
    if (!t || *t <= 0) continue;
    threads += *t;
    ++processes;
  }
  if (static_cast<double>(threads) <= kThreadsPerCore * static_cast<double>(*cpus)) return;
  add(s, "thread_oversubscription", "medium",
      "more compute threads than cores: intra-op threads of the training process and the DataLoader workers "
      "compete for the CPUs; lower torch.set_num_threads() (or OMP_NUM_THREADS) so threads x processes <= "
      "cores",
      fmt("%.0f threads in %.0f processes on %.0f cores (> %.1f per core)", static_cast<double>(threads),
          static_cast<double>(processes), static_cast<double>(*cpus), kThreadsPerCore),
      0.2);
}

void device_rules(const trace::Trace& trace, const DeviceFacts& f, RunSummary* s) {
  const StepTime& t = s->breakdown.total;
  const double wall = static_cast<double>(std::max<int64_t>(1, t.wall_ns));
  const double busy = static_cast<double>(t.device.busy_ns) / wall;
  const double sync = static_cast<double>(f.sync_ns) / wall;
  const double steps = static_cast<double>(std::max<size_t>(1, s->run.steps.size()));
  if (f.syncs > 0 && sync >= kSyncFindingShare)
    add(s, "host_sync", sync >= kSyncVerdictShare ? "high" : "medium",
        "the host waits for the device inside the loop (cudaDeviceSynchronize, cudaStreamSynchronize, "
        ".item(), "
        "printing a tensor): keep values on the device and synchronize once per step or less",
        fmt("%.0f synchronizations (%.1f per step), %.1f ms, %.1f%% of step time",
            static_cast<double>(f.syncs), static_cast<double>(f.syncs) / steps, ms(f.sync_ns), 100 * sync),
        sync);
  if (f.pageable_h2d > 0)
    add(s, "pageable_h2d", "medium",
        "host-to-device copies from pageable memory are staged and cannot overlap compute: use pinned memory "
        "(DataLoader(pin_memory=True), tensor.pin_memory()) and non_blocking=True",
        fmt("%.0f copies from pageable memory, %.2f ms, %.1f MB", static_cast<double>(f.pageable_h2d),
            ms(f.pageable_h2d_ns), static_cast<double>(f.pageable_bytes) / 1e6),
        static_cast<double>(f.pageable_h2d_ns) / wall);
  const double median_kernel = median(f.kernel_ns);
  if (static_cast<double>(f.kernels) / steps >= kLaunchKernelsPerStep && median_kernel < kShortKernelNs &&
      busy < kLowUtilShare)
    add(s, "launch_bound", "high",
        "many short kernels with the device idle between them: the host cannot launch fast enough; fuse ops "
        "(torch.compile), use CUDA graphs or larger batches",
        fmt("%.0f kernels per step, median %.1f us (< %.0f us); device busy %.1f%%",
            static_cast<double>(f.kernels) / steps, median_kernel / 1e3,
            static_cast<double>(kShortKernelNs) / 1e3, 100 * busy),
        1 - busy);
  if (f.kernel_total_ns > 0 && tensor_core_gpu(trace) &&
      static_cast<double>(f.gemm_simt_ns) >= kFp32GemmShare * static_cast<double>(f.kernel_total_ns))
    add(s, "no_tensor_cores", "medium",
        "matrix multiplies and convolutions run without tensor cores on a GPU that has them: use bf16/fp16 "
        "autocast or allow TF32 (torch.backends.cuda.matmul.allow_tf32 = True)",
        fmt("GEMM/convolution kernels without a tensor-core marker: %.2f ms, %.1f%% of kernel time (>= "
            "%.0f%%)",
            ms(f.gemm_simt_ns),
            100.0 * static_cast<double>(f.gemm_simt_ns) / static_cast<double>(f.kernel_total_ns),
            100 * kFp32GemmShare),
        static_cast<double>(f.gemm_simt_ns) / wall);
  if (busy < kLowUtilShare)
    add(s, "low_gpu_utilization", busy < 0.2 ? "high" : "medium",
        "the device is idle for much of each step: look at what the host does between kernels (data, syncs, "
        "Python)",
        fmt("device busy %.1f%% of step time (< %.0f%%)", 100 * busy, 100 * kLowUtilShare), 1 - busy);
}

}  // namespace

void judge(const trace::Trace& trace, const trace::SpanTree& tree, RunSummary* s) {
  (void)tree;
  s->findings.clear();
  if (s->run.main_process < 0 || s->breakdown.total.wall_ns <= 0) {
    s->bottleneck = {};
    s->bottleneck.evidence = "no host work or steps to judge";
    return;
  }
  const DeviceFacts facts = s->breakdown.has_device ? device_facts(trace, *s) : DeviceFacts{};
  verdict(*s, facts, untraced_device(trace, *s), &s->bottleneck);
  input_rule(s);
  step_rules(s);
  memory_rule(trace, s);
  threads_rule(trace, s);
  if (s->breakdown.has_device) device_rules(trace, facts, s);
  std::stable_sort(s->findings.begin(), s->findings.end(),
                   [](const Finding& a, const Finding& b) { return a.weight > b.weight; });
}

}  // namespace strata::analysis

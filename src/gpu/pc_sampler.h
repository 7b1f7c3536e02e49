// GPU PC sampling (CUPTI PC Sampling API, cupti_pcsampling.h): enabled per CUDA context when the
// context is created (never inside a launch callback: the Range Profiler hung there on an H100),
// collected with cuptiPCSamplingGetData from the collector's poll thread, before a module unloads
// or a context goes away, after each launch in serialized mode, and at exit; disabled at exit.
// Samples are aggregated per (kernel function, PC) over the run and emitted at the end as one
// `gpu_pc_sample` record each (kind sample, level device) with a count per stall reason, the PC's
// source line when the module's cubin has line info, and, in serialized mode, the kernel's
// correlation id. Talks to CUPTI only through PcSamplingInterface, to the recorder through SpanSink.
//
// Locking: CUPTI may serialize cuptiPCSamplingGetData against its own resource callbacks (both touch
// a context's sampling state), and those callbacks come here. So no call that may wait on CUPTI's
// locks (enable, configure, GetData, disable) is made while holding mu_: a thread that fetches a
// context marks it in flight under mu_, calls CUPTI without mu_ into that context's own buffer, and
// re-takes mu_ to absorb. A destroyed context is marked retiring (no new fetch starts) and the
// destroying thread waits a bounded time for an in-flight fetch of it, then fetches the rest and
// disables it itself. See docs/gpu-collector.md, "PC sampling locking".
#pragma once

#include <cupti.h>
#include <cupti_pcsampling.h>

#include <chrono>
#include <compare>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gpu/cupti_interface.h"
#include "gpu/span_sink.h"

namespace strata::gpu {

enum class PcSamplingMode { kOff, kContinuous, kSerialized };

// "continuous" (kernels run concurrently, records carry no correlation id) or "serialized" (CUPTI
// serializes kernels; each record names its kernel launch). Anything else: false, one line.
bool parse_pc_sampling_mode(std::string_view text, PcSamplingMode* mode, std::string* error);

// The oldest CUPTI (cuptiGetVersion) PC sampling is used with: the CUDA 13 headers it is built against.
inline constexpr uint32_t kMinPcSamplingCuptiVersion = 130000;

// Continuous mode's default period, 2^15 cycles: about 8M samples/s on a busy H100 (132 SMs at
// 1.98 GHz). At CUPTI's default 2^11 (~128M/s) CUPTI's decoding fell behind on an H100 and its 512 MiB
// hardware buffer filled within a second of busy kernels: every later kernel got no sample at all.
// At 2^15 and 2^17 nothing was lost and the stall shares were those of 2^11 and of Nsight Compute.
inline constexpr uint32_t kContinuousPeriod = 15;

struct PcSamplingOptions {
  PcSamplingMode mode = PcSamplingMode::kOff;
  // 5..31: one sample per 2^n cycles per SM. 0: kContinuousPeriod in continuous mode, CUPTI's own
  // default (2^11 on a 132-SM H100) in serialized mode.
  uint32_t sampling_period = 0;
  // CUPTI's worker threads decode the hardware buffer this often (0: CUPTI's default, 100 ms); the
  // hardware buffer's size (0: CUPTI's default, 512 MiB). A buffer the workers do not drain in time
  // fills, and CUPTI then drops every sample until it is drained (hw_buffer_full).
  uint32_t worker_sleep_ms = 0;
  size_t hardware_buffer_bytes = 0;
  size_t pcs_per_collection = 10000;           // PC records fetched per cuptiPCSamplingGetData call
  size_t final_buffer_pcs = 10000;             // the buffer CUPTI fills at disable
  size_t max_cubin_bytes = size_t{256} << 20;  // cubins kept for source lines
  // How long retiring a context (destroy, exit) waits for another thread's fetch of it to return.
  // Bounded: if CUPTI holds that fetch until our own callback returns, waiting longer would hang.
  std::chrono::milliseconds retire_wait{500};
  bool quiet = false;
};

struct PcSamplingStats {
  uint64_t contexts_enabled = 0;
  uint64_t contexts_failed = 0;
  uint64_t collections = 0;         // successful cuptiPCSamplingGetData calls
  uint64_t pc_records = 0;          // PC records received (before aggregation)
  uint64_t total_samples = 0;       // CUPTI's totalSamples, summed
  uint64_t non_user_samples = 0;    // samples in kernels CUPTI gives no PCs for
  uint64_t hw_dropped_samples = 0;  // droppedSamples
  uint64_t hw_buffer_full = 0;      // collections that found the hardware buffer full
  uint32_t period = 0;              // the sampling period CUPTI reports using (2^period cycles); 0: unknown
  uint64_t get_data_errors = 0;
  uint64_t bad_records = 0;  // PC counts or stall entries outside the buffer, unknown reason index
  uint64_t cubins = 0;
  uint64_t cubins_over_cap = 0;
  uint64_t lines_resolved = 0;
  uint64_t emitted = 0;               // gpu_pc_sample records emitted
  uint64_t retire_wait_timeouts = 0;  // retirements that stopped waiting for an in-flight fetch
  uint64_t fetches_skipped_busy = 0;  // collect_all found the context being fetched by another thread
};

class PcSampler {
 public:
  PcSampler(PcSamplingInterface* api, SpanSink* sink, PcSamplingOptions options);
  ~PcSampler();

  // The CUPTI version check; false with one line (error()) when this CUPTI is too old.
  bool check_supported();
  // Resource callbacks.
  void on_context_created(CUcontext context);
  void on_context_destroying(CUcontext context);
  void on_module_loaded(const CUpti_ModuleResourceData* module);
  void on_module_unloading();
  // A launch returned: in serialized mode its kernel has finished, and CUPTI wants the data now.
  void on_launch_exit();
  // cuptiPCSamplingGetData on every enabled context not already being fetched by another thread
  // (the poll thread, module unload, serialized launches); that thread fetches once more for us.
  void collect_all();
  // Collects, disables every context, emits the records, reports counts and drops. Idempotent.
  void finish();

  PcSamplingStats stats() const;
  const std::string& error() const { return error_; }
  PcSamplingMode mode() const { return options_.mode; }

 private:
  struct Buffer {
    CUpti_PCSamplingData data{};
    std::vector<CUpti_PCSamplingPCData> pcs;
    std::vector<CUpti_PCSamplingStallReason> reasons;
    size_t reasons_per_pc = 0;
    void allocate(size_t num_pcs, size_t num_reasons);
    void reset();
  };
  // A context's sampling state. kEnabled -> kRetiring (destroy or exit seen; no new fetch starts)
  // -> kDisabled; kFailed when enabling it failed. Objects live until the sampler does, so a thread
  // that fetched a context can always absorb into it.
  enum class State { kEnabling, kEnabled, kRetiring, kDisabled, kFailed };
  struct Context {
    CUcontext context = nullptr;
    uint32_t device = 0;
    State state = State::kEnabling;
    bool in_flight = false;  // a thread is inside CUPTI for this context with its scratch buffer
    bool again = false;      // someone asked for a fetch while one was in flight: fetch once more
    std::vector<uint32_t> reason_indices;
    std::map<uint32_t, std::string> reason_names;  // index -> short name
    uint32_t period = 0;                           // as CUPTI reports it after configuring; 0: unknown
    Buffer scratch;                                // for cuptiPCSamplingGetData; owned by in_flight
    Buffer final_data;  // CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER
  };
  struct PcKey {
    uint32_t context = 0;   // index into contexts_
    uint32_t function = 0;  // index into functions_
    uint64_t cubin_crc = 0;
    uint32_t function_index = 0;
    uint64_t pc_offset = 0;
    uint32_t correlation_id = 0;
    auto operator<=>(const PcKey&) const = default;
  };
  struct PcKeyHash {
    size_t operator()(const PcKey& k) const {
      uint64_t h = k.pc_offset * 0x9E3779B97F4A7C15ull ^ k.cubin_crc;
      h ^= (static_cast<uint64_t>(k.function) << 32 | k.correlation_id) + 0x9E3779B97F4A7C15ull + (h << 6) +
           (h >> 2);
      return static_cast<size_t>(h ^ (static_cast<uint64_t>(k.context) << 48 | k.function_index));
    }
  };

  // Enabling, fetching and disabling call CUPTI: the caller must not hold mu_ (`lock` is released
  // around each CUPTI call and held again on return).
  std::string enable_unlocked(Context& c);
  void fetch(uint32_t slot, Buffer& buffer, State while_state, std::unique_lock<std::mutex>& lock);
  void retire(uint32_t slot, std::unique_lock<std::mutex>& lock);
  void absorb_locked(uint32_t slot, const CUpti_PCSamplingData& data);
  void emit_locked();
  uint32_t function_id(const char* name);
  void emit_one(const PcKey& key, const std::map<uint32_t, uint64_t>& counts, int64_t when);
  void report_locked();
  void say(const std::string& line);

  PcSamplingInterface* api_;
  SpanSink* sink_;
  PcSamplingOptions options_;
  std::string error_;
  bool finished_ = false;
  mutable std::mutex mu_;  // callbacks, the poll thread and exit all come here; never held into CUPTI
  std::condition_variable fetch_done_;  // a context's in_flight went false
  std::vector<std::unique_ptr<Context>> contexts_;
  // (function, PC) -> reason index -> samples; a hash map: the poll thread looks up every record.
  std::unordered_map<PcKey, std::map<uint32_t, uint64_t>, PcKeyHash> samples_;
  // Function names seen, by id; CUPTI's pointers first (its strings are shared and never freed here).
  std::vector<std::string> functions_;
  std::unordered_map<const char*, uint32_t> function_by_pointer_;
  std::unordered_map<std::string, uint32_t> function_by_name_;
  std::map<uint64_t, std::vector<char>> cubins_;  // cubin CRC -> the module's cubin
  size_t cubin_bytes_ = 0;
  std::map<std::string, std::string> demangled_;
  PcSamplingStats stats_;
};

}  // namespace strata::gpu

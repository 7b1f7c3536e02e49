#include "gpu/pc_sampler.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>

#include "collect/clock.h"
#include "core/activity_type.h"
#include "core/attr_keys.h"
#include "core/level.h"
#include "core/stall_reasons.h"

namespace strata::gpu {

bool parse_pc_sampling_mode(std::string_view text, PcSamplingMode* mode, std::string* error) {
  if (text.empty() || text == "continuous" || text == "1") {
    *mode = PcSamplingMode::kContinuous;
    return true;
  }
  if (text == "serialized") {
    *mode = PcSamplingMode::kSerialized;
    return true;
  }
  *error = "unknown GPU PC sampling mode '" + std::string(text) + "' (use continuous or serialized)";
  return false;
}

void PcSampler::Buffer::allocate(size_t num_pcs, size_t num_reasons) {
  pcs.assign(num_pcs, CUpti_PCSamplingPCData{});
  reasons_per_pc = num_reasons;
  reasons.assign(num_pcs * num_reasons, CUpti_PCSamplingStallReason{});
  reset();
}

// Every field CUPTI writes is cleared and every [w] field set before each call, the way CUPTI's
// samples lay the buffer out: one CUpti_PCSamplingPCData per PC, each with room for every stall reason.
void PcSampler::Buffer::reset() {
  std::memset(&data, 0, sizeof(data));
  data.size = sizeof(CUpti_PCSamplingData);
  data.collectNumPcs = pcs.size();
  data.pPcData = pcs.data();
  for (size_t i = 0; i < pcs.size(); ++i) {
    std::memset(&pcs[i], 0, sizeof(pcs[i]));
    pcs[i].size = sizeof(CUpti_PCSamplingPCData);
    pcs[i].stallReason = reasons.data() + i * reasons_per_pc;
  }
}

PcSampler::PcSampler(PcSamplingInterface* api, SpanSink* sink, PcSamplingOptions options)
    : api_(api), sink_(sink), options_(options) {}

PcSampler::~PcSampler() = default;

void PcSampler::say(const std::string& line) {
  if (error_.empty()) error_ = line;
  if (!options_.quiet) std::fprintf(stderr, "%s\n", line.c_str());
}

bool PcSampler::check_supported() {
  uint32_t version = 0;
  CUptiResult r = api_->cupti_version(&version);
  if (r != CUPTI_SUCCESS || version < kMinPcSamplingCuptiVersion) {
    std::string have = r == CUPTI_SUCCESS ? "API version " + std::to_string(version)
                                          : std::string("unknown (") + api_->result_string(r) + ")";
    say("strata: GPU PC sampling needs CUPTI API version >= " + std::to_string(kMinPcSamplingCuptiVersion) +
        " (CUDA 13); this CUPTI is " + have + ": recording without PC sampling (install CUDA 13's CUPTI)");
    return false;
  }
  return true;
}

namespace {

std::string configure_failure(const char* call, const char* why, CUptiResult r, uint32_t device) {
  std::string hint = r == CUPTI_ERROR_NOT_SUPPORTED ? "this GPU or driver does not support PC sampling"
                     : r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES
                         ? "profiling is restricted to admin users (NVreg_RestrictProfilingToAdminUsers)"
                         : "another profiler may hold the GPU";
  return "strata: GPU PC sampling off on device " + std::to_string(device) + ": " + call + " failed: " + why +
         " (" + hint + "); kernels are still traced";
}

}  // namespace

// Called without mu_ on a context no other thread sees yet. Returns "" when sampling is on, else
// the line to say (the context is then left disabled).
std::string PcSampler::enable_unlocked(Context& c) {
  bool enabled = false;
  auto failed = [&](const char* call, CUptiResult r) {
    if (enabled) api_->disable(c.context);
    return configure_failure(call, api_->result_string(r), r, c.device);
  };
  // The order of CUPTI's own samples: enable, ask for the stall reasons, then configure.
  if (CUptiResult r = api_->enable(c.context); r != CUPTI_SUCCESS) return failed("cuptiPCSamplingEnable", r);
  enabled = true;
  size_t count = 0;
  if (CUptiResult r = api_->num_stall_reasons(c.context, &count); r != CUPTI_SUCCESS || count == 0)
    return failed("cuptiPCSamplingGetNumStallReasons", r != CUPTI_SUCCESS ? r : CUPTI_ERROR_UNKNOWN);
  c.reason_indices.assign(count, 0);
  std::vector<std::vector<char>> storage(count, std::vector<char>(CUPTI_STALL_REASON_STRING_SIZE, '\0'));
  std::vector<char*> names(count);
  for (size_t i = 0; i < count; ++i) names[i] = storage[i].data();
  if (CUptiResult r = api_->stall_reasons(c.context, count, c.reason_indices.data(), names.data());
      r != CUPTI_SUCCESS)
    return failed("cuptiPCSamplingGetStallReasons", r);
  for (size_t i = 0; i < count; ++i) {
    storage[i].back() = '\0';
    c.reason_names[c.reason_indices[i]] = short_stall_reason(storage[i].data());
  }
  c.scratch.allocate(options_.pcs_per_collection, count);
  c.final_data.allocate(options_.final_buffer_pcs, count);

  std::vector<CUpti_PCSamplingConfigurationInfo> config;
  auto add =
      [&config](CUpti_PCSamplingConfigurationAttributeType type) -> CUpti_PCSamplingConfigurationInfo& {
    CUpti_PCSamplingConfigurationInfo info;
    std::memset(&info, 0, sizeof(info));
    info.attributeType = type;
    return config.emplace_back(info);
  };
  add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE)
      .attributeData.collectionModeData.collectionMode =
      options_.mode == PcSamplingMode::kSerialized ? CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED
                                                   : CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS;
  auto& reasons = add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON).attributeData.stallReasonData;
  reasons.stallReasonCount = count;
  reasons.pStallReasonIndex = c.reason_indices.data();
  add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT)
      .attributeData.outputDataFormatData.outputDataFormat = CUPTI_PC_SAMPLING_OUTPUT_DATA_FORMAT_PARSED;
  add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER)
      .attributeData.samplingDataBufferData.samplingDataBuffer = &c.final_data.data;
  const uint32_t period = options_.sampling_period != 0                  ? options_.sampling_period
                          : options_.mode == PcSamplingMode::kContinuous ? kContinuousPeriod
                                                                         : 0;
  if (period != 0)
    add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD)
        .attributeData.samplingPeriodData.samplingPeriod = period;
  if (options_.worker_sleep_ms != 0)
    add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_WORKER_THREAD_PERIODIC_SLEEP_SPAN)
        .attributeData.workerThreadPeriodicSleepSpanData.workerThreadPeriodicSleepSpan =
        options_.worker_sleep_ms;
  if (options_.hardware_buffer_bytes != 0)
    add(CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_HARDWARE_BUFFER_SIZE)
        .attributeData.hardwareBufferSizeData.hardwareBufferSize = options_.hardware_buffer_bytes;
  if (CUptiResult r = api_->set_configuration(c.context, config.data(), config.size()); r != CUPTI_SUCCESS)
    return failed("cuptiPCSamplingSetConfigurationAttribute", r);
  // The period in use: samples are one per 2^period cycles per SM, what turns counts into time.
  CUpti_PCSamplingConfigurationInfo in_use;
  std::memset(&in_use, 0, sizeof(in_use));
  in_use.attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD;
  if (api_->get_configuration(c.context, &in_use, 1) == CUPTI_SUCCESS)
    c.period = in_use.attributeData.samplingPeriodData.samplingPeriod;
  return "";
}

void PcSampler::on_context_created(CUcontext context) {
  if (context == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finished_) return;
  }
  auto c = std::make_unique<Context>();
  c->context = context;
  if (api_->device_id(context, &c->device) != CUPTI_SUCCESS) c->device = 0;
  // Still private to this thread: enabled and configured without mu_ (CUPTI calls, see the header).
  std::string failure = enable_unlocked(*c);
  std::unique_lock<std::mutex> lock(mu_);
  if (!failure.empty()) {
    c->state = State::kFailed;
    ++stats_.contexts_failed;
    say(failure);
    contexts_.push_back(std::move(c));
    return;
  }
  ++stats_.contexts_enabled;
  if (c->period != 0) stats_.period = c->period;
  if (!finished_) {
    c->state = State::kEnabled;
    contexts_.push_back(std::move(c));
    return;
  }
  // finish() ran while this context was being enabled: its records are written already.
  c->state = State::kDisabled;
  Context& late = *c;
  contexts_.push_back(std::move(c));
  lock.unlock();
  api_->disable(late.context);
}

// CUPTI's functionName strings may be shared with other records: copied once, never freed here.
uint32_t PcSampler::function_id(const char* name) {
  if (name == nullptr) name = "";
  if (auto it = function_by_pointer_.find(name); it != function_by_pointer_.end()) return it->second;
  auto [it, inserted] = function_by_name_.try_emplace(name, static_cast<uint32_t>(functions_.size()));
  if (inserted) functions_.emplace_back(name);
  function_by_pointer_.emplace(name, it->second);
  return it->second;
}

void PcSampler::absorb_locked(uint32_t slot, const CUpti_PCSamplingData& data) {
  const Context& c = *contexts_[slot];
  stats_.total_samples += data.totalSamples;
  stats_.hw_dropped_samples += data.droppedSamples;
  stats_.non_user_samples += data.nonUsrKernelsTotalSamples;
  if (data.hardwareBufferFull != 0) ++stats_.hw_buffer_full;
  size_t n = data.totalNumPcs;
  if (n > data.collectNumPcs) {  // more than the buffer holds: never read past it
    stats_.bad_records += n - data.collectNumPcs;
    n = data.collectNumPcs;
  }
  const size_t room = c.scratch.reasons_per_pc;
  for (size_t i = 0; i < n; ++i) {
    const CUpti_PCSamplingPCData& pc = data.pPcData[i];
    ++stats_.pc_records;
    size_t reasons = pc.stallReasonCount;
    if (reasons > room || pc.stallReason == nullptr) {
      stats_.bad_records += reasons > room ? reasons - room : reasons;
      reasons = pc.stallReason == nullptr ? 0 : room;
    }
    PcKey key{slot,        function_id(pc.functionName),
              pc.cubinCrc, pc.functionIndex,
              pc.pcOffset, options_.mode == PcSamplingMode::kSerialized ? pc.correlationId : 0};
    auto& counts = samples_[key];
    for (size_t k = 0; k < reasons; ++k) {
      const CUpti_PCSamplingStallReason& s = pc.stallReason[k];
      if (!c.reason_names.contains(s.pcSamplingStallReasonIndex)) {
        ++stats_.bad_records;
        continue;
      }
      if (s.samples > 0) counts[s.pcSamplingStallReasonIndex] += s.samples;
    }
  }
}

// Called with `lock` held by a thread that owns `buffer` for this context; returns with it held.
// Stops when CUPTI has nothing left or the context leaves `while_state` (a poll stops at retirement).
void PcSampler::fetch(uint32_t slot, Buffer& buffer, State while_state, std::unique_lock<std::mutex>& lock) {
  Context& c = *contexts_[slot];  // a stable object: contexts_ only grows, by pointer
  // One call returns at most collectNumPcs PCs and says how many remain: call until none do.
  for (int round = 0; round < 1000 && c.state == while_state; ++round) {
    buffer.reset();
    lock.unlock();
    CUptiResult r = api_->get_data(c.context, &buffer.data);
    lock.lock();
    if (r == CUPTI_ERROR_OUT_OF_MEMORY) {  // the hardware buffer was full: its PC data is gone
      ++stats_.hw_buffer_full;
      return;
    }
    if (r != CUPTI_SUCCESS) {
      ++stats_.get_data_errors;
      return;
    }
    ++stats_.collections;
    absorb_locked(slot, buffer.data);
    if (buffer.data.remainingNumPcs == 0 || buffer.data.totalNumPcs == 0) return;
  }
}

// Called with `lock` held; returns with it held and the context disabled (or failed/never enabled).
void PcSampler::retire(uint32_t slot, std::unique_lock<std::mutex>& lock) {
  Context& c = *contexts_[slot];
  if (c.state == State::kRetiring) {  // another thread retires it: wait until its data is absorbed
    if (!fetch_done_.wait_for(lock, options_.retire_wait, [&c] { return c.state != State::kRetiring; }))
      ++stats_.retire_wait_timeouts;
    return;
  }
  if (c.state != State::kEnabled) return;
  c.state = State::kRetiring;  // from here no fetch of it starts
  // An in-flight poll of this context may itself wait inside CUPTI for the callback we are in:
  // the wait is bounded, and after it we fetch into a buffer of our own, leaving its scratch to it.
  Buffer own;
  Buffer* buffer = &c.scratch;
  if (!fetch_done_.wait_for(lock, options_.retire_wait, [&c] { return !c.in_flight; })) {
    ++stats_.retire_wait_timeouts;
    own.allocate(options_.pcs_per_collection, c.scratch.reasons_per_pc);
    buffer = &own;
  }
  fetch(slot, *buffer, State::kRetiring, lock);
  c.final_data.reset();
  lock.unlock();
  CUptiResult r = api_->disable(c.context);
  lock.lock();
  if (r != CUPTI_SUCCESS)
    ++stats_.get_data_errors;
  else  // what CUPTI had not handed out yet, copied into the configured buffer at disable
    absorb_locked(slot, c.final_data.data);
  c.state = State::kDisabled;
  fetch_done_.notify_all();
}

void PcSampler::on_context_destroying(CUcontext context) {
  std::unique_lock<std::mutex> lock(mu_);
  for (uint32_t i = 0; i < contexts_.size(); ++i)
    if (contexts_[i]->context == context) retire(i, lock);
}

void PcSampler::on_module_loaded(const CUpti_ModuleResourceData* module) {
  if (module == nullptr || module->pCubin == nullptr || module->cubinSize == 0) return;
  uint64_t crc = 0;
  if (api_->cubin_crc(module->pCubin, module->cubinSize, &crc) != CUPTI_SUCCESS) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (cubins_.contains(crc)) return;
  if (cubin_bytes_ + module->cubinSize > options_.max_cubin_bytes) {
    ++stats_.cubins_over_cap;
    return;
  }
  // The callback's data is valid only during the callback: the cubin is copied.
  cubins_[crc].assign(module->pCubin, module->pCubin + module->cubinSize);
  cubin_bytes_ += module->cubinSize;
  ++stats_.cubins;
}

void PcSampler::on_module_unloading() {
  // CUPTI: PCs stay unique only if data is fetched between a module's unload and another's load.
  collect_all();
}

void PcSampler::on_launch_exit() {
  if (options_.mode == PcSamplingMode::kSerialized) collect_all();
}

void PcSampler::collect_all() {
  std::unique_lock<std::mutex> lock(mu_);
  // contexts_ may grow while mu_ is released inside fetch(): its size is read again each time.
  for (uint32_t i = 0; i < contexts_.size() && !finished_; ++i) {
    Context& c = *contexts_[i];
    if (c.state != State::kEnabled) continue;
    if (c.in_flight) {  // the thread fetching it fetches once more, covering what we were asked for
      c.again = true;
      ++stats_.fetches_skipped_busy;
      continue;
    }
    c.in_flight = true;
    do {
      c.again = false;
      fetch(i, c.scratch, State::kEnabled, lock);
    } while (c.again && c.state == State::kEnabled);
    c.in_flight = false;
    fetch_done_.notify_all();
  }
}

void PcSampler::finish() {
  std::unique_lock<std::mutex> lock(mu_);
  if (finished_) return;
  finished_ = true;
  for (uint32_t i = 0; i < contexts_.size(); ++i) retire(i, lock);
  emit_locked();
  report_locked();
  if (stats_.hw_buffer_full == 0 || options_.quiet) return;
  // A loss (counted as a drop), not an error of the sampler: one line that says what to change.
  const uint32_t coarser =
      std::min<uint32_t>(31, (stats_.period != 0 ? stats_.period : kContinuousPeriod) + 2);
  std::fprintf(
      stderr,
      "strata: GPU PC sampling: CUPTI's hardware buffer was full in %llu collections and the samples "
      "taken while it was are lost (kernels of that time have fewer or none); sample less often "
      "(STRATA_GPU_PC_SAMPLING_PERIOD=%u) or give CUPTI a larger buffer woken more often "
      "(STRATA_GPU_PC_SAMPLING_HW_BUFFER_MB=2048 STRATA_GPU_PC_SAMPLING_WORKER_MS=10)\n",
      static_cast<unsigned long long>(stats_.hw_buffer_full), coarser);
}

namespace {

// Kernel names as the activity translator gives them (demangled), so samples join their kernels by name.
std::string demangle(const std::string& name) {
  int status = 0;
  char* text = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  std::string out = status == 0 && text != nullptr ? std::string(text) : name;
  std::free(text);
  return out;
}

}  // namespace

void PcSampler::emit_one(const PcKey& key, const std::map<uint32_t, uint64_t>& counts, int64_t when) {
  const Context& c = *contexts_[key.context];
  SpanRecord r;
  r.start_ns = r.end_ns = when;  // a run-long aggregate: no duration, so it never counts as device time
  r.level = static_cast<uint8_t>(Level::kDevice);
  r.kind = static_cast<uint8_t>(SpanKind::kSample);
  r.activity = static_cast<uint8_t>(ActivityType::kGpuPcSample);
  r.clock = static_cast<uint8_t>(ClockDomain::kMonotonic);
  r.device = static_cast<uint16_t>(c.device);
  std::deque<std::string> keys;  // attribute keys are views: kept alive until emit returns
  AttrList a;
  uint64_t all = 0, not_issued = 0;
  for (const auto& [index, n] : counts) {
    const std::string& reason = c.reason_names.at(index);
    keys.push_back(std::string(attr_keys::kStallPrefix) + reason);
    a.add_int(keys.back(), static_cast<int64_t>(n));
    (is_not_issued_variant(reason) ? not_issued : all) += n;
  }
  a.add_int(attr_keys::kPcSamples, static_cast<int64_t>(all));
  a.add_int(attr_keys::kPcSamplesNotIssued, static_cast<int64_t>(not_issued));
  a.add_int(attr_keys::kPcOffset, static_cast<int64_t>(key.pc_offset));
  a.add_int(attr_keys::kCubinCrc, static_cast<int64_t>(key.cubin_crc));
  a.add_int(attr_keys::kFunctionIndex, key.function_index);
  if (key.correlation_id != 0) a.add_int(attr_keys::kKernelCorrelationId, key.correlation_id);
  const std::string& function = functions_[key.function];
  std::string file;
  uint32_t line = 0;
  if (auto it = cubins_.find(key.cubin_crc);
      it != cubins_.end() && !function.empty() &&
      api_->source_line(it->second.data(), it->second.size(), function.c_str(), key.pc_offset, &file,
                        &line) == CUPTI_SUCCESS &&
      line != 0) {
    a.add_string(attr_keys::kSourceFile, file);
    a.add_int(attr_keys::kSourceLine, line);
    ++stats_.lines_resolved;
  }
  auto [name, inserted] = demangled_.try_emplace(function);
  if (inserted) name->second = function.empty() ? "<unknown kernel>" : demangle(function);
  sink_->emit(r, name->second, a.view());
  ++stats_.emitted;
}

void PcSampler::emit_locked() {
  const int64_t now = collect::monotonic_ns();
  // In key order (function ids follow first appearance): the same CUPTI data gives the same file.
  std::vector<const std::pair<const PcKey, std::map<uint32_t, uint64_t>>*> order;
  order.reserve(samples_.size());
  for (const auto& entry : samples_) order.push_back(&entry);
  std::sort(order.begin(), order.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
  for (const auto* entry : order)
    if (!entry->second.empty()) emit_one(entry->first, entry->second, now);
  samples_.clear();
  cubins_.clear();
}

void PcSampler::report_locked() {
  sink_->report_drops("pc_sampling_hw_dropped_samples", stats_.hw_dropped_samples);
  sink_->report_drops("pc_sampling_hw_buffer_full", stats_.hw_buffer_full);
  sink_->report_drops("pc_sampling_get_data_errors", stats_.get_data_errors);
  sink_->report_drops("pc_sampling_bad_records", stats_.bad_records);
  sink_->report_drops("pc_sampling_cubins_over_cap", stats_.cubins_over_cap);
  sink_->report_property("pc_sampling.mode",
                         options_.mode == PcSamplingMode::kSerialized ? "serialized" : "continuous");
  sink_->report_property("pc_sampling.contexts", std::to_string(stats_.contexts_enabled) + " enabled, " +
                                                     std::to_string(stats_.contexts_failed) + " failed");
  if (stats_.period != 0)
    sink_->report_property("pc_sampling.period", std::to_string(stats_.period) + " (one sample per 2^" +
                                                     std::to_string(stats_.period) + " = " +
                                                     std::to_string(uint64_t{1} << stats_.period) +
                                                     " cycles)");
  sink_->report_property("pc_sampling.collections", std::to_string(stats_.collections));
  sink_->report_property("pc_sampling.total_samples", std::to_string(stats_.total_samples));
  sink_->report_property("pc_sampling.non_user_samples", std::to_string(stats_.non_user_samples));
  sink_->report_property("pc_sampling.pcs", std::to_string(stats_.emitted));
  sink_->report_property("pc_sampling.lines_resolved", std::to_string(stats_.lines_resolved));
  if (stats_.retire_wait_timeouts != 0)
    sink_->report_property("pc_sampling.retire_wait_timeouts", std::to_string(stats_.retire_wait_timeouts));
  if (!error_.empty()) sink_->report_property("pc_sampling.error", error_);
}

PcSamplingStats PcSampler::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace strata::gpu

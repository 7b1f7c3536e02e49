// The slice of CUPTI the collector uses, behind a virtual interface (as Kineto does), so tests can
// drive the collector with fabricated activity records and callback data on a machine without a GPU.
// RealCupti (cupti_real.cc) forwards each call to libcupti; it is only linked into the injection library.
#pragma once

#include <cupti.h>
#include <cupti_pcsampling.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace strata::gpu {

class CuptiInterface {
 public:
  virtual ~CuptiInterface() = default;

  virtual CUptiResult subscribe(CUpti_CallbackFunc callback, void* userdata) = 0;
  virtual CUptiResult unsubscribe() = 0;
  virtual CUptiResult enable_callback(CUpti_CallbackDomain domain, CUpti_CallbackId id) = 0;
  // Name of a callback id (e.g. "cudaLaunchKernel"), or null when the id does not exist.
  virtual const char* callback_name(CUpti_CallbackDomain domain, CUpti_CallbackId id) = 0;

  virtual CUptiResult activity_enable(CUpti_ActivityKind kind) = 0;
  virtual CUptiResult register_buffer_callbacks(CUpti_BuffersCallbackRequestFunc requested,
                                                CUpti_BuffersCallbackCompleteFunc completed) = 0;
  virtual CUptiResult register_timestamp_callback(CUpti_TimestampCallbackFunc fn) = 0;
  virtual CUptiResult set_flush_period_ms(uint32_t ms) = 0;
  virtual CUptiResult flush_all(uint32_t flag) = 0;
  // Walks a completed buffer: *record = null on the first call, the previous record afterwards.
  // Returns CUPTI_ERROR_MAX_LIMIT_REACHED after the last record.
  virtual CUptiResult next_record(uint8_t* buffer, size_t valid_bytes, CUpti_Activity** record) = 0;
  virtual CUptiResult dropped_records(CUcontext context, uint32_t stream_id, size_t* dropped) = 0;
  virtual CUptiResult push_external_correlation(uint64_t id) = 0;
  virtual CUptiResult pop_external_correlation(uint64_t* id) = 0;
  virtual const char* result_string(CUptiResult result) = 0;
};

// The libcupti-backed implementation (defined only where libcupti is linked).
std::unique_ptr<CuptiInterface> make_real_cupti();

// The PC Sampling API (cupti_pcsampling.h) behind its own seam: the calls PcSampler makes, one to one.
// Tests fill CUpti_PCSamplingData exactly as CUPTI does; RealPcSampling (pc_sampling_real.cc, only in
// libstrata_cupti.so) forwards to libcupti and is UNVALIDATED ON A GPU (docs/gpu-collector.md).
class PcSamplingInterface {
 public:
  virtual ~PcSamplingInterface() = default;
  virtual CUptiResult cupti_version(uint32_t* version) = 0;  // cuptiGetVersion
  virtual CUptiResult device_id(CUcontext context, uint32_t* device) = 0;
  virtual CUptiResult enable(CUcontext context) = 0;
  virtual CUptiResult disable(CUcontext context) = 0;
  virtual CUptiResult num_stall_reasons(CUcontext context, size_t* count) = 0;
  // `names` holds `count` buffers of CUPTI_STALL_REASON_STRING_SIZE bytes each.
  virtual CUptiResult stall_reasons(CUcontext context, size_t count, uint32_t* indices, char** names) = 0;
  virtual CUptiResult set_configuration(CUcontext context, CUpti_PCSamplingConfigurationInfo* info,
                                        size_t count) = 0;
  // cuptiPCSamplingGetConfigurationAttribute: reads back what CUPTI chose (the default period).
  virtual CUptiResult get_configuration(CUcontext context, CUpti_PCSamplingConfigurationInfo* info,
                                        size_t count) = 0;
  virtual CUptiResult get_data(CUcontext context, CUpti_PCSamplingData* data) = 0;
  virtual CUptiResult cubin_crc(const void* cubin, size_t size, uint64_t* crc) = 0;
  // cuptiGetSassToSourceCorrelation: "dir/file" and line of a PC; CUPTI's strings freed here.
  virtual CUptiResult source_line(const void* cubin, size_t size, const char* function, uint64_t pc_offset,
                                  std::string* file, uint32_t* line) = 0;
  virtual const char* result_string(CUptiResult result) = 0;
};

std::unique_ptr<PcSamplingInterface> make_real_pc_sampling();

}  // namespace strata::gpu

// The slice of CUPTI the collector uses, behind a virtual interface (as Kineto does), so tests can
// drive the collector with fabricated activity records and callback data on a machine without a GPU.
// RealCupti (cupti_real.cc) forwards each call to libcupti; it is only linked into the injection library.
#pragma once

#include <cupti.h>

#include <cstddef>
#include <cstdint>
#include <memory>

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

}  // namespace strata::gpu

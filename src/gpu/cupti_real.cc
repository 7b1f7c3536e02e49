// CuptiInterface over the real libcupti. Every call is a plain forward: policy lives in the collector.
#include <cupti.h>

#include "gpu/cupti_interface.h"

namespace strata::gpu {
namespace {

class RealCupti final : public CuptiInterface {
 public:
  CUptiResult subscribe(CUpti_CallbackFunc callback, void* userdata) override {
    return cuptiSubscribe(&subscriber_, callback, userdata);
  }
  CUptiResult unsubscribe() override {
    if (subscriber_ == nullptr) return CUPTI_SUCCESS;
    CUptiResult r = cuptiUnsubscribe(subscriber_);
    subscriber_ = nullptr;
    return r;
  }
  CUptiResult enable_callback(CUpti_CallbackDomain domain, CUpti_CallbackId id) override {
    return cuptiEnableCallback(1, subscriber_, domain, id);
  }
  const char* callback_name(CUpti_CallbackDomain domain, CUpti_CallbackId id) override {
    const char* name = nullptr;
    if (cuptiGetCallbackName(domain, id, &name) != CUPTI_SUCCESS) return nullptr;
    return name;
  }
  CUptiResult activity_enable(CUpti_ActivityKind kind) override { return cuptiActivityEnable(kind); }
  CUptiResult register_buffer_callbacks(CUpti_BuffersCallbackRequestFunc requested,
                                        CUpti_BuffersCallbackCompleteFunc completed) override {
    return cuptiActivityRegisterCallbacks(requested, completed);
  }
  CUptiResult register_timestamp_callback(CUpti_TimestampCallbackFunc fn) override {
    return cuptiActivityRegisterTimestampCallback(fn);
  }
  CUptiResult set_flush_period_ms(uint32_t ms) override { return cuptiActivityFlushPeriod(ms); }
  CUptiResult flush_all(uint32_t flag) override { return cuptiActivityFlushAll(flag); }
  CUptiResult next_record(uint8_t* buffer, size_t valid_bytes, CUpti_Activity** record) override {
    return cuptiActivityGetNextRecord(buffer, valid_bytes, record);
  }
  CUptiResult dropped_records(CUcontext context, uint32_t stream_id, size_t* dropped) override {
    return cuptiActivityGetNumDroppedRecords(context, stream_id, dropped);
  }
  CUptiResult push_external_correlation(uint64_t id) override {
    return cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id);
  }
  CUptiResult pop_external_correlation(uint64_t* id) override {
    return cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id);
  }
  const char* result_string(CUptiResult result) override {
    const char* text = nullptr;
    if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr) return "unknown CUPTI error";
    return text;
  }

 private:
  CUpti_SubscriberHandle subscriber_ = nullptr;
};

}  // namespace

std::unique_ptr<CuptiInterface> make_real_cupti() { return std::make_unique<RealCupti>(); }

}  // namespace strata::gpu

// RangeProfilerInterface over CUPTI 13's Range Profiler (cupti_range_profiler.h) and profiler host
// API (cupti_profiler_host.h): auto range (one range per kernel), kernel replay, metrics evaluated on
// the host. Linked only into libstrata_cupti.so. NOT RUN ANYWHERE YET: written against the headers;
// validation on a GPU is issue 7's.
#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gpu/gpu_metrics.h"

namespace strata::gpu {
namespace {

// A zeroed CUPTI parameter struct with its size set (the pattern every profiler call expects).
template <typename T>
T params(size_t struct_size) {
  T p;
  std::memset(&p, 0, sizeof(p));
  p.structSize = struct_size;
  return p;
}

constexpr size_t kMaxRanges = 1 << 16;  // kernels profiled per run (the counter data image's size)

std::string cupti_error(const char* call, CUptiResult r) {
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  return std::string("CUPTI range profiler: ") + call +
         " failed: " + (text != nullptr ? text : "unknown error");
}

class RealRangeProfiler final : public RangeProfilerInterface {
 public:
  ~RealRangeProfiler() override { release(); }

  bool start(CUcontext context, const std::vector<std::string>& raw_metrics, std::string* error) override {
    names_ = raw_metrics;
    metric_ptrs_.clear();
    for (const auto& m : names_) metric_ptrs_.push_back(m.c_str());

    CUpti_Profiler_Initialize_Params init{CUpti_Profiler_Initialize_Params_STRUCT_SIZE, nullptr};
    if (CUptiResult r = cuptiProfilerInitialize(&init); r != CUPTI_SUCCESS)
      return fail("cuptiProfilerInitialize", r, error);
    uint32_t device = 0;
    if (CUptiResult r = cuptiGetDeviceId(context, &device); r != CUPTI_SUCCESS)
      return fail("cuptiGetDeviceId", r, error);
    CUpti_Device_GetChipName_Params chip{CUpti_Device_GetChipName_Params_STRUCT_SIZE, nullptr, device,
                                         nullptr};
    if (CUptiResult r = cuptiDeviceGetChipName(&chip); r != CUPTI_SUCCESS)
      return fail("cuptiDeviceGetChipName", r, error);

    CUpti_RangeProfiler_Enable_Params enable{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE, nullptr, context,
                                             nullptr};
    if (CUptiResult r = cuptiRangeProfilerEnable(&enable); r != CUPTI_SUCCESS)
      return fail("cuptiRangeProfilerEnable", r, error);
    object_ = enable.pRangeProfilerObject;

    auto host =
        params<CUpti_Profiler_Host_Initialize_Params>(CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE);
    host.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    host.pChipName = chip.pChipName;
    if (CUptiResult r = cuptiProfilerHostInitialize(&host); r != CUPTI_SUCCESS)
      return fail("cuptiProfilerHostInitialize", r, error);
    host_ = host.pHostObject;
    auto add = params<CUpti_Profiler_Host_ConfigAddMetrics_Params>(
        CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE);
    add.pHostObject = host_;
    add.ppMetricNames = metric_ptrs_.data();
    add.numMetrics = metric_ptrs_.size();
    if (CUptiResult r = cuptiProfilerHostConfigAddMetrics(&add); r != CUPTI_SUCCESS)
      return fail("cuptiProfilerHostConfigAddMetrics", r, error);
    auto size = params<CUpti_Profiler_Host_GetConfigImageSize_Params>(
        CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE);
    size.pHostObject = host_;
    if (CUptiResult r = cuptiProfilerHostGetConfigImageSize(&size); r != CUPTI_SUCCESS)
      return fail("cuptiProfilerHostGetConfigImageSize", r, error);
    config_.resize(size.configImageSize);
    auto image = params<CUpti_Profiler_Host_GetConfigImage_Params>(
        CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE);
    image.pHostObject = host_;
    image.configImageSize = config_.size();
    image.pConfigImage = config_.data();
    if (CUptiResult r = cuptiProfilerHostGetConfigImage(&image); r != CUPTI_SUCCESS)
      return fail("cuptiProfilerHostGetConfigImage", r, error);

    auto data_size = params<CUpti_RangeProfiler_GetCounterDataSize_Params>(
        CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE);
    data_size.pRangeProfilerObject = object_;
    data_size.pMetricNames = metric_ptrs_.data();
    data_size.numMetrics = metric_ptrs_.size();
    data_size.maxNumOfRanges = kMaxRanges;
    data_size.maxNumRangeTreeNodes = kMaxRanges;
    if (CUptiResult r = cuptiRangeProfilerGetCounterDataSize(&data_size); r != CUPTI_SUCCESS)
      return fail("cuptiRangeProfilerGetCounterDataSize", r, error);
    counter_data_.resize(data_size.counterDataSize);
    auto data_init = params<CUpti_RangeProfiler_CounterDataImage_Initialize_Params>(
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE);
    data_init.pRangeProfilerObject = object_;
    data_init.counterDataSize = counter_data_.size();
    data_init.pCounterData = counter_data_.data();
    if (CUptiResult r = cuptiRangeProfilerCounterDataImageInitialize(&data_init); r != CUPTI_SUCCESS)
      return fail("cuptiRangeProfilerCounterDataImageInitialize", r, error);

    auto config =
        params<CUpti_RangeProfiler_SetConfig_Params>(CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE);
    config.pRangeProfilerObject = object_;
    config.configSize = config_.size();
    config.pConfig = config_.data();
    config.counterDataImageSize = counter_data_.size();
    config.pCounterDataImage = counter_data_.data();
    config.range = CUPTI_AutoRange;
    config.replayMode = CUPTI_KernelReplay;
    config.maxRangesPerPass = kMaxRanges;
    config.numNestingLevels = 1;
    config.minNestingLevel = 1;
    config.passIndex = 0;
    config.targetNestingLevel = 1;
    if (CUptiResult r = cuptiRangeProfilerSetConfig(&config); r != CUPTI_SUCCESS)
      return fail("cuptiRangeProfilerSetConfig", r, error);
    CUpti_RangeProfiler_Start_Params start{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE, nullptr, object_};
    if (CUptiResult r = cuptiRangeProfilerStart(&start); r != CUPTI_SUCCESS)
      return fail("cuptiRangeProfilerStart", r, error);
    return true;
  }

  bool stop_and_decode(std::vector<RangeValues>* ranges, uint64_t* dropped_ranges,
                       std::string* error) override {
    if (object_ == nullptr) return true;
    auto stop = params<CUpti_RangeProfiler_Stop_Params>(CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE);
    stop.pRangeProfilerObject = object_;
    if (CUptiResult r = cuptiRangeProfilerStop(&stop); r != CUPTI_SUCCESS)
      return fail("cuptiRangeProfilerStop", r, error);
    auto decode =
        params<CUpti_RangeProfiler_DecodeData_Params>(CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE);
    decode.pRangeProfilerObject = object_;
    if (CUptiResult r = cuptiRangeProfilerDecodeData(&decode); r != CUPTI_SUCCESS)
      return fail("cuptiRangeProfilerDecodeData", r, error);
    *dropped_ranges = decode.numOfRangeDropped;
    auto info = params<CUpti_RangeProfiler_GetCounterDataInfo_Params>(
        CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE);
    info.pCounterDataImage = counter_data_.data();
    info.counterDataImageSize = counter_data_.size();
    if (CUptiResult r = cuptiRangeProfilerGetCounterDataInfo(&info); r != CUPTI_SUCCESS)
      return fail("cuptiRangeProfilerGetCounterDataInfo", r, error);
    for (size_t i = 0; i < info.numTotalRanges; ++i) {
      auto range = params<CUpti_RangeProfiler_CounterData_GetRangeInfo_Params>(
          CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE);
      range.pCounterDataImage = counter_data_.data();
      range.counterDataImageSize = counter_data_.size();
      range.rangeIndex = i;
      range.rangeDelimiter = "/";
      if (CUptiResult r = cuptiRangeProfilerCounterDataGetRangeInfo(&range); r != CUPTI_SUCCESS)
        return fail("cuptiRangeProfilerCounterDataGetRangeInfo", r, error);
      RangeValues values;
      values.name = range.rangeName != nullptr ? range.rangeName : "";
      values.raw.assign(metric_ptrs_.size(), 0.0);
      auto eval = params<CUpti_Profiler_Host_EvaluateToGpuValues_Params>(
          CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE);
      eval.pHostObject = host_;
      eval.pCounterDataImage = counter_data_.data();
      eval.counterDataImageSize = counter_data_.size();
      eval.rangeIndex = i;
      eval.ppMetricNames = metric_ptrs_.data();
      eval.numMetrics = metric_ptrs_.size();
      eval.pMetricValues = values.raw.data();
      if (CUptiResult r = cuptiProfilerHostEvaluateToGpuValues(&eval); r != CUPTI_SUCCESS)
        return fail("cuptiProfilerHostEvaluateToGpuValues", r, error);
      ranges->push_back(std::move(values));
    }
    release();
    return true;
  }

 private:
  bool fail(const char* call, CUptiResult r, std::string* error) {
    *error = cupti_error(call, r);
    release();
    return false;
  }
  void release() {
    if (object_ != nullptr) {
      CUpti_RangeProfiler_Disable_Params disable{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE, nullptr,
                                                 object_};
      cuptiRangeProfilerDisable(&disable);
      object_ = nullptr;
    }
    if (host_ != nullptr) {
      CUpti_Profiler_Host_Deinitialize_Params deinit{CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE,
                                                     nullptr, host_};
      cuptiProfilerHostDeinitialize(&deinit);
      host_ = nullptr;
    }
  }

  std::vector<std::string> names_;
  std::vector<const char*> metric_ptrs_;
  std::vector<uint8_t> config_, counter_data_;
  CUpti_RangeProfiler_Object* object_ = nullptr;
  CUpti_Profiler_Host_Object* host_ = nullptr;
};

}  // namespace

std::unique_ptr<RangeProfilerInterface> make_real_range_profiler() {
  return std::make_unique<RealRangeProfiler>();
}

}  // namespace strata::gpu

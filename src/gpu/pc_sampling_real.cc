// PcSamplingInterface over libcupti's PC Sampling API (cupti_pcsampling.h). Every call is a plain
// forward; policy (when to enable, collect, disable) lives in PcSampler. Linked only into
// libstrata_cupti.so. UNVALIDATED ON A GPU: written against the CUDA 13 headers, compiled and linked
// here without a driver; docs/gpu-collector.md lists what to check on one.
#include <cupti.h>
#include <cupti_pcsampling.h>

#include <cstdlib>
#include <string>

#include "gpu/cupti_interface.h"

namespace strata::gpu {
namespace {

class RealPcSampling final : public PcSamplingInterface {
 public:
  CUptiResult cupti_version(uint32_t* version) override { return cuptiGetVersion(version); }
  CUptiResult device_id(CUcontext context, uint32_t* device) override {
    return cuptiGetDeviceId(context, device);
  }
  CUptiResult enable(CUcontext context) override {
    CUpti_PCSamplingEnableParams p{CUpti_PCSamplingEnableParamsSize, nullptr, context};
    return cuptiPCSamplingEnable(&p);
  }
  CUptiResult disable(CUcontext context) override {
    CUpti_PCSamplingDisableParams p{CUpti_PCSamplingDisableParamsSize, nullptr, context};
    return cuptiPCSamplingDisable(&p);
  }
  CUptiResult num_stall_reasons(CUcontext context, size_t* count) override {
    CUpti_PCSamplingGetNumStallReasonsParams p{CUpti_PCSamplingGetNumStallReasonsParamsSize, nullptr, context,
                                               count};
    return cuptiPCSamplingGetNumStallReasons(&p);
  }
  CUptiResult stall_reasons(CUcontext context, size_t count, uint32_t* indices, char** names) override {
    CUpti_PCSamplingGetStallReasonsParams p{
        CUpti_PCSamplingGetStallReasonsParamsSize, nullptr, context, count, indices, names};
    return cuptiPCSamplingGetStallReasons(&p);
  }
  CUptiResult set_configuration(CUcontext context, CUpti_PCSamplingConfigurationInfo* info,
                                size_t count) override {
    CUpti_PCSamplingConfigurationInfoParams p{CUpti_PCSamplingConfigurationInfoParamsSize, nullptr, context,
                                              count, info};
    return cuptiPCSamplingSetConfigurationAttribute(&p);
  }
  CUptiResult get_configuration(CUcontext context, CUpti_PCSamplingConfigurationInfo* info,
                                size_t count) override {
    CUpti_PCSamplingConfigurationInfoParams p{CUpti_PCSamplingConfigurationInfoParamsSize, nullptr, context,
                                              count, info};
    return cuptiPCSamplingGetConfigurationAttribute(&p);
  }
  CUptiResult get_data(CUcontext context, CUpti_PCSamplingData* data) override {
    CUpti_PCSamplingGetDataParams p{CUpti_PCSamplingGetDataParamsSize, nullptr, context, data};
    return cuptiPCSamplingGetData(&p);
  }
  CUptiResult cubin_crc(const void* cubin, size_t size, uint64_t* crc) override {
    CUpti_GetCubinCrcParams p{CUpti_GetCubinCrcParamsSize, size, cubin, 0};
    CUptiResult r = cuptiGetCubinCrc(&p);
    *crc = p.cubinCrc;
    return r;
  }
  CUptiResult source_line(const void* cubin, size_t size, const char* function, uint64_t pc_offset,
                          std::string* file, uint32_t* line) override {
    CUpti_GetSassToSourceCorrelationParams p{};
    p.size = CUpti_GetSassToSourceCorrelationParamsSize;
    p.cubin = cubin;
    p.cubinSize = size;
    p.functionName = function;
    p.pcOffset = pc_offset;
    CUptiResult r = cuptiGetSassToSourceCorrelation(&p);
    if (r == CUPTI_SUCCESS) {
      file->clear();
      if (p.dirName != nullptr && *p.dirName != '\0') file->append(p.dirName).append("/");
      if (p.fileName != nullptr) file->append(p.fileName);
      *line = p.lineNumber;
    }
    std::free(p.fileName);  // the header: the caller frees fileName and dirName
    std::free(p.dirName);
    return r;
  }
  const char* result_string(CUptiResult result) override {
    const char* text = nullptr;
    if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr) return "unknown CUPTI error";
    return text;
  }
};

}  // namespace

std::unique_ptr<PcSamplingInterface> make_real_pc_sampling() { return std::make_unique<RealPcSampling>(); }

}  // namespace strata::gpu

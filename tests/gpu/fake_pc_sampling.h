// A scripted CUPTI PC Sampling API: fills CUpti_PCSamplingData the way cupti_pcsampling.h (CUDA 13)
// defines it: at most collectNumPcs records per cuptiPCSamplingGetData, remainingNumPcs for the rest,
// each record's stallReason array written in the caller's buffer with stallReasonCount set, and the
// PCs still held at cuptiPCSamplingDisable copied into the buffer configured with
// CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER.
#pragma once

#include <algorithm>
#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gpu/cupti_interface.h"

namespace strata::gpu::testing {

struct FakePc {
  uint64_t cubin_crc = 0;
  uint64_t pc_offset = 0;
  uint32_t function_index = 0;
  std::string function;
  uint32_t correlation_id = 0;
  std::vector<std::pair<uint32_t, uint32_t>> stalls;  // (stall reason index, samples)
};

// What one cuptiPCSamplingGetData call hands over (paged by collectNumPcs).
struct FakeBatch {
  std::vector<FakePc> pcs;
  uint64_t total_samples = 0;
  uint64_t dropped_samples = 0;
  uint64_t non_user_samples = 0;
  bool hardware_buffer_full = false;
  CUptiResult result = CUPTI_SUCCESS;
};

class FakePcSampling : public PcSamplingInterface {
 public:
  CUptiResult cupti_version(uint32_t* v) override {
    *v = version;
    return CUPTI_SUCCESS;
  }
  CUptiResult device_id(CUcontext, uint32_t* device) override {
    *device = 3;
    return CUPTI_SUCCESS;
  }
  CUptiResult enable(CUcontext context) override {
    calls.push_back("enable");
    if (enable_result == CUPTI_SUCCESS) enabled_contexts.push_back(context);
    return enable_result;
  }
  CUptiResult disable(CUcontext) override {
    calls.push_back("disable");
    // CUPTI copies what it still holds into the configured buffer, as far as it fits.
    if (final_buffer != nullptr && !at_disable.empty()) fill(final_buffer, at_disable, FakeBatch{});
    return CUPTI_SUCCESS;
  }
  CUptiResult num_stall_reasons(CUcontext, size_t* count) override {
    calls.push_back("num_stall_reasons");
    *count = reasons.size();
    return CUPTI_SUCCESS;
  }
  CUptiResult stall_reasons(CUcontext, size_t count, uint32_t* indices, char** names) override {
    calls.push_back("stall_reasons");
    for (size_t i = 0; i < count && i < reasons.size(); ++i) {
      indices[i] = reasons[i].first;
      std::strncpy(names[i], reasons[i].second.c_str(), CUPTI_STALL_REASON_STRING_SIZE - 1);
    }
    return CUPTI_SUCCESS;
  }
  CUptiResult set_configuration(CUcontext, CUpti_PCSamplingConfigurationInfo* info, size_t count) override {
    calls.push_back("set_configuration");
    config.assign(info, info + count);
    for (size_t i = 0; i < count; ++i)
      if (info[i].attributeType == CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER)
        final_buffer = static_cast<CUpti_PCSamplingData*>(
            info[i].attributeData.samplingDataBufferData.samplingDataBuffer);
    return CUPTI_SUCCESS;
  }
  CUptiResult get_configuration(CUcontext, CUpti_PCSamplingConfigurationInfo* info, size_t count) override {
    calls.push_back("get_configuration");
    for (size_t i = 0; i < count; ++i)
      if (info[i].attributeType == CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD)
        info[i].attributeData.samplingPeriodData.samplingPeriod = default_period;
    return CUPTI_SUCCESS;
  }
  CUptiResult get_data(CUcontext, CUpti_PCSamplingData* data) override {
    ++get_data_calls;
    if (batches.empty()) return CUPTI_SUCCESS;  // nothing new: zero PCs
    FakeBatch& b = batches.front();
    if (b.result != CUPTI_SUCCESS) {
      CUptiResult r = b.result;
      batches.pop_front();
      return r;
    }
    std::vector<FakePc> rest = fill(data, b.pcs, b);
    b.total_samples = b.dropped_samples = b.non_user_samples = 0;  // reported once
    b.hardware_buffer_full = false;
    if (rest.empty())
      batches.pop_front();
    else
      b.pcs = std::move(rest);
    return CUPTI_SUCCESS;
  }
  CUptiResult cubin_crc(const void* cubin, size_t size, uint64_t* crc) override {
    *crc = size * 1000 + static_cast<const unsigned char*>(cubin)[0];
    return CUPTI_SUCCESS;
  }
  CUptiResult source_line(const void* cubin, size_t size, const char* function, uint64_t pc,
                          std::string* file, uint32_t* line) override {
    uint64_t crc = 0;
    cubin_crc(cubin, size, &crc);
    auto it = lines.find({crc, function, pc});
    if (it == lines.end()) return CUPTI_ERROR_UNKNOWN;
    *file = it->second.first;
    *line = it->second.second;
    return CUPTI_SUCCESS;
  }
  const char* result_string(CUptiResult r) override {
    return r == CUPTI_ERROR_NOT_SUPPORTED ? "CUPTI_ERROR_NOT_SUPPORTED" : "fake CUPTI error";
  }

  // Writes up to collectNumPcs of `pcs` into the caller's buffer; returns those that did not fit.
  std::vector<FakePc> fill(CUpti_PCSamplingData* data, const std::vector<FakePc>& pcs, const FakeBatch& b) {
    size_t n = std::min(pcs.size(), data->collectNumPcs);
    data->totalNumPcs = n;
    data->remainingNumPcs = pcs.size() - n;
    data->totalSamples = b.total_samples;
    data->droppedSamples = b.dropped_samples;
    data->nonUsrKernelsTotalSamples = b.non_user_samples;
    data->hardwareBufferFull = b.hardware_buffer_full ? 1 : 0;
    data->rangeId = 0;
    for (size_t i = 0; i < n; ++i) {
      CUpti_PCSamplingPCData& out = data->pPcData[i];
      const FakePc& pc = pcs[i];
      out.cubinCrc = pc.cubin_crc;
      out.pcOffset = pc.pc_offset;
      out.functionIndex = pc.function_index;
      out.functionName = const_cast<char*>(intern(pc.function));
      out.correlationId = pc.correlation_id;
      out.stallReasonCount = pc.stalls.size();
      for (size_t k = 0; k < pc.stalls.size(); ++k)
        out.stallReason[k] = CUpti_PCSamplingStallReason{pc.stalls[k].first, pc.stalls[k].second};
    }
    return std::vector<FakePc>(pcs.begin() + static_cast<std::ptrdiff_t>(n), pcs.end());
  }
  const char* intern(const std::string& s) { return names.emplace(s).first->c_str(); }

  uint32_t version = CUPTI_API_VERSION;
  CUptiResult enable_result = CUPTI_SUCCESS;
  std::vector<std::pair<uint32_t, std::string>> reasons;  // (index, CUPTI name)
  std::deque<FakeBatch> batches;
  std::vector<FakePc> at_disable;
  std::map<std::tuple<uint64_t, std::string, uint64_t>, std::pair<std::string, uint32_t>> lines;
  std::vector<std::string> calls;
  std::vector<CUcontext> enabled_contexts;
  std::vector<CUpti_PCSamplingConfigurationInfo> config;
  uint32_t default_period = 13;  // what get_configuration reports as the period in use
  CUpti_PCSamplingData* final_buffer = nullptr;
  int get_data_calls = 0;
  std::set<std::string> names;  // stable functionName strings, like CUPTI's
};

}  // namespace strata::gpu::testing

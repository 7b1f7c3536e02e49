#include "gpu/api_classifier.h"

#include <gtest/gtest.h>

namespace strata::gpu {
namespace {

TEST(ApiClassifier, RuntimeAndDriverNames) {
  EXPECT_EQ(classify_api(ApiDomain::kRuntime, "cudaLaunchKernel"), ApiClass::kLaunch);
  EXPECT_EQ(classify_api(ApiDomain::kRuntime, "cudaLaunchKernelExC"), ApiClass::kLaunch);
  EXPECT_EQ(classify_api(ApiDomain::kRuntime, "cudaGraphLaunch"), ApiClass::kLaunch);
  EXPECT_EQ(classify_api(ApiDomain::kRuntime, "cudaMemcpyAsync"), ApiClass::kMemcpy);
  EXPECT_EQ(classify_api(ApiDomain::kRuntime, "cudaMemsetAsync"), ApiClass::kMemset);
  EXPECT_EQ(classify_api(ApiDomain::kRuntime, "cudaStreamSynchronize"), ApiClass::kSync);
  EXPECT_EQ(classify_api(ApiDomain::kRuntime, "cudaMallocAsync"), ApiClass::kAlloc);
  EXPECT_EQ(classify_api(ApiDomain::kRuntime, "cudaFreeHost"), ApiClass::kFree);
  EXPECT_EQ(classify_api(ApiDomain::kRuntime, "cudaDeviceReset"), ApiClass::kDeviceReset);
  EXPECT_EQ(classify_api(ApiDomain::kRuntime, "cudaGetDeviceProperties"), ApiClass::kIgnored);
  EXPECT_EQ(classify_api(ApiDomain::kDriver, "cuLaunchKernelEx"), ApiClass::kLaunch);
  EXPECT_EQ(classify_api(ApiDomain::kDriver, "cuGraphLaunch"), ApiClass::kLaunch);
  EXPECT_EQ(classify_api(ApiDomain::kDriver, "cuMemcpyHtoDAsync_v2"), ApiClass::kMemcpy);
  EXPECT_EQ(classify_api(ApiDomain::kDriver, "cuCtxSynchronize"), ApiClass::kSync);
  EXPECT_EQ(classify_api(ApiDomain::kDriver, "cuCtxGetCurrent"), ApiClass::kIgnored);
  // Hopper TMA descriptors: traced, under their own class, with no device work.
  EXPECT_EQ(classify_api(ApiDomain::kDriver, "cuTensorMapEncodeTiled"), ApiClass::kTmaDescriptor);
  EXPECT_EQ(classify_api(ApiDomain::kDriver, "cuTensorMapEncodeIm2col"), ApiClass::kTmaDescriptor);
  EXPECT_EQ(classify_api(ApiDomain::kDriver, "cuTensorMapReplaceAddress"), ApiClass::kTmaDescriptor);
  EXPECT_STREQ(api_class_name(ApiClass::kTmaDescriptor), "tma_descriptor");
  EXPECT_FALSE(produces_device_work(ApiClass::kTmaDescriptor));
  EXPECT_TRUE(produces_device_work(ApiClass::kMemset));
  EXPECT_FALSE(produces_device_work(ApiClass::kSync));
}

}  // namespace
}  // namespace strata::gpu

// cuDNN library spans by LD_PRELOAD interposition (libstrata_cudnn.so). Each wrapper records the
// parameters that define the work (Benanza's layer descriptors: shapes, strides, pads, dilation,
// groups, algorithm, math type, workspace) by querying the descriptors through the real cuDNN, then
// calls the real function. Misses: programs that dlopen+dlsym cuDNN themselves, static cuDNN, and
// calls cuDNN makes to itself (recorded only as "nested_calls" on the outer span).
#include <cudnn.h>

#include <string>

#include "cudalibs/library_span.h"

namespace strata::cudalibs {
namespace {

constexpr const char* kLib = "cudnn";
constexpr int kMaxDims = CUDNN_DIM_MAX;
// Convolution and pooling descriptors hold spatial dimensions only: cuDNN refuses a request above this.
constexpr int kMaxSpatialDims = CUDNN_DIM_MAX - 2;

const char* dtype_name(cudnnDataType_t t) {
  switch (t) {
    case CUDNN_DATA_FLOAT:
      return "float32";
    case CUDNN_DATA_DOUBLE:
      return "float64";
    case CUDNN_DATA_HALF:
      return "float16";
    case CUDNN_DATA_BFLOAT16:
      return "bfloat16";
    case CUDNN_DATA_INT8:
      return "int8";
    case CUDNN_DATA_INT32:
      return "int32";
    case CUDNN_DATA_INT64:
      return "int64";
    case CUDNN_DATA_UINT8:
      return "uint8";
    case CUDNN_DATA_FP8_E4M3:
      return "fp8_e4m3";
    case CUDNN_DATA_FP8_E5M2:
      return "fp8_e5m2";
    default:
      return "other";
  }
}

const char* status_text(cudnnStatus_t s) {
  auto get = STRATA_REAL(cudnnGetErrorString);
  return get != nullptr ? get(s) : nullptr;
}

// "<prefix>.shape", ".strides", ".dtype"; nothing when the descriptor cannot be read.
void describe_tensor(LibrarySpan& span, const std::string& prefix, cudnnTensorDescriptor_t desc) {
  auto get = STRATA_REAL(cudnnGetTensorNdDescriptor);
  if (!span.active() || desc == nullptr || get == nullptr) return;
  cudnnDataType_t type{};
  int n = 0, dims[kMaxDims] = {}, strides[kMaxDims] = {};
  if (get(desc, kMaxDims, &type, &n, dims, strides) != CUDNN_STATUS_SUCCESS || n <= 0 || n > kMaxDims) return;
  span.set_string((prefix + ".shape").c_str(), join_dims(dims, n));
  span.set_string((prefix + ".strides").c_str(), join_dims(strides, n));
  span.set_string((prefix + ".dtype").c_str(), dtype_name(type));
}

void describe_filter(LibrarySpan& span, const std::string& prefix, cudnnFilterDescriptor_t desc) {
  auto get = STRATA_REAL(cudnnGetFilterNdDescriptor);
  if (!span.active() || desc == nullptr || get == nullptr) return;
  cudnnDataType_t type{};
  cudnnTensorFormat_t format{};
  int n = 0, dims[kMaxDims] = {};
  if (get(desc, kMaxDims, &type, &format, &n, dims) != CUDNN_STATUS_SUCCESS || n <= 0 || n > kMaxDims) return;
  span.set_string((prefix + ".shape").c_str(), join_dims(dims, n));
  span.set_string((prefix + ".dtype").c_str(), dtype_name(type));
  span.set_string((prefix + ".format").c_str(), format == CUDNN_TENSOR_NHWC   ? "NHWC"
                                                : format == CUDNN_TENSOR_NCHW ? "NCHW"
                                                                              : "other");
}

void describe_conv(LibrarySpan& span, cudnnConvolutionDescriptor_t desc) {
  auto get = STRATA_REAL(cudnnGetConvolutionNdDescriptor);
  if (!span.active() || desc == nullptr || get == nullptr) return;
  int n = 0, pads[kMaxDims] = {}, strides[kMaxDims] = {}, dilations[kMaxDims] = {};
  cudnnConvolutionMode_t mode{};
  cudnnDataType_t compute{};
  if (get(desc, kMaxSpatialDims, &n, pads, strides, dilations, &mode, &compute) == CUDNN_STATUS_SUCCESS &&
      n > 0 && n <= kMaxSpatialDims) {
    span.set_string("conv.pads", join_dims(pads, n));
    span.set_string("conv.strides", join_dims(strides, n));
    span.set_string("conv.dilations", join_dims(dilations, n));
    span.set_string("conv.mode", mode == CUDNN_CROSS_CORRELATION ? "cross_correlation" : "convolution");
    span.set_string("conv.compute_type", dtype_name(compute));
  }
  int groups = 0;
  if (auto g = STRATA_REAL(cudnnGetConvolutionGroupCount);
      g != nullptr && g(desc, &groups) == CUDNN_STATUS_SUCCESS)
    span.set_int("conv.groups", groups);
  cudnnMathType_t math{};
  if (auto m = STRATA_REAL(cudnnGetConvolutionMathType);
      m != nullptr && m(desc, &math) == CUDNN_STATUS_SUCCESS)
    span.set_int("conv.math_type", static_cast<int>(math));
}

void describe_activation(LibrarySpan& span, cudnnActivationDescriptor_t desc) {
  auto get = STRATA_REAL(cudnnGetActivationDescriptor);
  if (!span.active() || desc == nullptr || get == nullptr) return;
  cudnnActivationMode_t mode{};
  cudnnNanPropagation_t nan{};
  double coef = 0;
  if (get(desc, &mode, &nan, &coef) != CUDNN_STATUS_SUCCESS) return;
  span.set_int("activation.mode", static_cast<int>(mode));
  span.set_double("activation.coef", coef);
}

template <typename Fn, typename... Args>
cudnnStatus_t call(LibrarySpan& span, Fn real, Args... args) {
  if (real == nullptr) {
    span.missing_real_function();
    return CUDNN_STATUS_NOT_INITIALIZED;
  }
  cudnnStatus_t s = real(args...);
  span.set_status(static_cast<int>(s), s != CUDNN_STATUS_SUCCESS ? status_text(s) : nullptr);
  return s;
}

}  // namespace
}  // namespace strata::cudalibs

using strata::cudalibs::LibrarySpan;
using namespace strata::cudalibs;

extern "C" {

cudnnStatus_t CUDNNWINAPI cudnnConvolutionForward(cudnnHandle_t handle, const void* alpha,
                                                  const cudnnTensorDescriptor_t xDesc, const void* x,
                                                  const cudnnFilterDescriptor_t wDesc, const void* w,
                                                  const cudnnConvolutionDescriptor_t convDesc,
                                                  cudnnConvolutionFwdAlgo_t algo, void* workSpace,
                                                  size_t workSpaceSizeInBytes, const void* beta,
                                                  const cudnnTensorDescriptor_t yDesc, void* y) {
  LibrarySpan span("cudnnConvolutionForward", kLib);
  describe_tensor(span, "x", xDesc);
  describe_filter(span, "w", wDesc);
  describe_conv(span, convDesc);
  describe_tensor(span, "y", yDesc);
  span.set_int("algorithm", static_cast<int>(algo));
  span.set_int("workspace_bytes", static_cast<int64_t>(workSpaceSizeInBytes));
  return call(span, STRATA_REAL(cudnnConvolutionForward), handle, alpha, xDesc, x, wDesc, w, convDesc, algo,
              workSpace, workSpaceSizeInBytes, beta, yDesc, y);
}

cudnnStatus_t CUDNNWINAPI cudnnConvolutionBackwardData(cudnnHandle_t handle, const void* alpha,
                                                       const cudnnFilterDescriptor_t wDesc, const void* w,
                                                       const cudnnTensorDescriptor_t dyDesc, const void* dy,
                                                       const cudnnConvolutionDescriptor_t convDesc,
                                                       cudnnConvolutionBwdDataAlgo_t algo, void* workSpace,
                                                       size_t workSpaceSizeInBytes, const void* beta,
                                                       const cudnnTensorDescriptor_t dxDesc, void* dx) {
  LibrarySpan span("cudnnConvolutionBackwardData", kLib);
  describe_filter(span, "w", wDesc);
  describe_tensor(span, "dy", dyDesc);
  describe_conv(span, convDesc);
  describe_tensor(span, "dx", dxDesc);
  span.set_int("algorithm", static_cast<int>(algo));
  span.set_int("workspace_bytes", static_cast<int64_t>(workSpaceSizeInBytes));
  return call(span, STRATA_REAL(cudnnConvolutionBackwardData), handle, alpha, wDesc, w, dyDesc, dy, convDesc,
              algo, workSpace, workSpaceSizeInBytes, beta, dxDesc, dx);
}

cudnnStatus_t CUDNNWINAPI cudnnConvolutionBackwardFilter(
    cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t xDesc, const void* x,
    const cudnnTensorDescriptor_t dyDesc, const void* dy, const cudnnConvolutionDescriptor_t convDesc,
    cudnnConvolutionBwdFilterAlgo_t algo, void* workSpace, size_t workSpaceSizeInBytes, const void* beta,
    const cudnnFilterDescriptor_t dwDesc, void* dw) {
  LibrarySpan span("cudnnConvolutionBackwardFilter", kLib);
  describe_tensor(span, "x", xDesc);
  describe_tensor(span, "dy", dyDesc);
  describe_conv(span, convDesc);
  describe_filter(span, "dw", dwDesc);
  span.set_int("algorithm", static_cast<int>(algo));
  span.set_int("workspace_bytes", static_cast<int64_t>(workSpaceSizeInBytes));
  return call(span, STRATA_REAL(cudnnConvolutionBackwardFilter), handle, alpha, xDesc, x, dyDesc, dy,
              convDesc, algo, workSpace, workSpaceSizeInBytes, beta, dwDesc, dw);
}

cudnnStatus_t CUDNNWINAPI cudnnConvolutionBiasActivationForward(
    cudnnHandle_t handle, const void* alpha1, const cudnnTensorDescriptor_t xDesc, const void* x,
    const cudnnFilterDescriptor_t wDesc, const void* w, const cudnnConvolutionDescriptor_t convDesc,
    cudnnConvolutionFwdAlgo_t algo, void* workSpace, size_t workSpaceSizeInBytes, const void* alpha2,
    const cudnnTensorDescriptor_t zDesc, const void* z, const cudnnTensorDescriptor_t biasDesc,
    const void* bias, const cudnnActivationDescriptor_t activationDesc, const cudnnTensorDescriptor_t yDesc,
    void* y) {
  LibrarySpan span("cudnnConvolutionBiasActivationForward", kLib);
  describe_tensor(span, "x", xDesc);
  describe_filter(span, "w", wDesc);
  describe_conv(span, convDesc);
  describe_tensor(span, "z", zDesc);
  describe_tensor(span, "bias", biasDesc);
  describe_activation(span, activationDesc);
  describe_tensor(span, "y", yDesc);
  span.set_int("algorithm", static_cast<int>(algo));
  span.set_int("workspace_bytes", static_cast<int64_t>(workSpaceSizeInBytes));
  return call(span, STRATA_REAL(cudnnConvolutionBiasActivationForward), handle, alpha1, xDesc, x, wDesc, w,
              convDesc, algo, workSpace, workSpaceSizeInBytes, alpha2, zDesc, z, biasDesc, bias,
              activationDesc, yDesc, y);
}

cudnnStatus_t CUDNNWINAPI cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t executionPlan,
                                              cudnnBackendDescriptor_t variantPack) {
  // The graph API's operation list lives in the plan (opaque here): the span records that a graph
  // ran; its kernels link to it through the CUPTI external correlation.
  LibrarySpan span("cudnnBackendExecute", kLib);
  span.set_int("plan", static_cast<int64_t>(reinterpret_cast<uintptr_t>(executionPlan)));
  return call(span, STRATA_REAL(cudnnBackendExecute), handle, executionPlan, variantPack);
}

cudnnStatus_t CUDNNWINAPI cudnnPoolingForward(cudnnHandle_t handle,
                                              const cudnnPoolingDescriptor_t poolingDesc, const void* alpha,
                                              const cudnnTensorDescriptor_t xDesc, const void* x,
                                              const void* beta, const cudnnTensorDescriptor_t yDesc,
                                              void* y) {
  LibrarySpan span("cudnnPoolingForward", kLib);
  describe_tensor(span, "x", xDesc);
  describe_tensor(span, "y", yDesc);
  if (auto get = STRATA_REAL(cudnnGetPoolingNdDescriptor);
      get != nullptr && span.active() && poolingDesc != nullptr) {
    cudnnPoolingMode_t mode{};
    cudnnNanPropagation_t nan{};
    int n = 0, window[kMaxDims] = {}, pads[kMaxDims] = {}, strides[kMaxDims] = {};
    if (get(poolingDesc, kMaxSpatialDims, &mode, &nan, &n, window, pads, strides) == CUDNN_STATUS_SUCCESS &&
        n > 0 && n <= kMaxSpatialDims) {
      span.set_int("pool.mode", static_cast<int>(mode));
      span.set_string("pool.window", join_dims(window, n));
      span.set_string("pool.pads", join_dims(pads, n));
      span.set_string("pool.strides", join_dims(strides, n));
    }
  }
  return call(span, STRATA_REAL(cudnnPoolingForward), handle, poolingDesc, alpha, xDesc, x, beta, yDesc, y);
}

cudnnStatus_t CUDNNWINAPI cudnnActivationForward(cudnnHandle_t handle,
                                                 cudnnActivationDescriptor_t activationDesc,
                                                 const void* alpha, const cudnnTensorDescriptor_t xDesc,
                                                 const void* x, const void* beta,
                                                 const cudnnTensorDescriptor_t yDesc, void* y) {
  LibrarySpan span("cudnnActivationForward", kLib);
  describe_activation(span, activationDesc);
  describe_tensor(span, "x", xDesc);
  describe_tensor(span, "y", yDesc);
  return call(span, STRATA_REAL(cudnnActivationForward), handle, activationDesc, alpha, xDesc, x, beta, yDesc,
              y);
}

cudnnStatus_t CUDNNWINAPI cudnnSoftmaxForward(cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algo,
                                              cudnnSoftmaxMode_t mode, const void* alpha,
                                              const cudnnTensorDescriptor_t xDesc, const void* x,
                                              const void* beta, const cudnnTensorDescriptor_t yDesc,
                                              void* y) {
  LibrarySpan span("cudnnSoftmaxForward", kLib);
  describe_tensor(span, "x", xDesc);
  describe_tensor(span, "y", yDesc);
  span.set_int("softmax.algorithm", static_cast<int>(algo));
  span.set_int("softmax.mode", static_cast<int>(mode));
  return call(span, STRATA_REAL(cudnnSoftmaxForward), handle, algo, mode, alpha, xDesc, x, beta, yDesc, y);
}

cudnnStatus_t CUDNNWINAPI cudnnBatchNormalizationForwardInference(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void* alpha, const void* beta,
    const cudnnTensorDescriptor_t xDesc, const void* x, const cudnnTensorDescriptor_t yDesc, void* y,
    const cudnnTensorDescriptor_t bnScaleBiasMeanVarDesc, const void* bnScale, const void* bnBias,
    const void* estimatedMean, const void* estimatedVariance, double epsilon) {
  LibrarySpan span("cudnnBatchNormalizationForwardInference", kLib);
  describe_tensor(span, "x", xDesc);
  describe_tensor(span, "y", yDesc);
  describe_tensor(span, "scale", bnScaleBiasMeanVarDesc);
  span.set_int("bn.mode", static_cast<int>(mode));
  span.set_double("bn.epsilon", epsilon);
  return call(span, STRATA_REAL(cudnnBatchNormalizationForwardInference), handle, mode, alpha, beta, xDesc, x,
              yDesc, y, bnScaleBiasMeanVarDesc, bnScale, bnBias, estimatedMean, estimatedVariance, epsilon);
}

cudnnStatus_t CUDNNWINAPI cudnnAddTensor(cudnnHandle_t handle, const void* alpha,
                                         const cudnnTensorDescriptor_t aDesc, const void* A, const void* beta,
                                         const cudnnTensorDescriptor_t cDesc, void* C) {
  LibrarySpan span("cudnnAddTensor", kLib);
  describe_tensor(span, "a", aDesc);
  describe_tensor(span, "c", cDesc);
  return call(span, STRATA_REAL(cudnnAddTensor), handle, alpha, aDesc, A, beta, cDesc, C);
}

}  // extern "C"

// cuDNN (and copy) preparers of the CUDA benchmark (see cuda_ops.h): one function per BenchCase op
// on activation tensors. Header-only and free of Strata dependencies (copied by `strata bench
// generate`).
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench_case.h"
#include "cuda_geometry.h"
#include "cuda_prepared.h"

// cuDNN's legacy API is deprecated in cuDNN 9 (see cuda_ops.h).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace strata::lowerbound::cuda {

// ---- Copies ----

// concat: one cudaMemcpy2DAsync per input into its slice of the output.
inline bool prepare_concat(const BenchCase& c, Prepared* p, std::string* why) {
  const size_t elem = c.dtype == "f16" ? 2 : 4;
  std::vector<CopyRegion> copies;
  if (!concat_copies(c, elem, &copies, why)) return false;
  std::vector<const void*> srcs;
  bool allocated = true;
  for (const std::vector<int64_t>& s : c.src) {
    srcs.push_back(device_buffer(p, elements(s) * elem));
    allocated = allocated && srcs.back();
  }
  char* dst = static_cast<char*>(device_buffer(p, elements(c.dst) * elem));
  if (!allocated || !dst) return alloc_failed(why);
  p->launch = [=] {
    for (size_t i = 0; i < copies.size(); ++i) {
      const CopyRegion& r = copies[i];
      if (!launched(p,
                    cudaMemcpy2DAsync(dst + r.dst_offset, r.dst_pitch, srcs[i], r.src_pitch, r.width,
                                      r.height, cudaMemcpyDeviceToDevice, p->stream),
                    "cudaMemcpy2DAsync"))
        return false;
    }
    return true;
  };
  p->implementation = "cudaMemcpy2DAsync x" + std::to_string(copies.size());
  return true;
}

// ---- cuDNN on activation tensors ----

// A cuDNN handle and the case's data type and layout, with the descriptor helpers every cuDNN
// preparer uses (descriptors are destroyed with the Prepared).
struct Cudnn {
  const BenchCase& c;
  Prepared* p;
  std::string* why;
  bool half = false;
  size_t elem = 4;
  cudnnDataType_t dt = CUDNN_DATA_FLOAT;
  cudnnTensorFormat_t fmt = CUDNN_TENSOR_NCHW;
  cudnnHandle_t h = nullptr;

  Cudnn(const BenchCase& bench_case, Prepared* prepared, std::string* reason)
      : c(bench_case), p(prepared), why(reason) {
    half = c.dtype == "f16";
    elem = half ? 2 : 4;
    dt = half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
    fmt = c.layout == "nhwc" ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  }
  bool ok(cudnnStatus_t s, const char* what) {
    if (s == CUDNN_STATUS_SUCCESS) return true;
    *why = std::string(what) + ": " + cudnnGetErrorString(s);
    return false;
  }
  bool open() {
    if (!ok(cudnnCreate(&p->cudnn), "cudnnCreate (no CUDA device?)")) return false;
    if (!ok(cudnnSetStream(p->cudnn, p->stream), "cudnnSetStream")) return false;
    h = p->cudnn;
    return true;
  }
  bool descriptor(const std::vector<int>& d, cudnnTensorFormat_t format, cudnnTensorDescriptor_t* out) {
    if (!ok(cudnnCreateTensorDescriptor(out), "cudnnCreateTensorDescriptor")) return false;
    cudnnTensorDescriptor_t desc = *out;
    p->cleanups.push_back([desc] { cudnnDestroyTensorDescriptor(desc); });
    return ok(cudnnSetTensorNdDescriptorEx(desc, format, dt, static_cast<int>(d.size()), d.data()),
              "cudnnSetTensorNdDescriptorEx");
  }
  bool tensor(const std::vector<int64_t>& shape, cudnnTensorDescriptor_t* out) {
    std::vector<int> d = cudnn_dims(shape);
    if (d.empty()) {
      *why = "cuDNN tensors have 1 to 5 dimensions of at most INT_MAX (got rank " +
             std::to_string(shape.size()) + ")";
      return false;
    }
    return descriptor(d, fmt, out);
  }
  void* buffer(const std::vector<int64_t>& dims) { return device_buffer(p, elements(dims) * elem); }
};

// The input x and output y of a single-input layer, described and allocated.
struct Activations {
  cudnnTensorDescriptor_t x_desc = nullptr, y_desc = nullptr;
  void *x = nullptr, *y = nullptr;
};

inline bool activations(Cudnn& cu, Activations* a) {
  if (!cu.tensor(cu.c.src[0], &a->x_desc) || !cu.tensor(cu.c.dst, &a->y_desc)) return false;
  a->x = cu.buffer(cu.c.src[0]);
  a->y = cu.buffer(cu.c.dst);
  return (a->x && a->y) || alloc_failed(cu.why);
}

inline bool prepare_softmax(const BenchCase& c, Prepared* p, std::string* why) {
  Cudnn cu(c, p, why);
  std::vector<int> d;
  if (!softmax_dims(c, &d, why) || !cu.open()) return false;
  cudnnTensorDescriptor_t desc;
  if (!cu.descriptor(d, CUDNN_TENSOR_NCHW, &desc)) return false;
  void* x = cu.buffer(c.src[0]);
  void* y = cu.buffer(c.src[0]);
  if (!x || !y) return alloc_failed(why);
  cudnnHandle_t h = cu.h;
  p->launch = [=] {
    static const float one = 1.f, zero = 0.f;
    return launched(p,
                    cudnnSoftmaxForward(h, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL, &one, desc, x,
                                        &zero, desc, y),
                    "cudnnSoftmaxForward");
  };
  p->implementation = "cudnnSoftmaxForward(accurate, channel over " + std::to_string(d[0]) + "x" +
                      std::to_string(d[1]) + "x" + std::to_string(d[2]) + ")";
  return true;
}

inline bool op_tensor_descriptor(Cudnn& cu, cudnnOpTensorOp_t op, cudnnOpTensorDescriptor_t* out) {
  if (!cu.ok(cudnnCreateOpTensorDescriptor(out), "cudnnCreateOpTensorDescriptor")) return false;
  cudnnOpTensorDescriptor_t op_desc = *out;
  cu.p->cleanups.push_back([op_desc] { cudnnDestroyOpTensorDescriptor(op_desc); });
  // fp16 tensors compute in fp32 (the only compute type cuDNN accepts for them).
  return cu.ok(cudnnSetOpTensorDescriptor(op_desc, op, CUDNN_DATA_FLOAT, CUDNN_NOT_PROPAGATE_NAN),
               "cudnnSetOpTensorDescriptor");
}

inline bool prepare_binary(const BenchCase& c, Prepared* p, std::string* why) {
  Cudnn cu(c, p, why);
  BinaryGeometry g;
  if (!binary_geometry(c, &g, why) || !cu.open()) return false;
  const std::vector<int64_t>& a_shape = c.src[static_cast<size_t>(g.a)];
  const std::vector<int64_t>& b_shape = c.src[static_cast<size_t>(g.b)];
  cudnnTensorDescriptor_t a_desc, b_desc, c_desc;
  if (!cu.tensor(a_shape, &a_desc) || !cu.tensor(b_shape, &b_desc) || !cu.tensor(c.dst, &c_desc))
    return false;
  cudnnOpTensorDescriptor_t op_desc;
  if (!op_tensor_descriptor(cu, g.op, &op_desc)) return false;
  void* a = cu.buffer(a_shape);
  void* b = cu.buffer(b_shape);
  void* y = cu.buffer(c.dst);
  if (!a || !b || !y) return alloc_failed(why);
  const float alpha1 = g.alpha1, alpha2 = g.alpha2;
  cudnnHandle_t h = cu.h;
  p->launch = [=] {
    static const float zero = 0.f;
    return launched(p, cudnnOpTensor(h, op_desc, &alpha1, a_desc, a, &alpha2, b_desc, b, &zero, c_desc, y),
                    "cudnnOpTensor");
  };
  p->implementation = "cudnnOpTensor(" + c.algorithm + (b_shape == c.dst ? "" : ", broadcast") + ")";
  return true;
}

// Filter and convolution descriptors of a 2-D convolution, its algorithm and workspace.
struct ConvSetup {
  cudnnFilterDescriptor_t w_desc = nullptr;
  cudnnConvolutionDescriptor_t conv_desc = nullptr;
  cudnnConvolutionFwdAlgo_t alg = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  size_t ws_bytes = 0;
  void *w = nullptr, *ws = nullptr;
};

inline bool conv_setup(Cudnn& cu, const Activations& a, ConvSetup* s) {
  const BenchCase& c = cu.c;
  if (!cu.ok(cudnnCreateFilterDescriptor(&s->w_desc), "cudnnCreateFilterDescriptor")) return false;
  cudnnFilterDescriptor_t w_desc = s->w_desc;
  cu.p->cleanups.push_back([w_desc] { cudnnDestroyFilterDescriptor(w_desc); });
  if (!cu.ok(cudnnSetFilter4dDescriptor(w_desc, cu.dt, cu.fmt, static_cast<int>(c.weights[0]),
                                        static_cast<int>(c.weights[1]), static_cast<int>(c.weights[2]),
                                        static_cast<int>(c.weights[3])),
             "cudnnSetFilter4dDescriptor"))
    return false;
  if (!cu.ok(cudnnCreateConvolutionDescriptor(&s->conv_desc), "cudnnCreateConvolutionDescriptor"))
    return false;
  cudnnConvolutionDescriptor_t conv_desc = s->conv_desc;
  cu.p->cleanups.push_back([conv_desc] { cudnnDestroyConvolutionDescriptor(conv_desc); });
  if (!cu.ok(cudnnSetConvolution2dDescriptor(
                 conv_desc, static_cast<int>(c.pads_begin[0]), static_cast<int>(c.pads_begin[1]),
                 static_cast<int>(c.strides[0]), static_cast<int>(c.strides[1]),
                 static_cast<int>(c.dilations[0]), static_cast<int>(c.dilations[1]), CUDNN_CROSS_CORRELATION,
                 cu.half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT),
             "cudnnSetConvolution2dDescriptor"))
    return false;
  cudnnSetConvolutionGroupCount(conv_desc, static_cast<int>(c.groups));
  cudnnSetConvolutionMathType(conv_desc, cu.half ? CUDNN_TENSOR_OP_MATH : CUDNN_DEFAULT_MATH);
  s->alg = conv_algorithm(c.algorithm);
  if (!cu.ok(cudnnGetConvolutionForwardWorkspaceSize(cu.h, a.x_desc, w_desc, conv_desc, a.y_desc, s->alg,
                                                     &s->ws_bytes),
             "algorithm not applicable"))
    return false;
  s->w = cu.buffer(c.weights);
  s->ws = device_buffer(cu.p, s->ws_bytes);
  return (s->w && s->ws) || alloc_failed(cu.why);
}

// cudnnConvolutionBiasActivationForward: relu or identity activation, the residual (post-op "sum...")
// as z.
inline bool launch_fused_conv(Cudnn& cu, const Activations& a, const ConvSetup& s,
                              cudnnTensorDescriptor_t b_desc, void* bias) {
  const BenchCase& c = cu.c;
  Prepared* p = cu.p;
  const bool residual = c.post_op.rfind("sum", 0) == 0;  // "sum" or "sum+relu": z is the residual
  cudnnActivationDescriptor_t act;
  if (!cu.ok(cudnnCreateActivationDescriptor(&act), "cudnnCreateActivationDescriptor")) return false;
  p->cleanups.push_back([act] { cudnnDestroyActivationDescriptor(act); });
  const bool relu = c.post_op == "relu" || c.post_op == "sum+relu";
  cudnnSetActivationDescriptor(act, relu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY,
                               CUDNN_NOT_PROPAGATE_NAN, 0.0);
  // Without a residual, z aliases y with alpha2 = 0 (cuDNN allows it); with one, z is its own buffer.
  void* z = a.y;
  if (residual) {
    z = cu.buffer(c.dst);
    if (!z) return alloc_failed(cu.why);
  }
  cudnnHandle_t h = cu.h;
  p->launch = [=] {
    static const float one = 1.f, zero = 0.f;
    return launched(p,
                    cudnnConvolutionBiasActivationForward(h, &one, a.x_desc, a.x, s.w_desc, s.w, s.conv_desc,
                                                          s.alg, s.ws, s.ws_bytes, residual ? &one : &zero,
                                                          a.y_desc, z, b_desc, bias, act, a.y_desc, a.y),
                    "cudnnConvolutionBiasActivationForward");
  };
  return true;
}

inline bool prepare_conv(const BenchCase& c, Prepared* p, std::string* why) {
  Cudnn cu(c, p, why);
  Activations a;
  ConvSetup s;
  if (!cu.open() || !activations(cu, &a) || !conv_setup(cu, a, &s)) return false;
  const bool fused = !c.post_op.empty();
  cudnnTensorDescriptor_t b_desc = nullptr;
  void* bias = nullptr;
  if (fused || c.bias) {
    if (!cu.tensor({1, c.weights[0], 1, 1}, &b_desc)) return false;
    bias = device_buffer(p, static_cast<size_t>(c.weights[0]) * cu.elem);
    if (!bias) return alloc_failed(why);
  }
  if (fused) {
    if (!launch_fused_conv(cu, a, s, b_desc, bias)) return false;
  } else {
    // A framework without the fused call adds the bias with a second call (Benanza III-B3).
    const bool add_bias = c.bias;
    cudnnHandle_t h = cu.h;
    p->launch = [=] {
      static const float one = 1.f, zero = 0.f;
      if (!launched(p,
                    cudnnConvolutionForward(h, &one, a.x_desc, a.x, s.w_desc, s.w, s.conv_desc, s.alg, s.ws,
                                            s.ws_bytes, &zero, a.y_desc, a.y),
                    "cudnnConvolutionForward"))
        return false;
      return !add_bias ||
             launched(p, cudnnAddTensor(h, &one, b_desc, bias, &one, a.y_desc, a.y), "cudnnAddTensor");
    };
  }
  p->implementation =
      "cudnn:" + c.algorithm + (cu.half ? ":tensor_op" : "") + (!fused && c.bias ? "+cudnnAddTensor" : "");
  return true;
}

inline bool prepare_pool(const BenchCase& c, Prepared* p, std::string* why) {
  Cudnn cu(c, p, why);
  std::vector<int> pad;
  Activations a;
  if (!pool_padding(c, &pad, why) || !cu.open() || !activations(cu, &a)) return false;
  cudnnPoolingDescriptor_t pool;
  if (!cu.ok(cudnnCreatePoolingDescriptor(&pool), "cudnnCreatePoolingDescriptor")) return false;
  p->cleanups.push_back([pool] { cudnnDestroyPoolingDescriptor(pool); });
  cudnnPoolingMode_t mode = c.algorithm == "max"           ? CUDNN_POOLING_MAX
                            : c.algorithm == "avg_include" ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                                           : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
  if (!cu.ok(cudnnSetPooling2dDescriptor(pool, mode, CUDNN_NOT_PROPAGATE_NAN, static_cast<int>(c.kernel[0]),
                                         static_cast<int>(c.kernel[1]), pad[0], pad[1],
                                         static_cast<int>(c.strides[0]), static_cast<int>(c.strides[1])),
             "cudnnSetPooling2dDescriptor"))
    return false;
  cudnnHandle_t h = cu.h;
  p->launch = [=] {
    static const float one = 1.f, zero = 0.f;
    return launched(p, cudnnPoolingForward(h, pool, &one, a.x_desc, a.x, &zero, a.y_desc, a.y),
                    "cudnnPoolingForward");
  };
  p->implementation = "cudnnPoolingForward(" + c.algorithm + ")";
  return true;
}

// cuDNN has no leaky-ReLU activation; for a slope in [0, 1] (supported() checked), max(x, slope * x) is
// exactly it.
inline bool prepare_leaky_relu(Cudnn& cu, const Activations& a) {
  cudnnOpTensorDescriptor_t op_desc;
  if (!op_tensor_descriptor(cu, CUDNN_OP_TENSOR_MAX, &op_desc)) return false;
  const float slope = static_cast<float>(cu.c.alpha);
  cudnnHandle_t h = cu.h;
  Prepared* p = cu.p;
  p->launch = [=] {
    static const float one = 1.f, zero = 0.f;
    return launched(
        p, cudnnOpTensor(h, op_desc, &one, a.x_desc, a.x, &slope, a.x_desc, a.x, &zero, a.y_desc, a.y),
        "cudnnOpTensor");
  };
  p->implementation = "cudnnOpTensor(max(x, alpha*x))";
  return true;
}

inline bool prepare_eltwise(const BenchCase& c, Prepared* p, std::string* why) {
  Cudnn cu(c, p, why);
  Activations a;
  if (!cu.open() || !activations(cu, &a)) return false;
  if (c.algorithm == "leaky_relu") return prepare_leaky_relu(cu, a);
  cudnnActivationMode_t mode = CUDNN_ACTIVATION_ELU;
  double coef = c.alpha;
  if (c.algorithm == "relu") {
    mode = CUDNN_ACTIVATION_RELU, coef = 0;
  } else if (c.algorithm == "logistic") {
    mode = CUDNN_ACTIVATION_SIGMOID, coef = 0;
  } else if (c.algorithm == "tanh") {
    mode = CUDNN_ACTIVATION_TANH, coef = 0;
  } else if (c.algorithm == "clip") {
    mode = CUDNN_ACTIVATION_CLIPPED_RELU, coef = c.beta;
  }
  cudnnActivationDescriptor_t act;
  if (!cu.ok(cudnnCreateActivationDescriptor(&act), "cudnnCreateActivationDescriptor")) return false;
  p->cleanups.push_back([act] { cudnnDestroyActivationDescriptor(act); });
  if (!cu.ok(cudnnSetActivationDescriptor(act, mode, CUDNN_NOT_PROPAGATE_NAN, coef),
             "cudnnSetActivationDescriptor"))
    return false;
  cudnnHandle_t h = cu.h;
  p->launch = [=] {
    static const float one = 1.f, zero = 0.f;
    return launched(p, cudnnActivationForward(h, act, &one, a.x_desc, a.x, &zero, a.y_desc, a.y),
                    "cudnnActivationForward");
  };
  p->implementation = "cudnnActivationForward(" + c.algorithm + ")";
  return true;
}

inline bool prepare_batch_norm(const BenchCase& c, Prepared* p, std::string* why) {
  Cudnn cu(c, p, why);
  Activations a;
  if (!cu.open() || !activations(cu, &a)) return false;
  cudnnTensorDescriptor_t bn_desc;
  if (!cu.ok(cudnnCreateTensorDescriptor(&bn_desc), "cudnnCreateTensorDescriptor")) return false;
  p->cleanups.push_back([bn_desc] { cudnnDestroyTensorDescriptor(bn_desc); });
  // Spatial mode: one scale/bias/mean/variance per channel (fp32 also for fp16 data).
  if (!cu.ok(cudnnDeriveBNTensorDescriptor(bn_desc, a.x_desc, CUDNN_BATCHNORM_SPATIAL),
             "cudnnDeriveBNTensorDescriptor"))
    return false;
  const size_t channels = static_cast<size_t>(c.src[0][1]);
  void* scale = device_buffer(p, channels * 4);
  void* shift = device_buffer(p, channels * 4);
  void* mean = device_buffer(p, channels * 4);
  void* var = device_buffer(p, channels * 4);
  if (!scale || !shift || !mean || !var) return alloc_failed(why);
  cudnnHandle_t h = cu.h;
  p->launch = [=] {
    static const float one = 1.f, zero = 0.f;
    return launched(
        p,
        cudnnBatchNormalizationForwardInference(h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, a.x_desc, a.x,
                                                a.y_desc, a.y, bn_desc, scale, shift, mean, var, 1e-5),
        "cudnnBatchNormalizationForwardInference");
  };
  p->implementation = "cudnnBatchNormalizationForwardInference(spatial)";
  return true;
}

inline bool prepare_lrn(const BenchCase& c, Prepared* p, std::string* why) {
  Cudnn cu(c, p, why);
  Activations a;
  if (!cu.open() || !activations(cu, &a)) return false;
  const int64_t size = c.kernel.empty() ? 5 : c.kernel[0];
  cudnnLRNDescriptor_t lrn;
  if (!cu.ok(cudnnCreateLRNDescriptor(&lrn), "cudnnCreateLRNDescriptor")) return false;
  p->cleanups.push_back([lrn] { cudnnDestroyLRNDescriptor(lrn); });
  if (!cu.ok(cudnnSetLRNDescriptor(lrn, static_cast<unsigned>(size), c.alpha, c.beta, 1.0),
             "cudnnSetLRNDescriptor"))
    return false;
  cudnnHandle_t h = cu.h;
  p->launch = [=] {
    static const float one = 1.f, zero = 0.f;
    return launched(p,
                    cudnnLRNCrossChannelForward(h, lrn, CUDNN_LRN_CROSS_CHANNEL_DIM1, &one, a.x_desc, a.x,
                                                &zero, a.y_desc, a.y),
                    "cudnnLRNCrossChannelForward");
  };
  p->implementation = "cudnnLRNCrossChannelForward(size " + std::to_string(size) + ")";
  return true;
}

}  // namespace strata::lowerbound::cuda

#pragma GCC diagnostic pop

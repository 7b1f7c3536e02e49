#include "core/kernel_names.h"

#include <algorithm>
#include <iterator>

namespace strata {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return c >= 'a' && c <= 'z'; }
bool has(const std::string& n, std::string_view part) { return n.find(part) != std::string::npos; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// "tensor16x8x8" (XMMA's MMA shape), "_mi16x16x1" (Tensile's MFMA instruction): the token `prefix`
// followed by three 'x'-separated numbers. Returns the token, or empty.
std::string shape_token(const std::string& n, const std::string& prefix) {
  for (size_t at = n.find(prefix); at != std::string::npos; at = n.find(prefix, at + 1)) {
    if (prefix == "_mi" && at + prefix.size() < n.size() && !is_digit(n[at + prefix.size()])) continue;
    size_t i = at + prefix.size();
    int numbers = 0;
    while (numbers < 3) {
      size_t start = i;
      while (i < n.size() && is_digit(n[i])) ++i;
      if (i == start) break;
      ++numbers;
      if (numbers < 3) {
        if (i >= n.size() || n[i] != 'x') break;
        ++i;
      }
    }
    if (numbers == 3) return n.substr(prefix == "_mi" ? at + 1 : at, i - (prefix == "_mi" ? at + 1 : at));
  }
  return "";
}

// MMA tile tokens of cuBLAS/cuDNN/CUTLASS kernel names: a type letter and the MMA instruction shape,
// e.g. volta_h884gemm, turing_fp16_s1688gemm, ampere_h16816gemm, cutlass_tensorop_i8816gemm,
// ampere_bf16_s16816gemm, volta_s884cudnn. The digits must be exactly one of the MMA shapes and be
// followed by what the kernel computes (gemm, cudnn, conv...) or a separator.
std::string mma_tile_token(const std::string& n) {
  static const char* const kShapes[] = {"884", "1684", "1688", "8816", "16816", "16832", "16864"};
  static const char* const kAfter[] = {"gemm", "cudnn", "conv", "fprop", "dgrad", "wgrad", "_", ""};
  for (size_t i = 0; i < n.size(); ++i) {
    if (!is_digit(n[i]) || (i > 0 && is_digit(n[i - 1]))) continue;
    size_t end = i;
    while (end < n.size() && is_digit(n[end])) ++end;
    std::string digits = n.substr(i, end - i);
    if (std::find(std::begin(kShapes), std::end(kShapes), digits) == std::end(kShapes)) continue;
    if (i == 0) continue;
    char type = n[i - 1];
    if (type != 'h' && type != 's' && type != 'i' && type != 'd' && type != 'f') continue;
    if (type == 'f' && (i < 2 || n[i - 2] != 'b')) continue;  // only "bf" (bf16816)
    size_t letters = i - 1;                                   // the type letter must start a word
    if (type == 'f') --letters;
    if (letters > 0 && (is_alpha(n[letters - 1]) || is_digit(n[letters - 1]))) continue;
    std::string rest = n.substr(end);
    for (const char* after : kAfter)
      if (rest.rfind(after, 0) == 0 && (*after != '\0' || rest.empty()))
        return n.substr(letters, end - letters);
  }
  return "";
}

// FlashAttention's attention kernels (flash_fwd_kernel, flash_fwd_splitkv_kernel,
// flash_bwd_dq_dk_dv_loop_kernel, ...) are built on CUTLASS/CuTe MMA atoms; its helper kernels
// (split-KV combine, dQ conversion, the dO.O row sums, accumulator clears) are not.
bool is_flash_attention_mma(const std::string& n) {
  if (!has(n, "flash_fwd") && !has(n, "flash_bwd")) return false;
  for (const char* helper : {"combine", "convert", "dot_do_o", "clear"})
    if (has(n, helper)) return false;
  return true;
}

}  // namespace

std::string tensor_core_marker(std::string_view kernel_name) {
  const std::string n = lower(kernel_name);
  // SIMT kernels of families that are otherwise tensor-core ones: CUTLASS "simt", XMMA "ffma".
  if (has(n, "simt") || has(n, "ffma")) return "";
  for (const char* marker :
       {"wgmma", "hgmma", "gmma", "hmma", "imma", "dmma", "qmma", "tensorop", "tensor_op", "mfma", "nvjet"})
    if (has(n, marker)) return marker == std::string("tensor_op") ? "tensorop" : marker;
  if (std::string t = shape_token(n, "tensor"); !t.empty()) return t;
  if (std::string t = shape_token(n, "_mi"); !t.empty()) return "mfma " + t;
  if (has(n, "xmma")) {
    // XMMA names carry their data types; fp32-only ones (without tf32) run on SIMT cores.
    for (const char* type : {"tf32", "bf16", "f16", "fp16", "int8", "i8i8", "e4m3", "e5m2", "fp8"})
      if (has(n, type)) return std::string("xmma ") + type;
    return "";
  }
  if (is_flash_attention_mma(n)) return "flash attention";
  return mma_tile_token(n);
}

TensorPrecision tensor_core_precision(std::string_view kernel_name) {
  const std::string marker = tensor_core_marker(kernel_name);
  if (marker.empty()) return TensorPrecision::kUnknown;
  const std::string n = lower(kernel_name);
  // Data types spelled out (XMMA, CUTLASS, cuDNN, FlashAttention's template arguments).
  if (has(n, "e4m3") || has(n, "e5m2") || has(n, "fp8") || has(n, "qmma")) return TensorPrecision::kFp8;
  if (has(n, "int8") || has(n, "i8i8") || has(n, "s8s8") || marker == "imma") return TensorPrecision::kInt8;
  if (has(n, "tf32")) return TensorPrecision::kTf32;
  if (has(n, "bf16") || has(n, "bfloat16")) return TensorPrecision::kBf16;
  if (has(n, "f16") || has(n, "half") || marker == "hmma" || marker == "hgmma") return TensorPrecision::kFp16;
  if (has(n, "f64") || marker == "dmma" || has(n, "double")) return TensorPrecision::kFp64;
  // cuBLAS nvjet_<A><compute><D>_...: the first letter is the input type (h fp16, b bf16, t tf32).
  if (marker == "nvjet" && n.size() > n.find("nvjet_") + 6) {
    switch (n[n.find("nvjet_") + 6]) {
      case 'h':
        return TensorPrecision::kFp16;
      case 'b':
        return TensorPrecision::kBf16;
      case 't':
        return TensorPrecision::kTf32;
      default:
        return TensorPrecision::kUnknown;
    }
  }
  // MMA tile tokens: h fp16, i int8, d fp64, bf bf16; s (fp32 accumulate) takes fp16 inputs, except
  // Ampere's 16x8x8 (s1688 on sm80), which is the TF32 MMA.
  const std::string tile = mma_tile_token(n);
  if (tile.empty()) return TensorPrecision::kUnknown;
  if (tile.rfind("bf", 0) == 0) return TensorPrecision::kBf16;
  switch (tile[0]) {
    case 'h':
      return TensorPrecision::kFp16;
    case 'i':
      return TensorPrecision::kInt8;
    case 'd':
      return TensorPrecision::kFp64;
    case 's':
      if (tile == "s1688" && (has(n, "ampere") || has(n, "sm80") || has(n, "_80_")))
        return TensorPrecision::kTf32;
      return TensorPrecision::kFp16;
    default:
      return TensorPrecision::kUnknown;
  }
}

std::string_view tensor_precision_name(TensorPrecision p) {
  switch (p) {
    case TensorPrecision::kFp64:
      return "fp64";
    case TensorPrecision::kTf32:
      return "tf32";
    case TensorPrecision::kFp16:
      return "fp16";
    case TensorPrecision::kBf16:
      return "bf16";
    case TensorPrecision::kFp8:
      return "fp8";
    case TensorPrecision::kInt8:
      return "int8";
    default:
      return "";
  }
}

bool is_tma_descriptor_call(std::string_view name) {
  return name.rfind("cuTensorMapEncode", 0) == 0 || name.rfind("cuTensorMapReplaceAddress", 0) == 0;
}

bool is_extensible_launch(std::string_view name) {
  return name.rfind("cuLaunchKernelEx", 0) == 0 || name.rfind("cudaLaunchKernelEx", 0) == 0;
}

}  // namespace strata

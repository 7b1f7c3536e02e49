// Model processor: ONNX file -> LayerModel (Benanza's model processor). Runs ONNX shape inference
// and builds the layer DAG. Malformed or unsupported input gives one error line naming the file and
// what is wrong, never a crash.
#pragma once

#include <string>
#include <string_view>

#include "lowerbound/ir/layer_ir.h"

namespace strata::lowerbound {

bool load_onnx_file(const std::string& path, LayerModel* model, std::string* error);
// `bytes` is a serialized ModelProto; `label` names it in error messages (the file path).
bool load_onnx_bytes(std::string_view bytes, const std::string& label, LayerModel* model, std::string* error);

}  // namespace strata::lowerbound

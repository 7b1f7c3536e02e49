// PyTorch's NVTX op ranges (torch.autograd.profiler.emit_nvtx) carry the call's details in the range
// name: "aten::addmm, seq = 12, op_id = 7, sizes = [[32, 256], [256, 10], []], input_op_ids = [...]".
// Every call gets a name of its own, so tables grouped by name would show each call once and the
// op never. Whoever turns such ranges into spans (the NVTX injection, the Nsight Systems reader)
// splits the name into the op and attributes (canonical keys: attr_keys::kShapes for the sizes).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace strata {

// The attribute keys of the fields that have no canonical key in attr_keys.h.
inline constexpr std::string_view kTorchSequenceNrKey = "sequence_nr";
inline constexpr std::string_view kTorchOpIdKey = "op_id";
inline constexpr std::string_view kTorchInputOpIdsKey = "input_op_ids";

struct TorchNvtxName {
  std::string_view op;                 // "aten::addmm"
  std::optional<int64_t> sequence_nr;  // "seq = 12": pairs a forward op with its backward
  std::optional<int64_t> op_id;        // "op_id = 7"
  std::string_view shapes;             // "sizes = [[32, 256], ...]" as written ("" when absent)
  std::string_view input_op_ids;       // "input_op_ids = [(0,-1), ...]" as written
};

// True when `name` is an op name followed by one or more of PyTorch's ", key = value" fields (seq,
// op_id, sizes, input_op_ids, in any order, each at most once) and nothing else; false otherwise
// (the name is then kept as it is). Values: integers for seq/op_id, a balanced [...] for the others.
bool parse_torch_nvtx_name(std::string_view name, TorchNvtxName* out);

}  // namespace strata

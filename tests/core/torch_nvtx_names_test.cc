// PyTorch emit_nvtx range names split into op + fields; anything else is left whole.
#include "core/torch_nvtx_names.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace strata {
namespace {

TEST(TorchNvtxNames, SplitsTheFieldsPyTorchWrites) {
  // As PyTorch 2.11's emit_nvtx(record_shapes=True) named them on an H100 (tests/data/h100).
  TorchNvtxName n;
  ASSERT_TRUE(parse_torch_nvtx_name(
      "aten::conv2d, seq = 136, op_id = 2, sizes = [[32, 3, 64, 64], [64, 3, 3, 3], [64], [], [], [], []], "
      "input_op_ids = [(0,-1), (0,-1), (0,-1), (0,-1), (0,-1), (0,-1), (0,-1)]",
      &n));
  EXPECT_EQ(n.op, "aten::conv2d");
  EXPECT_EQ(n.sequence_nr, 136);
  EXPECT_EQ(n.op_id, 2);
  EXPECT_EQ(n.shapes, "[[32, 3, 64, 64], [64, 3, 3, 3], [64], [], [], [], []]");
  EXPECT_EQ(n.input_op_ids, "[(0,-1), (0,-1), (0,-1), (0,-1), (0,-1), (0,-1), (0,-1)]");

  ASSERT_TRUE(parse_torch_nvtx_name("Optimizer.zero_grad#AdamW.zero_grad, op_id = 1", &n));
  EXPECT_EQ(n.op, "Optimizer.zero_grad#AdamW.zero_grad");
  EXPECT_FALSE(n.sequence_nr.has_value());
  EXPECT_EQ(n.op_id, 1);
  EXPECT_TRUE(n.shapes.empty());

  ASSERT_TRUE(parse_torch_nvtx_name("aten::add, seq = 5", &n));  // record_shapes=False
  EXPECT_EQ(n.op, "aten::add");
  EXPECT_EQ(n.sequence_nr, 5);
  ASSERT_TRUE(parse_torch_nvtx_name("my op, with a comma, op_id = -3", &n));
  EXPECT_EQ(n.op, "my op, with a comma");
  EXPECT_EQ(n.op_id, -3);
}

TEST(TorchNvtxNames, LeavesOtherNamesWhole) {
  TorchNvtxName n;
  for (const char* name :
       {"train_step", "", "aten::add", "a, b", ", op_id = 1", "aten::add, op_id = ", "aten::add, op_id = x",
        "aten::add, op_id = 1, op_id = 2", "aten::add, sizes = [[1]", "aten::add, sizes = [[1]] trailing",
        "aten::add, op_id = 1,", "aten::add, op_id = 1 , seq = 2", "aten::add, colour = 3",
        "aten::add, op_id = 1, sizes = [[1], [2]]]", "aten::add, seq = 99999999999999999999999"})
    EXPECT_FALSE(parse_torch_nvtx_name(name, &n)) << name;
}

// Generated names: each field present or not, in a random order; the parse gives back what was
// put in, and cutting any of them anywhere inside a field never gives a wrong op.
TEST(TorchNvtxNames, GeneratedNamesRoundTrip) {
  std::mt19937 rng(11);
  for (int i = 0; i < 20000; ++i) {
    std::string op = "aten::op" + std::to_string(rng() % 100);
    std::vector<std::string> fields;
    int64_t seq = static_cast<int64_t>(rng() % 100000), id = static_cast<int64_t>(rng() % 100000);
    std::string sizes = "[[" + std::to_string(rng() % 64) + ", " + std::to_string(rng() % 64) + "], []]";
    std::string ids = "[(" + std::to_string(rng() % 9) + ",-1)]";
    const unsigned mask = 1 + rng() % 15;
    if (mask & 1) fields.push_back("seq = " + std::to_string(seq));
    if (mask & 2) fields.push_back("op_id = " + std::to_string(id));
    if (mask & 4) fields.push_back("sizes = " + sizes);
    if (mask & 8) fields.push_back("input_op_ids = " + ids);
    std::shuffle(fields.begin(), fields.end(), rng);
    std::string name = op;
    for (const auto& f : fields) name += ", " + f;
    TorchNvtxName n;
    ASSERT_TRUE(parse_torch_nvtx_name(name, &n)) << name;
    EXPECT_EQ(n.op, op);
    EXPECT_EQ(n.sequence_nr.has_value(), (mask & 1) != 0);
    if (mask & 1) {
      EXPECT_EQ(*n.sequence_nr, seq);
    }
    if (mask & 2) {
      EXPECT_EQ(*n.op_id, id);
    }
    EXPECT_EQ(n.shapes, (mask & 4) ? sizes : "");
    EXPECT_EQ(n.input_op_ids, (mask & 8) ? ids : "");
    const size_t cut = op.size() + 1 + rng() % (name.size() - op.size() - 1);
    TorchNvtxName m;
    if (parse_torch_nvtx_name(std::string_view(name).substr(0, cut), &m)) {
      EXPECT_EQ(m.op, op) << name.substr(0, cut);
    }
  }
}

}  // namespace
}  // namespace strata

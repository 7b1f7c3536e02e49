// Basic-block splitting of hand-assembled x86-64 code, decoded by capstone: fixed cases, and random
// functions checked against a brute-force reference that knows each instruction from the generator
// (not from the decoder), so the decoder's control-flow classes are checked too.
#include "annotate/basic_blocks.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "annotate/disassembler.h"

namespace strata::annotate {
namespace {

enum class Kind { kNop, kAdd, kJmp, kJne, kRet, kCall, kJmpRax, kUd2 };

struct Gen {
  Kind kind;
  uint64_t address = 0;
  uint32_t size = 0;
  uint64_t target = 0;  // kJmp, kJne, kCall
};

uint32_t size_of(Kind k) {
  switch (k) {
    case Kind::kNop:
    case Kind::kRet:
      return 1;
    case Kind::kAdd:
      return 4;
    case Kind::kJmp:
    case Kind::kJne:
    case Kind::kJmpRax:
    case Kind::kUd2:
      return 2;
    case Kind::kCall:
      return 5;
  }
  return 0;
}

// The bytes of the generated instructions (rel8/rel32 displacements from the next instruction).
std::string assemble(const std::vector<Gen>& code) {
  std::string out;
  for (const Gen& g : code) {
    const int64_t rel = static_cast<int64_t>(g.target) - static_cast<int64_t>(g.address + g.size);
    switch (g.kind) {
      case Kind::kNop:
        out += '\x90';
        break;
      case Kind::kAdd:
        out += std::string("\x48\x83\xc0\x01", 4);
        break;
      case Kind::kJmp:
        out += '\xeb';
        out += static_cast<char>(static_cast<int8_t>(rel));
        break;
      case Kind::kJne:
        out += '\x75';
        out += static_cast<char>(static_cast<int8_t>(rel));
        break;
      case Kind::kRet:
        out += '\xc3';
        break;
      case Kind::kJmpRax:
        out += std::string("\xff\xe0", 2);
        break;
      case Kind::kUd2:
        out += std::string("\x0f\x0b", 2);
        break;
      case Kind::kCall:
        out += '\xe8';
        for (int i = 0; i < 4; ++i) out += static_cast<char>((static_cast<uint64_t>(rel) >> (8 * i)) & 0xff);
        break;
    }
  }
  return out;
}

bool gen_ends_block(Kind k) {
  return k == Kind::kJmp || k == Kind::kJne || k == Kind::kRet || k == Kind::kJmpRax || k == Kind::kUd2;
}

// Brute force: two neighbours share a block unless the first may leave, or any jump lands on the second.
std::vector<std::pair<uint64_t, uint64_t>> reference_blocks(const std::vector<Gen>& code) {
  std::vector<std::pair<uint64_t, uint64_t>> blocks;
  uint64_t start = code[0].address;
  for (size_t i = 0; i + 1 < code.size(); ++i) {
    bool split = gen_ends_block(code[i].kind);
    for (const Gen& j : code)
      if ((j.kind == Kind::kJmp || j.kind == Kind::kJne) && j.target == code[i + 1].address) split = true;
    if (split) {
      blocks.emplace_back(start, code[i + 1].address);
      start = code[i + 1].address;
    }
  }
  blocks.emplace_back(start, code.back().address + code.back().size);
  return blocks;
}

std::vector<Instruction> decode(const std::string& bytes, uint64_t address) {
  auto d = make_capstone_disassembler();
  std::vector<Instruction> out;
  std::string error;
  EXPECT_TRUE(d->disassemble(bytes, address, &out, &error)) << error;
  return out;
}

TEST(BasicBlocks, LoopWithEarlyExit) {
  // 0x1000: add rax,1 ; 0x1004: jne 0x100a ; 0x1006: nop ; 0x1007: jmp 0x1000 ; 0x1009: nop ; 0x100a: ret
  const std::string bytes("\x48\x83\xc0\x01\x75\x04\x90\xeb\xf7\x90\xc3", 11);
  std::vector<Instruction> ins = decode(bytes, 0x1000);
  ASSERT_EQ(ins.size(), 6u);
  EXPECT_EQ(ins[1].flow, Flow::kConditional);
  EXPECT_EQ(ins[1].target, 0x100au);
  EXPECT_EQ(ins[3].flow, Flow::kJump);
  EXPECT_EQ(ins[5].flow, Flow::kReturn);
  std::vector<BasicBlock> blocks = split_basic_blocks(ins);
  ASSERT_EQ(blocks.size(), 4u);
  EXPECT_EQ(blocks[0].start, 0x1000u);
  EXPECT_EQ(blocks[0].end, 0x1006u);
  EXPECT_EQ(blocks[1].start, 0x1006u);
  EXPECT_EQ(blocks[1].end, 0x1009u);
  EXPECT_EQ(blocks[2].start, 0x1009u);  // after the jmp: a leader though nothing jumps to it
  EXPECT_EQ(blocks[3].start, 0x100au);
  EXPECT_EQ(block_of(blocks, 0x1005), 0u);
  EXPECT_EQ(block_of(blocks, 0x100a), 3u);
  EXPECT_EQ(block_of(blocks, 0x100b), blocks.size());
  EXPECT_EQ(block_of(blocks, 0xfff), blocks.size());
}

TEST(BasicBlocks, UndecodableBytesAreKeptAndEndABlock) {
  // add rax,1 ; 0x06 (invalid in 64-bit mode) ; ret
  std::vector<Instruction> ins = decode(std::string("\x48\x83\xc0\x01\x06\xc3", 6), 0x2000);
  ASSERT_EQ(ins.size(), 3u);
  EXPECT_FALSE(ins[1].valid);
  EXPECT_EQ(ins[1].address, 0x2004u);
  EXPECT_EQ(split_basic_blocks(ins).size(), 2u);
}

TEST(BasicBlocks, RandomFunctionsMatchBruteForce) {
  std::mt19937 rng(20261126);
  const Kind kinds[] = {Kind::kNop, Kind::kAdd, Kind::kAdd,  Kind::kJmp,    Kind::kJne,
                        Kind::kJne, Kind::kRet, Kind::kCall, Kind::kJmpRax, Kind::kUd2};
  for (int round = 0; round < 500; ++round) {
    const uint64_t base = 0x400000 + 0x1000 * static_cast<uint64_t>(round);
    std::vector<Gen> code(1 + rng() % 24);
    uint64_t at = base;
    for (Gen& g : code) {
      g.kind = kinds[rng() % std::size(kinds)];
      g.address = at;
      g.size = size_of(g.kind);
      at += g.size;
    }
    for (Gen& g : code) {
      if (g.kind != Kind::kJmp && g.kind != Kind::kJne && g.kind != Kind::kCall) continue;
      // Mostly an instruction of the function, sometimes outside it (a tail call: no leader).
      g.target = rng() % 5 == 0 ? at + 16 : code[rng() % code.size()].address;
    }
    std::vector<Instruction> ins = decode(assemble(code), base);
    ASSERT_EQ(ins.size(), code.size()) << "round " << round;
    for (size_t i = 0; i < code.size(); ++i) {
      ASSERT_EQ(ins[i].address, code[i].address) << "round " << round;
      EXPECT_EQ(ends_block(ins[i].flow), gen_ends_block(code[i].kind))
          << "round " << round << " " << ins[i].text();
      if (code[i].kind == Kind::kJmp || code[i].kind == Kind::kJne || code[i].kind == Kind::kCall) {
        EXPECT_EQ(ins[i].target, code[i].target) << ins[i].text();
      }
    }
    std::vector<BasicBlock> blocks = split_basic_blocks(ins);
    auto expected = reference_blocks(code);
    ASSERT_EQ(blocks.size(), expected.size()) << "round " << round;
    for (size_t b = 0; b < blocks.size(); ++b) {
      EXPECT_EQ(blocks[b].start, expected[b].first) << "round " << round << " block " << b;
      EXPECT_EQ(blocks[b].end, expected[b].second) << "round " << round << " block " << b;
      EXPECT_EQ(ins[blocks[b].first].address, blocks[b].start);
    }
  }
}

}  // namespace
}  // namespace strata::annotate

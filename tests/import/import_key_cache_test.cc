// The import builder's attribute-key caches (ImportBuilder::key_id, by the key's bytes; the
// int_attr/double_attr/string_attr a translation such as kineto_arg uses, by the key's address)
// against plain interning in a pool of their own: the same ids, handed out in the same order, for
// repeated keys, keys made to share a slot, the same text at many addresses, and thousands of
// distinct keys.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "import/import_builder.h"
#include "trace/string_pool.h"
#include "trace/trace.h"
#include "trace/trace_builder.h"

namespace strata::import {
namespace {

// A key that lands in the same cache slot as every other key of its length built here: the slot is
// chosen from the length and the first, middle and last bytes, which stay fixed; the rest varies,
// from the second byte on or (from_end) from the last but one backwards, so that keys of one slot
// differ in their first bytes only or in their last ones only (the text check's two loads).
std::string colliding_key(size_t length, uint64_t variant, bool from_end = false) {
  std::string key(length, 'k');
  for (size_t k = 1; k + 1 < length; ++k) {
    const size_t i = from_end ? length - 1 - k : k;
    if (i == length / 2) continue;
    key[i] = static_cast<char>('a' + variant % 26);
    variant /= 26;
  }
  return key;
}

std::vector<std::string> generated_keys(std::mt19937_64& rng) {
  std::vector<std::string> common = {
      "External id", "Input Dims",      "Input type",    "correlation",        "stream", "device", "grid",
      "block",       "Sequence number", "Fwd thread id", "Record function id", "Ev Idx"};
  std::vector<std::string> keys;
  std::uniform_int_distribution<int> pick(0, 99);
  for (int i = 0; i < 20000; ++i) {
    int p = pick(rng);
    if (p < 70) {
      keys.push_back(common[rng() % common.size()]);  // most events repeat the same dozen keys
    } else if (p < 85) {
      keys.push_back(colliding_key(8 + rng() % 3, rng() % 40));  // a few slots, many keys each
    } else if (p < 88) {
      keys.push_back(colliding_key(3 + rng() % 18, rng() % 40, rng() % 2));  // 3-20 bytes
    } else if (p < 98) {
      keys.push_back("distinct." + std::to_string(i));  // thousands of keys seen once
    } else {
      keys.push_back(std::string(rng() % 3, 'x'));  // empty and tiny keys
    }
  }
  return keys;
}

TEST(ImportKeyCache, SameIdsAsPlainInterning) {
  std::mt19937_64 rng(16);
  trace::Trace trace;
  trace::TraceBuilder tb(&trace);
  ImportBuilder b(&tb, Format::kKineto, "keys.json");
  trace::StringPool reference;
  // The builder's pool may hold strings from before the import (the empty string at least).
  for (size_t id = 0; id < trace.strings.size(); ++id)
    ASSERT_EQ(reference.intern(trace.strings.get(static_cast<uint32_t>(id))), id);
  const std::vector<std::string> keys = generated_keys(rng);
  size_t distinct_before = reference.size();
  for (const std::string& key : keys) {
    uint32_t id = b.key_id(key);
    ASSERT_EQ(id, reference.intern(key)) << "key '" << key << "'";
    ASSERT_EQ(trace.strings.get(id), key);
  }
  EXPECT_GT(reference.size() - distinct_before, 2000u);  // the generator did make thousands of keys
  ASSERT_EQ(trace.strings.size(), reference.size());
  for (size_t id = 0; id < reference.size(); ++id)
    EXPECT_EQ(trace.strings.get(static_cast<uint32_t>(id)), reference.get(static_cast<uint32_t>(id)));
}

TEST(ImportKeyCache, AttributesMatchTheTraceOwn) {
  std::mt19937_64 rng(17);
  trace::Trace cached_trace, plain_trace;
  trace::TraceBuilder tb(&cached_trace);
  ImportBuilder b(&tb, Format::kKineto, "attrs.json");
  // Each key at its own address (equal texts at different ones), unchanged for the whole test: the
  // contract of the address cache. Every 7th key is the same literal, at one address.
  const std::vector<std::string> keys = generated_keys(rng);
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string_view key = i % 7 == 0 ? std::string_view("registers_per_thread") : keys[i];
    AttrRecord got, want;
    switch (i % 3) {
      case 0:
        got = b.int_attr(key, static_cast<int64_t>(i) - 7);
        want = plain_trace.int_attr(key, static_cast<int64_t>(i) - 7);
        ASSERT_EQ(got.value.i, want.value.i);
        break;
      case 1:
        got = b.double_attr(key, 0.5 * static_cast<double>(i));
        want = plain_trace.double_attr(key, 0.5 * static_cast<double>(i));
        ASSERT_EQ(got.value.d, want.value.d);
        break;
      default: {
        // Values drawn from the keys too, so a value may intern a string a later key reuses.
        const std::string& value = keys[rng() % keys.size()];
        got = b.string_attr(key, value);
        want = plain_trace.string_attr(key, value);
        ASSERT_EQ(got.value.u, want.value.u);
      }
    }
    ASSERT_EQ(got.key, want.key) << "key '" << key << "' at " << i;
    ASSERT_EQ(got.type, want.type);
  }
  ASSERT_EQ(cached_trace.strings.size(), plain_trace.strings.size());
  for (size_t id = 0; id < plain_trace.strings.size(); ++id)
    EXPECT_EQ(cached_trace.strings.get(static_cast<uint32_t>(id)),
              plain_trace.strings.get(static_cast<uint32_t>(id)));
}

}  // namespace
}  // namespace strata::import

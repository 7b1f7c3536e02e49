// The stats registry: one list, every stat documented in docs/trace-format.md, every cause a
// collector writes registered, names stable and unique, old on-disk keys still read.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "../test_util.h"
#include "collect/session.h"
#include "core/stats.h"
#include "onednn/verbose_parser.h"

namespace strata::stats {
namespace {

TEST(StatsRegistry, EveryStatIsDocumentedInTheTraceFormat) {
  const std::string doc =
      strata::testing::read_file(std::string(STRATA_SOURCE_DIR) + "/docs/trace-format.md");
  ASSERT_FALSE(doc.empty());
  for (const StatInfo& s : all_stats()) {
    // A row of the Stats table: the name in backticks, its severity and source.
    const std::string row = "| `" + std::string(s.name) + "` | " + std::string(severity_name(s.severity)) +
                            " | " + std::string(source_name(s.source)) + " |";
    EXPECT_NE(doc.find(row), std::string::npos) << "docs/trace-format.md lacks the row for " << s.name;
    EXPECT_FALSE(s.description.empty()) << s.name;
  }
}

TEST(StatsRegistry, NamesAndDiskKeysAreUniqueAndFindable) {
  std::set<std::string_view> names, keys;
  for (const StatInfo& s : all_stats()) {
    EXPECT_TRUE(names.insert(s.name).second) << s.name;
    EXPECT_EQ(find(s.name), s.id);
    EXPECT_EQ(&info(s.id), &s);
    if (s.disk == Disk::kNone) {
      EXPECT_TRUE(s.disk_key.empty()) << s.name;
      continue;
    }
    EXPECT_TRUE(keys.insert(s.disk_key).second) << s.disk_key;
    EXPECT_EQ(find(s.disk_key), s.id) << s.disk_key;
    // Counters written into Stats chunks are the drops every Strata version wrote as dropped.<cause>.
    if (s.disk == Disk::kStats) {
      EXPECT_EQ(s.disk_key.rfind("dropped.", 0), 0u) << s.disk_key;
    }
    // Stored stats belong to the process that wrote them, or (Record chunk) to the whole file.
    EXPECT_EQ(s.scope, s.disk == Disk::kRecord ? Scope::kTrace : Scope::kProcess) << s.name;
  }
  EXPECT_FALSE(find("dropped.no_such_cause").has_value());
  EXPECT_FALSE(find("").has_value());
}

TEST(StatsRegistry, EveryCauseTheCollectorsWriteIsRegistered) {
  std::set<std::string> keys;
  for (int c = 0; c < collect::kDropCauseCount; ++c) {
    const std::string key(collect::drop_cause_key(c));
    const auto stat = find(key);
    ASSERT_TRUE(stat.has_value()) << key << " (collect/session.h DropCause) is not in the stats registry";
    EXPECT_EQ(info(*stat).source, Source::kCollector) << key;
    EXPECT_TRUE(keys.insert(key).second) << key << ": two drop causes share one key";
  }
  for (size_t m = 1; m < static_cast<size_t>(onednn::Malformed::kCount); ++m) {
    const std::string key =
        std::string("dropped.onednn_verbose_") + onednn::malformed_name(static_cast<onednn::Malformed>(m));
    EXPECT_TRUE(find(key).has_value()) << key << " (onednn/verbose_parser.h Malformed) is not registered";
  }
}

TEST(StatSet, CountsSetsMergesAndKeepsUnregisteredKeys) {
  StatSet a;
  a.add(Stat::kCollectorBufferFull, 3);
  a.add(Stat::kCollectorBufferFull);
  a.set(Stat::kTreeRoots, 9);
  a.set_unregistered("dropped.from_the_future", 2);
  EXPECT_EQ(a.get(Stat::kCollectorBufferFull), 4u);
  EXPECT_EQ(a.get("collector.buffer_full"), 4u);
  EXPECT_EQ(a.get("dropped.buffer_full"), 4u) << "the on-disk key names the same stat";
  EXPECT_EQ(a.get("dropped.from_the_future"), 2u);
  EXPECT_EQ(a.get(Stat::kCollectorEndLost), 0u);
  StatSet b;
  b.add(Stat::kCollectorBufferFull, 6);
  b.add_unregistered("dropped.from_the_future", 1);
  b.merge(a);
  EXPECT_EQ(b.get(Stat::kCollectorBufferFull), 10u);
  EXPECT_EQ(b.get("dropped.from_the_future"), 3u);
  const auto nonzero = b.nonzero();
  ASSERT_EQ(nonzero.size(), 2u);
  EXPECT_EQ(nonzero[0].first, Stat::kCollectorBufferFull) << "registry order";
  EXPECT_FALSE(b.empty());
  EXPECT_TRUE(StatSet().empty());
}

}  // namespace
}  // namespace strata::stats

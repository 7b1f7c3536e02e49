// Names of generated code (sample/jit_map.h) against a brute-force lookup of generated perf maps,
// read in pieces while they grow; perf's "//anon" mappings are anonymous; and the collector cuts a
// frame-pointer stack at the first caller address in no mapping, naming JIT frames from the map.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "format/sample_payloads.h"
#include "sample/collector.h"
#include "sample/jit_map.h"
#include "sample/mappings.h"

namespace strata::testing {
namespace {

struct Line {
  uint64_t start, size;
  std::string name;
};

// The name a brute force gives: the last line (in file order) whose range holds the address and
// that no later line overlapped (generated code freed and replaced).
const std::string* brute_force(const std::vector<Line>& lines, uint64_t address) {
  for (size_t i = lines.size(); i-- > 0;) {
    const Line& l = lines[i];
    if (address < l.start || address >= l.start + l.size) continue;
    for (size_t j = i + 1; j < lines.size(); ++j)  // a later line over any part of it removed it
      if (lines[j].start < l.start + l.size && l.start < lines[j].start + lines[j].size) return nullptr;
    return &l.name;
  }
  return nullptr;
}

std::string temp_path(const char* tag) {
  return ::testing::TempDir() + "strata_jit_" + tag + "_" + std::to_string(getpid()) + ".map";
}

TEST(SampleJitMap, GrowingMapMatchesBruteForce) {
  std::mt19937_64 rng(77);
  const std::string path = temp_path("grow");
  unlink(path.c_str());
  sample::JitMap map(path);
  EXPECT_EQ(map.find(0x1000, 1), nullptr);  // no file yet: no error, nothing found
  EXPECT_TRUE(map.problem().empty());
  std::vector<Line> lines;
  std::string text;
  const uint64_t base = 0x7f0000000000ull;
  for (int i = 0; i < 3000; ++i) {
    // Mostly fresh code; every tenth line reuses an earlier line's place (code freed, regenerated).
    Line l;
    if (i % 10 == 9 && !lines.empty()) {
      const Line& old = lines[rng() % lines.size()];
      l.start = old.start + (rng() % 2) * 16;
    } else {
      l.start = base + (rng() % (1u << 26)) * 16;
    }
    l.size = 16 + rng() % 4096;
    l.name = "jit_kernel_" + std::to_string(i) + (i % 3 ? "" : " with spaces [x]");
    lines.push_back(l);
    char buf[64];
    // Both spellings the writers use: bare hex (oneDNN, V8) and 0x-prefixed.
    std::snprintf(buf, sizeof(buf), i % 2 ? "%llx %llx " : "0x%llx 0x%llx ",
                  static_cast<unsigned long long>(l.start), static_cast<unsigned long long>(l.size));
    text += buf + l.name + "\n";
  }
  text += "not a line\n7f00 zz broken\n\n";
  // Written in pieces that cut lines in the middle; lookups between pieces see what was complete.
  size_t written = 0;
  int64_t now = 1'000'000'000;
  for (size_t piece : {size_t{1}, size_t{17}, text.size() / 3, text.size() / 2, text.size()}) {
    piece = std::min(piece, text.size());
    {
      std::ofstream out(path, std::ios::app | std::ios::binary);
      out << text.substr(written, piece - written);
    }
    written = piece;
    // The lines complete so far.
    const size_t complete_bytes =
        text.rfind('\n', written - 1) == std::string::npos ? 0 : text.rfind('\n', written - 1) + 1;
    size_t complete_lines = 0;
    for (size_t k = 0; k < complete_bytes; ++k) complete_lines += text[k] == '\n';
    std::vector<Line> known(lines.begin(), lines.begin() + std::min(complete_lines, lines.size()));
    for (int probe = 0; probe < 3000; ++probe) {
      const Line& l = lines[rng() % lines.size()];
      const uint64_t address = probe % 4 == 0 ? base + (rng() % (1u << 26)) * 16 : l.start + rng() % l.size;
      now += 1000;
      const std::string* got = map.find(address, now);
      const std::string* want = brute_force(known, address);
      ASSERT_EQ(got == nullptr, want == nullptr) << std::hex << address << " after " << std::dec << written;
      if (want != nullptr) {
        ASSERT_EQ(*got, *want) << std::hex << address;
      }
    }
  }
  EXPECT_EQ(map.malformed_lines(), 2u);
  unlink(path.c_str());
}

TEST(SampleJitMap, OnlyTheUsersOwnRegularFileIsRead) {
  const std::string target = temp_path("target");
  {
    std::ofstream out(target);
    out << "1000 100 planted\n";
  }
  const std::string link = temp_path("link");
  unlink(link.c_str());
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  sample::JitMap via_link(link);
  EXPECT_EQ(via_link.find(0x1010, 1), nullptr);  // a link is not followed
  if (geteuid() == 0) {                          // root can hand the file to another user
    ASSERT_EQ(chown(target.c_str(), 65534, 65534), 0);
    sample::JitMap foreign(target);
    EXPECT_EQ(foreign.find(0x1010, 1), nullptr);
    EXPECT_NE(foreign.problem().find("owned by another user"), std::string::npos) << foreign.problem();
  }
  unlink(link.c_str());
  unlink(target.c_str());
}

// The perf map Strata asks oneDNN for is created by Strata first: exclusively, 0600, never through
// a name already taken (a link another user planted), and a file linked to another is not read.
TEST(SampleJitMap, PerfMapIsCreatedExclusivelyAndATakenNameIsRefused) {
  const std::string dir = temp_path("maps");
  mkdir(dir.c_str(), 0755);
  const pid_t pid = 4242;
  const std::string path = dir + "/perf-4242.map", victim = temp_path("victim");
  unlink(path.c_str());
  std::string why;
  const int fd = sample::JitMap::create_perf_map(pid, &why, dir);
  ASSERT_GE(fd, 0) << why;
  close(fd);
  struct stat st {};
  ASSERT_EQ(lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(sample::JitMap::create_perf_map(pid, &why, dir), -1) << "a second creation must fail";
  EXPECT_NE(why.find("exists and was not created by strata"), std::string::npos) << why;
  unlink(path.c_str());
  {
    std::ofstream out(victim);
    out << "precious\n";
  }
  ASSERT_EQ(symlink(victim.c_str(), path.c_str()), 0);
  EXPECT_EQ(sample::JitMap::create_perf_map(pid, &why, dir), -1);
  EXPECT_NE(why.find("exists and was not created by strata"), std::string::npos) << why;
  std::ifstream in(victim);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "precious\n");
  // A hard link to another file (a second name for it) is not read as a perf map either.
  unlink(path.c_str());
  {
    std::ofstream out(victim);
    out << "1000 100 linked\n";
  }
  ASSERT_EQ(link(victim.c_str(), path.c_str()), 0);
  sample::JitMap linked(path);
  EXPECT_EQ(linked.find(0x1010, 1), nullptr);
  // A directory others may write to without the sticky bit is refused.
  unlink(path.c_str());
  ASSERT_EQ(chmod(dir.c_str(), 0777), 0);
  EXPECT_EQ(sample::JitMap::create_perf_map(pid, &why, dir), -1);
  EXPECT_NE(why.find("sticky"), std::string::npos) << why;
  unlink(victim.c_str());
  rmdir(dir.c_str());
}

// The perf map goes through the one input check of files a process names (core/input_file.h): a
// FIFO at its path is refused without blocking, said, and counted (sample.files_refused).
TEST(SampleJitMap, AFifoAtThePathIsRefusedWithoutBlockingAndCounted) {
  const std::string fifo = temp_path("fifo");
  unlink(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const uint64_t before = sample::SampleCollector::files_refused();
  sample::JitMap map(fifo);
  EXPECT_EQ(map.find(0x1010, 1), nullptr);
  EXPECT_NE(map.problem().find("a named pipe (FIFO)"), std::string::npos) << map.problem();
  EXPECT_EQ(sample::SampleCollector::files_refused(), before + 1);
  unlink(fifo.c_str());
}

TEST(SampleMappings, PerfsAnonNameIsAnonymous) {
  sample::MappingTable table(getpid(), "");
  table.add(0x7f0000000000ull, 0x10000, 0x7f0000000ull, "//anon", "", 1);
  table.add(0x7f1000000000ull, 0x10000, 0, "", "", 1);
  for (uint64_t a : {0x7f0000000100ull, 0x7f1000000100ull}) {
    const sample::Mapping* m = table.find_no_refresh(a);
    ASSERT_NE(m, nullptr);
    EXPECT_TRUE(m->flags & format::kMappingAnonymous) << m->path;
    EXPECT_EQ(m->path, "//anon");
  }
}

// A frame-pointer callchain as the kernel hands it: leaf in generated code named by the perf map,
// callers in this binary, then a data word read as a return address, then more addresses read
// through it. The stack keeps the leaf and the real callers, ends with the truncation marker, and
// the JIT frame carries its name.
TEST(SampleCollectorStacks, CutAtTheFirstUnmappedCallerAndJitFramesNamed) {
  const long page = sysconf(_SC_PAGESIZE);
  void* code =
      mmap(nullptr, static_cast<size_t>(page), PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(code, MAP_FAILED);
  const uint64_t jit = reinterpret_cast<uint64_t>(code);
  const std::string map_path = sample::JitMap::perf_map_path(getpid());
  {
    std::ofstream out(map_path);
    out << std::hex << jit << " 80 test_jit_kernel\n";
  }
  sample::SampleCollector collector;
  sample::CollectorConfig config;
  config.pid = getpid();
  config.hz = 1;
  config.python = false;
  config.force_fallback = "timer";
  std::string error;
  ASSERT_TRUE(collector.start(config, &error)) << error;
  const uint64_t own = reinterpret_cast<uint64_t>(&getpid);  // libc: mapped
  const uint64_t here = reinterpret_cast<uint64_t>(&brute_force);
  std::vector<uint64_t> ips = {jit + 0x10, own + 4, here + 4, 0x10, here + 8, own + 8};
  sample::RawSample s;
  s.pid = static_cast<uint32_t>(getpid());
  s.tid = static_cast<uint32_t>(syscall(SYS_gettid));
  s.time_ns = 5;
  s.ips = ips.data();
  s.ip_count = static_cast<uint32_t>(ips.size());
  collector.process_for_testing(s);
  s.time_ns = 6;
  collector.process_for_testing(s);  // the same stack again: cached, cut the same way
  sample::SampleBatch batch;
  collector.take(&batch);
  collector.stop();
  unlink(map_path.c_str());
  munmap(code, static_cast<size_t>(page));
  ASSERT_EQ(batch.samples.size(), 2u);
  EXPECT_EQ(batch.samples[0].stack, batch.samples[1].stack);
  ASSERT_EQ(batch.stacks.size(), 1u);
  const std::vector<uint32_t>& frames = batch.stacks[0].frames;
  ASSERT_EQ(frames.size(), 4u);  // leaf, two callers, the marker
  auto def = [&](uint32_t id) -> const sample::FrameDef* {
    for (const auto& d : batch.frames)
      if (d.frame.id == id) return &d;
    return nullptr;
  };
  ASSERT_NE(def(frames[0]), nullptr);
  EXPECT_EQ(def(frames[0])->frame.kind, format::SampleFrameKind::kNative);
  EXPECT_EQ(def(frames[0])->function, "test_jit_kernel");
  EXPECT_EQ(def(frames[1])->frame.kind, format::SampleFrameKind::kNative);
  EXPECT_EQ(def(frames[2])->frame.kind, format::SampleFrameKind::kNative);
  EXPECT_EQ(def(frames[3])->frame.kind, format::SampleFrameKind::kTruncated);
  for (const auto& d : batch.frames) EXPECT_NE(d.frame.kind, format::SampleFrameKind::kAddress);
  EXPECT_EQ(collector.stacks_cut_unmapped(), 2u);
  EXPECT_EQ(collector.jit_frames_named(), 1u);
}

}  // namespace
}  // namespace strata::testing

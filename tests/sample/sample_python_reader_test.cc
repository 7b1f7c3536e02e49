// The Python reader's chunked frame read (one copy of the thread's data-stack chunk per sample)
// against the reference per-frame read, on a real CPython 3.11 (Debian's /usr/bin/python3) stopped
// in a known stack: 100-deep recursion, frames spanning several data-stack chunks, and generators
// (whose frames live outside the data stack). Both reads must give the same frames (function, file,
// line, entry flag), and the chunked one must take its frames from the chunks in a few system calls.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <tuple>
#include <vector>

#include "../test_util.h"
#include "sample/mappings.h"
#include "sample/python_reader.h"

extern char** environ;

namespace strata::sample {
namespace {

constexpr const char* kScript = R"PY(
import sys, time

def stop_here():
    print("ready", flush=True)
    time.sleep(120)

def recurse(n):
    if n == 0:
        stop_here()
        return 0
    return recurse(n - 1) + 1

def wide(n):
    # Many locals: a large frame each, so that 300 of them fill several 16 KiB data-stack chunks.
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = a8 = a9 = n
    b0 = b1 = b2 = b3 = b4 = b5 = b6 = b7 = b8 = b9 = n
    c0 = c1 = c2 = c3 = c4 = c5 = c6 = c7 = c8 = c9 = n
    if n == 0:
        stop_here()
        return 0
    return wide(n - 1) + a0 + b9 + c5

def gen(n):
    if n == 0:
        yield recurse(10)
    else:
        yield from gen(n - 1)

def ωmega_λ():
    stop_here()

def odd():
    ωmega_λ()
# A 4-byte-kind name with a lone surrogate (legal in a str, not in UTF-8: written as U+FFFD).
odd.__code__ = odd.__code__.replace(co_name="odd_\U0001F600", co_qualname="odd_\U0001F600_\ud800")

def LONGNAME():
    odd()

mode = sys.argv[1]
if mode == "names":
    LONGNAME()
elif mode == "recursion":
    recurse(100)
elif mode == "chunks":
    wide(300)
else:
    list(gen(30))
)PY";

// A Python process stopped in the stack `mode` builds; killed when this goes.
class StoppedPython {
 public:
  StoppedPython(const std::string& script, const std::string& mode) {
    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0) return;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    std::vector<std::string> args = {"/usr/bin/python3", script, mode};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ) != 0) pid_ = 0;
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    FILE* from = fdopen(out[0], "r");
    char line[64] = {};
    ready_ = pid_ > 0 && std::fgets(line, sizeof(line), from) != nullptr && std::string(line) == "ready\n";
    std::fclose(from);
    // "ready" is printed just before time.sleep: wait until the thread sleeps (state S), so that
    // its stack no longer moves while the test reads it.
    for (int k = 0; ready_ && k < 2000 && !sleeping(); ++k) usleep(5000);
  }
  bool sleeping() const {
    std::ifstream stat("/proc/" + std::to_string(pid_) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t paren = text.rfind(')');  // "pid (comm) S ..."
    return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'S';
  }
  ~StoppedPython() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  bool ready() const { return ready_; }
  int pid() const { return pid_; }

 private:
  pid_t pid_ = 0;
  bool ready_ = false;
};

using Frame = std::tuple<std::string, std::string, uint32_t, bool>;  // function, file, line, entry

struct Read {
  std::vector<Frame> frames;
  uint64_t reads = 0, from_chunks = 0, singly = 0, hits = 0;  // of this read alone
};

Read read_with(PythonReader& reader, int tid, PyFrameReads mode) {
  reader.set_frame_reads(mode);
  std::vector<PyFrameRef> refs;
  // The first read fills the code cache (and, chunked, finds no earlier read to speculate on).
  EXPECT_TRUE(reader.read_stack(static_cast<uint32_t>(tid), &refs));
  EXPECT_FALSE(reader.last_read_failed());
  std::vector<Frame> first;
  for (const PyFrameRef& f : refs) first.emplace_back(f.code->function, f.code->file, f.line, f.entry);
  const uint64_t reads = reader.reads(), chunks = reader.frames_from_chunks();
  const uint64_t singly = reader.frames_read_singly(), hits = reader.speculative_hits();
  EXPECT_TRUE(reader.read_stack(static_cast<uint32_t>(tid), &refs));
  EXPECT_FALSE(reader.last_read_failed());
  Read out;
  out.reads = reader.reads() - reads;
  out.from_chunks = reader.frames_from_chunks() - chunks;
  out.singly = reader.frames_read_singly() - singly;
  out.hits = reader.speculative_hits() - hits;
  for (const PyFrameRef& f : refs) out.frames.emplace_back(f.code->function, f.code->file, f.line, f.entry);
  EXPECT_EQ(first, out.frames);
  return out;
}

size_t count_named(const std::vector<Frame>& frames, const std::string& name) {
  size_t n = 0;
  for (const Frame& f : frames) n += std::get<0>(f) == name;
  return n;
}

class PythonReaderChunks : public ::testing::Test {
 protected:
  static std::string long_name() { return "long_" + std::string(600, 'n'); }

  void SetUp() override {
    if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
    // A function name longer than the reader's first read of an object (512 bytes): read again.
    std::string script = kScript;
    script.replace(script.find("LONGNAME"), 8, long_name());
    script.replace(script.find("LONGNAME"), 8, long_name());
    std::ofstream(dir_.file("stack.py")) << script;
  }

  // Reads the stopped process's main thread both ways; skips when this Python is not readable.
  bool read_both(const std::string& mode, Read* chunked, Read* per_frame) {
    StoppedPython python(dir_.file("stack.py"), mode);
    EXPECT_TRUE(python.ready()) << "python did not reach its stop in mode " << mode;
    if (!python.ready()) return false;
    MappingTable mappings(python.pid(), "");
    std::string why;
    std::unique_ptr<PythonReader> reader = PythonReader::find(mappings, &why);
    if (!reader) {
      skip_ = why;
      return false;
    }
    *per_frame = read_with(*reader, python.pid(), PyFrameReads::kPerFrame);
    *chunked = read_with(*reader, python.pid(), PyFrameReads::kChunked);
    EXPECT_EQ(chunked->frames, per_frame->frames) << mode;
    EXPECT_EQ(reader->strings_malformed(), 0u) << mode;  // real names are never refused as garbage
    return true;
  }

  testing::TempDir dir_;
  std::string skip_;
};

TEST_F(PythonReaderChunks, DeepRecursionReadsTheSameFramesFromOneChunk) {
  Read chunked, per_frame;
  if (!read_both("recursion", &chunked, &per_frame)) {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    return;
  }
  EXPECT_EQ(count_named(chunked.frames, "recurse"), 101u);
  ASSERT_FALSE(chunked.frames.empty());
  EXPECT_EQ(std::get<0>(chunked.frames.front()), "stop_here");
  EXPECT_EQ(std::get<0>(chunked.frames.back()), "<module>");
  // Per frame: a read each (plus the thread state, current frame and code headers).
  EXPECT_GE(per_frame.reads, per_frame.frames.size());
  // Chunked, the thread still where the last read found it: thread state, frame pointer and chunk
  // in one call, the code headers in another; every frame from the chunk.
  EXPECT_EQ(chunked.hits, 1u);
  EXPECT_EQ(per_frame.hits, 0u);
  EXPECT_EQ(chunked.reads, 2u);
  EXPECT_EQ(chunked.from_chunks, chunked.frames.size());
  EXPECT_EQ(chunked.singly, 0u);
}

TEST_F(PythonReaderChunks, FramesAcrossSeveralChunksLoadEachChunkOnce) {
  Read chunked, per_frame;
  if (!read_both("chunks", &chunked, &per_frame)) {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    return;
  }
  EXPECT_EQ(count_named(chunked.frames, "wide"), 301u);
  // Each chunk below the current one costs the one frame read that found it missing, and its own
  // read (two when it is larger than 16 KiB): far fewer reads than frames.
  EXPECT_GE(chunked.singly, 1u) << "300 large frames fit one chunk: the test no longer spans chunks";
  EXPECT_LE(chunked.singly, 8u);
  EXPECT_LE(chunked.reads, 3 + 3 * chunked.singly);
  EXPECT_EQ(chunked.from_chunks + chunked.singly, chunked.frames.size());
}

TEST_F(PythonReaderChunks, GeneratorFramesAreReadOnTheirOwnAndInOrder) {
  Read chunked, per_frame;
  if (!read_both("generators", &chunked, &per_frame)) {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    return;
  }
  EXPECT_EQ(count_named(chunked.frames, "gen"), 31u);
  EXPECT_EQ(count_named(chunked.frames, "recurse"), 11u);
  // The generators' frames live in the generator objects: read singly; the others from the chunk.
  EXPECT_EQ(chunked.singly, 31u);
  EXPECT_EQ(chunked.from_chunks, chunked.frames.size() - 31u);
}

TEST_F(PythonReaderChunks, NamesAndFilesDecodeWhateverTheirLengthAndKind) {
  Read chunked, per_frame;
  if (!read_both("names", &chunked, &per_frame)) {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    return;
  }
  ASSERT_EQ(chunked.frames.size(), 5u);
  EXPECT_EQ(std::get<0>(chunked.frames[0]), "stop_here");
  EXPECT_EQ(std::get<0>(chunked.frames[1]), "\u03c9mega_\u03bb");  // UTF-8 from a 2-byte-kind string
  EXPECT_EQ(std::get<0>(chunked.frames[2]), "odd_\xF0\x9F\x98\x80_\xEF\xBF\xBD");
  EXPECT_EQ(std::get<0>(chunked.frames[3]), long_name());
  EXPECT_EQ(std::get<0>(chunked.frames[4]), "<module>");
  for (const Frame& f : chunked.frames) EXPECT_EQ(std::get<1>(f), dir_.file("stack.py"));
  // Lines from the location table: stop_here's call in ωmega_λ is the line after its def.
  EXPECT_GT(std::get<2>(chunked.frames[1]), 0u);
}

}  // namespace
}  // namespace strata::sample

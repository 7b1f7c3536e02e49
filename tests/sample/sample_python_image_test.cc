// The Python reader on synthetic memory images (fuzz/sample/python_image.h) read through its
// memory-read seam: a realistic image gives the frames, files and lines it was built with (the
// answer comes from the image, not from the reader), and damaged images (a torn `previous` near
// 2^64, a chunk `top` whose byte count wraps) are refused as unreadable, never read through a wild
// pointer into Strata's own memory (issue 32 item 7: `strata attach` crashed on 0xffffffffffffffff).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "../../fuzz/sample/python_image.h"
#include "sample/python311_layout.h"
#include "sample/python_reader.h"

namespace strata::sample {
namespace {

const struct strata_py311_layout& L = ::strata_py311_layout;

struct Read {
  std::string frames;  // "function@file:line" innermost first, "!" after an entry frame
  bool ok = false, failed = false;
  uint64_t from_chunks = 0, singly = 0;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // what the reader asked the memory for
};

std::string describe(const std::vector<PyFrameRef>& frames) {
  std::string out;
  for (const PyFrameRef& f : frames)
    out += f.code->function + "@" + f.code->file + ":" + std::to_string(f.line) + (f.entry ? "!" : "") + " ";
  return out;
}

Read read_image(const fuzz::PythonImage& image, PyFrameReads mode = PyFrameReads::kChunked, int times = 1) {
  Read r;
  auto reader = PythonReader::for_memory(fuzz::image_memory(image, &r.ranges), fuzz::python_image_symbols());
  reader->set_frame_reads(mode);
  std::vector<PyFrameRef> frames;  // their code objects live as long as the reader
  for (int k = 0; k < times; ++k) r.ok = reader->read_stack(image.tid, &frames);
  r.frames = describe(frames);
  r.failed = reader->last_read_failed();
  r.from_chunks = reader->frames_from_chunks();
  r.singly = reader->frames_read_singly();
  return r;
}

void set_u64(fuzz::PythonImage* image, uint64_t address, uint64_t value) {
  auto it = --image->segments.upper_bound(address);
  std::memcpy(it->second.data() + (address - it->first), &value, 8);
}

TEST(PythonReaderImage, RealisticImageGivesItsFramesAndLines) {
  if (L.version_major == 0) GTEST_SKIP() << "built without CPython 3.11 headers";
  const fuzz::PythonImage image = fuzz::realistic_python_image();
  const std::string expected = "inner@main.py:12 middle@main.py:7 <module>@main.py:2! ";
  for (PyFrameReads mode : {PyFrameReads::kChunked, PyFrameReads::kPerFrame}) {
    // Twice: the second read takes the speculative path (thread state, frame and chunk at once).
    const Read r = read_image(image, mode, 2);
    EXPECT_TRUE(r.ok);
    EXPECT_FALSE(r.failed);
    EXPECT_EQ(r.frames, expected);
    if (mode == PyFrameReads::kChunked) {
      EXPECT_EQ(r.from_chunks, 6u);
      EXPECT_EQ(r.singly, 0u);
    }
  }
}

TEST(PythonReaderImage, TornPreviousNearTheTopOfTheAddressSpaceIsNotBuffered) {
  if (L.version_major == 0) GTEST_SKIP() << "built without CPython 3.11 headers";
  // The outermost frame's `previous` read torn as all ones: `frame + frame_size` wraps below the
  // chunk's end, and the old check took it as a frame of the chunk copy (a pointer ~2^64 bytes
  // past the copy: SIGSEGV in read_frames).
  for (uint64_t torn : {~uint64_t{0}, ~uint64_t{0} - 7, ~uint64_t{0} - L.frame_size + 1}) {
    fuzz::PythonImage image = fuzz::realistic_python_image();
    set_u64(&image, fuzz::realistic_python_image_layout().frames[0] + L.frame_previous, torn);
    const Read r = read_image(image);
    EXPECT_EQ(r.frames, "inner@main.py:12 middle@main.py:7 <module>@main.py:2! ") << torn;
    EXPECT_TRUE(r.failed) << torn;  // the unreadable frame is a failed read, counted by the collector
    EXPECT_EQ(r.from_chunks, 3u) << torn;
    bool asked = false;  // it was asked of the process's memory, not taken from the copy
    for (const auto& [address, length] : r.ranges) asked = asked || address == torn;
    EXPECT_TRUE(asked) << torn;
  }
}

TEST(PythonReaderImage, ChunkTopWhoseByteCountWrapsIsRefused) {
  if (L.version_major == 0) GTEST_SKIP() << "built without CPython 3.11 headers";
  // The innermost frame moves to a second chunk whose `previous` is the first: the first chunk is
  // then loaded by its header's `top`, here 2^61 + 16 slots, whose byte count (x 8) wraps to 128.
  fuzz::PythonImage image = fuzz::realistic_python_image();
  const fuzz::PythonImageLayout layout = fuzz::realistic_python_image_layout();
  const uint64_t second = layout.chunk + 0x100000;
  std::string chunk = image.segments[layout.chunk];
  std::string frame = chunk.substr(layout.frames[2] - layout.chunk, L.frame_size);
  std::string fresh(chunk.size(), '\0');
  std::memcpy(fresh.data() + L.chunk_data, frame.data(), frame.size());
  image.segments[second] = fresh;
  set_u64(&image, second + L.chunk_previous, layout.chunk);
  set_u64(&image, second + L.chunk_size, chunk.size());
  set_u64(&image, second + L.chunk_top, 0x100 / 8);
  set_u64(&image, layout.chunk + L.chunk_top, (uint64_t{1} << 61) + 16);
  // The thread state names the second chunk; cframe names the moved frame.
  auto& tstate = image.segments.at(0x560010010000ull);
  const uint64_t top = second + L.chunk_data + 0x100, moved = second + L.chunk_data;
  std::memcpy(tstate.data() + L.tstate_datastack_chunk, &second, 8);
  std::memcpy(tstate.data() + L.tstate_datastack_top, &top, 8);
  set_u64(&image, 0x7ffc00001000ull + L.cframe_current_frame, moved);
  const Read r = read_image(image);
  EXPECT_EQ(r.frames, "inner@main.py:12 middle@main.py:7 <module>@main.py:2! ");
  // The first chunk is refused (not copied with a wrapped length): its frames are read one by one.
  EXPECT_EQ(r.from_chunks, 1u);
  EXPECT_EQ(r.singly, 2u);
}

}  // namespace
}  // namespace strata::sample

// Synthetic memory images of a CPython 3.11 process, read by PythonReader through its memory-read
// seam (sample/process_memory.h): the fuzz target sample_python_reader_fuzz, its seeds, and the tests of the
// reader on hostile memory (tests/sample). Offsets are CPython's own (python311_layout.c).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sample/process_memory.h"
#include "sample/python_reader.h"

namespace strata::fuzz {

// Bytes at addresses, and writes that land after a given number of reads: a thread that keeps
// running changes its frames between two reads of the sampler (a torn read).
struct PythonImage {
  struct Write {
    uint32_t after_reads = 0;
    uint64_t address = 0;
    std::string bytes;
  };
  uint32_t tid = 0;
  bool per_frame_reads = false;              // PyFrameReads::kPerFrame instead of the chunked reads
  uint32_t stack_reads = 1;                  // read_stack calls
  std::map<uint64_t, std::string> segments;  // start -> bytes (a later segment may overlap)
  std::vector<Write> writes;
};

// Where the synthetic interpreter's symbols are (the same in every image).
sample::PythonSymbols python_image_symbols();

// A realistic image: thread `tid` runs <module> (main.py) -> middle -> inner, three frames in one
// 16 KiB data-stack chunk, each code object with its qualified name, file and line table. Read as
// a real process is, the innermost frame is inner at line 12, then middle at 7, then <module> at 2.
PythonImage realistic_python_image(uint32_t tid = 4242);
// Addresses in the realistic image, for tests that damage it.
struct PythonImageLayout {
  uint64_t chunk = 0;       // the data-stack chunk
  uint64_t frames[3] = {};  // <module>, middle, inner (innermost last)
};
PythonImageLayout realistic_python_image_layout();

// The memory an image describes, as a ProcessMemory (the writes land as reads go on). `reads`, when
// given, receives every remote range asked for (address, length), in order.
std::unique_ptr<sample::ProcessMemory> image_memory(
    const PythonImage& image, std::vector<std::pair<uint64_t, uint64_t>>* reads = nullptr);

// The fuzz input form: [u32 tid][u8 flags: bit 0 per-frame reads, bits 1-3 read_stack calls - 1],
// then items [u8 kind][u64 address][u16 length][bytes]: an even kind is a segment, an odd one a
// write landing after kind / 2 reads. A short tail is ignored.
std::string encode_python_image(const PythonImage& image);
PythonImage decode_python_image(std::string_view bytes);

// Whether the reader's layout was built (CPython 3.11 headers): without it images mean nothing.
bool python_layout_built();

// The fuzzer's seeds (fuzz/corpus/sample_python_reader_fuzz/, checked by tests/fuzz): the realistic
// image read twice chunked and twice frame by frame, and the same with its outermost frame's
// `previous` torn to all ones (the value that crashed `strata attach`).
std::vector<std::pair<std::string, PythonImage>> python_reader_seeds();

// One fuzz input: the image read with PythonReader::read_stack as a sampler reads it; a crash, a
// sanitizer report or a broken invariant (trap) is a bug.
void run_python_reader(std::string_view bytes);

}  // namespace strata::fuzz

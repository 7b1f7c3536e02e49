// A regular file mapped read-only, for inputs parsed where they lie (the JSON reader): no copy into
// a buffer and no zeroing of that buffer's pages by the kernel, which were a fifth of `strata import`
// end to end on a large trace.
//
// A file mapped while another process truncates it raises SIGBUS on the next read of a page past
// its new end. A process-wide handler (installed once, chained to any earlier one for faults
// elsewhere) maps zero pages over the rest of a registered mapping and marks it; the reader then
// reads zeros, and `changed()` tells its owner to report the file as changed instead of whatever it
// made of them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace strata::format {

class MappedFile {
 public:
  MappedFile() = default;
  ~MappedFile() { unmap(); }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  // Opens `path` as open_regular_file does and maps it with at least `padding` zero bytes readable
  // after its end. Returns false with *error (one line) when the file cannot be opened, is not a
  // regular file, or is over `max_bytes` (the line ends with `limit_hint`). Returns true with
  // mapped() false when the file could not be mapped (empty, no address space, no free guard slot):
  // the caller reads it instead.
  bool map(const std::string& path, uint64_t max_bytes, const std::string& limit_hint, size_t padding,
           std::string* error);

  bool mapped() const { return base_ != nullptr; }
  std::string_view text() const { return {static_cast<const char*>(base_), size_}; }
  // Pages wholly inside [begin, end) of the text are dropped from memory (advice: the file's pages
  // stay in the page cache); the caller will not read them again.
  void release(size_t begin, size_t end) const;
  // True once a read past the file's end (it shrank while mapped) was answered with zeros; stays
  // true after unmap() until the next map().
  bool changed() const;
  void unmap();

 private:
  void* base_ = nullptr;
  size_t size_ = 0;
  size_t length_ = 0;  // of the whole reservation: the file's pages and the padding page(s)
  int slot_ = -1;      // in the SIGBUS guard's table
  bool changed_ = false;
};

}  // namespace strata::format

// Python frames of a sampled thread, for CPython 3.11 (Debian's /usr/bin/python3): the chain of
// _PyInterpreterFrame from the thread's PyThreadState (cframe->current_frame, then `previous`),
// each frame's code object (qualified name, file) and its line from the code's location table.
//
// Read with process_vm_readv, never by dereferencing: the sampled thread keeps running while we
// read (a popped frame's data-stack chunk may be unmapped), and a failed read is an error we count,
// not a crash. Reads go through a ProcessMemory (process_memory.h: a synthetic image in tests and
// the fuzz target). Every address computed from what was read (a frame's `previous`, a chunk's
// `top`, an object's field) is checked with remote_range.h: a torn read may give any value. The same code
// reads this process (in-process sampling) and another one (`strata attach`). Code objects are cached by
// address and re-validated (their name, file and line-table pointers) at each use. Layout offsets come from
// CPython's own headers (python311_layout.c).
//
// Few system calls per sample (docs/performance.md, "Python stack reads"): one read of the thread
// state (thread id check, cframe, data-stack chunk and top), one vectored read of the current frame
// pointer and the live part of the current data-stack chunk (where 3.11 keeps the running functions'
// frames contiguously), one vectored read of the code objects' headers. A frame outside the chunks
// read (a generator's, or one pushed after the thread state was read) is read on its own; a frame
// of the data stack outside them loads the previous chunk, once.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "sample/mappings.h"
#include "sample/process_memory.h"
#include "sample/python_signal.h"

namespace strata::sample {

struct PyCodeInfo {
  uint32_t id = 0;       // stable for the reader's life: (code id, line) identifies a frame
  std::string function;  // co_qualname
  std::string file;
  uint32_t first_line = 0;
  std::string linetable;
  std::unordered_map<uint64_t, uint32_t> lines;  // instruction offset -> line, as looked up so far
  uint64_t code_start = 0;                       // address of the code's first instruction
  uint64_t name_ptr = 0, file_ptr = 0, qualname_ptr = 0, linetable_ptr = 0;
};

// How frames are read: from the data-stack chunks (the default), or each frame with its own read
// (the reference the chunked read is tested against).
enum class PyFrameReads { kChunked, kPerFrame };

struct PyFrameRef {
  const PyCodeInfo* code = nullptr;
  uint32_t line = 0;
  bool entry = false;  // the first frame of a _PyEval_EvalFrameDefault invocation
};

// Where a CPython's symbols lie in the process (runtime addresses) and its version.
struct PythonSymbols {
  uint64_t runtime = 0;     // _PyRuntime
  uint64_t code_type = 0;   // PyCode_Type
  uint64_t eval_start = 0;  // _PyEval_EvalFrameDefault
  uint64_t eval_end = 0;
  std::string version;  // "3.11.2"
};

class PythonReader {
 public:
  // A reader of the memory `memory` reads, for the Python at `symbols` (tests, the fuzz target).
  static std::unique_ptr<PythonReader> for_memory(std::unique_ptr<ProcessMemory> memory,
                                                  const PythonSymbols& symbols);
  // Looks for CPython in the process's mappings (its executable, or a libpython3.X.so). Returns null
  // with *why set to one line when there is none, or when it is not 3.11 (frames are not read then).
  static std::unique_ptr<PythonReader> find(MappingTable& mappings, std::string* why);

  // The thread's Python frames, innermost first. False when the thread has no Python state (not a
  // Python thread) or a read failed (`failed()` tells them apart).
  bool read_stack(uint32_t tid, std::vector<PyFrameRef>* out);
  bool last_read_failed() const { return last_failed_; }
  // Frames a signal handler read in the sampled thread (python_signal.h), innermost first: a code
  // object is read only when its address is new or its identity fields (name, file, qualname and
  // line-table pointers, first line) differ from the cached code's (one freed and another allocated
  // at its address). False when a code object cannot be read (the frames before it are kept).
  // `record`: the whole record (header, frames, copied strings), `size` bytes.
  bool resolve_signal_frames(const uint8_t* record, size_t size, std::vector<PyFrameRef>* out);
  // Whether the last resolve_signal_frames() named every frame from a code object in the cache (none
  // from the handler's string copies, none freed): then the same frames resolve the same way while
  // codes_generation() is unchanged.
  bool last_resolve_all_cached() const { return last_all_cached_; }
  uint64_t codes_generation() const { return codes_generation_; }
  uint64_t runtime_address() const { return runtime_; }
  uint64_t code_type_address() const { return code_type_; }
  // Runtime address range of _PyEval_EvalFrameDefault (the native frame Python frames merge at).
  uint64_t eval_start() const { return eval_start_; }
  uint64_t eval_end() const { return eval_end_; }
  const std::string& version() const { return version_; }
  void set_frame_reads(PyFrameReads mode) { frame_reads_ = mode; }
  uint64_t reads() const { return reads_; }  // system calls made (process_vm_readv)
  uint64_t frames_from_chunks() const { return frames_from_chunks_; }
  uint64_t frames_read_singly() const { return frames_read_singly_; }
  uint64_t speculative_hits() const { return speculative_hits_; }  // stacks read in one call before the code
  uint64_t codes_freed() const { return codes_freed_; }  // in-thread frames whose code was gone when named
  // names refused as not text (read while the object changed): the frame is named "<unknown>"
  uint64_t strings_malformed() const { return strings_malformed_; }
  uint64_t code_objects_read() const { return codes_.size(); }  // distinct code objects named (cached)

 private:
  // What one sample needs from the thread state.
  struct ThreadView {
    uint64_t cframe = 0, chunk = 0, top = 0;
  };
  // A data-stack chunk's live part as read for this sample.
  struct ChunkCopy {
    uint64_t address = 0;
    std::vector<uint8_t> bytes;
  };
  struct RawFrame {
    uint64_t code, prev_instr;
    bool entry;
  };

  PythonReader() = default;
  bool read(uint64_t address, void* out, size_t size);
  bool read_field(uint64_t address, size_t offset, void* out, size_t size);
  bool thread_view(uint32_t tid, ThreadView* view);
  // The last sample's cframe and chunk of a thread (the live part's length too).
  struct LastRead {
    uint64_t cframe = 0, chunk = 0, live = 0;
  };
  static constexpr size_t kTstateBytes = 512;
  static size_t tstate_span();
  static bool parse_tstate(const uint8_t* bytes, uint32_t tid, ThreadView* view);
  bool read_tstate(uint64_t tstate, uint32_t tid, ThreadView* view);
  bool read_speculatively(uint64_t tstate, uint32_t tid, const LastRead& last, ThreadView* view,
                          uint64_t* frame, bool* view_ok);
  bool read_current_frame(const ThreadView& view, uint64_t* frame);
  bool load_chunk(uint64_t address);
  const uint8_t* buffered_frame(uint64_t frame) const;
  bool read_frames(uint64_t frame);
  uint32_t line_of(PyCodeInfo* code, uint64_t prev_instr);
  PyCodeInfo* code_info(uint64_t code, const uint8_t* header);
  // In-thread records: a cached code whose identity fields equal `header`'s, or null.
  PyCodeInfo* known_code(uint64_t code, const uint8_t* header);
  PyCodeInfo* named_code_now(uint64_t code, const uint8_t* expected);
  static bool known_fields_equal(const uint8_t* a, const uint8_t* b);
  PyCodeInfo* freed_code();
  PyCodeInfo* code_from_copies(const PySignalFrame& f, const uint8_t* record, size_t size);
  // An object's first bytes, read ahead (size 0: not read).
  struct Prefix {
    const uint8_t* bytes = nullptr;
    size_t size = 0;
  };
  static constexpr size_t kObjectProbeBytes = 512;
  void read_prefixes(const uint64_t* addresses, size_t n, uint8_t (*buffers)[kObjectProbeBytes], Prefix* out);
  bool read_unicode(uint64_t address, std::string* out, const Prefix& pre);
  bool read_bytes_object(uint64_t address, std::string* out, const Prefix& pre);

  std::unique_ptr<ProcessMemory> memory_;
  uint64_t runtime_ = 0;
  uint64_t code_type_ = 0;
  uint64_t eval_start_ = 0, eval_end_ = 0;
  std::string version_;
  std::map<uint32_t, uint64_t> tstates_;  // tid -> PyThreadState address
  std::unordered_map<uint32_t, LastRead> last_reads_;
  std::unordered_map<uint64_t, std::unique_ptr<PyCodeInfo>> codes_;
  uint64_t codes_generation_ = 1;  // bumped when an entry of codes_ is replaced or erased
  bool last_all_cached_ = false;
  // resolve_signal_frames()'s cache of handler frames already resolved: a deep model's stacks repeat
  // the same (code, instruction) sample after sample, and each frame otherwise costs two hash
  // lookups (the code, its line). A hit needs the frame's identity fields and codes_generation_ to
  // match, so it gives exactly what the lookups would.
  struct FrameSlot {
    uint64_t code = 0, prev_instr = 0, name = 0, file = 0, qualname = 0, linetable = 0;
    int32_t first_line = 0;
    uint32_t line = 0;
    uint64_t generation = 0;
    PyCodeInfo* info = nullptr;
  };
  static constexpr int kFrameSlotBits = 12;
  std::vector<FrameSlot> frame_slots_;
  uint32_t next_code_id_ = 1;
  std::unique_ptr<PyCodeInfo> freed_code_;
  uint64_t codes_freed_ = 0, codes_named_from_copies_ = 0;
  uint64_t strings_malformed_ = 0;
  std::unordered_map<std::string, std::unique_ptr<PyCodeInfo>>
      copied_codes_;  // stands for a code object gone before it was named
  bool last_failed_ = false;
  PyFrameReads frame_reads_ = PyFrameReads::kChunked;
  uint64_t reads_ = 0, frames_from_chunks_ = 0, frames_read_singly_ = 0, speculative_hits_ = 0;
  // Scratch of one sample, kept to avoid allocating per sample.
  std::vector<ChunkCopy> chunks_;
  size_t chunks_used_ = 0;
  uint64_t next_chunk_ = 0;  // the previous chunk of the last one read (0: none, or not known)
  std::vector<RawFrame> raw_;
  std::vector<uint8_t> headers_;
  std::vector<iovec> local_, remote_;
  std::unordered_map<uint64_t, size_t> unique_slot_;  // code address -> its header's slot
  std::vector<size_t> slot_of_;                       // frame -> its code's slot
  std::vector<PyCodeInfo*> infos_;                    // slot -> code (null: not read, or not code)
};

// Line of the instruction at `offset` (in code units) from a 3.11 location table; 0 when unknown.
uint32_t python311_line(const std::string& linetable, uint32_t first_line, uint64_t offset);

}  // namespace strata::sample

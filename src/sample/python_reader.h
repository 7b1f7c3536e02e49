// Python frames of a sampled thread, for CPython 3.11 (Debian's /usr/bin/python3): the chain of
// _PyInterpreterFrame from the thread's PyThreadState (cframe->current_frame, then `previous`),
// each frame's code object (qualified name, file) and its line from the code's location table.
//
// Read with process_vm_readv, never by dereferencing: the sampled thread keeps running while we
// read (a popped frame's data-stack chunk may be unmapped), and a failed read is an error we count,
// not a crash. The same code reads this process (in-process sampling) and another one (`strata
// attach`). Code objects are cached by address and re-validated (their name, file and line-table
// pointers) at each use. Layout offsets come from CPython's own headers (python311_layout.c).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sample/mappings.h"

namespace strata::sample {

struct PyCodeInfo {
  uint32_t id = 0;  // stable for the reader's life: (code id, line) identifies a frame
  std::string function;  // co_qualname
  std::string file;
  uint32_t first_line = 0;
  std::string linetable;
  uint64_t code_start = 0;  // address of the code's first instruction
  uint64_t name_ptr = 0, file_ptr = 0, qualname_ptr = 0, linetable_ptr = 0;
};

struct PyFrameRef {
  const PyCodeInfo* code = nullptr;
  uint32_t line = 0;
  bool entry = false;  // the first frame of a _PyEval_EvalFrameDefault invocation
};

class PythonReader {
 public:
  // Looks for CPython in the process's mappings (its executable, or a libpython3.X.so). Returns null
  // with *why set to one line when there is none, or when it is not 3.11 (frames are not read then).
  static std::unique_ptr<PythonReader> find(MappingTable& mappings, std::string* why);

  // The thread's Python frames, innermost first. False when the thread has no Python state (not a
  // Python thread) or a read failed (`failed()` tells them apart).
  bool read_stack(uint32_t tid, std::vector<PyFrameRef>* out);
  bool last_read_failed() const { return last_failed_; }
  // Runtime address range of _PyEval_EvalFrameDefault (the native frame Python frames merge at).
  uint64_t eval_start() const { return eval_start_; }
  uint64_t eval_end() const { return eval_end_; }
  const std::string& version() const { return version_; }
  uint64_t reads() const { return reads_; }

 private:
  PythonReader() = default;
  bool read(uint64_t address, void* out, size_t size);
  bool find_thread_state(uint32_t tid, uint64_t* tstate);
  const PyCodeInfo* code_info(uint64_t code, const uint8_t* header);
  bool read_unicode(uint64_t address, std::string* out);
  bool read_bytes_object(uint64_t address, std::string* out);

  int pid_ = 0;
  uint64_t runtime_ = 0;
  uint64_t code_type_ = 0;
  uint64_t eval_start_ = 0, eval_end_ = 0;
  std::string version_;
  std::map<uint32_t, uint64_t> tstates_;  // tid -> PyThreadState address
  std::map<uint64_t, std::unique_ptr<PyCodeInfo>> codes_;
  uint32_t next_code_id_ = 1;
  bool last_failed_ = false;
  uint64_t reads_ = 0;
};

// Line of the instruction at `offset` (in code units) from a 3.11 location table; 0 when unknown.
uint32_t python311_line(const std::string& linetable, uint32_t first_line, uint64_t offset);

}  // namespace strata::sample

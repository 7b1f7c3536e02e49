// The seam through which the Python reader reads a process's memory: process_vm_readv on a pid in
// production (the process itself, or another one for `strata attach`), a synthetic memory image in
// tests and in the fuzz target (fuzz/sample/sample_python_reader_fuzz.cc), where any address can hold any
// bytes and memory can change between two reads, as a running thread changes it.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <memory>

namespace strata::sample {

class ProcessMemory {
 public:
  virtual ~ProcessMemory() = default;
  // As process_vm_readv(2): the remote ranges, in order, into the local buffers. Returns the bytes
  // read, stopping at the first range (or byte) that cannot be read; -1 when none could be.
  virtual ssize_t readv(const iovec* local, size_t local_count, const iovec* remote, size_t remote_count) = 0;
};

// process_vm_readv on `pid`.
std::unique_ptr<ProcessMemory> process_memory(int pid);

}  // namespace strata::sample

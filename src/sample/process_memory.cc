#include "sample/process_memory.h"

namespace strata::sample {
namespace {

class PidMemory : public ProcessMemory {
 public:
  explicit PidMemory(int pid) : pid_(pid) {}
  ssize_t readv(const iovec* local, size_t local_count, const iovec* remote, size_t remote_count) override {
    return process_vm_readv(pid_, local, local_count, remote, remote_count, 0);
  }

 private:
  int pid_;
};

}  // namespace

std::unique_ptr<ProcessMemory> process_memory(int pid) { return std::make_unique<PidMemory>(pid); }

}  // namespace strata::sample

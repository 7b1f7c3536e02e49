#include "format/mapped_file.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>

#include "format/input_file.h"

namespace strata::format {
namespace {

// Mappings the SIGBUS handler may repair. Readers on several threads each hold one slot; a slot is
// free while its begin is 0. Lock-free atomics only: the handler runs on whichever thread faulted.
constexpr int kSlots = 64;
struct GuardSlot {
  std::atomic<uintptr_t> begin{0};
  std::atomic<uintptr_t> end{0};
  std::atomic<bool> hit{false};
};
GuardSlot g_slots[kSlots];
struct sigaction g_previous {};
size_t g_page = 4096;  // set before the handler is installed: sysconf is not async-signal-safe

void on_sigbus(int sig, siginfo_t* info, void* context) {
  const uintptr_t at = reinterpret_cast<uintptr_t>(info->si_addr);
  // Only a fault the kernel raised names an address (si_code > 0); a SIGBUS sent with kill() or
  // raise() (a handler before this one handing the signal on) is never ours to repair.
  for (GuardSlot& slot : g_slots) {
    if (info->si_code <= 0) break;
    const uintptr_t begin = slot.begin.load(std::memory_order_acquire);
    const uintptr_t end = slot.end.load(std::memory_order_acquire);
    if (begin == 0 || at < begin || at >= end) continue;
    // Zero pages from the faulting one to the end of the mapping: the read resumes and finds zeros,
    // which no JSON parser accepts as the rest of a document; the owner reports the change.
    const uintptr_t page = at & ~(g_page - 1);
    if (::mmap(reinterpret_cast<void*>(page), end - page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
               -1, 0) == MAP_FAILED)
      break;
    slot.hit.store(true, std::memory_order_release);
    return;
  }
  // Not a guarded mapping: what would have happened without this handler.
  if ((g_previous.sa_flags & SA_SIGINFO) != 0 && g_previous.sa_sigaction != nullptr) {
    g_previous.sa_sigaction(sig, info, context);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
  } else if (g_previous.sa_handler == SIG_IGN && info->si_code <= 0) {
    return;  // a sent SIGBUS, which the process ignored before (a fault cannot be ignored)
  } else {
    ::signal(SIGBUS, SIG_DFL);
    if (info->si_code <= 0) ::raise(sig);  // a fault repeats on return; a sent signal is sent again
  }
}

bool install_guard() {
  static std::once_flag once;
  static bool installed = false;
  std::call_once(once, [] {
    g_page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    struct sigaction action {};
    action.sa_sigaction = on_sigbus;
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    installed = ::sigaction(SIGBUS, &action, &g_previous) == 0;
  });
  return installed;
}

int claim_slot(uintptr_t begin, uintptr_t end) {
  for (int i = 0; i < kSlots; ++i) {
    uintptr_t expected = 0;
    if (g_slots[i].begin.compare_exchange_strong(expected, ~uintptr_t{0}, std::memory_order_acq_rel)) {
      g_slots[i].hit.store(false, std::memory_order_relaxed);
      g_slots[i].end.store(end, std::memory_order_release);
      g_slots[i].begin.store(begin, std::memory_order_release);
      return i;
    }
  }
  return -1;
}

}  // namespace

bool MappedFile::map(const std::string& path, uint64_t max_bytes, const std::string& limit_hint,
                     size_t padding, std::string* error) {
  unmap();
  changed_ = false;
  uint64_t size = 0;
  const int fd = open_regular_file(path, &size, error);
  if (fd < 0) return false;
  if (size > max_bytes) {
    ::close(fd);
    *error = path + ": " + std::to_string(size) + " bytes, over the limit of " + std::to_string(max_bytes) +
             " bytes; " + limit_hint;
    return false;
  }
  if (size == 0 || !install_guard()) {
    ::close(fd);
    return true;
  }
  // One reservation of zero pages as long as the file and its padding, with the file mapped over
  // its front: the bytes after the end (the rest of the file's last page, then the zero pages) are
  // readable whatever the size, which mapping the file alone would not give when it ends near a
  // page boundary.
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t file_length = (static_cast<size_t>(size) + page - 1) & ~(page - 1);
  const size_t length = (static_cast<size_t>(size) + padding + page - 1) & ~(page - 1);
  void* reserved = ::mmap(nullptr, length, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (reserved == MAP_FAILED) {
    ::close(fd);
    return true;
  }
  void* mapped = ::mmap(reserved, file_length, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
  ::close(fd);  // the mapping keeps the file
  if (mapped == MAP_FAILED) {
    ::munmap(reserved, length);
    return true;
  }
  const uintptr_t begin = reinterpret_cast<uintptr_t>(reserved);
  slot_ = claim_slot(begin, begin + file_length);
  if (slot_ < 0) {
    ::munmap(reserved, length);
    return true;
  }
  ::madvise(reserved, file_length, MADV_SEQUENTIAL);  // read once, front to back
  base_ = reserved;
  size_ = static_cast<size_t>(size);
  length_ = length;
  return true;
}

void MappedFile::release(size_t begin, size_t end) const {
  if (base_ == nullptr) return;
  const uintptr_t page = g_page;
  const uintptr_t start = reinterpret_cast<uintptr_t>(base_);
  const uintptr_t first = (start + begin + page - 1) & ~(page - 1);
  const uintptr_t last = (start + std::min(end, size_)) & ~(page - 1);
  if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

bool MappedFile::changed() const {
  return changed_ || (slot_ >= 0 && g_slots[slot_].hit.load(std::memory_order_acquire));
}

void MappedFile::unmap() {
  if (base_ == nullptr) return;
  changed_ = changed();
  // The slot is given up before the pages go: once unmapped, the range may be mapped again by
  // anyone, and its faults are not ours to repair. Nothing reads this mapping any more.
  g_slots[slot_].begin.store(0, std::memory_order_release);
  ::munmap(base_, length_);
  base_ = nullptr;
  size_ = length_ = 0;
  slot_ = -1;
}

}  // namespace strata::format

#include "sample/unwinder.h"

#define UNW_REMOTE_ONLY
#include <libunwind.h>

#include <cstring>

#include "sample/remote_range.h"

extern "C" int _Ux86_64_dwarf_search_unwind_table(unw_addr_space_t as, unw_word_t ip, unw_dyn_info_t* di,
                                                   unw_proc_info_t* pi, int need_unwind_info, void* arg);

namespace strata::sample {

struct Unwinder::Impl {
  MappingTable* mappings = nullptr;
  unw_addr_space_t space = nullptr;
  uint64_t generation = 0;
  const RawSample* sample = nullptr;  // the sample being unwound (the accessors' argument)

  // Reads 8 bytes at a runtime address: from the stack copy, or from the file mapped there.
  bool read_word(uint64_t address, uint64_t* out) {
    const uint64_t sp = sample->regs[kRegSp];
    if (range_within(sp, sample->stack_size, address, 8)) {
      std::memcpy(out, sample->stack + (address - sp), 8);
      return true;
    }
    return read_file_word(address, out);
  }

  // Unwind tables often live in a segment that is mapped without execute permission (only
  // executable mappings are tracked): try the ELF images of the executable mappings around the
  // address, each at its load bias.
  bool read_file_word(uint64_t address, uint64_t* out) {
    const Mapping* m = mappings->find_no_refresh(address);
    for (int attempt = 0; attempt < 3; ++attempt) {
      const Mapping* candidate = m;
      if (candidate == nullptr) candidate = attempt == 0 ? nearest_below(address) : nearest_above(address);
      if (candidate != nullptr && candidate->file_backed()) {
        uint64_t bias = 0;
        const symbolize::ElfImage* image = mappings->image(*candidate);
        if (image != nullptr && mappings->load_bias(*candidate, &bias)) {
          if (auto offset = image->vaddr_to_file_offset(address - bias)) {
            std::string_view bytes = image->bytes();
            if (*offset <= bytes.size() && bytes.size() - *offset >= 8) {
              std::memcpy(out, bytes.data() + *offset, 8);
              return true;
            }
          }
        }
      }
      if (m != nullptr) return false;
    }
    return false;
  }
  const Mapping* nearest_below(uint64_t address) { return mappings->below(address); }
  const Mapping* nearest_above(uint64_t address) { return mappings->above(address); }

  static int find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t* pi, int need_unwind_info,
                            void* arg) {
    auto* self = static_cast<Impl*>(arg);
    const Mapping* m = self->mappings->find_no_refresh(ip);
    if (m == nullptr || !m->file_backed()) return -UNW_ENOINFO;
    const symbolize::ElfImage* image = self->mappings->image(*m);
    uint64_t bias = 0;
    if (image == nullptr || !image->eh_frame_hdr() || !self->mappings->load_bias(*m, &bias)) return -UNW_ENOINFO;
    const symbolize::ElfSegment& hdr = *image->eh_frame_hdr();
    std::string_view bytes = image->bytes();
    if (hdr.offset > bytes.size() || bytes.size() - hdr.offset < 12) return -UNW_ENOINFO;
    const auto* h = reinterpret_cast<const uint8_t*>(bytes.data() + hdr.offset);
    // version 1; eh_frame_ptr encoded pcrel|sdata4; fde count udata4; table datarel|sdata4 (what
    // every GNU linker writes). Anything else: no information.
    if (h[0] != 1 || h[1] != 0x1b || h[2] != 0x03 || h[3] != 0x3b) return -UNW_ENOINFO;
    uint32_t fde_count = 0;
    std::memcpy(&fde_count, h + 8, 4);
    if (uint64_t{fde_count} * 8 > bytes.size() - hdr.offset - 12) return -UNW_ENOINFO;
    unw_dyn_info_t di;
    std::memset(&di, 0, sizeof(di));
    di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
    di.start_ip = m->start;
    di.end_ip = m->end;
    di.u.rti.segbase = hdr.vaddr + bias;
    di.u.rti.table_data = hdr.vaddr + bias + 12;
    di.u.rti.table_len = uint64_t{fde_count} * 8 / sizeof(unw_word_t);
    return _Ux86_64_dwarf_search_unwind_table(as, ip, &di, pi, need_unwind_info, arg);
  }
  static void put_unwind_info(unw_addr_space_t, unw_proc_info_t*, void*) {}
  static int get_dyn_info_list_addr(unw_addr_space_t, unw_word_t*, void*) { return -UNW_ENOINFO; }
  static int access_mem(unw_addr_space_t, unw_word_t address, unw_word_t* value, int write, void* arg) {
    if (write) return -UNW_EINVAL;
    uint64_t v = 0;
    if (!static_cast<Impl*>(arg)->read_word(address, &v)) return -UNW_EINVAL;
    *value = v;
    return 0;
  }
  static int access_reg(unw_addr_space_t, unw_regnum_t reg, unw_word_t* value, int write, void* arg) {
    if (write) return -UNW_EREADONLYREG;
    static constexpr int kToPerf[] = {kRegAx, kRegDx, kRegCx, kRegBx, kRegSi, kRegDi, kRegBp, kRegSp, kRegR8,
                                      kRegR9, kRegR10, kRegR11, kRegR12, kRegR13, kRegR14, kRegR15, kRegIp};
    if (reg < 0 || reg > UNW_X86_64_RIP) return -UNW_EBADREG;
    *value = static_cast<Impl*>(arg)->sample->regs[kToPerf[reg]];
    return 0;
  }
  static int access_fpreg(unw_addr_space_t, unw_regnum_t, unw_fpreg_t*, int, void*) { return -UNW_EINVAL; }
  static int resume(unw_addr_space_t, unw_cursor_t*, void*) { return -UNW_EINVAL; }
  static int get_proc_name(unw_addr_space_t, unw_word_t, char*, size_t, unw_word_t*, void*) { return -UNW_EINVAL; }
};

Unwinder::Unwinder(MappingTable* mappings) : impl_(std::make_unique<Impl>()) {
  impl_->mappings = mappings;
  static unw_accessors_t accessors = {Impl::find_proc_info, Impl::put_unwind_info, Impl::get_dyn_info_list_addr,
                                      Impl::access_mem,     Impl::access_reg,      Impl::access_fpreg,
                                      Impl::resume,         Impl::get_proc_name};
  impl_->space = unw_create_addr_space(&accessors, 0);
  if (impl_->space != nullptr) unw_set_caching_policy(impl_->space, UNW_CACHE_GLOBAL);
}

Unwinder::~Unwinder() {
  if (impl_->space != nullptr) unw_destroy_addr_space(impl_->space);
}

UnwindStatus Unwinder::unwind_dwarf(const RawSample& s, uint64_t* ips, uint32_t max, uint32_t* n) {
  *n = 0;
  if (!s.has_regs || impl_->space == nullptr || max == 0) return UnwindStatus::kFailed;
  if (impl_->generation != impl_->mappings->generation()) {
    unw_flush_cache(impl_->space, 0, 0);  // a mapping changed: cached procedure info may be stale
    impl_->generation = impl_->mappings->generation();
  }
  impl_->sample = &s;
  unw_cursor_t cursor;
  if (unw_init_remote(&cursor, impl_->space, impl_.get()) < 0) {
    ips[(*n)++] = s.regs[kRegIp];
    return UnwindStatus::kFailed;
  }
  int step = 0;
  do {
    unw_word_t ip = 0;
    if (unw_get_reg(&cursor, UNW_REG_IP, &ip) < 0 || ip == 0) break;
    ips[(*n)++] = ip;
    if (*n >= max) return UnwindStatus::kTruncated;
    step = unw_step(&cursor);
  } while (step > 0);
  impl_->sample = nullptr;
  if (step >= 0) return UnwindStatus::kComplete;
  // Ran off the copied stack (the rest of a deep stack was not copied) or met code without CFI.
  unw_word_t sp = 0;
  unw_get_reg(&cursor, UNW_REG_SP, &sp);
  // Within the copy's last 64 bytes, or past its end (a stack pointer near 2^64 must not wrap).
  const uint64_t copy_start = s.regs[kRegSp], copy_size = s.stack_size;
  if (sp >= copy_start && (sp - copy_start >= copy_size || copy_size - (sp - copy_start) <= 64))
    return UnwindStatus::kTruncated;
  return UnwindStatus::kFailed;
}

UnwindStatus Unwinder::unwind_frame_pointers(const RawSample& s, uint64_t* ips, uint32_t max, uint32_t* n) {
  *n = 0;
  if (!s.has_regs || max == 0) return UnwindStatus::kFailed;
  ips[(*n)++] = s.regs[kRegIp];
  const uint64_t sp = s.regs[kRegSp];
  uint64_t fp = s.regs[kRegBp];
  while (*n < max) {
    if (fp < sp || fp % 8 != 0) return UnwindStatus::kComplete;  // not a frame pointer: the chain ends
    if (!range_within(sp, s.stack_size, fp, 16)) return UnwindStatus::kTruncated;
    uint64_t next = 0, ret = 0;
    std::memcpy(&next, s.stack + (fp - sp), 8);
    std::memcpy(&ret, s.stack + (fp - sp) + 8, 8);
    if (ret == 0) return UnwindStatus::kComplete;
    ips[(*n)++] = ret;
    if (next <= fp) return UnwindStatus::kComplete;
    fp = next;
  }
  return UnwindStatus::kTruncated;
}

}  // namespace strata::sample

#include "sample/python_reader.h"

#include <sys/uio.h>

#include <algorithm>
#include <cstring>

#include "core/utf8.h"
#include "sample/python311_layout.h"
#include "sample/remote_range.h"

namespace strata::sample {

namespace {
const struct strata_py311_layout& L = ::strata_py311_layout;
constexpr int kMaxFrames = 512;
constexpr int kMaxThreads = 4096;
// Data-stack chunks: 3.11 allocates 16 KiB ones (larger for a frame that needs more); one sample
// reads at most kMaxChunks of them, each at most kMaxChunkBytes.
constexpr size_t kChunkProbeBytes = 16384;
constexpr size_t kMaxChunkBytes = 1 << 20;
constexpr size_t kMaxChunks = 8;
// Read beyond the last sample's top of the chunk: room for the frames called since.
constexpr size_t kChunkSlackBytes = 2048;

bool basename_starts(const std::string& path, const char* prefix) {
  size_t slash = path.rfind('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  return base.rfind(prefix, 0) == 0;
}

uint32_t scan_varint(const std::string& t, size_t* pos) {
  uint32_t value = 0, shift = 0;
  while (*pos < t.size()) {
    uint8_t b = static_cast<uint8_t>(t[(*pos)++]);
    value |= static_cast<uint32_t>(b & 63) << shift;
    if (!(b & 64) || shift > 24) break;
    shift += 6;
  }
  return value;
}

int32_t scan_signed_varint(const std::string& t, size_t* pos) {
  uint32_t v = scan_varint(t, pos);
  return (v & 1) ? -static_cast<int32_t>(v >> 1) : static_cast<int32_t>(v >> 1);
}

template <typename T>
T at(const uint8_t* p, size_t offset) {
  T v;
  std::memcpy(&v, p + offset, sizeof(T));
  return v;
}
}  // namespace

uint32_t python311_line(const std::string& t, uint32_t first_line, uint64_t offset) {
  // Entries: a first byte with bit 7 set, code = bits 3-6, length = bits 0-2 + 1 code units, then
  // the code's data. 15: no location; 14: long form; 13: no columns (both start with a signed line
  // delta); 10-12: one-line forms (delta code-10); 0-9: short forms (same line).
  int64_t line = first_line;
  uint64_t addr = 0;
  size_t pos = 0;
  while (pos < t.size()) {
    const uint8_t first = static_cast<uint8_t>(t[pos]);
    if (!(first & 0x80)) return 0;  // not at an entry: damaged table
    const int code = (first >> 3) & 15;
    const uint64_t length = (first & 7) + 1;
    size_t data = pos + 1;
    int delta = 0;
    if (code == 13 || code == 14)
      delta = scan_signed_varint(t, &data);
    else if (code >= 10 && code <= 12)
      delta = code - 10;
    line += delta;
    if (offset < addr + length) return code == 15 || line < 0 ? 0 : static_cast<uint32_t>(line);
    addr += length;
    // The next entry starts at the next byte with bit 7 set.
    size_t next = pos + 1;
    while (next < t.size() && !(static_cast<uint8_t>(t[next]) & 0x80)) ++next;
    pos = next;
  }
  return 0;
}

std::unique_ptr<PythonReader> PythonReader::find(MappingTable& mappings, std::string* why) {
  std::string error;
  if (!mappings.load_proc_maps(&error)) {
    *why = error;
    return nullptr;
  }
  // Candidates: executables and libraries named python3* / libpython3*.
  std::vector<const Mapping*> candidates;
  for (uint64_t address = 0;;) {
    const Mapping* m = mappings.above(address);
    if (m == nullptr) break;
    address = m->start;
    if (m->file_backed() && (basename_starts(m->path, "python3") || basename_starts(m->path, "libpython3")))
      candidates.push_back(m);
  }
  if (candidates.empty()) {
    *why = "not a Python process";
    return nullptr;
  }
  for (const Mapping* m : candidates) {
    const symbolize::ElfImage* image = mappings.image(*m);
    uint64_t bias = 0;
    if (image == nullptr || !mappings.load_bias(*m, &bias)) continue;
    auto runtime = image->find_symbol("_PyRuntime");
    auto version = image->find_symbol("Py_Version");
    auto code_type = image->find_symbol("PyCode_Type");
    auto eval = image->find_symbol("_PyEval_EvalFrameDefault");
    if (!runtime || !code_type || !eval) continue;
    // Link-time addresses plus the load bias (modulo 2^64: a prelinked module loaded below its link
    // address has a "negative" bias); from the module's file and the kernel's maps, not from memory.
    PythonSymbols symbols;
    symbols.runtime = runtime->address + bias;
    symbols.code_type = code_type->address + bias;
    symbols.eval_start = eval->address + bias;
    symbols.eval_end = eval->address + bias + std::max<uint64_t>(eval->size, 1);
    std::unique_ptr<PythonReader> reader = for_memory(process_memory(mappings.pid()), symbols);
    uint32_t hex = 0;
    if (!version || !reader->read(version->address + bias, &hex, 4)) {
      *why = m->path +
             ": a Python older than 3.11 (no Py_Version): Python frames are read for CPython 3.11 only; "
             "samples keep their native frames";
      return nullptr;
    }
    const int major = static_cast<int>(hex >> 24), minor = static_cast<int>((hex >> 16) & 0xFF);
    reader->version_ =
        std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string((hex >> 8) & 0xFF);
    if (major != L.version_major || minor != L.version_minor) {
      *why = "Python " + reader->version_ + ": Python frames are read for CPython " +
             std::to_string(L.version_major) + "." + std::to_string(L.version_minor) +
             " only; samples keep their native frames";
      return nullptr;
    }
    return reader;
  }
  *why =
      "Python found but its symbols (_PyRuntime, _PyEval_EvalFrameDefault) are not: Python frames not read";
  return nullptr;
}

std::unique_ptr<PythonReader> PythonReader::for_memory(std::unique_ptr<ProcessMemory> memory,
                                                       const PythonSymbols& symbols) {
  std::unique_ptr<PythonReader> reader(new PythonReader());
  reader->memory_ = std::move(memory);
  reader->runtime_ = symbols.runtime;
  reader->code_type_ = symbols.code_type;
  reader->eval_start_ = symbols.eval_start;
  reader->eval_end_ = symbols.eval_end;
  reader->version_ = symbols.version;
  return reader;
}

bool PythonReader::read(uint64_t address, void* out, size_t size) {
  ++reads_;
  iovec local{out, size};
  iovec remote{reinterpret_cast<void*>(address), size};
  return memory_->readv(&local, 1, &remote, 1) == static_cast<ssize_t>(size);
}

// A field at `offset` in an object at `address` read from the process: false when the sum wraps.
bool PythonReader::read_field(uint64_t address, size_t offset, void* out, size_t size) {
  uint64_t at = 0;
  return checked_add(address, offset, &at) && read(at, out, size);
}

size_t PythonReader::tstate_span() {
  return std::max(
             {L.tstate_native_thread_id, L.tstate_cframe, L.tstate_datastack_chunk, L.tstate_datastack_top}) +
         8;
}

// The thread state's first bytes give all a sample needs from it; the cached address is checked by
// its native thread id in the same bytes.
bool PythonReader::parse_tstate(const uint8_t* bytes, uint32_t tid, ThreadView* view) {
  if (at<uint64_t>(bytes, L.tstate_native_thread_id) != tid) return false;
  view->cframe = at<uint64_t>(bytes, L.tstate_cframe);
  view->chunk = at<uint64_t>(bytes, L.tstate_datastack_chunk);
  view->top = at<uint64_t>(bytes, L.tstate_datastack_top);
  return true;
}

bool PythonReader::read_tstate(uint64_t tstate, uint32_t tid, ThreadView* view) {
  uint8_t buf[kTstateBytes];
  const size_t span = tstate_span();
  return span <= sizeof(buf) && read(tstate, buf, span) && parse_tstate(buf, tid, view);
}

// One call for the thread state, the last sample's cframe's frame pointer and the last sample's
// chunk: a thread that stays in one evaluation (cframe) and chunk, as a model's forward loop does,
// needs no other read before its code objects'. True when the thread state shows the same cframe
// and chunk (*frame and chunks_[0] are then this sample's); *view_ok says whether *view is usable.
bool PythonReader::read_speculatively(uint64_t tstate, uint32_t tid, const LastRead& last, ThreadView* view,
                                      uint64_t* frame, bool* view_ok) {
  *view_ok = false;
  chunks_used_ = 0;
  next_chunk_ = 0;
  uint8_t buf[kTstateBytes];
  const size_t span = tstate_span();
  uint64_t frame_at = 0;
  if (span > sizeof(buf) || !checked_add(last.cframe, L.cframe_current_frame, &frame_at)) return false;
  if (chunks_.empty()) chunks_.emplace_back();
  ChunkCopy& c = chunks_[0];
  c.address = last.chunk;
  c.bytes.resize(
      std::min<uint64_t>(std::min<uint64_t>(last.live, kMaxChunkBytes) + kChunkSlackBytes, kMaxChunkBytes));
  iovec local[3] = {{buf, span}, {frame, 8}, {c.bytes.data(), c.bytes.size()}};
  iovec remote[3] = {{reinterpret_cast<void*>(tstate), span},
                     {reinterpret_cast<void*>(frame_at), 8},
                     {reinterpret_cast<void*>(last.chunk), c.bytes.size()}};
  ++reads_;
  const ssize_t got = memory_->readv(local, 3, remote, 3);
  if (got < static_cast<ssize_t>(span) || !parse_tstate(buf, tid, view)) return false;
  *view_ok = true;
  if (view->cframe != last.cframe || view->chunk != last.chunk || got < static_cast<ssize_t>(span + 8))
    return false;
  const uint64_t live = view->top > view->chunk ? view->top - view->chunk : 0;
  c.bytes.resize(std::min<uint64_t>(static_cast<uint64_t>(got) - span - 8, live));
  if (c.bytes.size() >= L.chunk_data) {
    chunks_used_ = 1;
    next_chunk_ = at<uint64_t>(c.bytes.data(), L.chunk_previous);
  }
  ++speculative_hits_;
  return true;
}

bool PythonReader::thread_view(uint32_t tid, ThreadView* view) {
  auto cached = tstates_.find(tid);
  if (cached != tstates_.end()) {
    if (read_tstate(cached->second, tid, view)) return true;
    tstates_.erase(cached);
  }
  uint64_t interp = 0, t = 0;
  if (!read_field(runtime_, L.runtime_interpreters_head, &interp, 8) || interp == 0) return false;
  if (!read_field(interp, L.interp_threads_head, &t, 8)) return false;
  for (int k = 0; t != 0 && k < kMaxThreads; ++k) {
    uint64_t native = 0, next = 0;
    if (!read_field(t, L.tstate_native_thread_id, &native, 8) || !read_field(t, L.tstate_next, &next, 8))
      return false;
    tstates_[static_cast<uint32_t>(native)] = t;
    if (native == tid) return read_tstate(t, tid, view);
    t = next;
  }
  return false;
}

// `pre`: the object's first bytes when a batched read already has them (else read here).
bool PythonReader::read_unicode(uint64_t address, std::string* out, const Prefix& pre) {
  uint8_t head_buf[80];
  const uint8_t* head = pre.bytes;
  if (address == 0) return false;
  // An ASCII object's header is the shorter one: a prefix that holds it and says ASCII is enough (a
  // signal handler copies no byte past a short name's end).
  const bool ascii_prefix =
      pre.size >= L.unicode_ascii_data && ((at<uint32_t>(pre.bytes, L.unicode_state) >> 6) & 1);
  if (pre.size < L.unicode_compact_data && !ascii_prefix) {
    if (L.unicode_compact_data > sizeof(head_buf) || !read(address, head_buf, L.unicode_compact_data))
      return false;
    head = head_buf;
  }
  const int64_t length = at<int64_t>(head, L.unicode_length);
  const uint32_t state = at<uint32_t>(head, L.unicode_state);
  const unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
  if (!compact || length < 0 || length > 4096) return false;
  const size_t char_size = ascii ? 1 : kind;
  if (char_size != 1 && char_size != 2 && char_size != 4) return false;
  std::string raw(static_cast<size_t>(length) * char_size, '\0');
  const size_t data = ascii ? L.unicode_ascii_data : L.unicode_compact_data;
  if (data + raw.size() <= pre.size) {
    std::memcpy(raw.data(), pre.bytes + data, raw.size());
  } else if (!raw.empty() && !read_field(address, data, raw.data(), raw.size())) {
    return false;
  }
  // The object may have been freed and reused while it was read (another process's memory, or a
  // handler's copy of a dying code object): an ASCII string with a high byte or a code point above
  // U+10FFFF is such garbage, refused and counted, never written into a name. A lone surrogate is
  // legal in a Python str and becomes U+FFFD.
  out->clear();
  if (ascii) {
    for (char ch : raw)
      if (static_cast<unsigned char>(ch) >= 0x80) {
        ++strings_malformed_;
        return false;
      }
    *out = std::move(raw);
    return true;
  }
  for (int64_t i = 0; i < length; ++i) {
    uint32_t c = 0;
    std::memcpy(&c, raw.data() + i * static_cast<int64_t>(char_size), char_size);
    if (c > 0x10FFFF) {
      ++strings_malformed_;
      out->clear();
      return false;
    }
    core::append_code_point(out, c);
  }
  return true;
}

bool PythonReader::read_bytes_object(uint64_t address, std::string* out, const Prefix& pre) {
  int64_t size = 0;
  if (address == 0) return false;
  if (pre.size >= L.bytes_size + 8)
    size = at<int64_t>(pre.bytes, L.bytes_size);
  else if (!read_field(address, L.bytes_size, &size, 8))
    return false;
  if (size < 0 || size > (1 << 20)) return false;
  out->resize(static_cast<size_t>(size));
  if (L.bytes_data + out->size() <= pre.size) {
    std::memcpy(out->data(), pre.bytes + L.bytes_data, out->size());
    return true;
  }
  return size == 0 || read_field(address, L.bytes_data, out->data(), out->size());
}

// A new code object's qualified name, file name and line table: their first bytes in one vectored
// read (most names and tables fit), instead of two reads each.
void PythonReader::read_prefixes(const uint64_t* addresses, size_t n, uint8_t (*buffers)[kObjectProbeBytes],
                                 Prefix* out) {
  iovec local[4], remote[4];
  size_t k = 0;
  for (size_t i = 0; i < n && i < 4; ++i) {
    out[i] = {buffers[i], 0};
    if (addresses[i] == 0) continue;
    local[k] = {buffers[i], kObjectProbeBytes};
    remote[k] = {reinterpret_cast<void*>(addresses[i]), kObjectProbeBytes};
    ++k;
  }
  if (k == 0) return;
  ++reads_;
  const ssize_t got = memory_->readv(local, k, remote, k);
  size_t left = got > 0 ? static_cast<size_t>(got) : 0;
  for (size_t i = 0, j = 0; i < n && i < 4 && j < k; ++i) {
    if (addresses[i] == 0) continue;
    out[i].size = std::min(left, kObjectProbeBytes);  // a partial read gives a prefix of the iovecs
    left -= out[i].size;
    ++j;
  }
}

// `header`: the code object's first code_adaptive bytes, read just now.
PyCodeInfo* PythonReader::code_info(uint64_t code, const uint8_t* header) {
  if (at<uint64_t>(header, L.object_type) != code_type_) return nullptr;  // not a code object (anymore)
  const uint64_t name = at<uint64_t>(header, L.code_name), file = at<uint64_t>(header, L.code_filename);
  const uint64_t qualname = at<uint64_t>(header, L.code_qualname),
                 table = at<uint64_t>(header, L.code_linetable);
  const auto first_line = static_cast<uint32_t>(std::max(0, at<int32_t>(header, L.code_firstlineno)));
  uint64_t code_start = 0;
  if (!checked_add(code, L.code_adaptive, &code_start)) return nullptr;
  auto it = codes_.find(code);
  if (it != codes_.end() && it->second->name_ptr == name && it->second->file_ptr == file &&
      it->second->qualname_ptr == qualname && it->second->linetable_ptr == table &&
      it->second->first_line == first_line)
    return it->second.get();
  auto info = std::make_unique<PyCodeInfo>();
  info->id = next_code_id_++;
  info->name_ptr = name;
  info->file_ptr = file;
  info->qualname_ptr = qualname;
  info->linetable_ptr = table;
  info->first_line = first_line;
  info->code_start = code_start;
  const uint64_t objects[3] = {qualname, file, table};
  uint8_t buffers[3][kObjectProbeBytes];
  Prefix prefixes[3];
  read_prefixes(objects, 3, buffers, prefixes);
  if (!read_unicode(qualname, &info->function, prefixes[0]) && !read_unicode(name, &info->function, {}))
    info->function = "<unknown>";
  if (!read_unicode(file, &info->file, prefixes[1])) info->file = "<unknown>";
  read_bytes_object(table, &info->linetable, prefixes[2]);
  PyCodeInfo* out = info.get();
  std::unique_ptr<PyCodeInfo>& slot = codes_[code];
  if (slot) ++codes_generation_;  // the old one is freed: cached pointers to it must not hit
  slot = std::move(info);
  return out;
}

// prev_instr: the last instruction started (its code unit); before the first one, the function's
// line. Lines are kept per instruction: a hot loop's lines are looked up in the table once.
uint32_t PythonReader::line_of(PyCodeInfo* code, uint64_t prev_instr) {
  if (prev_instr < code->code_start) return code->first_line;
  const uint64_t offset = (prev_instr - code->code_start) / 2;
  auto [it, inserted] = code->lines.try_emplace(offset, 0);
  if (inserted) {
    it->second = python311_line(code->linetable, code->first_line, offset);
    if (it->second == 0) it->second = code->first_line;
  }
  return it->second;
}

bool PythonReader::read_current_frame(const ThreadView& view, uint64_t* frame) {
  chunks_used_ = 0;
  next_chunk_ = 0;
  uint64_t where = 0;
  if (!checked_add(view.cframe, L.cframe_current_frame, &where)) return false;
  const uint64_t live = view.top > view.chunk ? std::min<uint64_t>(view.top - view.chunk, kMaxChunkBytes) : 0;
  if (frame_reads_ == PyFrameReads::kPerFrame || view.chunk == 0 || live < L.chunk_data)
    return read(where, frame, 8);
  // The frame pointer and the current chunk's live part in one call: the frames above it were
  // pushed after the thread state was read, and are read on their own.
  if (chunks_.empty()) chunks_.emplace_back();
  ChunkCopy& c = chunks_[0];
  c.address = view.chunk;
  c.bytes.resize(live);
  iovec local[2] = {{frame, 8}, {c.bytes.data(), c.bytes.size()}};
  iovec remote[2] = {{reinterpret_cast<void*>(where), 8},
                     {reinterpret_cast<void*>(view.chunk), c.bytes.size()}};
  ++reads_;
  const ssize_t got = memory_->readv(local, 2, remote, 2);
  if (got < 8) return false;
  c.bytes.resize(static_cast<size_t>(got) - 8);  // a chunk freed meanwhile: its frames are read singly
  if (c.bytes.size() >= L.chunk_data) {
    chunks_used_ = 1;
    next_chunk_ = at<uint64_t>(c.bytes.data(), L.chunk_previous);
  }
  return true;
}

// The chunk's header tells how much of it is live (`top`, set when the next chunk was pushed):
// one read of its first kChunkProbeBytes covers the common 16 KiB chunk, a second one the rest.
bool PythonReader::load_chunk(uint64_t address) {
  if (chunks_.size() <= chunks_used_) chunks_.emplace_back();
  ChunkCopy& c = chunks_[chunks_used_];
  c.address = address;
  c.bytes.resize(kChunkProbeBytes);
  iovec local{c.bytes.data(), c.bytes.size()}, remote{reinterpret_cast<void*>(address), c.bytes.size()};
  ++reads_;
  const ssize_t got = memory_->readv(&local, 1, &remote, 1);
  if (got < static_cast<ssize_t>(L.chunk_data)) return false;
  // `top` counts the chunk's used pointer slots: any value when the chunk changed while it was read.
  uint64_t top_bytes = 0, live = 0;
  if (!checked_mul(at<uint64_t>(c.bytes.data(), L.chunk_top), 8, &top_bytes) ||
      !checked_add(L.chunk_data, top_bytes, &live) || live > kMaxChunkBytes)
    return false;
  const size_t had = std::min(static_cast<size_t>(got), c.bytes.size());
  c.bytes.resize(live);
  if (live > had && !read_field(address, had, c.bytes.data() + had, live - had)) c.bytes.resize(had);
  next_chunk_ = at<uint64_t>(c.bytes.data(), L.chunk_previous);
  ++chunks_used_;
  return true;
}

const uint8_t* PythonReader::buffered_frame(uint64_t frame) const {
  for (size_t i = 0; i < chunks_used_; ++i) {
    const ChunkCopy& c = chunks_[i];
    // A torn `previous` near 2^64 made `frame + frame_size` wrap below the chunk's end: a pointer
    // far outside the copy (`strata attach` crashed on 0xffffffffffffffff).
    if (range_within_after(c.address, c.bytes.size(), L.chunk_data, frame, L.frame_size))
      return c.bytes.data() + (frame - c.address);
  }
  return nullptr;
}

// The frame chain, innermost first: each frame's code pointer, last instruction and entry flag.
bool PythonReader::read_frames(uint64_t frame) {
  raw_.clear();
  uint8_t buf[128];
  for (int k = 0; frame != 0 && k < kMaxFrames; ++k) {
    const uint8_t* f = buffered_frame(frame);
    if (f != nullptr) {
      ++frames_from_chunks_;
    } else {
      if (L.frame_size > sizeof(buf) || !read(frame, buf, L.frame_size)) return false;
      f = buf;
      ++frames_read_singly_;
      // A data-stack frame outside the chunks read: the next chunk down most likely holds it and
      // its callers (a generator's frame lives in the generator: no chunk for it).
      if (frame_reads_ == PyFrameReads::kChunked && next_chunk_ != 0 && chunks_used_ < kMaxChunks &&
          static_cast<int8_t>(f[L.frame_owner]) == L.frame_owned_by_thread && !load_chunk(next_chunk_))
        next_chunk_ = 0;
    }
    raw_.push_back(
        {at<uint64_t>(f, L.frame_code), at<uint64_t>(f, L.frame_prev_instr), f[L.frame_is_entry] != 0});
    frame = at<uint64_t>(f, L.frame_previous);
  }
  return true;
}

bool PythonReader::read_stack(uint32_t tid, std::vector<PyFrameRef>* out) {
  out->clear();
  last_failed_ = false;
  ThreadView view;
  uint64_t frame = 0;
  bool have_frame = false, view_ok = false;
  const bool chunked = frame_reads_ == PyFrameReads::kChunked;
  auto cached = tstates_.find(tid);
  auto last = last_reads_.find(tid);
  if (chunked && cached != tstates_.end() && last != last_reads_.end())
    have_frame = read_speculatively(cached->second, tid, last->second, &view, &frame, &view_ok);
  if (!view_ok && !thread_view(tid, &view)) return false;  // not a Python thread (or not yet)
  if (!have_frame && (view.cframe == 0 || !read_current_frame(view, &frame))) {
    last_failed_ = true;
    return false;
  }
  if (chunked)
    last_reads_[tid] = {view.cframe, view.chunk, view.top > view.chunk ? view.top - view.chunk : 0};
  if (!read_frames(frame)) last_failed_ = true;
  if (raw_.empty()) return false;
  // Every code object's header in one vectored read, each once (a PyTorch stack repeats
  // Module._call_impl and forward at each level; a recursion repeats one code object).
  const size_t header = L.code_adaptive;
  unique_slot_.clear();
  slot_of_.resize(raw_.size());
  local_.clear();
  remote_.clear();
  headers_.resize(raw_.size() * header);
  for (size_t i = 0; i < raw_.size(); ++i) {
    auto [it, inserted] = unique_slot_.try_emplace(raw_[i].code, local_.size());
    if (inserted) {
      local_.push_back({headers_.data() + local_.size() * header, header});
      remote_.push_back({reinterpret_cast<void*>(raw_[i].code), header});
    }
    slot_of_[i] = it->second;
  }
  ++reads_;
  ssize_t got = memory_->readv(local_.data(), local_.size(), remote_.data(), remote_.size());
  const size_t complete = got > 0 ? static_cast<size_t>(got) / header : 0;
  infos_.assign(local_.size(), nullptr);
  for (size_t k = 0; k < complete; ++k)
    infos_[k] = code_info(reinterpret_cast<uint64_t>(remote_[k].iov_base), headers_.data() + k * header);
  for (size_t i = 0; i < raw_.size(); ++i) {
    PyCodeInfo* info = infos_[slot_of_[i]];
    if (info == nullptr) {
      last_failed_ = true;
      break;
    }
    PyFrameRef ref;
    ref.code = info;
    ref.entry = raw_[i].entry;
    ref.line = line_of(info, raw_[i].prev_instr);
    out->push_back(ref);
  }
  return !out->empty();
}

bool PythonReader::resolve_signal_frames(const uint8_t* record, size_t size, std::vector<PyFrameRef>* out) {
  last_all_cached_ = false;
  PySignalRecordHeader h;
  if (size < sizeof(h)) return false;
  std::memcpy(&h, record, sizeof(h));
  const uint32_t n =
      static_cast<uint32_t>(std::min<size_t>(h.frames, (size - sizeof(h)) / sizeof(PySignalFrame)));
  const auto* frames = reinterpret_cast<const PySignalFrame*>(record + sizeof(h));
  out->clear();
  bool complete = true;
  std::vector<uint8_t>& expected = headers_;  // the header as the handler saw it
  expected.assign(L.code_adaptive, 0);
  uint8_t* header = expected.data();
  auto put = [&](size_t offset, auto value) { std::memcpy(header + offset, &value, sizeof(value)); };
  if (frame_slots_.empty()) frame_slots_.resize(size_t{1} << kFrameSlotBits);
  last_all_cached_ = true;
  for (uint32_t i = 0; i < n; ++i) {
    const PySignalFrame& f = frames[i];
    FrameSlot& slot =
        frame_slots_[((f.code ^ (f.prev_instr * 0x9E3779B97F4A7C15ull)) * 0x9E3779B97F4A7C15ull) >>
                     (64 - kFrameSlotBits)];
    if (slot.info != nullptr && slot.code == f.code && slot.prev_instr == f.prev_instr &&
        slot.name == f.name && slot.file == f.file && slot.qualname == f.qualname &&
        slot.linetable == f.linetable && slot.first_line == f.first_line &&
        slot.generation == codes_generation_) {
      PyFrameRef ref;
      ref.code = slot.info;
      ref.entry = f.entry != 0;
      ref.line = slot.line;
      out->push_back(ref);
      continue;
    }
    put(L.object_type, code_type_);
    put(L.code_name, f.name);
    put(L.code_filename, f.file);
    put(L.code_qualname, f.qualname);
    put(L.code_linetable, f.linetable);
    put(L.code_firstlineno, f.first_line);
    PyCodeInfo* info = known_code(f.code, header);
    if (info == nullptr && (info = named_code_now(f.code, header)) != nullptr)
      PySignalRecorder::note_named(f.code);
    const bool named = info != nullptr;  // in codes_, under its address (not from the copies)
    last_all_cached_ = last_all_cached_ && named;
    if (info == nullptr) info = code_from_copies(f, record, size);
    if (info == nullptr) {
      complete = false;
      ++codes_freed_;
      info = freed_code();
    }
    PyFrameRef ref;
    ref.code = info;
    ref.entry = f.entry != 0;
    ref.line = info == freed_code_.get() ? 0
               : info->code_start == 0   ? info->first_line
                                         : line_of(info, f.prev_instr);
    out->push_back(ref);
    if (named)
      slot = {f.code,   f.prev_instr,      f.name, f.file, f.qualname, f.linetable, f.first_line,
              ref.line, codes_generation_, info};
  }
  return complete;
}

PyCodeInfo* PythonReader::known_code(uint64_t code, const uint8_t* header) {
  auto it = codes_.find(code);
  if (it == codes_.end()) return nullptr;
  const PyCodeInfo& c = *it->second;
  const bool same =
      c.name_ptr == at<uint64_t>(header, L.code_name) &&
      c.file_ptr == at<uint64_t>(header, L.code_filename) &&
      c.qualname_ptr == at<uint64_t>(header, L.code_qualname) &&
      c.linetable_ptr == at<uint64_t>(header, L.code_linetable) &&
      c.first_line == static_cast<uint32_t>(std::max(0, at<int32_t>(header, L.code_firstlineno)));
  return same ? it->second.get() : nullptr;
}

// A code object first seen in a handler record is named now, milliseconds after the handler saw
// it: it may have been freed since (a module's body runs once). Named only while its header still
// holds what the handler read, checked before and after reading its strings.
PyCodeInfo* PythonReader::named_code_now(uint64_t code, const uint8_t* expected) {
  std::vector<uint8_t> now(L.code_adaptive);
  auto unchanged = [&] {
    return read(code, now.data(), now.size()) && at<uint64_t>(now.data(), L.object_type) == code_type_ &&
           known_fields_equal(now.data(), expected);
  };
  if (!unchanged()) return nullptr;
  PyCodeInfo* info = code_info(code, now.data());
  if (info != nullptr && unchanged()) return info;
  if (codes_.erase(code) > 0) ++codes_generation_;
  return nullptr;
}

bool PythonReader::known_fields_equal(const uint8_t* a, const uint8_t* b) {
  for (size_t offset : {L.code_name, L.code_filename, L.code_qualname, L.code_linetable})
    if (at<uint64_t>(a, offset) != at<uint64_t>(b, offset)) return false;
  return at<int32_t>(a, L.code_firstlineno) == at<int32_t>(b, L.code_firstlineno);
}

// A code gone before it was named, named from the strings its handler copied (no line table: its
// frames get the function's first line), one PyCodeInfo per (function, file, first line).
PyCodeInfo* PythonReader::code_from_copies(const PySignalFrame& f, const uint8_t* record, size_t size) {
  if (f.strings == 0 || f.qualname_bytes == 0 ||
      static_cast<size_t>(f.strings) + f.qualname_bytes + f.file_bytes > size)
    return nullptr;
  std::string function, file;
  if (!read_unicode(f.qualname, &function, {record + f.strings, f.qualname_bytes})) return nullptr;
  if (f.file_bytes == 0 ||
      !read_unicode(f.file, &file, {record + f.strings + f.qualname_bytes, f.file_bytes}))
    file = "<unknown>";
  const uint32_t first_line = static_cast<uint32_t>(std::max(0, f.first_line));
  auto [it, inserted] = copied_codes_.try_emplace(function + '\n' + file + '\n' + std::to_string(first_line));
  if (inserted) {
    it->second = std::make_unique<PyCodeInfo>();
    it->second->id = next_code_id_++;
    it->second->function = std::move(function);
    it->second->file = std::move(file);
    it->second->first_line = first_line;
    ++codes_named_from_copies_;
  }
  return it->second.get();
}

PyCodeInfo* PythonReader::freed_code() {
  if (!freed_code_) {
    freed_code_ = std::make_unique<PyCodeInfo>();
    freed_code_->id = next_code_id_++;
    freed_code_->function = "[code freed before it was named]";
    freed_code_->file = "<unknown>";
  }
  return freed_code_.get();
}

}  // namespace strata::sample

#include "python_image.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "core/utf8.h"
#include "sample/python311_layout.h"

namespace strata::fuzz {
namespace {

const struct strata_py311_layout& L = ::strata_py311_layout;

constexpr uint64_t kRuntime = 0x560000010000ull;
constexpr uint64_t kCodeType = 0x560000020000ull;
constexpr uint64_t kInterp = 0x560010000000ull;
constexpr uint64_t kTstate = 0x560010010000ull;
constexpr uint64_t kCframe = 0x7ffc00001000ull;
constexpr uint64_t kChunk = 0x7f0000000000ull;
constexpr uint64_t kChunkBytes = 16384;
constexpr uint64_t kFrameStride = 0x100;  // a frame's fixed part plus its locals
constexpr uint64_t kCodes = 0x560020000000ull;
constexpr uint64_t kObjects = 0x560030000000ull;
constexpr size_t kObjectBytes = 512;  // an object and what follows it on the heap

template <typename T>
void put(std::string* bytes, size_t offset, T value) {
  if (bytes->size() < offset + sizeof(T)) bytes->resize(offset + sizeof(T), '\0');
  std::memcpy(bytes->data() + offset, &value, sizeof(T));
}

// A compact ASCII str object.
std::string ascii_object(std::string_view text) {
  std::string o(kObjectBytes, '\0');
  put<int64_t>(&o, L.unicode_length, static_cast<int64_t>(text.size()));
  put<uint32_t>(&o, L.unicode_state, (1u << 2) | (1u << 5) | (1u << 6));  // kind 1, compact, ascii
  std::memcpy(o.data() + L.unicode_ascii_data, text.data(), text.size());
  return o;
}

std::string bytes_object(std::string_view data) {
  std::string o(kObjectBytes, '\0');
  put<int64_t>(&o, L.bytes_size, static_cast<int64_t>(data.size()));
  std::memcpy(o.data() + L.bytes_data, data.data(), data.size());
  return o;
}

// A 3.11 location-table entry without columns: `units` code units on the line `delta` below or
// above the previous entry's.
std::string line_entry(int units, int delta) {
  std::string e;
  e.push_back(static_cast<char>(0x80 | (13 << 3) | (units - 1)));
  e.push_back(static_cast<char>(delta >= 0 ? delta << 1 : ((-delta) << 1) | 1));
  return e;
}

struct CodeSpec {
  const char* name;
  int first_line;
  std::string linetable;
  int unit;  // the frame's last instruction (code units from the start)
};

class ImageMemory : public sample::ProcessMemory {
 public:
  ImageMemory(const PythonImage& image, std::vector<std::pair<uint64_t, uint64_t>>* reads)
      : segments_(image.segments), writes_(image.writes), log_(reads) {
    std::stable_sort(writes_.begin(), writes_.end(),
                     [](const auto& a, const auto& b) { return a.after_reads < b.after_reads; });
  }

  ssize_t readv(const iovec* local, size_t local_count, const iovec* remote, size_t remote_count) override {
    size_t capacity = 0;
    for (size_t i = 0; i < local_count; ++i) capacity += local[i].iov_len;
    std::string got;
    bool stopped = false;
    for (size_t i = 0; i < remote_count && !stopped && got.size() < capacity; ++i) {
      const auto address = reinterpret_cast<uint64_t>(remote[i].iov_base);
      const uint64_t length = std::min<uint64_t>(remote[i].iov_len, capacity - got.size());
      if (log_ != nullptr) log_->emplace_back(address, remote[i].iov_len);
      stopped = !copy(address, length, &got);
    }
    for (size_t i = 0, at = 0; i < local_count && at < got.size(); ++i) {
      const size_t n = std::min(local[i].iov_len, got.size() - at);
      std::memcpy(local[i].iov_base, got.data() + at, n);
      at += n;
    }
    ++reads_;
    while (next_write_ < writes_.size() && writes_[next_write_].after_reads <= reads_)
      land(writes_[next_write_++]);
    return got.empty() ? -1 : static_cast<ssize_t>(got.size());
  }

 private:
  // Appends [address, address + length) to *out up to the first byte in no segment; false there.
  bool copy(uint64_t address, uint64_t length, std::string* out) const {
    while (length > 0) {
      auto it = segments_.upper_bound(address);
      if (it == segments_.begin()) return false;
      --it;
      const uint64_t into = address - it->first;
      if (into >= it->second.size()) return false;
      const uint64_t n = std::min<uint64_t>(length, it->second.size() - into);
      out->append(it->second, into, n);
      length -= n;
      if (length > 0 && __builtin_add_overflow(address, n, &address)) return false;
    }
    return true;
  }

  // A write changes the bytes of the segments it covers (memory that does not exist stays so).
  void land(const PythonImage::Write& w) {
    for (size_t k = 0; k < w.bytes.size(); ++k) {
      uint64_t at = 0;
      if (__builtin_add_overflow(w.address, k, &at)) break;
      auto it = segments_.upper_bound(at);
      if (it == segments_.begin()) continue;
      --it;
      if (at - it->first < it->second.size()) it->second[at - it->first] = w.bytes[k];
    }
  }

  std::map<uint64_t, std::string> segments_;
  std::vector<PythonImage::Write> writes_;
  size_t next_write_ = 0;
  uint32_t reads_ = 0;
  std::vector<std::pair<uint64_t, uint64_t>>* log_;
};

template <typename T>
bool take(std::string_view* in, T* out) {
  if (in->size() < sizeof(T)) return false;
  std::memcpy(out, in->data(), sizeof(T));
  in->remove_prefix(sizeof(T));
  return true;
}

}  // namespace

sample::PythonSymbols python_image_symbols() {
  sample::PythonSymbols s;
  s.runtime = kRuntime;
  s.code_type = kCodeType;
  s.eval_start = 0x560000030000ull;
  s.eval_end = 0x560000031000ull;
  s.version = "3.11.2";
  return s;
}

PythonImageLayout realistic_python_image_layout() {
  PythonImageLayout layout;
  layout.chunk = kChunk;
  for (int i = 0; i < 3; ++i)
    layout.frames[i] = kChunk + L.chunk_data + static_cast<uint64_t>(i) * kFrameStride;
  return layout;
}

PythonImage realistic_python_image(uint32_t tid) {
  PythonImage image;
  image.tid = tid;
  const PythonImageLayout layout = realistic_python_image_layout();
  std::string runtime;
  put<uint64_t>(&runtime, L.runtime_interpreters_head, kInterp);
  image.segments[kRuntime] = runtime;
  std::string interp;
  put<uint64_t>(&interp, L.interp_threads_head, kTstate);
  image.segments[kInterp] = interp;
  const uint64_t used = 3 * kFrameStride;
  std::string tstate(1024, '\0');
  put<uint64_t>(&tstate, L.tstate_next, 0);
  put<uint64_t>(&tstate, L.tstate_native_thread_id, tid);
  put<uint64_t>(&tstate, L.tstate_cframe, kCframe);
  put<uint64_t>(&tstate, L.tstate_datastack_chunk, kChunk);
  put<uint64_t>(&tstate, L.tstate_datastack_top, kChunk + L.chunk_data + used);
  image.segments[kTstate] = tstate;
  std::string cframe(64, '\0');
  put<uint64_t>(&cframe, L.cframe_current_frame, layout.frames[2]);
  image.segments[kCframe] = cframe;

  const CodeSpec codes[3] = {
      {"<module>", 1, line_entry(2, 1), 1},                   // line 2
      {"middle", 5, line_entry(1, 1) + line_entry(3, 1), 2},  // line 7
      {"inner", 10, line_entry(2, 1) + line_entry(4, 1), 3},  // line 12
  };
  const uint64_t file = kObjects;
  image.segments[file] = ascii_object("main.py");
  std::string chunk(kChunkBytes, '\0');
  put<uint64_t>(&chunk, L.chunk_previous, 0);
  put<uint64_t>(&chunk, L.chunk_size, kChunkBytes);
  put<uint64_t>(&chunk, L.chunk_top, used / 8);
  for (int i = 0; i < 3; ++i) {
    const uint64_t code = kCodes + static_cast<uint64_t>(i) * 0x1000;
    const uint64_t name = kObjects + static_cast<uint64_t>(i + 1) * 0x1000, table = name + 0x800;
    std::string c(L.code_adaptive + 64, '\0');
    put<uint64_t>(&c, L.object_type, kCodeType);
    put<uint64_t>(&c, L.code_name, name);
    put<uint64_t>(&c, L.code_qualname, name);
    put<uint64_t>(&c, L.code_filename, file);
    put<uint64_t>(&c, L.code_linetable, table);
    put<int32_t>(&c, L.code_firstlineno, codes[i].first_line);
    image.segments[code] = c;
    image.segments[name] = ascii_object(codes[i].name);
    image.segments[table] = bytes_object(codes[i].linetable);
    const size_t at = static_cast<size_t>(layout.frames[i] - kChunk);
    put<uint64_t>(&chunk, at + L.frame_code, code);
    put<uint64_t>(&chunk, at + L.frame_previous, i == 0 ? 0 : layout.frames[i - 1]);
    put<uint64_t>(&chunk, at + L.frame_prev_instr,
                  code + L.code_adaptive + 2 * static_cast<uint64_t>(codes[i].unit));
    put<uint8_t>(&chunk, at + L.frame_is_entry, i == 0 ? 1 : 0);
    put<int8_t>(&chunk, at + L.frame_owner, static_cast<int8_t>(L.frame_owned_by_thread));
  }
  image.segments[kChunk] = chunk;
  return image;
}

std::unique_ptr<sample::ProcessMemory> image_memory(const PythonImage& image,
                                                    std::vector<std::pair<uint64_t, uint64_t>>* reads) {
  return std::make_unique<ImageMemory>(image, reads);
}

std::string encode_python_image(const PythonImage& image) {
  std::string out;
  auto append = [&](auto value) { out.append(reinterpret_cast<const char*>(&value), sizeof(value)); };
  append(image.tid);
  append(static_cast<uint8_t>((image.per_frame_reads ? 1 : 0) |
                              ((std::clamp<uint32_t>(image.stack_reads, 1, 8) - 1) << 1)));
  auto item = [&](uint8_t kind, uint64_t address, const std::string& bytes) {
    const std::string piece = bytes.substr(0, 0xFFFF);  // u16 lengths
    append(kind);
    append(address);
    append(static_cast<uint16_t>(piece.size()));
    out += piece;
  };
  for (const auto& [address, bytes] : image.segments) item(0, address, bytes);
  for (const auto& w : image.writes)
    item(static_cast<uint8_t>(1 + 2 * std::min<uint32_t>(w.after_reads, 127)), w.address, w.bytes);
  return out;
}

PythonImage decode_python_image(std::string_view in) {
  PythonImage image;
  uint8_t flags = 0;
  if (!take(&in, &image.tid) || !take(&in, &flags)) return image;
  image.per_frame_reads = flags & 1;
  image.stack_reads = 1 + ((flags >> 1) & 7);
  for (;;) {
    uint8_t kind = 0;
    uint64_t address = 0;
    uint16_t length = 0;
    if (!take(&in, &kind) || !take(&in, &address) || !take(&in, &length)) break;
    std::string bytes(in.substr(0, length));
    in.remove_prefix(bytes.size());
    if (kind % 2 == 0) {
      image.segments[address] = std::move(bytes);
    } else {
      image.writes.push_back({static_cast<uint32_t>(kind / 2), address, bytes});
    }
  }
  return image;
}

bool python_layout_built() { return L.version_major != 0; }

std::vector<std::pair<std::string, PythonImage>> python_reader_seeds() {
  std::vector<std::pair<std::string, PythonImage>> seeds;
  PythonImage image = realistic_python_image();
  image.stack_reads = 2;
  seeds.emplace_back("realistic_three_frames", image);
  image.per_frame_reads = true;
  seeds.emplace_back("realistic_three_frames_per_frame", image);
  image.per_frame_reads = false;
  const uint64_t previous = realistic_python_image_layout().frames[0] + L.frame_previous;
  auto chunk = image.segments.find(kChunk);
  const uint64_t torn = ~uint64_t{0};
  std::memcpy(chunk->second.data() + (previous - kChunk), &torn, 8);
  seeds.emplace_back("torn_previous_all_ones", image);
  // The same tear landing between two reads: after the thread state, before the chunk copy.
  PythonImage later = realistic_python_image();
  later.stack_reads = 2;
  later.writes.push_back({3, previous, std::string(8, '\xff')});
  seeds.emplace_back("torn_previous_between_reads", later);
  return seeds;
}

void run_python_reader(std::string_view bytes) {
  if (L.version_major == 0) return;  // built without CPython's headers: no layout to read with
  const PythonImage image = decode_python_image(bytes);
  auto reader = sample::PythonReader::for_memory(image_memory(image), python_image_symbols());
  reader->set_frame_reads(image.per_frame_reads ? sample::PyFrameReads::kPerFrame
                                                : sample::PyFrameReads::kChunked);
  std::vector<sample::PyFrameRef> frames;
  for (uint32_t k = 0; k < image.stack_reads; ++k) {
    reader->read_stack(image.tid, &frames);
    if (frames.size() > 512) __builtin_trap();  // the reader's depth bound
    for (const sample::PyFrameRef& f : frames) {
      if (f.code == nullptr) __builtin_trap();
      // Names are text (escaped later, but never invalid UTF-8 from here).
      if (!core::is_valid_utf8(f.code->function) || !core::is_valid_utf8(f.code->file)) __builtin_trap();
    }
  }
}

}  // namespace strata::fuzz

// Event encoding inside per-thread buffers (producer: any traced thread; consumer: the writer).
//
// Every event starts with a header slot {ts, word}. A static begin's word is a SourceLocation
// pointer (tag 0, since locations are 16-aligned). Other events put a tag in the low 4 bits and,
// when they carry more data, the number of extra slots in bits 4..19 and an event-specific value in
// bits 32..63. Extra slots hold ids, values and string bytes. An event never straddles two blocks.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#include "core/activity_type.h"
#include "strata/detail/hot_path.h"

namespace strata::collect {

using detail::Slot;

enum EventTag : uint64_t {
  kTagBeginStatic = 0,
  kTagEnd = detail::kTagEnd,  // ends the innermost static span of the thread
  kTagBegin = 2,              // extra: {span id, 0} + name; aux: level | name_len << 8 | activity << 24
  kTagEndId = 3,              // extra: {span id, 0}
  kTagAttr = 4,               // ts slot holds the value; extra: {span id, AttrType | value_len<<8} + key + string value
  kTagInstant = 5,            // extra: name; aux: level | name_len << 8
  kTagCounter = 6,            // ts, extra: {value bits, 0} + name; aux: name_len
  kTagComplete = 7,           // a whole span from a collector: extra: SpanRecord(4 slots) + name + attrs
  kTagThreadName = 8,         // extra: name; aux: name_len
  kTagEndDeferred = 9,        // ends written late for lack of space: extra: n x {ticks, span id (0: static)};
                              // aux: static ends beyond the list, closed unfinished at the head's ticks
};

inline constexpr uint64_t event_word(uint64_t tag, uint32_t extra_slots, uint32_t aux) {
  return tag | (uint64_t{extra_slots} << 4) | (uint64_t{aux} << 32);
}
inline constexpr uint64_t tag_of(uint64_t word) { return word & 0xF; }
inline constexpr uint32_t extra_of(uint64_t word) { return static_cast<uint32_t>((word >> 4) & 0xFFFF); }
inline constexpr uint32_t aux_of(uint64_t word) { return static_cast<uint32_t>(word >> 32); }

// A begin's or instant's aux word: level (bits 0-7), name length (8-23), ActivityType (24-31).
inline constexpr uint32_t begin_aux(int level, size_t name_len, ActivityType activity) {
  return static_cast<uint32_t>(level & 0xFF) | static_cast<uint32_t>(name_len & 0xFFFF) << 8 |
         static_cast<uint32_t>(activity) << 24;
}
inline constexpr uint32_t aux_name_len(uint32_t aux) { return (aux >> 8) & 0xFFFF; }

inline constexpr uint32_t slots_for_bytes(size_t n) { return static_cast<uint32_t>((n + sizeof(Slot) - 1) / sizeof(Slot)); }

// Longest string carried in one event; longer names are cut (and counted).
inline constexpr size_t kMaxEventString = 4096;
static_assert(kMaxEventString <= 0xFFFF, "name lengths travel in 16 bits of an event's aux word");

}  // namespace strata::collect

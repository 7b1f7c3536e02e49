#include "gpu/span_sink.h"

namespace strata::gpu {

void SessionSink::emit(const SpanRecord& record, std::string_view name,
                       std::span<const collect::AttrDraft> attrs) {
  collect::Session* session = collect::current_session();
  if (session == nullptr) {
    ++lost_;
    return;
  }
  session->emit_complete(record, name, attrs);
}

uint64_t SessionSink::current_api_span() {
  collect::Session* session = collect::current_session();
  return session != nullptr ? session->current_api_span() : 0;
}

}  // namespace strata::gpu

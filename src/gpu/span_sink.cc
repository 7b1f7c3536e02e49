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

void SessionSink::report_drops(std::string_view cause, uint64_t total) {
  if (collect::Session* session = collect::current_session()) session->set_collector_drops(cause, total);
}

void SessionSink::report_property(std::string_view key, std::string_view value) {
  if (collect::Session* session = collect::current_session()) session->set_collector_property(key, value);
}

}  // namespace strata::gpu

// NVTX-annotated program (no GPU needed): push/pop ranges, start/end ranges across threads, a
// domain with a registered string and payloads, marks. Run it under
//   strata record --level layer -o nvtx.strata -- build/bin/nvtx_demo
// and every range becomes a layer span, every mark an instant.
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <thread>

static void work(int n) {
  volatile double x = 0;
  for (int i = 0; i < n; ++i) x = x + i * 0.5;
}

int main() {
  nvtxRangePushA("model.forward");
  for (int layer = 0; layer < 3; ++layer) {
    char name[32];
    std::snprintf(name, sizeof(name), "layer%d", layer);
    nvtxRangePushA(name);
    work(100000);
    // Named as PyTorch's emit_nvtx names an op call: the span is "aten::relu" with the details as
    // attributes (core/torch_nvtx_names.h).
    char op[128];
    std::snprintf(op, sizeof(op),
                  "aten::relu, seq = %d, op_id = %d, sizes = [[8, 64], []], input_op_ids = [(0,-1)]",
                  10 + layer, 20 + layer);
    nvtxRangePushA(op);
    work(10000);
    nvtxRangePop();
    nvtxRangePop();
  }
  nvtxMarkA("checkpoint");

  nvtxDomainHandle_t domain = nvtxDomainCreateA("demo.domain");
  nvtxStringHandle_t registered = nvtxDomainRegisterStringA(domain, "registered.range");
  nvtxEventAttributes_t attr = {};
  attr.version = NVTX_VERSION;
  attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attr.category = 7;
  attr.payloadType = NVTX_PAYLOAD_TYPE_INT64;
  attr.payload.llValue = 42;
  attr.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  attr.message.registered = registered;
  nvtxDomainRangePushEx(domain, &attr);
  work(50000);
  nvtxDomainRangePop(domain);

  // A start/end range that ends on another thread.
  nvtxRangeId_t id = nvtxRangeStartA("async.range");
  std::thread t([id] {
    work(50000);
    nvtxRangeEnd(id);
  });
  t.join();
  nvtxRangePop();  // model.forward
  nvtxRangePop();  // unmatched on purpose: counted, reported on stderr
  nvtxDomainDestroy(domain);
  std::puts("nvtx_demo done");
  return 0;
}

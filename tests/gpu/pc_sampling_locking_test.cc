// PC sampling's locking through the seam: CUPTI may serialize cuptiPCSamplingGetData against its own
// resource callbacks, so the sampler must never hold its lock into a CUPTI call. A thread-safe fake
// whose GetData can be made to wait for another thread's callback checks: no deadlock (every wait in
// the fake is bounded; a wait that runs out fails the test instead of hanging it), a context destroyed
// during a poll, polls after a destroy (CUPTI is never asked about a disabled context), and many
// contexts created, polled and destroyed from several threads, with the samples written checked
// against the sum the fake handed out. No timing is asserted: the bounds only turn a hang into a failure.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "core/attr_keys.h"
#include "fake_cupti.h"
#include "gpu/cupti_interface.h"
#include "gpu/pc_sampler.h"

namespace strata::gpu {
namespace {

using testing::RecordingSink;

constexpr auto kBound = std::chrono::seconds(10);  // far above any real wait: reaching it is the failure
constexpr uint32_t kReason = 7;
constexpr uint32_t kPerFetch = 1;     // samples in the one PC each GetData hands over
constexpr uint32_t kAtDisable = 5;    // samples CUPTI still holds at disable
const char kKernel[] = "_Z6kernelv";  // CUPTI's names are shared strings that outlive the sampler

// A one-shot flag a thread can wait on with a bound.
class Signal {
 public:
  void set() {
    std::lock_guard<std::mutex> lock(mu_);
    set_ = true;
    cv_.notify_all();
  }
  bool wait() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kBound, [this] { return set_; });
  }
  bool is_set() {
    std::lock_guard<std::mutex> lock(mu_);
    return set_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool set_ = false;
};

// Each GetData hands over one PC of kPerFetch samples; disable copies kAtDisable more into the
// configured buffer. Counts what it handed out and every call made on a context after its disable.
class ThreadedFake : public PcSamplingInterface {
 public:
  // Runs inside GetData before the buffer is filled, without the fake's lock (it may block).
  std::function<void(CUcontext)> before_get_data;

  CUptiResult cupti_version(uint32_t* v) override {
    *v = CUPTI_API_VERSION;
    return CUPTI_SUCCESS;
  }
  CUptiResult device_id(CUcontext, uint32_t* device) override {
    *device = 0;
    return CUPTI_SUCCESS;
  }
  CUptiResult enable(CUcontext context) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++contexts_[context].enables;
    return CUPTI_SUCCESS;
  }
  CUptiResult disable(CUcontext context) override {
    std::lock_guard<std::mutex> lock(mu_);
    PerContext& c = contexts_[context];
    ++c.disables;
    c.disabled = true;
    if (c.final_buffer != nullptr) {
      fill(c.final_buffer, context, kAtDisable);
      handed_out_ += kAtDisable;
    }
    return CUPTI_SUCCESS;
  }
  CUptiResult num_stall_reasons(CUcontext, size_t* count) override {
    *count = 1;
    return CUPTI_SUCCESS;
  }
  CUptiResult stall_reasons(CUcontext, size_t, uint32_t* indices, char** names) override {
    indices[0] = kReason;
    std::snprintf(names[0], CUPTI_STALL_REASON_STRING_SIZE, "smsp__pcsamp_warps_issue_stalled_wait");
    return CUPTI_SUCCESS;
  }
  CUptiResult set_configuration(CUcontext context, CUpti_PCSamplingConfigurationInfo* info,
                                size_t count) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < count; ++i)
      if (info[i].attributeType == CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER)
        contexts_[context].final_buffer = static_cast<CUpti_PCSamplingData*>(
            info[i].attributeData.samplingDataBufferData.samplingDataBuffer);
    return CUPTI_SUCCESS;
  }
  CUptiResult get_configuration(CUcontext, CUpti_PCSamplingConfigurationInfo*, size_t) override {
    return CUPTI_ERROR_NOT_SUPPORTED;  // the period stays unknown: sampling goes on
  }
  CUptiResult get_data(CUcontext context, CUpti_PCSamplingData* data) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (contexts_[context].disabled) ++calls_after_disable_;
    }
    if (before_get_data) before_get_data(context);
    std::lock_guard<std::mutex> lock(mu_);
    if (contexts_[context].disabled) return CUPTI_ERROR_INVALID_CONTEXT;  // what a gone context gives
    fill(data, context, kPerFetch);
    handed_out_ += kPerFetch;
    return CUPTI_SUCCESS;
  }
  CUptiResult cubin_crc(const void*, size_t size, uint64_t* crc) override {
    *crc = size;
    return CUPTI_SUCCESS;
  }
  CUptiResult source_line(const void*, size_t, const char*, uint64_t, std::string*, uint32_t*) override {
    return CUPTI_ERROR_UNKNOWN;
  }
  const char* result_string(CUptiResult) override { return "fake CUPTI error"; }

  uint64_t handed_out() {
    std::lock_guard<std::mutex> lock(mu_);
    return handed_out_;
  }
  int calls_after_disable() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_after_disable_;
  }
  int disables(CUcontext context) {
    std::lock_guard<std::mutex> lock(mu_);
    return contexts_[context].disables;
  }

 private:
  struct PerContext {
    int enables = 0;
    int disables = 0;
    bool disabled = false;
    CUpti_PCSamplingData* final_buffer = nullptr;
  };
  // One PC per context (its CRC is the context's handle), `samples` of them stalled on kReason.
  static void fill(CUpti_PCSamplingData* data, CUcontext context, uint32_t samples) {
    data->totalNumPcs = 1;
    data->remainingNumPcs = 0;
    data->totalSamples = samples;
    CUpti_PCSamplingPCData& pc = data->pPcData[0];
    pc.cubinCrc = reinterpret_cast<uint64_t>(context);
    pc.pcOffset = 0x10;
    pc.functionName = const_cast<char*>(kKernel);
    pc.stallReasonCount = 1;
    pc.stallReason[0] = CUpti_PCSamplingStallReason{kReason, samples};
  }

  std::mutex mu_;
  std::map<CUcontext, PerContext> contexts_;
  uint64_t handed_out_ = 0;
  int calls_after_disable_ = 0;
};

CUcontext context_handle(uintptr_t n) { return reinterpret_cast<CUcontext>(0x1000 + n * 0x10); }

uint64_t written_samples(const RecordingSink& sink) {
  uint64_t sum = 0;
  for (const auto& s : sink.spans) sum += static_cast<uint64_t>(s.int_attr(attr_keys::kPcSamples));
  return sum;
}

PcSamplingOptions options(std::chrono::milliseconds retire_wait = kBound * 2) {
  PcSamplingOptions o;
  o.mode = PcSamplingMode::kContinuous;
  o.pcs_per_collection = 4;
  o.final_buffer_pcs = 4;
  o.quiet = true;
  o.retire_wait = std::chrono::duration_cast<std::chrono::milliseconds>(retire_wait);
  return o;
}

// The deadlock the old locking had: the poll thread's GetData waits (inside CUPTI) for resource
// callbacks on another thread; those callbacks must run to the end without waiting on the poller.
TEST(PcSamplingLocking, GetDataWaitingForCallbacksOnAnotherThreadDoesNotDeadlock) {
  ThreadedFake fake;
  RecordingSink sink;
  PcSampler sampler(&fake, &sink, options());
  const CUcontext polled = context_handle(1), other = context_handle(2);
  sampler.on_context_created(polled);
  Signal in_get_data, callbacks_done;
  std::atomic<bool> get_data_gave_up{false};
  fake.before_get_data = [&](CUcontext c) {
    if (c != polled || callbacks_done.is_set()) return;
    in_get_data.set();
    if (!callbacks_done.wait()) get_data_gave_up = true;
  };
  std::thread poller([&] { sampler.collect_all(); });
  ASSERT_TRUE(in_get_data.wait());
  std::thread callbacks([&] {
    sampler.on_context_created(other);
    std::vector<char> cubin(32, 1);
    CUpti_ModuleResourceData module{1, cubin.size(), cubin.data()};
    sampler.on_module_loaded(&module);
    sampler.on_module_unloading();  // fetches `other`; asks the poller to fetch `polled` once more
    sampler.on_context_destroying(other);
    callbacks_done.set();
  });
  callbacks.join();
  poller.join();
  EXPECT_FALSE(get_data_gave_up) << "the callbacks waited for the poller: deadlock";
  sampler.finish();
  EXPECT_EQ(fake.calls_after_disable(), 0);
  EXPECT_EQ(fake.disables(polled), 1);
  EXPECT_EQ(fake.disables(other), 1);
  EXPECT_EQ(sampler.stats().fetches_skipped_busy, 1u);
  EXPECT_EQ(written_samples(sink), fake.handed_out());
}

// A destroy while a poll of that context is in flight waits for the poll, then fetches the rest and
// disables: CUPTI sees no GetData on it after the disable and nothing either fetched is lost.
TEST(PcSamplingLocking, DestroyDuringAPollWaitsForItThenDisables) {
  ThreadedFake fake;
  RecordingSink sink;
  PcSampler sampler(&fake, &sink, options());
  const CUcontext context = context_handle(1);
  sampler.on_context_created(context);
  Signal in_get_data, release;
  std::atomic<bool> gave_up{false};
  fake.before_get_data = [&](CUcontext) {
    if (in_get_data.is_set()) return;
    in_get_data.set();
    if (!release.wait()) gave_up = true;
  };
  std::thread poller([&] { sampler.collect_all(); });
  ASSERT_TRUE(in_get_data.wait());
  std::thread destroyer([&] { sampler.on_context_destroying(context); });
  release.set();
  destroyer.join();
  poller.join();
  EXPECT_FALSE(gave_up);
  EXPECT_EQ(fake.disables(context), 1);
  EXPECT_EQ(fake.calls_after_disable(), 0);
  sampler.collect_all();  // a poll after the destroy asks CUPTI nothing about the context
  sampler.finish();
  EXPECT_EQ(fake.calls_after_disable(), 0);
  EXPECT_EQ(fake.disables(context), 1);
  EXPECT_EQ(sampler.stats().retire_wait_timeouts, 0u);
  EXPECT_EQ(written_samples(sink), fake.handed_out());
  EXPECT_EQ(written_samples(sink), 2 * kPerFetch + kAtDisable);  // the poll's, the destroy's, disable's
}

// If CUPTI holds the poller's GetData until the destroy callback has returned, waiting for the poll
// would hang both: the destroy stops waiting after retire_wait, fetches into its own buffer and
// disables; the poller's late data is still absorbed.
TEST(PcSamplingLocking, DestroyStopsWaitingForAPollThatWaitsForIt) {
  ThreadedFake fake;
  RecordingSink sink;
  PcSampler sampler(&fake, &sink, options(std::chrono::milliseconds(20)));
  const CUcontext context = context_handle(1);
  sampler.on_context_created(context);
  Signal in_get_data, destroy_returned;
  std::atomic<bool> gave_up{false};
  fake.before_get_data = [&](CUcontext) {
    if (in_get_data.is_set()) return;
    in_get_data.set();
    if (!destroy_returned.wait()) gave_up = true;
  };
  std::thread poller([&] { sampler.collect_all(); });
  ASSERT_TRUE(in_get_data.wait());
  std::thread destroyer([&] {
    sampler.on_context_destroying(context);
    destroy_returned.set();
  });
  destroyer.join();
  poller.join();
  EXPECT_FALSE(gave_up) << "the destroy callback waited for the poll without a bound";
  EXPECT_EQ(sampler.stats().retire_wait_timeouts, 1u);
  sampler.finish();
  EXPECT_EQ(fake.disables(context), 1);
  EXPECT_EQ(written_samples(sink), fake.handed_out());
  EXPECT_EQ(sink.properties.at("pc_sampling.retire_wait_timeouts"), "1");
}

// Many contexts created and destroyed from several threads while a poller runs: each is enabled and
// disabled exactly once, never fetched after its disable, and every sample handed out is written.
TEST(PcSamplingLocking, ManyContextsFromManyThreads) {
  ThreadedFake fake;
  RecordingSink sink;
  PcSampler sampler(&fake, &sink, options());
  constexpr int kThreads = 4, kPerThread = 16;
  std::atomic<bool> stop{false};
  std::thread poller([&] {
    while (!stop) sampler.collect_all();
  });
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t)
    workers.emplace_back([&sampler, t] {
      for (int i = 0; i < kPerThread; ++i) {
        CUcontext c = context_handle(static_cast<uintptr_t>(t * kPerThread + i));
        sampler.on_context_created(c);
        sampler.on_module_unloading();
        if (i % 2 == 0) sampler.on_context_destroying(c);  // the rest are retired by finish()
      }
    });
  for (auto& w : workers) w.join();
  stop = true;
  poller.join();
  sampler.finish();
  sampler.collect_all();  // after finish: nothing
  EXPECT_EQ(fake.calls_after_disable(), 0);
  for (int n = 0; n < kThreads * kPerThread; ++n)
    EXPECT_EQ(fake.disables(context_handle(static_cast<uintptr_t>(n))), 1) << n;
  EXPECT_EQ(sampler.stats().contexts_enabled, static_cast<uint64_t>(kThreads * kPerThread));
  EXPECT_EQ(sampler.stats().retire_wait_timeouts, 0u);
  EXPECT_EQ(written_samples(sink), fake.handed_out());
}

}  // namespace
}  // namespace strata::gpu

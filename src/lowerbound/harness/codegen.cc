#include "lowerbound/harness/codegen.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "lowerbound/harness/bench_runner.h"

namespace strata::lowerbound {

extern const EmbeddedFile kEmbeddedFiles[];
extern const size_t kEmbeddedFileCount;

namespace {

std::string ints(const std::vector<int64_t>& v) {
  std::string out = "{";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + "}";
}

}  // namespace

std::string cpp_string_literal(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\' || c == '?') {
      // '?' too: "??=" in a literal reads as a trigraph to GCC's -Wtrigraphs (an error under -Werror).
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      // Every other control character (CR, ESC, ...) as a 3-digit octal escape, which, unlike \x,
      // never swallows a following hex digit.
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\%03o", u);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

namespace {

std::string quoted(const std::string& s) { return cpp_string_literal(s); }

// A generated file in `dir`: created or truncated, never through a link planted at its name.
bool write_file_in(const std::string& dir, const std::string& name, std::string_view text,
                   std::string* error) {
  const std::string path = dir + "/" + name;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  bool ok = fd >= 0;
  for (size_t done = 0; ok && done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<size_t>(n);
  }
  if (fd >= 0 && ::close(fd) != 0) ok = false;
  if (!ok)
    *error = path + ": cannot write (" + std::strerror(errno) +
             "; check the directory's permissions and free space)";
  return ok;
}

constexpr std::string_view kCpuMain = R"(
static void run_case(benchmark::State& state, const BenchCase* c) {
  strata::lowerbound::onednn::Prepared prepared;  // setup: not timed
  std::string why;
  if (!strata::lowerbound::onednn::prepare(*c, &prepared, &why)) {
    state.SkipWithError(why.c_str());
    return;
  }
  state.SetLabel(prepared.implementation);
  for (auto _ : state) prepared.run();
}
)";

constexpr std::string_view kCudaMain = R"(
static void run_case(benchmark::State& state, const BenchCase* c) {
  strata::lowerbound::cuda::Prepared prepared;  // setup: not timed
  std::string why;
  if (!strata::lowerbound::cuda::prepare(*c, &prepared, &why)) {
    state.SkipWithError(why.c_str());
    return;
  }
  state.SetLabel(prepared.implementation);
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  for (auto _ : state) {
    cudaEventRecord(start);
    if (!prepared.launch()) {  // rejected at run time: nothing ran, so there is nothing to time
      state.SkipWithError(prepared.error.c_str());
      break;
    }
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    state.SetIterationTime(ms / 1e3);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
}
)";

// oneDNN is found directly rather than through its CMake package config: a oneDNN built with the
// OpenCL GPU runtime (Debian's libdnnl-dev) makes that config require OpenCL, which CPU benchmarks
// never use, so configuring would fail on a machine without OpenCL headers.
constexpr std::string_view kCpuCmake =
    R"(# oneDNN without its package config (which may require OpenCL); elsewhere: -DDNNL_ROOT=<prefix>
find_library(DNNL_LIBRARY NAMES dnnl HINTS ${DNNL_ROOT} $ENV{DNNLROOT} PATH_SUFFIXES lib lib64 REQUIRED)
find_path(DNNL_INCLUDE_DIR dnnl.hpp HINTS ${DNNL_ROOT} $ENV{DNNLROOT} PATH_SUFFIXES include REQUIRED)
add_executable(layer_benchmarks benchmarks.cc)
target_include_directories(layer_benchmarks SYSTEM PRIVATE ${DNNL_INCLUDE_DIR})
target_link_libraries(layer_benchmarks PRIVATE benchmark::benchmark ${DNNL_LIBRARY})
)";

}  // namespace

std::string case_initializer(const BenchCase& c) {
  std::string src = "{";
  for (size_t i = 0; i < c.src.size(); ++i) src += (i ? ", " : "") + ints(c.src[i]);
  src += "}";
  return "BenchCase{.op = " + quoted(c.op) + ", .algorithm = " + quoted(c.algorithm) +
         ", .dtype = " + quoted(c.dtype) + ", .layout = " + quoted(c.layout) + ", .src = " + src +
         ", .dst = " + ints(c.dst) + ", .weights = " + ints(c.weights) + ", .kernel = " + ints(c.kernel) +
         ", .strides = " + ints(c.strides) + ", .pads_begin = " + ints(c.pads_begin) +
         ", .pads_end = " + ints(c.pads_end) + ", .dilations = " + ints(c.dilations) +
         ", .groups = " + std::to_string(c.groups) + ", .bias = " + (c.bias ? "true" : "false") +
         ", .post_op = " + quoted(c.post_op) + ", .axis = " + std::to_string(c.axis) +
         ", .alpha = " + std::to_string(c.alpha) + ", .beta = " + std::to_string(c.beta) +
         ", .signature = " + quoted(c.signature) + "}";
}

bool generate_benchmarks(const std::vector<LayerModel>& models, const BenchOptions& options,
                         const std::string& out_dir, GenerateStats* stats, std::string* error) {
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) {
    *error = out_dir + ": cannot create the directory: " + ec.message();
    return false;
  }
  const GeneratedFileWriter write = [&](const std::string& name, std::string_view text, std::string* why) {
    if (!write_file_in(out_dir, name, text, why)) return false;
    stats->files.push_back(out_dir + "/" + name);
    return true;
  };
  return generate_benchmarks(models, options, write, stats, error);
}

bool generate_benchmarks(const std::vector<LayerModel>& models, const BenchOptions& options,
                         const GeneratedFileWriter& write, GenerateStats* stats, std::string* error) {
  const bool cuda = options.backend == "cuda";
  std::string cases, names;
  for (const WorkItem& item : enumerate_work(models, options)) {
    LayerPlan plan = plan_layer(*item.layer, options.backend, item.dtype, item.layout, item.post_ops);
    if (plan.cost != LayerCost::kBenchmarked) {
      ++stats->unmapped;
      stats->warnings.push_back(item.layer->op_type + " (" + item.layer->name + "): " + plan.why);
      continue;
    }
    for (const BenchCase& c : plan.cases) {
      cases += "    " + case_initializer(c) + ",\n";
      names += "    " +
               quoted(item.layer->name + "/" + c.op + (c.post_op.empty() ? "" : "+" + c.post_op) + "/" +
                      c.algorithm + "/" + c.dtype + "/" + item.layout) +
               ",\n";
      ++stats->benchmarks;
    }
  }
  std::string source =
      "// Generated by `strata bench generate`: one Google Benchmark per (unique layer, algorithm, data "
      "type,\n"
      "// layout). Setup (primitive creation, allocation) happens before the timed loop.\n"
      "#include <benchmark/benchmark.h>\n\n#include <string>\n\n#include \"" +
      std::string(cuda ? "cuda_ops.h" : "onednn_ops.h") +
      "\"\n\nusing strata::lowerbound::BenchCase;\n\nstatic const BenchCase kCases[] = {\n" + cases +
      "};\n\nstatic const char* const kNames[] = {\n" + names + "};\n" +
      std::string(cuda ? kCudaMain : kCpuMain) +
      "\nint main(int argc, char** argv) {\n"
      "  for (size_t i = 0; i < sizeof kCases / sizeof kCases[0]; ++i) {\n"
      "    auto* b = benchmark::RegisterBenchmark(kNames[i], run_case, &kCases[i]);\n"
      "    b->Unit(benchmark::kMicrosecond)->Repetitions(5)->ReportAggregatesOnly(true)" +
      std::string(cuda ? "->UseManualTime()" : "->UseRealTime()") +
      ";\n  }\n  benchmark::Initialize(&argc, argv);\n  benchmark::RunSpecifiedBenchmarks();\n"
      "  benchmark::Shutdown();\n  return 0;\n}\n";
  std::string cmake =
      std::string(
          "# Generated by `strata bench generate`. Build: cmake -S . -B build -G Ninja && ninja -C build\n"
          "cmake_minimum_required(VERSION 3.18)\nproject(strata_layer_benchmarks LANGUAGES CXX)\n"
          "set(CMAKE_CXX_STANDARD 20)\nset(CMAKE_CXX_STANDARD_REQUIRED ON)\n"
          "if(NOT CMAKE_BUILD_TYPE)\n  set(CMAKE_BUILD_TYPE Release)\nendif()\n"
          "find_package(benchmark REQUIRED)\n") +
      (cuda ? "find_package(CUDAToolkit REQUIRED)\nfind_library(CUDNN_LIBRARY cudnn HINTS "
              "${CUDAToolkit_LIBRARY_DIR} REQUIRED)\n"
              "find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS} REQUIRED)\n"
              "add_executable(layer_benchmarks benchmarks.cc)\n"
              "target_include_directories(layer_benchmarks SYSTEM PRIVATE ${CUDNN_INCLUDE_DIR})\n"
              "target_link_libraries(layer_benchmarks PRIVATE benchmark::benchmark CUDA::cudart CUDA::cublas "
              "CUDA::cublasLt ${CUDNN_LIBRARY})\n"
            : std::string(kCpuCmake));
  for (size_t i = 0; i < kEmbeddedFileCount; ++i) {
    const EmbeddedFile& f = kEmbeddedFiles[i];
    const bool wanted =
        f.name == "bench_case.h" || (cuda ? f.name.rfind("cuda_", 0) == 0 : f.name == "onednn_ops.h");
    if (wanted && !write(std::string(f.name), f.text, error)) return false;
  }
  return write("benchmarks.cc", source, error) && write("CMakeLists.txt", cmake, error);
}

}  // namespace strata::lowerbound

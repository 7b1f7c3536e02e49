// Writing an output and saying why it failed. std::ofstream reports that a write failed, never why:
// a full disk came out as "out.csv: write failed". These keep the errno of the first failure, so
// the line names it ("out.csv: write failed: No space left on device").
#pragma once

#include <memory>
#include <ostream>
#include <string>

namespace strata::cli {

class OutputStream {
 public:
  OutputStream();
  ~OutputStream();
  OutputStream(const OutputStream&) = delete;
  OutputStream& operator=(const OutputStream&) = delete;

  // Opens `path` (the temporary file an OutputFile or Output created) for writing; `name` is what
  // error lines call it (the output the user named).
  bool open(const std::string& path, const std::string& name, std::string* error);
  // Standard output, named "stdout" in error lines (a redirection to a full disk, /dev/full, a closed
  // pipe); finish() flushes it and leaves it open.
  void open_stdout();
  std::ostream& stream() { return stream_; }
  // Writes what is buffered and closes the file: false with one line if any write or the close
  // failed. The caller then drops the temporary file instead of moving it into place.
  bool finish(std::string* error);

 private:
  class Buffer;
  std::unique_ptr<Buffer> buffer_;
  std::ostream stream_;
  std::string name_;
};

}  // namespace strata::cli

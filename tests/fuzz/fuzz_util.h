#pragma once
// Helpers shared by the fuzz targets (docs/fuzzing.md): a failed property
// prints what broke and aborts, which libFuzzer and the replay driver
// (replay_main.cc) both report as a crash; a scratch file per process for
// the loaders that only read paths.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace fedrt::fuzz {

[[noreturn]] inline void Fail(const char* what, const std::string& detail = "") {
  std::fprintf(stderr, "fuzz property violated: %s %s\n", what, detail.c_str());
  std::abort();
}

inline void Require(bool ok, const char* what, const std::string& detail = "") {
  if (!ok) Fail(what, detail);
}

// FEDRT_FUZZ_VERBOSE=1 prints every rejection (to see how far a seed gets).
inline bool Verbose() {
  static const bool on = std::getenv("FEDRT_FUZZ_VERBOSE") != nullptr;
  return on;
}

// Every rejection names its reason.
inline void RequireMessage(const char* message, const char* what) {
  if (message == nullptr || message[0] == '\0') Fail(what, "rejected with an empty message");
  if (Verbose()) std::fprintf(stderr, "rejected by %s: %s\n", what, message);
}

// A file in the temporary directory, made once per process (mkstemp) and
// rewritten with each input; removed at exit.
class ScratchFile {
 public:
  explicit ScratchFile(const char* suffix) {
    const char* dir = std::getenv("TMPDIR");
    path_ = std::string(dir != nullptr && dir[0] != '\0' ? dir : "/tmp") + "/fedrt-fuzz-XXXXXX" + suffix;
    std::string tmpl = path_;
    const int fd = mkstemps(tmpl.data(), static_cast<int>(std::string(suffix).size()));
    if (fd < 0) Fail("mkstemps", path_);
    close(fd);
    path_ = tmpl;
  }
  ~ScratchFile() { unlink(path_.c_str()); }
  const std::string& write(const uint8_t* data, size_t size) {
    FILE* f = std::fopen(path_.c_str(), "wb");
    if (f == nullptr || (size > 0 && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0)
      Fail("cannot write the scratch file", path_);
    return path_;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace fedrt::fuzz

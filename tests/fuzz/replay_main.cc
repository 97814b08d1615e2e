// CI replay driver for the fuzz targets (docs/fuzzing.md): feeds every file
// of the directories (or files) named on the command line to
// LLVMFuzzerTestOneInput once, in sorted order, and prints
// "replayed N inputs". Built with g++ by the host presets (the debug preset
// adds ASan and UBSan), so the committed corpora run in every ctest without
// libFuzzer; a property violation aborts, as it does under libFuzzer.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const fs::path p(argv[i]);
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      for (const auto& e : fs::directory_iterator(p))
        if (e.is_regular_file()) files.push_back(e.path());
    } else if (fs::is_regular_file(p, ec)) {
      files.push_back(p);
    } else {
      std::fprintf(stderr, "replay: %s is neither a file nor a directory\n", argv[i]);
      return 2;
    }
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // An exact-size heap block, so ASan sees any read past the input.
    std::vector<uint8_t> input(bytes.begin(), bytes.end());
    static uint8_t empty[1];
    uint8_t* data = input.empty() ? empty : input.data();
    LLVMFuzzerTestOneInput(data, input.size());
  }
  std::printf("replayed %zu inputs\n", files.size());
  return files.empty() ? 1 : 0;
}

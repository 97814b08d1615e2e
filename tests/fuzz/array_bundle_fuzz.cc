// libFuzzer target: the array-bundle reader (runtime/src/problems/array_bundle.cc,
// tests/data/README.md: `NAME NDIM D1 ... DNDIM` headers, then values in
// row-major order), which reads problem files named by an experiment.
// Input: the text, parsed in memory (ArrayBundle::parse). Properties:
// - no out-of-bounds access or undefined behaviour (ASan, UBSan), and no
//   allocation sized by a header's claims beyond what the text holds;
// - every rejection carries a non-empty message;
// - an accepted bundle has finite values matching each shape, and its text()
//   parses to the same arrays, bit for bit.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "fuzz_util.h"
#include "fedrt/problems/array_bundle.h"

using namespace fedrt;
using fedrt::fuzz::Require;
using fedrt::fuzz::RequireMessage;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto bundle = problems::ArrayBundle::parse(text, "fuzz");
  if (!bundle.ok()) {
    RequireMessage(bundle.status().message(), "ArrayBundle::parse");
    return 0;
  }
  const std::string written = bundle->text();
  auto back = problems::ArrayBundle::parse(written, "fuzz-again");
  Require(back.ok(), "text() of a bundle parses", back.ok() ? "" : back.status().message());
  Require(back->names() == bundle->names(), "round trip changed the array names");
  for (const std::string& name : bundle->names()) {
    const problems::NdArray* a = bundle->find(name);
    const problems::NdArray* b = back->find(name);
    size_t n = 1;
    for (size_t e : a->shape) n *= e;
    Require(a->values.size() == n, "values do not match the shape", name);
    for (double v : a->values) Require(std::isfinite(v), "a non-finite value was accepted", name);
    Require(b != nullptr && b->shape == a->shape && b->values.size() == a->values.size() &&
                (a->values.empty() || std::memcmp(a->values.data(), b->values.data(), 8 * a->values.size()) == 0),
            "round trip changed an array", name);
  }
  return 0;
}

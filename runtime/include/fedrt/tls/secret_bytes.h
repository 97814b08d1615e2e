#pragma once
// Key material in the host's memory (PSKs of the registry and of a Linux
// device, docs/tls.md): SecretBytes is a byte vector whose
// storage is overwritten with zeros (mbedtls_platform_zeroize, which the
// compiler may not drop as a dead store) before it goes back to the heap,
// whether the vector is destroyed, reassigned to another size or grown.
// Host code (the firmware keeps its PSK in a fixed buffer of its own).

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

#include <mbedtls/platform_util.h>

namespace fedrt::net {

template <class T>
struct ZeroizingAllocator {
  using value_type = T;
  ZeroizingAllocator() = default;
  template <class U>
  ZeroizingAllocator(const ZeroizingAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T))); }
  void deallocate(T* p, size_t n) {
    mbedtls_platform_zeroize(p, n * sizeof(T));
    if (on_release != nullptr) on_release(p, n * sizeof(T));
    ::operator delete(p);
  }
  // Test hook (tests/net/secret_bytes_test.cc): sees each block after it is
  // zeroized and before it is freed.
  static inline void (*on_release)(const void* p, size_t bytes) = nullptr;
};
template <class T, class U>
bool operator==(const ZeroizingAllocator<T>&, const ZeroizingAllocator<U>&) { return true; }
template <class T, class U>
bool operator!=(const ZeroizingAllocator<T>&, const ZeroizingAllocator<U>&) { return false; }

using SecretBytes = std::vector<uint8_t, ZeroizingAllocator<uint8_t>>;

}  // namespace fedrt::net

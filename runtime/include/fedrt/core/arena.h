#pragma once
// Arena: a caller-owned, fixed-size byte region from which device objects are
// carved at initialisation. There is no free(); create(arena) either fits or
// fails with RESOURCE_EXHAUSTED, and used() reports the bytes consumed.

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "fedrt/core/status.h"

namespace fedrt {

template <class T>
struct Span {
  T* data = nullptr;
  size_t size = 0;
  T& operator[](size_t i) const { return data[i]; }
  T* begin() const { return data; }
  T* end() const { return data + size; }
};

class Arena {
 public:
  // Minimum alignment of every allocation (enough for Eigen's SIMD loads).
  static constexpr size_t kAlignment = 16;

  Arena(void* buffer, size_t capacity)
      : base_(static_cast<uint8_t*>(buffer)), capacity_(capacity) {}
#if defined(FEDRT_HOST)
  // A buffer known to be zero (calloc): only memory handed out before (below
  // the high-water mark) is cleared again, so a host's untouched pages stay
  // unmapped until the object that owns them writes to them. Host builds only
  // (firmware images keep the smaller allocate()).
  Arena(void* buffer, size_t capacity, bool zeroed)
      : base_(static_cast<uint8_t*>(buffer)), capacity_(capacity), zeroed_(zeroed) {}
#endif
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  // Allocates `count` zero-initialised objects of trivially-copyable type T.
  template <class T>
  Result<Span<T>> allocate(size_t count) {
    static_assert(alignof(T) <= 64, "over-aligned type");
    const size_t align = alignof(T) > kAlignment ? alignof(T) : kAlignment;
    const uintptr_t start = reinterpret_cast<uintptr_t>(base_) + used_;
    const uintptr_t aligned = (start + align - 1) & ~(uintptr_t(align) - 1);
    const size_t offset = static_cast<size_t>(aligned - reinterpret_cast<uintptr_t>(base_));
    if (count > (SIZE_MAX / sizeof(T))) return Status::ResourceExhausted("arena: allocation size overflows");
    const size_t bytes = count * sizeof(T);
    if (offset > capacity_ || bytes > capacity_ - offset) {
      return Status::ResourceExhausted("arena: not enough memory for this configuration");
    }
#if defined(FEDRT_HOST)
    const size_t dirty = !zeroed_ ? bytes : high_water_ <= offset ? 0 : high_water_ - offset < bytes ? high_water_ - offset : bytes;
#else
    const size_t dirty = bytes;
#endif
    used_ = offset + bytes;
    if (used_ > high_water_) high_water_ = used_;
    T* p = reinterpret_cast<T*>(base_ + offset);
    std::memset(static_cast<void*>(p), 0, dirty);
    return Span<T>{p, count};
  }

  size_t used() const { return used_; }
  uint8_t* base() const { return base_; }
  size_t capacity() const { return capacity_; }
  size_t high_water() const { return high_water_; }
  // Marker-based release for scratch memory used only during initialisation.
  size_t mark() const { return used_; }
  void release_to(size_t marker) {
    if (marker <= used_) used_ = marker;
  }

 private:
  uint8_t* base_;
  size_t capacity_;
  size_t used_ = 0;
  size_t high_water_ = 0;
#if defined(FEDRT_HOST)
  bool zeroed_ = false;
#endif
};

// An arena whose storage is a member: sized at compile time.
template <size_t kBytes>
class StaticArena : public Arena {
 public:
  StaticArena() : Arena(storage_, kBytes) {}

 private:
  alignas(64) uint8_t storage_[kBytes];
};

}  // namespace fedrt

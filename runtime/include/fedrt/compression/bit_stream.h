#pragma once
// Bit-level writer and reader over caller-owned byte buffers (LSB-first within
// each byte). Device code: no heap, no exceptions; every access is bounds
// checked, and the reader reports truncation instead of reading past the end.

#include <cstddef>
#include <cstdint>

namespace fedrt::compression {

class BitWriter {
 public:
  BitWriter(uint8_t* buf, size_t capacity) : buf_(buf), cap_bits_(capacity * 8) {}

  // Appends the `width` (<= 32) low bits of `value`, least significant first.
  // Returns false (and writes nothing) when the buffer is full.
  bool put(uint32_t value, unsigned width) {
    if (width > 32 || pos_ + width > cap_bits_) return false;
    for (unsigned i = 0; i < width; ++i) {
      const size_t byte = pos_ >> 3;
      const unsigned bit = static_cast<unsigned>(pos_ & 7);
      if (bit == 0) buf_[byte] = 0;
      if ((value >> i) & 1u) buf_[byte] = static_cast<uint8_t>(buf_[byte] | (1u << bit));
      ++pos_;
    }
    return true;
  }
  size_t bits() const { return pos_; }
  size_t bytes() const { return (pos_ + 7) >> 3; }

 private:
  uint8_t* buf_;
  size_t cap_bits_;
  size_t pos_ = 0;
};

class BitReader {
 public:
  BitReader(const uint8_t* buf, size_t size) : buf_(buf), size_bits_(size * 8) {}

  // Reads `width` (<= 32) bits written by BitWriter::put; false when truncated.
  bool get(unsigned width, uint32_t& value) {
    if (width > 32 || pos_ + width > size_bits_) return false;
    uint32_t v = 0;
    for (unsigned i = 0; i < width; ++i) {
      if ((buf_[pos_ >> 3] >> (pos_ & 7)) & 1u) v |= (1u << i);
      ++pos_;
    }
    value = v;
    return true;
  }
  size_t bits() const { return pos_; }
  size_t remaining() const { return size_bits_ - pos_; }
  // True when the unread bits (the padding of the last byte) are all zero.
  bool rest_is_zero() const {
    for (size_t p = pos_; p < size_bits_; ++p)
      if ((buf_[p >> 3] >> (p & 7)) & 1u) return false;
    return true;
  }

 private:
  const uint8_t* buf_;
  size_t size_bits_;
  size_t pos_ = 0;
};

// Number of bits needed to write the integers 0..n (ceil(log2(n + 1))).
constexpr unsigned BitWidth(uint32_t n) {
  unsigned w = 0;
  while (w < 32 && (n >> w) != 0) ++w;
  return w;
}

}  // namespace fedrt::compression

#pragma once
// LogLine: a fixed-size line builder for firmware logs. Newlib's printf family
// can pull in malloc (stdio buffers), which the firmware must not link, so
// device code formats its few log fields (strings, integers, hex, one float
// style) here. Output is truncated at kCapacity - 1 characters.

#include <cstddef>
#include <cstdint>

namespace fedrt::fw {

class LogLine {
 public:
  static constexpr size_t kCapacity = 192;

  LogLine& add(const char* s) {
    while (s != nullptr && *s != '\0') put(*s++);
    return *this;
  }
  LogLine& add_u(uint64_t v) {
    char tmp[24];
    int n = 0;
    do {
      tmp[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    while (n > 0) put(tmp[--n]);
    return *this;
  }
  LogLine& add_i(int64_t v) {
    if (v < 0) {
      put('-');
      return add_u(static_cast<uint64_t>(-(v + 1)) + 1);
    }
    return add_u(static_cast<uint64_t>(v));
  }
  LogLine& add_hex(uint32_t v) {
    static const char kDigits[] = "0123456789abcdef";
    bool started = false;
    for (int shift = 28; shift >= 0; shift -= 4) {
      const unsigned d = (v >> shift) & 0xFu;
      if (d != 0 || started || shift == 0) {
        put(kDigits[d]);
        started = true;
      }
    }
    return *this;
  }
  // v in scientific notation with 6 significant digits (1.234567e-03 style).
  LogLine& add_float(double v) {
    if (v != v) return add("nan");
    if (v < 0) {
      put('-');
      v = -v;
    }
    if (v > 1.7e308) return add("inf");
    int exp10 = 0;
    if (v != 0.0) {
      while (v >= 10.0) {
        v /= 10.0;
        ++exp10;
      }
      while (v < 1.0) {
        v *= 10.0;
        --exp10;
      }
    }
    uint64_t digits = static_cast<uint64_t>(v * 1e6 + 0.5);  // 7 digits: d.dddddd
    if (digits >= 10000000u) {
      digits /= 10;
      ++exp10;
    }
    put(static_cast<char>('0' + digits / 1000000u));
    put('.');
    char frac[6];
    uint64_t f = digits % 1000000u;
    for (int i = 5; i >= 0; --i) {
      frac[i] = static_cast<char>('0' + f % 10);
      f /= 10;
    }
    for (char c : frac) put(c);
    put('e');
    if (exp10 < 0) {
      put('-');
      exp10 = -exp10;
    } else {
      put('+');
    }
    if (exp10 < 10) put('0');
    return add_u(static_cast<uint64_t>(exp10));
  }
  const char* c_str() const { return buf_; }
  size_t size() const { return n_; }

 private:
  void put(char c) {
    if (n_ + 1 < kCapacity) {
      buf_[n_++] = c;
      buf_[n_] = '\0';
    }
  }
  char buf_[kCapacity] = {0};
  size_t n_ = 0;
};

}  // namespace fedrt::fw

#pragma once
// Minimal check helpers for firmware tests (GoogleTest needs exceptions and
// the heap). A failed check prints file:line and the condition on the console;
// fw_result() prints the tally and is main()'s return value, which QEMU
// returns to ctest through semihosting.

#include <stdint.h>

#include "mps2.h"

static int fw_checks = 0;
static int fw_failures = 0;

static inline void fw_check(bool ok, const char* what, const char* file, int line) {
  ++fw_checks;
  if (ok) return;
  ++fw_failures;
  mps2_puts("FAIL ");
  mps2_puts(file);
  mps2_puts(":");
  mps2_put_i32(line);
  mps2_puts(": ");
  mps2_puts(what);
  mps2_puts("\n");
}

#define FW_CHECK(cond) fw_check((cond), #cond, __FILE__, __LINE__)

// |a - b| <= tol, printing both values when it fails.
static inline void fw_check_near(float a, float b, float tol, const char* what, const char* file, int line) {
  const float diff = a > b ? a - b : b - a;
  const bool ok = diff <= tol;  // false for NaN
  fw_check(ok, what, file, line);
  if (!ok) {
    mps2_puts("  got ");
    mps2_put_f32(a, 7);
    mps2_puts(" want ");
    mps2_put_f32(b, 7);
    mps2_puts("\n");
  }
}
#define FW_CHECK_NEAR(a, b, tol) fw_check_near((a), (b), (tol), #a " ~ " #b, __FILE__, __LINE__)

static inline int fw_result(const char* name) {
  mps2_puts(name);
  mps2_puts(": ");
  mps2_put_i32(fw_checks - fw_failures);
  mps2_puts(" checks passed, ");
  mps2_put_i32(fw_failures);
  mps2_puts(" failed\n");
  return fw_failures == 0 && fw_checks > 0 ? 0 : 1;
}

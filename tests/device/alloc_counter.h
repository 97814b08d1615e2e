#pragma once
// Heap-allocation counter for the device-discipline tests: replaces malloc,
// calloc and realloc (glibc) with versions that count calls. Include it in
// exactly one translation unit of a test program; read g_allocations around
// the code that must not allocate.

#include <cstddef>

extern "C" void* __libc_malloc(size_t);
extern "C" void* __libc_calloc(size_t, size_t);
extern "C" void* __libc_realloc(void*, size_t);

static volatile long g_allocations = 0;

extern "C" void* malloc(size_t n) {
  ++g_allocations;
  return __libc_malloc(n);
}
extern "C" void* calloc(size_t a, size_t b) {
  ++g_allocations;
  return __libc_calloc(a, b);
}
extern "C" void* realloc(void* p, size_t n) {
  ++g_allocations;
  return __libc_realloc(p, n);
}

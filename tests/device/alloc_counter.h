#pragma once
// Heap-allocation counter for the device-discipline tests: replaces malloc,
// calloc and realloc (glibc) with versions that count calls. Include it in
// exactly one translation unit of a test program; read g_allocations around
// the code that must not allocate.

#include <cstddef>

static volatile long g_allocations = 0;

#if defined(FEDRT_ALLOC_COUNTER_WRAP)
// Static glibc (the ARM Linux cross builds, tests/cross): malloc cannot be
// replaced there (libc.a's malloc.o defines it too), so the test links with
// -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc and every call, from libc
// and libstdc++ included, comes here first.
extern "C" void* __real_malloc(size_t);
extern "C" void* __real_calloc(size_t, size_t);
extern "C" void* __real_realloc(void*, size_t);
extern "C" void* __wrap_malloc(size_t n) {
  ++g_allocations;
  return __real_malloc(n);
}
extern "C" void* __wrap_calloc(size_t a, size_t b) {
  ++g_allocations;
  return __real_calloc(a, b);
}
extern "C" void* __wrap_realloc(void* p, size_t n) {
  ++g_allocations;
  return __real_realloc(p, n);
}
#else
extern "C" void* __libc_malloc(size_t);
extern "C" void* __libc_calloc(size_t, size_t);
extern "C" void* __libc_realloc(void*, size_t);

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
#endif

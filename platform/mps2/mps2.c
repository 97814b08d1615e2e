// mps2 platform: CMSDK UART, SysTick time base, semihosting exit, console
// formatting, and the newlib system-call stubs (no heap: _sbrk always fails).

#include "mps2.h"

#include <errno.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

// ---------------------------------------------------------------- UART (CMSDK APB UART)
typedef struct {
  volatile uint32_t data;      // 0x00
  volatile uint32_t state;     // 0x04: bit0 TX full, bit1 RX full
  volatile uint32_t ctrl;      // 0x08: bit0 TX enable, bit1 RX enable
  volatile uint32_t intstatus; // 0x0C
  volatile uint32_t bauddiv;   // 0x10
} CmsdkUart;

static CmsdkUart* const kUarts[kMps2UartCount] = {
    (CmsdkUart*)0x40004000u, (CmsdkUart*)0x40005000u, (CmsdkUart*)0x40006000u,
    (CmsdkUart*)0x40007000u, (CmsdkUart*)0x40009000u,
};

// RX interrupt (external IRQ) of each UART on mps2-an385/an386.
static const uint8_t kUartRxIrq[kMps2UartCount] = {0, 2, 4, 18, 20};
#define NVIC_ISER0 (*(volatile uint32_t*)0xE000E100u)
#define kUartStateRxFull 0x2u
#define kUartCtrlTxRxEnable 0x3u
#define kUartCtrlRxIntEnable 0x8u
#define kUartIntRx 0x2u

void mps2_uart_init(int index) {
  if (index < 0 || index >= kMps2UartCount) return;
  CmsdkUart* u = kUarts[index];
  u->bauddiv = 16;  // the smallest divider the CMSDK UART accepts
  // TX and RX enabled; the RX interrupt only wakes mps2_uart_read's WFI (the
  // handler acknowledges it, the byte stays in the UART for the reader).
  u->ctrl = kUartCtrlTxRxEnable | kUartCtrlRxIntEnable;
  NVIC_ISER0 = 1u << kUartRxIrq[index];
}

// Shared RX interrupt handler (vector table in startup.c): acknowledge.
void mps2_uart_rx_handler(void) {
  for (int i = 0; i < kMps2UartCount; ++i) kUarts[i]->intstatus = kUartIntRx;  // write 1 to clear
}

void mps2_uart_write(int index, const void* data, size_t n) {
  if (index < 0 || index >= kMps2UartCount) return;
  CmsdkUart* u = kUarts[index];
  const uint8_t* p = (const uint8_t*)data;
  for (size_t i = 0; i < n; ++i) {
    while (u->state & 0x1u) {
    }
    u->data = p[i];
  }
}

int mps2_uart_getc(int index) {
  if (index < 0 || index >= kMps2UartCount) return -1;
  CmsdkUart* u = kUarts[index];
  if (!(u->state & kUartStateRxFull)) return -1;
  return (int)(u->data & 0xFFu);
}

// Sleeps until an interrupt: a received byte (RX interrupt) or the next
// SysTick (every MPS2_SYSTICK_PERIOD_TICKS). Interrupts are masked around the
// RX check so a byte arriving between the check and WFI still ends the WFI
// (a pending interrupt wakes WFI even with PRIMASK set); QEMU then idles
// instead of spinning a host core.
static void uart_wait_rx(CmsdkUart* u) {
  __asm volatile("cpsid i" ::: "memory");
  if (!(u->state & kUartStateRxFull)) __asm volatile("dsb\n wfi" ::: "memory");
  __asm volatile("cpsie i\n isb" ::: "memory");
}

size_t mps2_uart_read(int index, void* data, size_t n, uint32_t timeout_ms) {
  if (index < 0 || index >= kMps2UartCount) return 0;
  uint8_t* p = (uint8_t*)data;
  size_t got = 0;
  uint32_t last = mps2_millis();
  while (got < n) {
    const int c = mps2_uart_getc(index);
    if (c >= 0) {
      p[got++] = (uint8_t)c;
      last = mps2_millis();
    } else if ((uint32_t)(mps2_millis() - last) >= timeout_ms) {
      break;
    } else {
      uart_wait_rx(kUarts[index]);
    }
  }
  return got;
}

int mps2_uart_wait(int index, uint32_t timeout_ms) {
  if (index < 0 || index >= kMps2UartCount) return 0;
  CmsdkUart* u = kUarts[index];
  const uint32_t start = mps2_millis();
  while (!(u->state & kUartStateRxFull)) {
    if ((uint32_t)(mps2_millis() - start) >= timeout_ms) return 0;
    uart_wait_rx(u);
  }
  return 1;
}

// ---------------------------------------------------------------- SysTick time base
#define SYST_CSR (*(volatile uint32_t*)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t*)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t*)0xE000E018u)
#define SCB_ICSR (*(volatile uint32_t*)0xE000ED04u)
#define kSysTickReload (MPS2_SYSTICK_PERIOD_TICKS - 1u)
#define kIcsrPendStSet (1u << 26)
#define kCpuHz 25000000u  // mps2 SYSCLK (QEMU: 25 MHz)

static volatile uint32_t g_systick_wraps;

void mps2_systick_handler(void) { ++g_systick_wraps; }

static void systick_start(void) {
  SYST_RVR = kSysTickReload;
  SYST_CVR = 0;
  SYST_CSR = 0x7u;  // processor clock, interrupt on wrap, enabled
  // The cleared counter reads 0 until its first reload; wait for it so the
  // first mps2_ticks() is not taken for the end of a period.
  for (uint32_t i = 0; i < 1000000u && SYST_CVR == 0; ++i) {
  }
}

// ticks = wraps * period + (reload - counter), read with interrupts masked so
// the wrap count cannot change in between. A wrap whose interrupt has not run
// yet (ICSR.PENDSTSET) is counted, and the counter is then read again AFTER
// the pending bit: that read is certainly from after the wrap. Without a
// pending bit, the counter read before the check is certainly from before any
// uncounted wrap. (Guessing pre/post-wrap from the counter's value instead
// fails under QEMU, where the vCPU thread can be descheduled for milliseconds
// between two instructions while the counter follows the host clock.)
// Correct as long as the SysTick handler runs within one period of a wrap.
uint64_t mps2_ticks(void) {
  uint32_t primask;
  __asm volatile("mrs %0, primask\n cpsid i" : "=r"(primask)::"memory");
  uint32_t hi = g_systick_wraps;
  uint32_t lo = SYST_CVR;
  if (SCB_ICSR & kIcsrPendStSet) {
    ++hi;
    lo = SYST_CVR;
  }
  __asm volatile("msr primask, %0" ::"r"(primask) : "memory");
  return (uint64_t)hi * MPS2_SYSTICK_PERIOD_TICKS + (kSysTickReload - lo);
}

uint32_t mps2_ticks_per_second(void) { return kCpuHz; }

uint32_t mps2_millis(void) { return (uint32_t)(mps2_ticks() / (kCpuHz / 1000u)); }

// ---------------------------------------------------------------- semihosting
static int semihost_call(int op, void* arg) {
  register int r0 __asm__("r0") = op;
  register void* r1 __asm__("r1") = arg;
  __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

#define SYS_EXIT_EXTENDED 0x20
#define ADP_Stopped_ApplicationExit 0x20026

void mps2_exit(int code) {
  mps2_report_u32("stack_hwm", mps2_stack_high_water());
  mps2_report_u32("stack_size", mps2_stack_size());
  uint32_t block[2] = {ADP_Stopped_ApplicationExit, (uint32_t)code};
  semihost_call(SYS_EXIT_EXTENDED, block);
  for (;;) {
  }
}

#define SYS_WRITE0 0x04

void mps2_semihost_puts(const char* s) { semihost_call(SYS_WRITE0, (void*)s); }

#define SYS_GET_CMDLINE 0x15

int mps2_cmdline(char* buf, size_t n) {
  if (n == 0) return -1;
  struct {
    char* ptr;
    uint32_t len;
  } block = {buf, (uint32_t)n};
  buf[0] = 0;
  if (semihost_call(SYS_GET_CMDLINE, &block) != 0) return -1;
  if (block.len >= n) return -1;
  buf[block.len] = 0;
  return (int)block.len;
}

int mps2_has_arg(const char* arg) {
  char line[256];
  if (mps2_cmdline(line, sizeof line) < 0) return 0;
  size_t alen = 0;
  while (arg[alen]) ++alen;
  for (char* p = line; *p;) {
    while (*p == ' ') ++p;
    char* start = p;
    while (*p && *p != ' ') ++p;
    if ((size_t)(p - start) == alen) {
      size_t i = 0;
      while (i < alen && start[i] == arg[i]) ++i;
      if (i == alen) return 1;
    }
  }
  return 0;
}

void mps2_panic(const char* msg) {
  mps2_puts("[mps2] panic: ");
  mps2_puts(msg);
  mps2_puts("\n");
  mps2_exit(3);
}

// ---- Stack (the linker script's region, painted by startup.c).
extern uint32_t __stack_limit, __stack_top;

uint32_t mps2_stack_size(void) {
  return (uint32_t)((uintptr_t)&__stack_top - (uintptr_t)&__stack_limit);
}

uint32_t mps2_stack_high_water(void) {
  const uint32_t* p = &__stack_limit;
  while (p < &__stack_top && *p == MPS2_STACK_PAINT) ++p;
  return (uint32_t)((uintptr_t)&__stack_top - (uintptr_t)p);
}

void mps2_platform_init(void) {
  mps2_uart_init(kMps2UartConsole);
  systick_start();
}

// ---------------------------------------------------------------- console
void mps2_puts(const char* s) {
  size_t n = 0;
  while (s[n]) ++n;
  mps2_uart_write(kMps2UartConsole, s, n);
}

void mps2_put_u64(uint64_t v) {
  char buf[21];
  int i = 20;
  buf[i] = 0;
  do {
    buf[--i] = (char)('0' + (int)(v % 10u));
    v /= 10u;
  } while (v);
  mps2_puts(buf + i);
}

void mps2_put_u32(uint32_t v) { mps2_put_u64(v); }

void mps2_put_i32(int32_t v) {
  if (v < 0) {
    mps2_puts("-");
    mps2_put_u64((uint64_t)(-(int64_t)v));
  } else {
    mps2_put_u64((uint64_t)v);
  }
}

void mps2_put_hex32(uint32_t v) {
  char buf[9];
  for (int i = 7; i >= 0; --i) {
    buf[i] = "0123456789abcdef"[v & 0xFu];
    v >>= 4;
  }
  buf[8] = 0;
  mps2_puts(buf);
}

void mps2_put_f32(float v, int decimals) {
  if (v != v) {
    mps2_puts("nan");
    return;
  }
  if (decimals < 0) decimals = 0;
  if (decimals > 9) decimals = 9;
  if (v < 0) {
    mps2_puts("-");
    v = -v;
  }
  if (v > 4.0e9f) {
    mps2_puts("inf-or-huge");
    return;
  }
  uint32_t scale = 1;
  for (int i = 0; i < decimals; ++i) scale *= 10u;
  const uint64_t fixed = (uint64_t)((double)v * scale + 0.5);
  mps2_put_u64(fixed / scale);
  if (decimals > 0) {
    mps2_puts(".");
    uint64_t frac = fixed % scale;
    char buf[10];
    for (int i = decimals - 1; i >= 0; --i) {
      buf[i] = (char)('0' + (int)(frac % 10u));
      frac /= 10u;
    }
    buf[decimals] = 0;
    mps2_puts(buf);
  }
}

void mps2_report_u32(const char* key, uint32_t value) {
  mps2_puts("[mps2] ");
  mps2_puts(key);
  mps2_puts("=");
  mps2_put_u32(value);
  mps2_puts("\n");
}

// ---------------------------------------------------------------- newlib / C++ runtime stubs
// No heap: any malloc reaching _sbrk gets ENOMEM (and the symbol-table test
// fails the build's tests if malloc is linked at all).
void* _sbrk(ptrdiff_t incr) {
  (void)incr;
  errno = ENOMEM;
  return (void*)-1;
}

int _write(int fd, const char* buf, int n) {
  if (fd != 1 && fd != 2) {
    errno = EBADF;
    return -1;
  }
  mps2_uart_write(kMps2UartConsole, buf, (size_t)n);
  return n;
}

int _read(int fd, char* buf, int n) {
  (void)fd, (void)buf, (void)n;
  errno = EBADF;
  return -1;
}
int _close(int fd) { (void)fd; errno = EBADF; return -1; }
int _lseek(int fd, int off, int whence) { (void)fd, (void)off, (void)whence; errno = ESPIPE; return -1; }
int _fstat(int fd, struct stat* st) { (void)fd; st->st_mode = S_IFCHR; return 0; }
int _isatty(int fd) { return fd <= 2; }
int _getpid(void) { return 1; }
int _kill(int pid, int sig) { (void)pid, (void)sig; errno = EINVAL; return -1; }
__attribute__((noreturn)) void _exit(int code) { mps2_exit(code); }

// -nostartfiles drops crti/crtn: __libc_init_array calls _init, exit calls _fini.
void _init(void) {}
void _fini(void) {}

void abort(void) { mps2_panic("abort"); }
void __assert_func(const char* file, int line, const char* func, const char* expr) {
  mps2_puts("[mps2] assertion failed: ");
  mps2_puts(expr);
  mps2_puts(" at ");
  mps2_puts(file);
  mps2_puts(":");
  mps2_put_i32(line);
  mps2_puts(" in ");
  mps2_puts(func ? func : "?");
  mps2_puts("\n");
  mps2_exit(3);
}

// C++ ABI pieces a firmware may reference without libsupc++.
void __cxa_pure_virtual(void) { mps2_panic("pure virtual call"); }
void* __dso_handle = 0;
int __cxa_atexit(void (*f)(void*), void* p, void* d) { (void)f, (void)p, (void)d; return 0; }
int __aeabi_atexit(void* p, void (*f)(void*), void* d) { (void)f, (void)p, (void)d; return 0; }

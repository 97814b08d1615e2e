#pragma once
// fedrt platform layer for Cortex-M on QEMU mps2-an385 (M3) / mps2-an386 (M4F).
// Plain C API (usable from mbedTLS callbacks and C++), no heap, no OS.
// Startup (startup.c) initialises .data/.bss, paints the stack, enables the
// FPU (M4F), starts the tick timer and the console UART, runs main(), reports
// the stack high-water mark and exits QEMU with main's return value through
// semihosting SYS_EXIT_EXTENDED, so ctest sees the firmware's exit code.

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// ---- CMSDK APB UARTs. QEMU maps its n-th -serial option to UART n:
// UART0 = console (stdio under -nographic), UART1 = the link to the coordinator
// (qemu-run.sh --serial1 tcp:HOST:PORT).
enum { kMps2UartConsole = 0, kMps2UartLink = 1, kMps2UartCount = 5 };

// Enables TX and RX of UART `index` (0..4). The console UART is initialised by startup.
void mps2_uart_init(int index);
// Blocking write of n bytes.
void mps2_uart_write(int index, const void* data, size_t n);
// Next received byte (0..255), or -1 when none is waiting. Never blocks.
int mps2_uart_getc(int index);
// Reads up to n bytes; returns when n bytes arrived or when no byte arrived
// for timeout_ms. Returns the number of bytes read (0 on timeout). While no
// byte is waiting the CPU sleeps (WFI) until the UART's RX interrupt or the
// next SysTick, so an idle firmware does not keep QEMU busy.
size_t mps2_uart_read(int index, void* data, size_t n, uint32_t timeout_ms);
// Sleeps (WFI) until a byte is waiting on UART `index` (1) or timeout_ms pass (0).
int mps2_uart_wait(int index, uint32_t timeout_ms);

// ---- Console (UART0): small formatted output without stdio (newlib's printf
// would link malloc).
void mps2_puts(const char* s);                    // no newline added
void mps2_put_u32(uint32_t v);                    // decimal
void mps2_put_i32(int32_t v);                     // decimal
void mps2_put_u64(uint64_t v);                    // decimal
void mps2_put_hex32(uint32_t v);                  // 8 hex digits
void mps2_put_f32(float v, int decimals);         // fixed point, decimals <= 9
// Prints "[mps2] key=value\n", the line scripts/footprint.py and the
// benchmarks parse (e.g. key "tls_heap_hwm" for the TLS heap high-water mark).
void mps2_report_u32(const char* key, uint32_t value);

// ---- Time: SysTick on the CPU clock (25 MHz on mps2) extended to 64 bits by
// its wrap interrupt. Under QEMU -icount shift=0 the virtual clock advances
// 1 ns per instruction, so ticks count instructions (40 per tick at 25 MHz).
// (QEMU 7.2 does not implement the DWT cycle counter: DWT->CYCCNT reads 0.)
// SysTick period: 100 ms at 25 MHz (an interrupt every period, which also
// bounds how long mps2_uart_read sleeps in WFI before checking its timeout).
#define MPS2_SYSTICK_PERIOD_TICKS 2500000u
uint64_t mps2_ticks(void);
uint32_t mps2_ticks_per_second(void);
uint32_t mps2_millis(void);  // ticks / (ticks_per_second / 1000), wraps after 49 days

// ---- Semihosting (QEMU -semihosting-config enable=on,target=native).
// Exits QEMU with `code` (SYS_EXIT_EXTENDED); prints the stack report first.
__attribute__((noreturn)) void mps2_exit(int code);
// Writes a NUL-terminated string to QEMU's stdout through semihosting
// (SYS_WRITE0), independent of the UARTs (e.g. when UART0 is redirected).
void mps2_semihost_puts(const char* s);
// Command line QEMU passes through semihosting (qemu-run.sh: the ELF's name
// and the test arguments, space-separated) into buf (NUL-terminated).
// Returns its length, or -1 if unavailable / longer than n - 1.
int mps2_cmdline(char* buf, size_t n);
// 1 if the whitespace-separated command line contains the word `arg`.
int mps2_has_arg(const char* arg);
// Prints msg on the console and exits with code 3 (used by HardFault, abort, assert).
__attribute__((noreturn)) void mps2_panic(const char* msg);

// ---- Stack: bytes of the stack region ever written. startup.c paints the
// region below its frame with MPS2_STACK_PAINT at reset; mps2.c measures.
#define MPS2_STACK_PAINT 0xC5C5C5C5u
uint32_t mps2_stack_high_water(void);
uint32_t mps2_stack_size(void);

#ifdef __cplusplus
}  // extern "C"
#endif

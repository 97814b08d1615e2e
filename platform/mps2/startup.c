// Reset handler and vector table of fedrt firmware on mps2-an385/an386.
// Compiled into every firmware executable's own sources by
// fedrt_add_firmware() (a vector table behind an OBJECT/INTERFACE library
// gets dropped by --gc-sections).

#include <stdint.h>

#include "mps2.h"

extern uint32_t __data_load, __data_start, __data_end, __bss_start, __bss_end;
extern uint32_t __stack_limit, __stack_top;

int main(void);
void __libc_init_array(void);
void mps2_platform_init(void);     // mps2.c
void mps2_systick_handler(void);   // mps2.c
void mps2_uart_rx_handler(void);   // mps2.c

__attribute__((noreturn)) void Reset_Handler(void);

static void Default_Handler(void) { mps2_panic("unexpected interrupt"); }
static void HardFault_Handler(void) { mps2_panic("hard fault"); }
static void MemManage_Handler(void) { mps2_panic("memory management fault"); }
static void BusFault_Handler(void) { mps2_panic("bus fault"); }
static void UsageFault_Handler(void) { mps2_panic("usage fault"); }

typedef void (*Vector)(void);

// 16 system exceptions + 32 external interrupts (CMSDK peripherals on mps2).
__attribute__((section(".isr_vector"), used)) const Vector fedrt_vector_table[16 + 32] = {
    (Vector)(uintptr_t)&__stack_top,  // initial SP
    Reset_Handler,
    Default_Handler,     // NMI
    HardFault_Handler,
    MemManage_Handler,
    BusFault_Handler,
    UsageFault_Handler,
    0, 0, 0, 0,
    Default_Handler,     // SVCall
    Default_Handler,     // DebugMon
    0,
    Default_Handler,     // PendSV
    mps2_systick_handler,
    // External interrupts: UART0..4 RX are IRQ 0, 2, 4, 18, 20.
    mps2_uart_rx_handler, Default_Handler,                    // 0, 1
    mps2_uart_rx_handler, Default_Handler,                    // 2, 3
    mps2_uart_rx_handler,                                     // 4
    [16 + 5 ... 16 + 17] = Default_Handler,
    mps2_uart_rx_handler, Default_Handler,                    // 18, 19
    mps2_uart_rx_handler,                                     // 20
    [16 + 21 ... 47] = Default_Handler,
};

void Reset_Handler(void) {
#if defined(__ARM_FP)
  // CPACR: full access to CP10/CP11 before any floating-point instruction.
  *(volatile uint32_t*)0xE000ED88u |= 0xFu << 20;
  __asm volatile("dsb\n isb" ::: "memory");
#endif
  for (uint32_t *src = &__data_load, *dst = &__data_start; dst < &__data_end;) *dst++ = *src++;
  for (uint32_t* p = &__bss_start; p < &__bss_end;) *p++ = 0;
  // Paint the stack below the current frame so mps2_stack_high_water() can
  // find the deepest word ever written.
  uint32_t* sp;
  __asm volatile("mov %0, sp" : "=r"(sp));
  for (uint32_t* p = &__stack_limit; p < sp - 16;) *p++ = MPS2_STACK_PAINT;

  mps2_platform_init();
  __libc_init_array();
  mps2_exit(main());
}

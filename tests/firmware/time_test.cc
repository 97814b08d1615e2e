// The SysTick time base never steps backwards: mps2_ticks() and mps2_millis()
// read back-to-back over many SysTick wraps (each wrap is where a stale wrap
// count paired with a reloaded counter would step time back by one period),
// with a busy loop and with the idle wait (WFI) of mps2_uart_read in between.
// Also: time spent in mps2_uart_read's timeout actually elapses.

#include "fw_check.h"

// 32 wraps of 100 ms: about 3 s of QEMU time.
#define FEDRT_TIME_TEST_WRAPS 32

int main() {
  mps2_uart_init(kMps2UartLink);  // RX interrupt enabled; nobody writes to it
  const uint64_t period = MPS2_SYSTICK_PERIOD_TICKS;
  const uint64_t t_start = mps2_ticks();
  uint64_t prev = t_start;
  uint32_t prev_ms = mps2_millis();
  uint32_t back_steps = 0, ms_back_steps = 0;
  uint64_t worst_back = 0;
  uint64_t reads = 0;
  while (prev - t_start < FEDRT_TIME_TEST_WRAPS * period) {
    const uint64_t t = mps2_ticks();
    const uint32_t ms = mps2_millis();  // its own read of the time base
    if (t < prev) {
      ++back_steps;
      if (prev - t > worst_back) worst_back = prev - t;
    }
    if ((int32_t)(ms - prev_ms) < 0) ++ms_back_steps;
    if (t > prev) prev = t;
    prev_ms = ms;
    ++reads;
  }
  mps2_puts("reads=");
  mps2_put_u64(reads);
  mps2_puts(" wraps=");
  mps2_put_u64((prev - t_start) / period);
  mps2_puts(" backward_steps=");
  mps2_put_u32(back_steps);
  mps2_puts(" worst_back_ticks=");
  mps2_put_u64(worst_back);
  mps2_puts("\n");
  FW_CHECK(back_steps == 0);
  FW_CHECK(ms_back_steps == 0);

  // An idle wait on a UART nobody writes to: returns nothing after the timeout,
  // and the clock (read around it) moved forward by at least that much.
  uint8_t byte;
  for (int i = 0; i < 5; ++i) {
    const uint32_t m0 = mps2_millis();
    FW_CHECK(mps2_uart_read(kMps2UartLink, &byte, 1, 50) == 0);
    const uint32_t m1 = mps2_millis();
    FW_CHECK(m1 - m0 >= 50 && m1 - m0 < 0x80000000u);
  }
  return fw_result("fw_time_test");
}

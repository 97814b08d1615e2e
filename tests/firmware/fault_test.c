// A firmware that faults (undefined instruction -> HardFault) must end the
// QEMU run at once with "[mps2] panic: hard fault" and exit code 3, not hang
// until the test's timeout. Also exercises semihosting output.
#include "mps2.h"

int main(void) {
  mps2_semihost_puts("fault_test: semihosting output works\n");
  __asm volatile("udf #0");
  return 0;  // not reached
}

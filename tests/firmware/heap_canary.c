// Deliberately links malloc/free: the symbol-table check
// (scripts/footprint.py --no-heap) must reject this firmware
// (ctest fw_no_heap_check_detects_malloc, WILL_FAIL).
#include <stdlib.h>

int main(void) {
  void* volatile p = malloc(16);
  free(p);
  return p == 0;  // _sbrk fails: malloc returns NULL
}

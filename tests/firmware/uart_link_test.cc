// UART1 (the coordinator link) end to end through QEMU: the host peer
// (uart_link_peer.py, a TCP server that QEMU's -serial tcp: connects to) sends
// a 4-byte big-endian length and that many bytes; the firmware answers with
// the bytes XOR 0x5A followed by their CRC-32 (big endian). Exercises RX
// polling with QEMU's one-byte receive buffer and back-pressure, TX, timeouts.

#include "fw_check.h"
#include "provision.h"

namespace {
uint8_t g_buf[2048];
}

int main() {
  mps2_uart_init(kMps2UartLink);
  uint8_t hdr[4];
  FW_CHECK(mps2_uart_read(kMps2UartLink, hdr, 4, 10000) == 4);
  const uint32_t n = (uint32_t(hdr[0]) << 24) | (uint32_t(hdr[1]) << 16) | (uint32_t(hdr[2]) << 8) | hdr[3];
  FW_CHECK(n > 0 && n <= sizeof g_buf);
  if (n == 0 || n > sizeof g_buf) return fw_result("uart_link_test");
  FW_CHECK(mps2_uart_read(kMps2UartLink, g_buf, n, 5000) == n);
  const uint32_t crc = fedrt_crc32(g_buf, n);
  for (uint32_t i = 0; i < n; ++i) g_buf[i] ^= 0x5A;
  mps2_uart_write(kMps2UartLink, g_buf, n);
  const uint8_t tail[4] = {uint8_t(crc >> 24), uint8_t(crc >> 16), uint8_t(crc >> 8), uint8_t(crc)};
  mps2_uart_write(kMps2UartLink, tail, 4);
  // Nothing more arrives: a read times out with 0 bytes.
  const uint32_t t0 = mps2_millis();
  FW_CHECK(mps2_uart_read(kMps2UartLink, g_buf, 1, 50) == 0);
  FW_CHECK(mps2_millis() - t0 >= 50);
  mps2_puts("uart_link_test: echoed ");
  mps2_put_u32(n);
  mps2_puts(" bytes\n");
  return fw_result("uart_link_test");
}

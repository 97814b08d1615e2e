// fedrt-fw, fedrt-fw-lsa, fedrt-fw-d4096: the Cortex-M firmware device (QEMU
// mps2-an386 / an385), all families, LSA only, or the optimisation family
// with 2 KB frames and chunked models (cmake/firmware_app.cmake). Identity, PSK
// and entropy seed come from the provisioning block (platform/mps2/provision.h),
// the agent's data from its data partition (the problem image written by
// fedrt-fw-provision at fedrt_data_block, platform/mps2/mps2-common.ld); the
// task comes from the coordinator. UART1 is the byte link to the coordinator
// (QEMU bridges it to TCP), UART0 the console. Runs the device client
// (runtime/src/fw) until the coordinator's Shutdown, then reports the TLS heap
// and workspace high-water marks and exits with 0 (1 on failure or refusal).

#include <cstdint>
#include <cstring>

#include "fedrt/task/names.h"
#include "fedrt/fw/client.h"
#include "fedrt/fw/log_line.h"
#include "fedrt/fw/problem_image.h"
#include "mps2.h"
#include "provision.h"

#ifndef FEDRT_FW_WORKSPACE_BYTES
#define FEDRT_FW_WORKSPACE_BYTES 10240
#endif

extern "C" const uint8_t fedrt_data_block[];       // mps2-common.ld
extern "C" const uint8_t fedrt_data_block_size[];  // its size (the symbol's address)

namespace {

using fedrt::fw::LogLine;

char g_device_id[FEDRT_PROVISION_ID_MAX + 1];
fedrt::fw::FwClient g_client;
// The local oracle and the protocol session's arena (fedrt/fw/client.h).
alignas(16) uint8_t g_workspace[FEDRT_FW_WORKSPACE_BYTES];

int UartWrite(void*, const uint8_t* data, size_t n) {
  mps2_uart_write(kMps2UartLink, data, n);
  return static_cast<int>(n);
}

// The bytes already received, up to n, without waiting.
int UartRead(void*, uint8_t* data, size_t n) { return static_cast<int>(mps2_uart_read(kMps2UartLink, data, n, 0)); }

uint32_t Millis(void*) { return mps2_millis(); }

// Sleeps on the UART's RX interrupt until a byte arrives or ms pass (writes never block).
void UartWait(void*, uint32_t ms, bool write) {
  if (!write) mps2_uart_wait(kMps2UartLink, ms);
}

void ConsoleLog(void*, const char* line) {
  mps2_puts("[fw] ");
  mps2_put_u32(mps2_millis());
  mps2_puts(" ");
  mps2_puts(g_device_id);
  mps2_puts(" ");
  mps2_puts(line);
  mps2_puts("\n");
}

int Fail(const char* what, const char* detail) {
  mps2_puts("[fw] error: ");
  mps2_puts(what);
  mps2_puts(": ");
  mps2_puts(detail);
  mps2_puts("\n");
  return 1;
}

}  // namespace

int main() {
  mps2_uart_init(kMps2UartConsole);
  mps2_uart_init(kMps2UartLink);
  const FedrtProvisionV1* prov = nullptr;
  const FedrtProvisionStatus ps = fedrt_provision_get(&prov);
  if (ps != kFedrtProvisionOk) return Fail("provisioning block", fedrt_provision_status_name(ps));
  std::memcpy(g_device_id, prov->device_id, FEDRT_PROVISION_ID_MAX);
  g_device_id[FEDRT_PROVISION_ID_MAX] = '\0';
  auto problem = fedrt::fw::ParseProblemImage(fedrt_data_block, reinterpret_cast<uintptr_t>(fedrt_data_block_size));
  if (!problem.ok()) return Fail("problem image (data partition)", problem.status().message());
  if (problem->agent_index != prov->device_index)
    return Fail("provisioning", "device index and problem image agent differ");

  fedrt::fw::ClientOptions opt;
  opt.identity.device_id = g_device_id;
  opt.identity.psk = prov->psk;
  opt.identity.psk_len = prov->psk_len;
  opt.identity.entropy_seed = prov->entropy_seed;
  opt.identity.entropy_seed_len = FEDRT_PROVISION_SEED_BYTES;
  opt.problem = *problem;
  opt.link.write = UartWrite;
  opt.link.read = UartRead;
  opt.link.now_ms = Millis;
  opt.link.wait = UartWait;
  opt.workspace = g_workspace;
  opt.workspace_bytes = sizeof g_workspace;
  opt.log = ConsoleLog;
  opt.handshake_timeout_ms = 3000;
  {
    LogLine l;
    l.add("boot build=").add(fedrt::fw::FwClient::BuildName()).add(" agent=").add_u(problem->agent_index)
        .add(" data=").add(fedrt::task::ProblemKindName(problem->kind)).add(" d=")
        .add_u(static_cast<uint64_t>(problem->dim)).add(" rows=").add_u(problem->rows)
        .add(" workspace=").add_u(sizeof g_workspace);
    ConsoleLog(nullptr, l.c_str());
  }
  fedrt::Status st = g_client.init(opt);
  if (!st.ok()) return Fail("client init", st.message());
  st = g_client.run();
  const fedrt::fw::ClientStats s = g_client.stats();
  mps2_report_u32("tls_heap_hwm", static_cast<uint32_t>(s.tls_heap_max_bytes));
  mps2_report_u32("tls_heap_size", static_cast<uint32_t>(s.tls_heap_bytes));
  mps2_report_u32("workspace_hwm", static_cast<uint32_t>(s.workspace_max_bytes));
  mps2_report_u32("workspace_size", static_cast<uint32_t>(sizeof g_workspace));
  mps2_report_u32("sessions", s.sessions);
  mps2_report_u32("rounds", s.rounds);
  mps2_report_u32("rejected_frames", s.rejected_frames);
  mps2_report_u32("rejected_records", s.rejected_records);
  mps2_report_u32("chunks_in", s.chunks_in);
  mps2_report_u32("chunks_out", s.chunks_out);
  if (!st.ok()) return Fail("federation", st.message());
  return 0;
}

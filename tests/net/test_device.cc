// fedrt-test-device: fedrt-device plus the faults the integration tests play
// (a slow board, a device that vanishes after its masked input or withholds it, a board with
// little memory, a device that reveals wrong SecAgg+ shares, a device with valid keys that
// poisons its update or its masked input: docs/security.md). Built with
// the tests only; the product's fedrt-device has none of these flags.

#include <chrono>
#include <cstring>
#include <cstdio>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "fedrt/cli/parse.h"
#include "fedrt/device/cli.h"
#include "fedrt/wire/frame.h"
#include "fedrt.pb.h"

using namespace fedrt;

int main(int argc, char** argv) {
  CLI::App app{"fedrt-test-device: fedrt-device with test faults"};
  net::DeviceFlags flags;
  net::AddDeviceFlags(app, flags);
  long delay_ms = 0, drop_after_masked = -1;
  app.add_option("--delay-ms", delay_ms, "sleep before sending each update or SecAgg+ message (a slow board)");
  app.add_option("--drop-after-masked", drop_after_masked,
                 "drop the connection right after sending the masked input of secure round ROUND (0-based): a dropout");
  long withhold_masked = -1;
  app.add_option("--withhold-masked", withhold_masked,
                 "in secure round ROUND (0-based), never send the masked input (stay connected and silent): a device "
                 "that vanished after the key exchange, whose input and noise are not in the sum");
  long wrong_shares = -1;
  app.add_option("--wrong-unmask-shares", wrong_shares,
                 "in secure round ROUND (0-based), reveal every unmasking share with its bytes flipped: a cheater");
  size_t capacity = 0;
  app.add_option("--capacity", capacity, "workspace bytes this device offers a task (a small board)");
  long unclipped = -1;
  app.add_option("--unclipped-from", unclipped,
                 "from round ROUND (0-based) on, send every inline update times 10: a device that does not clip "
                 "(central DP-FedAvg)");
  std::vector<double> add_to_masked;  // ROUND,COORD,VALUE
  app.add_option("--add-to-masked", add_to_masked,
                 "in secure round ROUND (0-based), add VALUE to coordinate COORD of the masked input (modulo 2^32): "
                 "a device that pushes the sum out of range")
      ->delimiter(',')
      ->expected(3);
  std::vector<double> update_value;  // ROUND,VALUE
  app.add_option("--update-value", update_value,
                 "in round ROUND (0-based), send an inline update whose every float64 value is VALUE (e.g. 1e308): "
                 "a poisoned plain update")
      ->delimiter(',')
      ->expected(2);
  CLI11_PARSE(app, argc, argv);
  net::DeviceOptions opt;
  Status st = net::DeviceOptionsFromFlags(flags, opt);
  net::DeviceHooks hooks;
  hooks.before_send = [&](const wire::Envelope& m, const net::RawWriter& raw) {
    const bool round_message = m.body_case() == wire::Envelope::kUpdate || m.body_case() == wire::Envelope::kSecaggAdvertise ||
                               m.body_case() == wire::Envelope::kSecaggShares ||
                               m.body_case() == wire::Envelope::kSecaggMasked || m.body_case() == wire::Envelope::kSecaggUnmask;
    if (round_message && delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    if (m.body_case() == wire::Envelope::kSecaggMasked && withhold_masked >= 0 &&
        m.secagg_masked().round() == static_cast<uint32_t>(withhold_masked)) {
      std::fprintf(stderr, "fedrt-test-device: withheld the masked input of round %ld\n", withhold_masked);
      return false;  // nothing sent
    }
    if (m.body_case() == wire::Envelope::kSecaggUnmask && wrong_shares >= 0 &&
        m.secagg_unmask().round() == static_cast<uint32_t>(wrong_shares)) {
      wire::Envelope bad = m;
      for (auto& sh : *bad.mutable_secagg_unmask()->mutable_shares())
        for (char& c : *sh.mutable_share()) c = static_cast<char>(c ^ 0x5A);
      std::fprintf(stderr, "fedrt-test-device: sent wrong unmasking shares in round %ld\n", wrong_shares);
      (void)raw(wire::EncodeFrame(bad));
      return false;  // instead of the honest message
    }
    if (m.body_case() == wire::Envelope::kSecaggMasked && add_to_masked.size() == 3 &&
        m.secagg_masked().round() == static_cast<uint32_t>(add_to_masked[0]) &&
        static_cast<int>(add_to_masked[1]) < m.secagg_masked().masked_size()) {
      wire::Envelope bad = m;
      const int i = static_cast<int>(add_to_masked[1]);
      const uint32_t add = static_cast<uint32_t>(static_cast<uint64_t>(add_to_masked[2]));
      bad.mutable_secagg_masked()->set_masked(i, bad.secagg_masked().masked(i) + add);
      std::fprintf(stderr, "fedrt-test-device: added %u to coordinate %d of the masked input of round %u\n", add, i,
                   m.secagg_masked().round());
      (void)raw(wire::EncodeFrame(bad));
      return false;
    }
    if (m.body_case() == wire::Envelope::kUpdate && update_value.size() == 2 &&
        m.update().round() == static_cast<uint32_t>(update_value[0])) {
      wire::Envelope bad = m;
      for (std::string& seg : *bad.mutable_update()->mutable_payload())
        for (size_t i = 0; i + 8 <= seg.size(); i += 8) std::memcpy(seg.data() + i, &update_value[1], 8);
      std::fprintf(stderr, "fedrt-test-device: sent round %u's update with every value %g\n", m.update().round(),
                   update_value[1]);
      (void)raw(wire::EncodeFrame(bad));
      return false;
    }
    if (m.body_case() == wire::Envelope::kUpdate && unclipped >= 0 && m.update().round() >= static_cast<uint32_t>(unclipped)) {
      wire::Envelope bad = m;
      for (std::string& seg : *bad.mutable_update()->mutable_payload())
        for (size_t i = 0; i + 8 <= seg.size(); i += 8) {  // little-endian float64 values
          double x;
          std::memcpy(&x, seg.data() + i, 8);
          x *= 10;
          std::memcpy(seg.data() + i, &x, 8);
        }
      std::fprintf(stderr, "fedrt-test-device: sent round %u's update unclipped (x10)\n", m.update().round());
      (void)raw(wire::EncodeFrame(bad));
      return false;
    }
    return true;
  };
  hooks.after_send = [&](const wire::Envelope& m) {
    if (m.body_case() == wire::Envelope::kSecaggMasked && drop_after_masked >= 0 &&
        m.secagg_masked().round() == static_cast<uint32_t>(drop_after_masked)) {
      std::fprintf(stderr, "fedrt-test-device: dropped the connection after the masked input of round %ld\n",
                   drop_after_masked);
      return false;  // the device reconnects; the secure round counts it as dropped
    }
    return true;
  };
  hooks.capacity = capacity;
  opt.hooks = &hooks;
  const bool flags_ok = st.ok();
  if (st.ok()) st = net::RunDevice(opt);
  if (!st.ok()) {  // fedrt-device's codes (docs/cli.md, "Exit codes"): 2 for the flags, 1 for the run
    std::fprintf(stderr, "fedrt-test-device: error: %s\n", st.message());
    return flags_ok ? cli::kRunFailed : cli::kUsageError;
  }
  return 0;
}

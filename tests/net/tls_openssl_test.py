#!/usr/bin/env python3
"""The coordinator's TLS as a standard client sees it (issue 19; docs/architecture.md, "TLS").

Starts fedrt-coordinator (auth = "any") on loopback and connects with
`openssl s_client`:
  - a device certificate, OpenSSL's default groups: TLS 1.2, and the
    coordinator picks X25519 for ECDHE (not P-521, mbedTLS's default first);
  - groups secp521r1:P-256 only: the coordinator picks P-256 (its own order);
  - a TLS 1.3-only client is refused;
  - a device's PSK: the handshake completes with PSK-AES128-GCM-SHA256; a
    wrong PSK is refused;
  - offered ECDHE-PSK and plain PSK, the coordinator picks ECDHE-PSK with
    X25519 (forward secrecy for the PSK devices that can afford it).

  tls_openssl_test.py --bin DIR --out DIR
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time

EXPERIMENT = """
[problem]
kind = "garnet"
heterogeneity = "high"
agents = 2
[algorithm]
names = ["fedlsa"]
local_steps = 10
[run]
rounds = 1
seed = 1
[network]
auth = "any"
start_timeout_ms = 600000
"""
failures = []
checks = []


def check(ok, what, out=""):
    checks.append(what)
    print("%s: %s" % ("ok" if ok else "FAIL", what))
    if not ok:
        failures.append(what)
        print(out[-2000:])


def s_client(port, args, groups=None):
    if groups:
        args = args + ["-groups", groups]
    r = subprocess.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % port] + args, input=b"",
                       capture_output=True, timeout=60)
    return r.returncode, r.stdout.decode(errors="replace") + r.stderr.decode(errors="replace")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if shutil.which("openssl") is None:
        sys.exit("tls_openssl_test: openssl not found (./fedrt setup installs it)")
    shutil.rmtree(a.out, ignore_errors=True)
    os.makedirs(a.out)
    keys = os.path.join(a.out, "keys")
    subprocess.run([os.path.join(a.bin, "fedrt-keys"), "--out", keys, "--devices", "2"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cfg = os.path.join(a.out, "experiment.toml")
    open(cfg, "w").write(EXPERIMENT)
    port_file = os.path.join(a.out, "port")
    log = open(os.path.join(a.out, "coordinator.log"), "w")
    co = subprocess.Popen([os.path.join(a.bin, "fedrt-coordinator"), "--config", cfg, "--keys", keys, "--out",
                           os.path.join(a.out, "out"), "--state", os.path.join(a.out, "co.db"), "--port", "0",
                           "--port-file", port_file, "--no-plot"], stdout=log, stderr=log)
    try:
        end = time.time() + 30
        while not os.path.exists(port_file) and time.time() < end:
            time.sleep(0.05)
        port = int(open(port_file).read())
        dev = os.path.join(keys, "devices", "dev0000")
        cert = ["-cert", os.path.join(dev, "device.crt"), "-key", os.path.join(dev, "device.key"),
                "-CAfile", os.path.join(dev, "ca.crt")]
        psk = open(os.path.join(dev, "device.psk")).read().strip()

        rc, out = s_client(port, cert)
        check(rc == 0 and re.search(r"Protocol\s*: TLSv1\.2", out) is not None,
              "certificate handshake with OpenSSL's defaults negotiates TLS 1.2", out)
        check("Server Temp Key: X25519" in out, "the coordinator picks X25519 when offered", out)
        check("Verify return code: 0 (ok)" in out, "the coordinator's certificate verifies against the fleet CA", out)
        rc, out = s_client(port, cert, groups="secp521r1:P-256")
        check("Server Temp Key: ECDH, prime256v1" in out, "offered P-521 and P-256, the coordinator picks P-256", out)
        rc, out = s_client(port, cert + ["-tls1_3"])
        check(rc != 0 and "Server Temp Key" not in out, "a TLS 1.3-only client is refused", out)
        rc, out = s_client(port, ["-tls1_2", "-psk_identity", "dev0000", "-psk", psk, "-cipher", "PSK-AES128-GCM-SHA256"])
        check(rc == 0 and "PSK-AES128-GCM-SHA256" in out, "a device's PSK handshake completes", out)
        rc, out = s_client(port, ["-tls1_2", "-psk_identity", "dev0000", "-psk", psk, "-cipher",
                                  "ECDHE-PSK-CHACHA20-POLY1305:PSK-AES128-GCM-SHA256"])
        check(rc == 0 and "ECDHE-PSK-CHACHA20-POLY1305" in out and "Server Temp Key: X25519" in out,
              "offered ECDHE-PSK and plain PSK, the coordinator picks ECDHE-PSK on X25519 (forward secrecy)", out)
        wrong = ("00" if psk[:2] != "00" else "11") + psk[2:]
        rc, out = s_client(port, ["-tls1_2", "-psk_identity", "dev0000", "-psk", wrong, "-cipher", "PSK-AES128-GCM-SHA256"])
        check(rc != 0 or "Cipher is (NONE)" in out, "a wrong PSK is refused", out)
    finally:
        co.kill()
        co.wait()
    print("%d passed, %d failed" % (len(checks) - len(failures), len(failures)))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The coordinator's TLS as a standard client sees it (issues 19 and 45; docs/security.md, "TLS").

Starts fedrt-coordinator (auth = "any") on loopback and connects with
`openssl s_client`:
  - a device certificate, `-tls1_3` and OpenSSL's defaults: TLS 1.3 with
    X25519 (not P-521, mbedTLS's default first), the certificate verifies;
  - a device's PSK with `-tls1_3 -psk`: TLS 1.3, the PSK with an X25519
    exchange (psk_dhe_ke: forward secrecy); a wrong PSK is refused;
  - groups secp521r1:P-256 only: the coordinator asks for P-256 (it takes
    X25519 and P-256 only), in TLS 1.3 and 1.2;
  - with the default network.tls_min_version = "1.3", TLS 1.2 is refused
    (certificates and PSK);
  - a second coordinator with tls_min_version = "1.2" (a setting for peers
    that speak only TLS 1.2) takes TLS 1.2: certificates with X25519, plain
    PSK, and ECDHE-PSK before plain PSK; a wrong PSK is refused.

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
ALLOW_TLS12 = 'tls_min_version = "1.2"\n'
failures = []
checks = []


def check(ok, what, out=""):
    checks.append(what)
    print("%s: %s" % ("ok" if ok else "FAIL", what))
    if not ok:
        failures.append(what)
        print(out[-2000:])


def start_coordinator(bin_dir, out, keys, extra=""):
    """A coordinator on a free loopback port with EXPERIMENT (+ extra [network] lines): (process, port)."""
    os.makedirs(out)
    cfg = os.path.join(out, "experiment.toml")
    open(cfg, "w").write(EXPERIMENT + extra)
    port_file = os.path.join(out, "port")
    log = open(os.path.join(out, "coordinator.log"), "w")
    co = subprocess.Popen([os.path.join(bin_dir, "fedrt-coordinator"), "--config", cfg, "--keys", keys, "--out",
                           os.path.join(out, "out"), "--state", os.path.join(out, "co.db"), "--port", "0",
                           "--port-file", port_file, "--no-plot"], stdout=log, stderr=log)
    end = time.time() + 30
    while not os.path.exists(port_file) and time.time() < end and co.poll() is None:
        time.sleep(0.05)
    if not os.path.exists(port_file):
        co.kill()
        sys.exit("tls_openssl_test: the coordinator did not start:\n" + open(os.path.join(out, "coordinator.log")).read())
    return co, int(open(port_file).read())


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
    co, port = start_coordinator(a.bin, os.path.join(a.out, "default"), keys)
    lax = None
    try:
        dev = os.path.join(keys, "devices", "dev0000")
        cert = ["-cert", os.path.join(dev, "device.crt"), "-key", os.path.join(dev, "device.key"),
                "-CAfile", os.path.join(dev, "ca.crt")]
        psk = open(os.path.join(dev, "device.psk")).read().strip()
        wrong = ("00" if psk[:2] != "00" else "11") + psk[2:]
        # s_client's summary line: "New, TLSv1.3, Cipher is ..." ("Reused, ..." for a PSK). (Its
        # "Protocol  : TLSv1.3" comes only with a session ticket, which the coordinator does not send.)
        tls13 = re.compile(r"(New|Reused), TLSv1\.3, Cipher is TLS_")
        tls12 = re.compile(r"(New|Reused), TLSv1\.2, Cipher is [A-Z]")

        # TLS 1.3 (issue 45's acceptance line).
        rc, out = s_client(port, cert + ["-tls1_3"])
        check(rc == 0 and tls13.search(out) is not None and "Server Temp Key: X25519" in out,
              "-tls1_3 with a device certificate negotiates TLS 1.3 with X25519", out)
        check("Verify return code: 0 (ok)" in out, "the coordinator's certificate verifies against the fleet CA", out)
        rc, out = s_client(port, cert)
        check(rc == 0 and tls13.search(out) is not None and "Server Temp Key: X25519" in out,
              "OpenSSL's defaults (TLS 1.2 and 1.3 offered) get TLS 1.3 with X25519", out)
        rc, out = s_client(port, ["-tls1_3", "-psk_identity", "dev0000", "-psk", psk])
        check(rc == 0 and tls13.search(out) is not None and "Server Temp Key: X25519" in out,
              "-tls1_3 -psk negotiates TLS 1.3, the PSK with an X25519 exchange (psk_dhe_ke)", out)
        rc, out = s_client(port, ["-tls1_3", "-psk_identity", "dev0000", "-psk", wrong])
        check(rc != 0 or "Cipher is (NONE)" in out, "a wrong PSK is refused over TLS 1.3", out)
        rc, out = s_client(port, cert + ["-tls1_3"], groups="secp521r1:P-256")
        check(rc == 0 and "Server Temp Key: ECDH, prime256v1" in out,
              "TLS 1.3 with a P-521 key share: the coordinator asks for P-256", out)

        # The default network.tls_min_version = "1.3": TLS 1.2 refused.
        rc, out = s_client(port, cert + ["-tls1_2"])
        check(rc != 0 and tls12.search(out) is None, "by default a TLS 1.2 client is refused", out)
        rc, out = s_client(port, ["-tls1_2", "-psk_identity", "dev0000", "-psk", psk, "-cipher",
                                  "PSK-AES128-GCM-SHA256"])
        check(rc != 0 or "Cipher is (NONE)" in out, "by default a TLS 1.2 PSK client is refused", out)

        # network.tls_min_version = "1.2": TLS 1.2 taken too.
        lax, port = start_coordinator(a.bin, os.path.join(a.out, "tls12-allowed"), keys, ALLOW_TLS12)
        rc, out = s_client(port, cert + ["-tls1_2"])
        check(rc == 0 and tls12.search(out) is not None and "Server Temp Key: X25519" in out,
              "-tls1_2 with a device certificate: TLS 1.2 with X25519", out)
        rc, out = s_client(port, cert + ["-tls1_2"], groups="secp521r1:P-256")
        check("Server Temp Key: ECDH, prime256v1" in out, "TLS 1.2, offered P-521 and P-256: the coordinator picks P-256",
              out)
        rc, out = s_client(port, ["-tls1_2", "-psk_identity", "dev0000", "-psk", psk, "-cipher", "PSK-AES128-GCM-SHA256"])
        check(rc == 0 and "PSK-AES128-GCM-SHA256" in out, "a TLS 1.2 plain PSK handshake completes", out)
        rc, out = s_client(port, ["-tls1_2", "-psk_identity", "dev0000", "-psk", psk, "-cipher",
                                  "ECDHE-PSK-CHACHA20-POLY1305:PSK-AES128-GCM-SHA256"])
        check(rc == 0 and "ECDHE-PSK-CHACHA20-POLY1305" in out and "Server Temp Key: X25519" in out,
              "TLS 1.2, offered ECDHE-PSK and plain PSK: the coordinator picks ECDHE-PSK on X25519", out)
        rc, out = s_client(port, ["-tls1_2", "-psk_identity", "dev0000", "-psk", wrong, "-cipher", "PSK-AES128-GCM-SHA256"])
        check(rc != 0 or "Cipher is (NONE)" in out, "a wrong PSK is refused over TLS 1.2", out)

        rc, out = s_client(port, ["-tls1_3", "-psk_identity", "dev0000", "-psk", psk])
        check(rc == 0 and tls13.search(out) is not None, "tls_min_version = \"1.2\": TLS 1.3 with a PSK still connects", out)
    finally:
        for p in (co, lax):
            if p is not None:
                p.kill()
                p.wait()
    print("%d passed, %d failed" % (len(checks) - len(failures), len(failures)))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

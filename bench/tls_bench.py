#!/usr/bin/env python3
"""What a TLS handshake costs the coordinator, as a standard client sees it (docs/tls.md).

Starts fedrt-coordinator (auth = "any") on loopback with a fresh keys folder
and makes full handshakes against it with OpenSSL's own clients:
  - certificate: `openssl s_time -new` with a device's certificate, for
    --seconds, offering OpenSSL's default groups (X25519, P-256, X448, P-521,
    P-384), then only X25519 and P-256, only P-256, only P-384 and P-256
    (through an OpenSSL config file: s_time has no option for it);
  - PSK and ECDHE-PSK (X25519): `openssl s_client -psk` repeated --psk-count
    times each (one process per handshake: the rate is the client's, the
    coordinator's CPU is its own).
For each, prints the group the coordinator picked for ECDHE (s_client's
"Server Temp Key"), the handshakes made, the coordinator's CPU per handshake
(user + system time from /proc) and the handshakes per second one core of
the coordinator would sustain at that cost.

  tls_bench.py [--bin build/release/bin] [--seconds 5] [--psk-count 200]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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
refusal_log_lines = 0
"""


def cpu_seconds(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def openssl(args, stdin=b"", groups=None, tmp=None):
    """Runs the openssl CLI; GROUPS (e.g. "P-256") replaces the groups it offers, through its config file."""
    env = dict(os.environ)
    if groups:
        conf = os.path.join(tmp, "openssl-%s.cnf" % groups.replace(":", "_"))
        with open(conf, "w") as f:
            f.write("openssl_conf = c\n[c]\nssl_conf = s\n[s]\nsystem_default = d\n[d]\nGroups = %s\n" % groups)
        env["OPENSSL_CONF"] = conf
    return subprocess.run(["openssl"] + args, input=stdin, capture_output=True, timeout=60, env=env)


def temp_key(port, extra, groups=None, tmp=None):
    out = openssl(["s_client", "-tls1_2", "-connect", "127.0.0.1:%d" % port] + extra, b"", groups, tmp).stdout.decode(
        errors="replace")
    m = re.search(r"Server Temp Key: (.*)", out)
    return m.group(1).strip() if m else "none (handshake failed)"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "release", "bin"))
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--psk-count", type=int, default=200)
    a = ap.parse_args()
    if shutil.which("openssl") is None:
        sys.exit("tls_bench: openssl not found (./fedrt setup installs it)")
    tmp = tempfile.mkdtemp(prefix="fedrt-tls-bench-")
    try:
        keys = os.path.join(tmp, "keys")
        subprocess.run([os.path.join(a.bin, "fedrt-keys"), "--out", keys, "--devices", "2"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cfg = os.path.join(tmp, "experiment.toml")
        open(cfg, "w").write(EXPERIMENT)
        log = open(os.path.join(tmp, "coordinator.log"), "w")
        co = subprocess.Popen([os.path.join(a.bin, "fedrt-coordinator"), "--config", cfg, "--keys", keys, "--out",
                               os.path.join(tmp, "out"), "--state", os.path.join(tmp, "co.db"), "--port", "0",
                               "--port-file", os.path.join(tmp, "port"), "--no-plot"], stdout=log, stderr=log)
        port_file = os.path.join(tmp, "port")
        end = time.time() + 30
        while not os.path.exists(port_file) and time.time() < end:
            time.sleep(0.05)
        port = int(open(port_file).read())
        dev = os.path.join(keys, "devices", "dev0000")
        cert = ["-cert", os.path.join(dev, "device.crt"), "-key", os.path.join(dev, "device.key"),
                "-CAfile", os.path.join(dev, "ca.crt")]
        psk_hex = open(os.path.join(dev, "device.psk")).read().strip()
        psk = ["-psk_identity", "dev0000", "-psk", psk_hex, "-cipher", "PSK-AES128-GCM-SHA256"]
        print("| handshake | client offers | coordinator picked | handshakes | coordinator CPU per handshake ms "
              "| handshakes/s per core |")
        print("|---|---|---|---|---|---|")
        for groups in (None, "X25519:P-256", "P-256", "P-384:P-256"):
            c0 = cpu_seconds(co.pid)
            r = openssl(["s_time", "-connect", "127.0.0.1:%d" % port, "-new", "-tls1_2", "-time", str(a.seconds)] + cert,
                        groups=groups, tmp=tmp)
            c1 = cpu_seconds(co.pid)
            m = re.search(r"(\d+) connections in [\d.]+s", r.stdout.decode())
            n = int(m.group(1)) if m else 0
            ms = 1000 * (c1 - c0) / max(1, n)
            print("| certificate (ECDHE-ECDSA) | %s | %s | %d | %.2f | %.0f |"
                  % (groups or "OpenSSL's default groups", temp_key(port, cert, groups, tmp), n, ms,
                     1000 / ms if ms > 0 else float("nan")))
        ecdhe_psk = psk[:-1] + ["ECDHE-PSK-CHACHA20-POLY1305"]
        for name, args, picked in (("PSK", psk, "(no ECDHE)"),
                                   ("ECDHE-PSK", ecdhe_psk, temp_key(port, ecdhe_psk, None, tmp))):
            c0 = cpu_seconds(co.pid)
            ok = sum(openssl(["s_client", "-tls1_2", "-connect", "127.0.0.1:%d" % port] + args).returncode == 0
                     for _ in range(a.psk_count))
            c1 = cpu_seconds(co.pid)
            ms = 1000 * (c1 - c0) / max(1, ok)
            print("| %s | %s | %s | %d | %.2f | %.0f |"
                  % (name, args[-1], picked, ok, ms, 1000 / ms if ms > 0 else float("nan")))
        print("client offering secp521r1:P-256: coordinator picked %s" % temp_key(port, cert, "secp521r1:P-256", tmp))
        co.kill()
        co.wait()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

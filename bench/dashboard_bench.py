#!/usr/bin/env python3
"""Does an open dashboard slow the rounds? (docs/dashboard.md)

Runs the demo's experiment (examples/digits/experiment-demo.toml: 20 native
devices on their own shards, FedAvg vs Scaffold, SecAgg+; --rounds per
algorithm) with scripts/fleet.sh, in turn:
  off      without --http;
  polled   with --http, and a client fetching what the page fetches
           (api/run, api/rounds?since=K, api/devices) once a second: the
           coordinator's own cost of serving a dashboard;
  browser  with --http and the dashboard open in headless Chromium on the
           same 2 cores as the fleet: the server's cost plus the browser's.
Prints per run the mean and median round latency (the coordinator's log:
latency_ms, open to commit), the run's wall time and the browser's CPU,
then per setting the mean over its runs and the difference to "off".

usage: dashboard_bench.py [--repeats N] [--devices N] [--rounds T]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = os.path.join(ROOT, "examples", "digits", "experiment-demo.toml")


def open_browser(url):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,1700"]:
        opts.add_argument(arg)
    d = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=opts)
    d.get(url)
    return d


def browser_cpu_seconds():
    """User + system CPU of every chromium and chromedriver process."""
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = open("/proc/%s/cmdline" % pid).read()
            if "chromium" not in cmd and "chromedriver" not in cmd:
                continue
            f = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()
            total += int(f[11]) + int(f[12])
        except OSError:
            pass
    return total / os.sysconf("SC_CLK_TCK")


def poller(url, stop):
    since = 0
    while not stop.is_set():
        try:
            for path in ("api/run", "api/rounds?since=%d" % since, "api/devices"):
                body = json.load(urllib.request.urlopen(url + path, timeout=5))
                if path.startswith("api/rounds"):
                    since = body["total"]
        except OSError:
            pass
        stop.wait(1.0)


def run(out, devices, rounds, mode):
    cmd = [os.path.join(ROOT, "scripts", "fleet.sh"), "--config", CONFIG, "--native", str(devices), "--out", out]
    if mode != "off":
        cmd += ["--http", "127.0.0.1:0"]
    cmd += ["--", "--rounds", str(rounds)]
    log = os.path.join(out, "coordinator.log")
    os.makedirs(out, exist_ok=True)
    if os.path.exists(log):
        os.remove(log)
    t0 = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    browser, stop, thread, cpu0 = None, threading.Event(), None, 0.0
    try:
        if mode != "off":
            end = time.time() + 60
            url = None
            while url is None and time.time() < end and p.poll() is None:
                m = re.search(r"dashboard url=(http://\S+/)", open(log).read()) if os.path.exists(log) else None
                url = m.group(1) if m else None
                time.sleep(0.05)
            if url is None:
                sys.exit("dashboard_bench: no dashboard address in " + log)
            if mode == "browser":
                browser = open_browser(url)
                cpu0 = browser_cpu_seconds()
            else:
                thread = threading.Thread(target=poller, args=(url, stop))
                thread.start()
        if p.wait(timeout=900) != 0:
            sys.exit("dashboard_bench: the fleet failed (see %s)" % log)
    finally:
        cpu = browser_cpu_seconds() - cpu0 if browser is not None else 0.0
        stop.set()
        if thread is not None:
            thread.join()
        if browser is not None:
            browser.quit()
    wall = time.time() - t0
    lat = [float(x) for x in re.findall(r" round alg=\S+ run=\d+ round=\d+ .*? latency_ms=([0-9.]+)", open(log).read())]
    if not lat:
        sys.exit("dashboard_bench: no rounds in " + log)
    return lat, wall, cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--devices", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=60)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="fedrt-dashboard-bench-")
    modes = ["off", "polled", "browser"]
    means = {m: [] for m in modes}
    print("Dashboard overhead: %s with %d rounds per algorithm, %d native devices; round latency from the "
          "coordinator's log" % (os.path.relpath(CONFIG, ROOT), a.rounds, a.devices))
    print("| run | dashboard | rounds | mean ms | median ms | wall s | browser CPU s |")
    print("|---|---|---|---|---|---|---|")
    for i in range(a.repeats):
        for mode in modes:
            lat, wall, cpu = run(os.path.join(tmp, mode), a.devices, a.rounds, mode)
            means[mode].append(statistics.mean(lat))
            print("| %d | %s | %d | %.1f | %.1f | %.1f | %s |" % (
                i + 1, mode, len(lat), statistics.mean(lat), statistics.median(lat), wall,
                "%.1f" % cpu if mode == "browser" else ""))
            sys.stdout.flush()
    off = statistics.mean(means["off"])
    for mode in modes[1:]:
        m = statistics.mean(means[mode])
        print("mean round latency %s: %.1f ms against %.1f ms without --http: %+.1f%%" % (mode, m, off, 100 * (m - off) / off))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

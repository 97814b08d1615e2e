#!/usr/bin/env python3
"""Does an open dashboard slow the rounds? (docs/dashboard.md)

Runs the demo's experiment (examples/digits/experiment-demo.toml: 20 native
devices on their own shards, FedAvg vs Scaffold, SecAgg+; --rounds per
algorithm) with scripts/fleet.sh, in turn:
  off      without --http;
  polled   with --http, and a client fetching what the page fetches
           (api/live?since=K) as often as the page does: the coordinator's
           own cost of serving a dashboard;
  browser  with --http and the dashboard open in headless Chromium on the
           same 2 cores as the fleet: the server's cost plus the browser's.
The runs' --http address is one fixed port. The page is loaded once, by a
warm-up run, and stays open across the runs, as an operator keeps a
dashboard tab open: live in browser runs (it polls, finds the next
coordinator on the same address and follows its run), frozen in the others
(see below). So a browser run measures the page open and polling, not its
load, which would otherwise land on the run's first rounds (they open about
0.3 s after the coordinator names its address). The modes' order rotates
from one repeat to the next.
Prints per run the mean and median round latency (the coordinator's log:
latency_ms, open to commit), the run's wall time and the browser's CPU,
then per setting the mean over its runs and the difference to "off".

Then one long run with --http whose time is cut into windows of --window
seconds in the order idle, browser, idle, polled, repeated. The page is
loaded once, after --settle seconds, and stays open: in browser windows it
is live (polling and drawing), in the others it is frozen (Chrome DevTools
Protocol Page.setWebLifecycleState: no timers, no requests, no frames, as a
tab in the background of a browser that freezes it); in polled windows a
client polls api/live instead. Separate runs differ by +-10% on a shared
machine from one minute to the next; neighbouring windows of one run share
those drifts, so each measured window is compared with the idle windows on
either side of it. The browser's CPU is read per window too.

usage: dashboard_bench.py [--repeats N] [--devices N] [--rounds T]
                          [--alternate-rounds T] [--window S]
"""
import argparse
import calendar
import contextlib
import json
import math
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = os.path.join(ROOT, "examples", "digits", "experiment-demo.toml")


def open_browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,1700"]:
        opts.add_argument(arg)
    d = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=opts)
    d.get("about:blank")
    return d


def poll_seconds():
    """The page's poll interval, read from its script so that the polled mode keeps pace with it."""
    js = open(os.path.join(ROOT, "runtime", "web", "dashboard", "dashboard.js")).read()
    return int(re.search(r"POLL_MS = (\d+)", js).group(1)) / 1000.0


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


def poller(url, stop, cursor):
    """Fetches api/live as the page does: every poll period, the rounds from cursor[0] (the number
    already held) on; cursor[0] advances, so a later poller on the same cursor asks only for new rounds."""
    period = poll_seconds()
    while not stop.is_set():
        try:
            body = json.load(urllib.request.urlopen(url + "api/live?since=%d" % cursor[0], timeout=5))
            cursor[0] = body["rounds"]["total"]
        except OSError:
            pass
        stop.wait(period)


@contextlib.contextmanager
def polling(url, cursor):
    """While inside: a poller thread (above) on URL."""
    stop = threading.Event()
    thread = threading.Thread(target=poller, args=(url, stop, cursor))
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def free_port():
    """A TCP port on 127.0.0.1 nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_fleet(out, devices, rounds, http):
    """scripts/fleet.sh in OUT, its coordinator's dashboard on address HTTP (None: without --http);
    returns (process, log path, dashboard url or None)."""
    cmd = [os.path.join(ROOT, "scripts", "fleet.sh"), "--config", CONFIG, "--native", str(devices), "--out", out,
           "--timeout", "7200"]  # the alternating run is long: fleet.sh's default (600 s) would end it
    if http:
        cmd += ["--http", http]
    cmd += ["--", "--rounds", str(rounds)]
    log = os.path.join(out, "coordinator.log")
    os.makedirs(out, exist_ok=True)
    if os.path.exists(log):
        os.remove(log)
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url, end = None, time.time() + 60
    while http and url is None and time.time() < end and p.poll() is None:
        m = re.search(r"dashboard url=(http://\S+/)", open(log).read()) if os.path.exists(log) else None
        url = m.group(1) if m else None
        time.sleep(0.05)
    if http and url is None:
        p.kill()
        sys.exit("dashboard_bench: no dashboard address in " + log)
    return p, log, url


def rounds_of(log):
    """(opened, closed, latency_ms) per round, in Unix seconds, from the coordinator's log."""
    out = []
    for stamp, ms in re.findall(r"^(\S+)Z coordinator round alg=\S+ run=\d+ round=\d+ .*? latency_ms=([0-9.]+)",
                                open(log).read(), re.M):
        closed = calendar.timegm(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S")) + float("0" + stamp[19:])
        out.append((closed - float(ms) / 1000, closed, float(ms)))
    if not out:
        sys.exit("dashboard_bench: no rounds in " + log)
    return out


def run(out, devices, rounds, mode, browser, http):
    """One run of the fleet in MODE; the page (open since the warm-up, frozen) is live while a browser
    run lasts. Returns (round latencies ms, wall s, browser CPU s)."""
    t0, cpu0 = time.time(), browser_cpu_seconds()
    if mode == "browser":
        page_state(browser, "active")
    p, log, url = start_fleet(out, devices, rounds, http if mode != "off" else None)
    with polling(url, [0]) if mode == "polled" else contextlib.nullcontext():
        if p.wait(timeout=900) != 0:
            sys.exit("dashboard_bench: the fleet failed (see %s)" % log)
    cpu = browser_cpu_seconds() - cpu0
    if mode == "browser":
        page_state(browser, "frozen")
    return [r[2] for r in rounds_of(log)], time.time() - t0, cpu


PATTERN = ("idle", "browser", "idle", "polled")  # every measured window has an idle one on each side


def page_state(browser, state):
    """Freezes ("frozen") or resumes ("active") the page open in BROWSER: a frozen page runs no timers
    and draws nothing; when resumed, its pending poll fires at once."""
    browser.execute_cdp_cmd("Page.setWebLifecycleState", {"state": state})


def alternate(out, devices, rounds, browser, window, settle, http):
    """One run with --http whose time is cut into windows of WINDOW seconds in the order of PATTERN,
    repeated, the page loaded once (SETTLE seconds after the coordinator named its address) and live
    in browser windows only. Returns [(phase, mean latency, browser CPU %)] in time order, of the
    rounds that opened and closed inside the window."""
    p, log, url = start_fleet(out, devices, rounds, http)
    page_state(browser, "active")  # frozen since the separate runs, if any
    browser.get(url)
    time.sleep(settle)
    page_state(browser, "frozen")
    windows, cursor = [], [0]  # the polled windows' client, like the page, holds the rounds it fetched
    while p.poll() is None:
        phase = PATTERN[len(windows) % len(PATTERN)]
        t0, cpu0 = time.time(), browser_cpu_seconds()
        with polling(url, cursor) if phase == "polled" else contextlib.nullcontext():
            if phase == "browser":
                page_state(browser, "active")
            while time.time() < t0 + window and p.poll() is None:
                time.sleep(0.05)
            if phase == "browser":
                page_state(browser, "frozen")
        t1 = time.time()
        windows.append((phase, t0, t1, 100 * (browser_cpu_seconds() - cpu0) / (t1 - t0)))
    if p.returncode != 0:
        sys.exit("dashboard_bench: the fleet failed (see %s)" % log)
    browser.get("about:blank")
    rounds = rounds_of(log)
    res = []
    for phase, a, b, cpu in windows:
        lat = [ms for o, cl, ms in rounds if o >= a and cl <= b]
        if len(lat) >= 5:
            res.append((phase, statistics.mean(lat), cpu))
    return res


def paired(res, phase):
    """Per PHASE window with an idle window on each side: (its mean, the idle means before and after)."""
    return [(v, res[i - 1][1], res[i + 1][1]) for i, (ph, v, _) in enumerate(res)
            if ph == phase and 0 < i < len(res) - 1 and res[i - 1][0] == res[i + 1][0] == "idle"]


def change(pairs):
    """(mean, 95% half-width) of window mean / mean of its idle neighbours - 1, over PAIRS."""
    d = [v / statistics.mean([a, b]) - 1 for v, a, b in pairs]
    half = 1.96 * statistics.stdev(d) / math.sqrt(len(d)) if len(d) > 1 else float("nan")
    return statistics.mean(d), half


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3, help="separate runs per mode")
    ap.add_argument("--devices", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=60, help="rounds per algorithm of a separate run")
    ap.add_argument("--alternate-rounds", type=int, default=1000,
                    help="rounds per algorithm of the alternating run (0: skip it)")
    ap.add_argument("--window", type=float, default=5.0, help="seconds per window of the alternating run")
    ap.add_argument("--settle", type=float, default=3.0,
                    help="seconds the alternating run's page has to load (all rounds so far) before the first window")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="fedrt-dashboard-bench-")
    modes = ["off", "polled", "browser"]
    means = {m: [] for m in modes}
    browser, http = open_browser(), "127.0.0.1:%d" % free_port()
    print("Dashboard overhead: %s, %d native devices; round latency (open to commit) from the coordinator's log"
          % (os.path.relpath(CONFIG, ROOT), a.devices))
    if a.repeats > 0:  # the warm-up: loads the page, which then stays open (frozen between browser runs)
        p, log, url = start_fleet(os.path.join(tmp, "warmup"), a.devices, a.rounds, http)
        browser.get(url)
        if p.wait(timeout=900) != 0:
            sys.exit("dashboard_bench: the warm-up fleet failed (see %s)" % log)
        page_state(browser, "frozen")
    print("\nSeparate runs, %d rounds per algorithm:\n" % a.rounds)
    print("| run | dashboard | rounds | mean ms | median ms | wall s | browser CPU s |")
    print("|---|---|---|---|---|---|---|")
    for i in range(a.repeats):
        for mode in modes[i % 3:] + modes[:i % 3]:
            lat, wall, cpu = run(os.path.join(tmp, mode), a.devices, a.rounds, mode, browser, http)
            means[mode].append(statistics.mean(lat))
            print("| %d | %s | %d | %.1f | %.1f | %.1f | %.1f |" % (
                i + 1, mode, len(lat), statistics.mean(lat), statistics.median(lat), wall, cpu))
            sys.stdout.flush()
    for mode in modes[1:] if a.repeats > 0 else []:
        off = statistics.mean(means["off"])
        m = statistics.mean(means[mode])
        # Each repeat's runs are neighbours in time: their ratio cancels the machine's slow drifts.
        d = [x / o - 1 for x, o in zip(means[mode], means["off"])]
        half = 1.96 * statistics.stdev(d) / math.sqrt(len(d)) if len(d) > 1 else float("nan")
        print("mean round latency %s: %.1f ms against %.1f ms without --http: %+.1f%%; paired by repeat %+.1f%% "
              "(95%% interval %+.1f%% .. %+.1f%%)" % (mode, m, off, 100 * (m - off) / off, 100 * statistics.mean(d),
                                                     100 * (statistics.mean(d) - half), 100 * (statistics.mean(d) + half)))
    if a.alternate_rounds > 0:
        print("\nOne run with --http, %d rounds per algorithm, cut into %.0f s windows in the order idle, browser, "
              "idle, polled: the page open but frozen (idle), the page live (browser), the page frozen and a client "
              "polling api/live (polled). Each window's mean round latency against the idle windows just before and "
              "after it:\n" % (a.alternate_rounds, a.window))
        sys.stdout.flush()
        res = alternate(os.path.join(tmp, "alternate"), a.devices, a.alternate_rounds, browser, a.window, a.settle,
                        http)
        print("Window means in time order (ms): " + ", ".join("%s %.1f" % (ph[0], v) for ph, v, _ in res) + "\n")
        idle = [v for ph, v, _ in res if ph == "idle"]
        print("| phase | windows | mean of window means ms | browser CPU, % of a core | change against the idle "
              "windows beside it | 95% interval | windows slower than both neighbours |")
        print("|---|---|---|---|---|---|---|")
        print("| idle | %d | %.1f | %.1f | | | |" % (len(idle), statistics.mean(idle),
                                                 statistics.mean(c for ph, _, c in res if ph == "idle")))
        for phase in ("browser", "polled"):
            pairs = paired(res, phase)
            m, half = change(pairs)
            slower = sum(1 for v, a, b in pairs if v > max(a, b))
            print("| %s | %d | %.1f | %.1f | %+.1f%% | %+.1f%% .. %+.1f%% | %d of %d |" % (
                phase, len(pairs), statistics.mean(v for ph, v, _ in res if ph == phase),
                statistics.mean(c for ph, _, c in res if ph == phase), 100 * m, 100 * (m - half),
                100 * (m + half), slower, len(pairs)))
        # A cost that grows with the rounds the run holds shows as a change that grows from third to third.
        print("\nThe change by thirds of the run (rounds held grow from left to right):\n")
        print("| phase | 1st third | 2nd third | 3rd third |")
        print("|---|---|---|---|")
        for phase in ("browser", "polled"):
            pairs, cells = paired(res, phase), []
            for k in range(3):
                part = pairs[k * len(pairs) // 3:(k + 1) * len(pairs) // 3]
                cells.append("%+.1f%%" % (100 * change(part)[0]) if part else "-")
            print("| %s | %s |" % (phase, " | ".join(cells)))
    browser.quit()
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

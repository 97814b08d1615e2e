#!/usr/bin/env python3
"""Acceptance (issue 18): the dashboard follows a live run in a real browser.

Starts a loopback fleet with --http (fedrt-keys, fedrt-coordinator, four
devices paced by the tests' device program so that a round lasts about a
quarter second), loads the dashboard in headless Chromium through WebDriver
and checks from the page's DOM that the round counter and the devices table
follow the run: the counter never runs ahead of the coordinator and reaches
3, every device has a row with a state from the run and rounds taken part
in. Saves a screenshot there. Scrapes /metrics and parses it with the
Prometheus client library's parser. After the coordinator exits the page
keeps what it showed and says the coordinator is unreachable.

  dashboard_test.py --bin DIR --test-bin DIR --out DIR
"""
import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request

EXPERIMENT = """
[problem]
kind = "garnet"
heterogeneity = "high"
agents = 4
[algorithm]
names = ["fedlsa", "scafflsa"]
local_steps = 20
[run]
rounds = 20
seed = 5
[network]
start_timeout_ms = 60000
deadline_ms = 20000
"""
DEVICES = 4
STATES = {"connected", "sampled", "submitted", "dropped"}


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def wait_for(pred, timeout, what):
    end = time.time() + timeout
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    fail("timed out waiting for " + what)


def get_json(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read())


def check_metrics(text, rounds_done):
    from prometheus_client.parser import text_string_to_metric_families
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    for name in ["fedrt_rounds_completed", "fedrt_devices_connected", "fedrt_devices_sampled",
                 "fedrt_devices_dropped", "fedrt_bytes_up", "fedrt_bytes_down", "fedrt_round_duration_seconds"]:
        if name not in fams:
            fail("/metrics has no family %s (has %s)" % (name, sorted(fams)))
    if fams["fedrt_round_duration_seconds"].type != "histogram":
        fail("fedrt_round_duration_seconds is not a histogram")
    completed = fams["fedrt_rounds_completed"].samples[0].value
    if completed < rounds_done:
        fail("fedrt_rounds_completed_total %s < rounds done %s" % (completed, rounds_done))
    buckets = [s for s in fams["fedrt_round_duration_seconds"].samples if s.name.endswith("_bucket")]
    values = [s.value for s in buckets]
    if values != sorted(values) or buckets[-1].labels["le"] != "+Inf":
        fail("histogram buckets not cumulative: %s" % values)
    count = [s.value for s in fams["fedrt_round_duration_seconds"].samples if s.name.endswith("_count")][0]
    if count != values[-1] or count < rounds_done:
        fail("histogram count %s, +Inf bucket %s, rounds %s" % (count, values[-1], rounds_done))
    if fams["fedrt_devices_connected"].samples[0].value != DEVICES:
        fail("fedrt_devices_connected is not %d" % DEVICES)
    if fams["fedrt_bytes_up"].samples[0].value <= 0:
        fail("no bytes up counted")
    return completed


def check_charts(driver):
    """The charts are drawn (an error curve per algorithm begun), and a long series is thinned to the
    plot's width without losing its first, last, lowest or highest point (charts.js screenPoints)."""
    from selenium.webdriver.common.by import By
    curves = wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "#chart-error path.series"), 10,
                      "the error chart's first curve")
    if not 1 <= len(curves) <= 2:  # one per algorithm that has closed a round: fedlsa, then scafflsa
        fail("the error chart has %d curves" % len(curves))
    got = driver.execute_script("""
        const n = arguments[0], width = 600, key = '0,' + (n - 1) + ',' + width;
        const X = Object.assign((x) => x * width / (n - 1), { key }), Y = (y) => 200 - 50 * y;
        const yOf = (i) => Math.sin(i / 97) + ((i * 7919) % 1009) / 1009;
        const whole = Charts.series({}), grown = Charts.series({}), few = Charts.series({}), all = [];
        for (let i = 0; i < n; i++) { Charts.append(whole, i, yOf(i)); all.push([X(i), Y(yOf(i))]); }
        for (let i = 0; i < 300; i++) Charts.append(few, i, yOf(i));
        // Drawn while it grows (as the page does every few seconds), and once more after a rescale.
        for (let i = 0; i < n; i++) { Charts.append(grown, i, yOf(i)); if (i % 777 === 0) Charts.screenPoints(grown, X, Y); }
        const grownOut = Charts.screenPoints(grown, X, Y);
        const rescaled = Charts.screenPoints(grown, Object.assign((x) => x * width / (2 * n), { key: 'half' }), Y).length;
        const sorted = [];
        for (let i = 0; i < 1000; i++) Charts.insertSorted(sorted, yOf(i));
        return { out: Charts.screenPoints(whole, X, Y), all, grown: grownOut, rescaled,
                 few: Charts.screenPoints(few, Object.assign((x) => x * width / 299, { key: 'few' }), Y).length, extent: [whole.yLo, whole.yHi],
                 sorted: sorted.every((v, i) => !i || sorted[i - 1] <= v) && sorted.length === 1000 };
    """, 20000)
    out, full = got["out"], got["all"]
    if got["few"] != 300:
        fail("a 300-point series on a 600 px plot was thinned to %d points" % got["few"])
    if not 600 <= len(out) <= 4 * 601:
        fail("a 20000-point series on a 600 px plot kept %d points (expected at most 4 per column)" % len(out))
    if out[0] != full[0] or out[-1] != full[-1] or [p[0] for p in out] != sorted(p[0] for p in out):
        fail("the thinned series lost its ends or its order")
    if min(p[1] for p in out) != min(p[1] for p in full) or max(p[1] for p in out) != max(p[1] for p in full):
        fail("the thinned series lost its extremes")
    if got["grown"] != out:
        fail("a series drawn while it grew gives other points (%d) than one drawn once (%d)"
             % (len(got["grown"]), len(out)))
    if not 300 <= got["rescaled"] <= 4 * 301:
        fail("after a rescale to half the width the series kept %d points" % got["rescaled"])
    ys = [math.sin(i / 97) + ((i * 7919) % 1009) / 1009 for i in range(20000)]
    if abs(got["extent"][0] - min(ys)) > 1e-12 or abs(got["extent"][1] - max(ys)) > 1e-12:
        fail("the series' y extent %s is not its values' extent [%r, %r]" % (got["extent"], min(ys), max(ys)))
    if not got["sorted"]:
        fail("insertSorted left the latencies out of order")
    print("dashboard: %d error curves; a 20000-point series drawn with %d points" % (len(curves), len(out)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--test-bin", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.out, ignore_errors=True)
    os.makedirs(a.out)
    cfg = os.path.join(a.out, "experiment.toml")
    with open(cfg, "w") as f:
        f.write(EXPERIMENT)
    keys = os.path.join(a.out, "keys")
    subprocess.run([os.path.join(a.bin, "fedrt-keys"), "--out", keys, "--devices", str(DEVICES)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs = []
    log_path = os.path.join(a.out, "coordinator.log")
    log = open(log_path, "w")
    driver = None
    try:
        procs.append(subprocess.Popen(
            [os.path.join(a.bin, "fedrt-coordinator"), "--config", cfg, "--keys", keys, "--out",
             os.path.join(a.out, "out"), "--state", os.path.join(a.out, "coordinator.db"), "--listen", "127.0.0.1",
             "--port", "0", "--port-file", os.path.join(a.out, "port"), "--no-plot", "--http", "127.0.0.1:0"],
            stdout=log, stderr=log))
        url = wait_for(lambda: re.search(r"dashboard url=(http://\S+/)", open(log_path).read()), 30,
                       "the dashboard's address in the coordinator's log").group(1)
        port = wait_for(lambda: open(os.path.join(a.out, "port")).read().strip()
                        if os.path.exists(os.path.join(a.out, "port")) else None, 30, "the port file")
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        from selenium.webdriver.common.by import By
        opts = webdriver.ChromeOptions()
        opts.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
        for arg in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--window-size=1400,1700"]:
            opts.add_argument(arg)
        driver = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"),
                                  options=opts)
        driver.get(url)

        # Before any device: 0 rounds, every provisioned device offline.
        wait_for(lambda: len(driver.find_elements(By.CSS_SELECTOR, "#devices tbody tr[data-id]")) == DEVICES, 15,
                 "the devices table to list the provisioned devices")
        states = {r.get_attribute("data-id"): r.find_element(By.CSS_SELECTOR, "td.state").text.strip()
                  for r in driver.find_elements(By.CSS_SELECTOR, "#devices tbody tr[data-id]")}
        if set(states.values()) != {"offline"} or driver.find_element(By.ID, "rounds-done").text.strip() != "0":
            fail("before the devices start the page shows %s and %s rounds"
                 % (states, driver.find_element(By.ID, "rounds-done").text))
        for i in range(DEVICES):
            d = os.path.join(keys, "devices", "dev%04d" % i)
            procs.append(subprocess.Popen(
                [os.path.join(a.test_bin, "fedrt-test-device"), "--delay-ms", "250", "--coordinator",
                 "127.0.0.1:" + port, "--id", "dev%04d" % i, "--state", os.path.join(a.out, "dev%04d" % i),
                 "--key", os.path.join(d, "device.psk")],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

        def dom_rounds():
            t = driver.find_element(By.ID, "rounds-done").text.strip()
            return int(t) if t.isdigit() else -1

        # The counter follows the coordinator: never ahead of it, moving from 0 through
        # at least one value to 3 or more (the page polls every 2 s, a round lasts ~0.25 s).
        seen = []
        end = time.time() + 90
        while time.time() < end:
            dom = dom_rounds()
            if procs[0].poll() is not None:
                fail("the run ended before the page showed 3 rounds (it showed %s)" % sorted(set(seen)))
            api = get_json(url + "api/run")["rounds_done"]
            if dom > api:
                fail("the page shows %d rounds, the coordinator has done %d" % (dom, api))
            seen.append(dom)
            if dom >= 3 and len(set(seen)) >= 3:
                break
            time.sleep(0.1)
        else:
            fail("the page's round counter did not follow the run to 3 (saw %s)" % sorted(set(seen)))
        if seen != sorted(seen):
            fail("the round counter went backwards: %s" % seen)
        rows = driver.find_elements(By.CSS_SELECTOR, "#devices tbody tr[data-id]")
        ids = sorted(r.get_attribute("data-id") for r in rows)
        if ids != ["dev%04d" % i for i in range(DEVICES)]:
            fail("devices table rows %s" % ids)
        api_devices = {d["id"]: d for d in get_json(url + "api/devices")["devices"]}
        for r in rows:
            state = r.find_element(By.CSS_SELECTOR, "td.state").text.strip()
            if state not in STATES:
                fail("device %s shows state '%s'" % (r.get_attribute("data-id"), state))
        if any(d["rounds"] == 0 for d in api_devices.values()):
            fail("a device took part in no round by round 3: %s" % api_devices)
        shot = os.path.join(a.out, "dashboard.png")
        time.sleep(2.2)  # one more poll: the charts hold the latest rounds
        driver.save_screenshot(shot)
        with urllib.request.urlopen(url + "metrics", timeout=5) as r:
            completed = check_metrics(r.read().decode(), dom_rounds())
        print("dashboard: the page showed rounds %s; /metrics rounds_completed=%d; screenshot %s"
              % (sorted(set(seen)), completed, shot))
        check_charts(driver)

        # The run ends and the coordinator exits: the page keeps what it showed and says so.
        if procs[0].wait(timeout=120) != 0:
            fail("the coordinator failed: " + open(log_path).read()[-2000:])
        last = dom_rounds()
        wait_for(lambda: "unreachable" in driver.find_element(By.TAG_NAME, "body").text.lower(), 15,
                 "the page to say the coordinator is unreachable")
        if dom_rounds() < last or len(driver.find_elements(By.CSS_SELECTOR, "#devices tbody tr[data-id]")) != DEVICES:
            fail("the page dropped what it showed when the coordinator went away")
        print("dashboard: after the coordinator exited the page still shows %d rounds and %d devices"
              % (dom_rounds(), DEVICES))
    finally:
        if driver is not None:
            driver.quit()
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    print("1 passed, 0 failed")


if __name__ == "__main__":
    main()

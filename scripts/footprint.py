#!/usr/bin/env python3
"""Footprint report of fedrt firmware ELFs: text, data, bss, stack,
flash = text + data, RAM = data + bss + stack, the stack high-water mark and
the TLS heap high-water mark the firmware reports at exit ("[mps2] key=N"
lines on its console), against the committed budget (platform/mps2/budget.json;
a firmware's own "totals" there override the global ones: fedrt-fw has 128 KB
flash / 64 KB RAM, the others 96 KB / 32 KB).

  footprint.py [--budget FILE] [--check] [--run MACHINE] [--log NAME=FILE]...
               [--no-heap] [--manifest build/<preset>/firmware_manifest.json] [ELF...]

  --manifest FILE the firmware list CMake writes in a cortex-m build (every ELF,
                  which ones run standalone, the QEMU machine); implies --run
                  with that machine unless --no-run

  --run MACHINE   run each ELF under qemu-system-arm (platform/mps2/qemu-run.sh)
                  to read its stack (and TLS heap) high-water marks; firmware
                  named in --skip-run (needing a peer) is not run
  --log NAME=FILE read the "[mps2] key=N" lines of firmware NAME from a log of a
                  real run instead (e.g. fedrt-fw in a fleet)
  --check         exit 1 when a section or total exceeds its budget
  --no-heap       exit 1 when an ELF's symbol table has malloc, free, calloc,
                  realloc, their _r variants, or operator new/delete
"""
import argparse
import json
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
RUNNER = ROOT / "platform" / "mps2" / "qemu-run.sh"
SIZE = "arm-none-eabi-size"
NM = "arm-none-eabi-nm"

# Sections by where they live: flash only, flash image + RAM, RAM only.
TEXT = {".isr_vector", ".text", ".ARM.extab", ".ARM.exidx", ".rodata", ".init", ".fini"}
DATA = {".data"}
BSS = {".bss"}
STACK = {".stack"}

HEAP_SYMBOLS = re.compile(
    r"^(_?_?(malloc|free|calloc|realloc|memalign|reallocf|valloc|pvalloc)(_r)?"
    r"|_malloc_r|_free_r|_calloc_r|_realloc_r|_sbrk_r"
    r"|_Znw[jm].*|_Zna[jm].*|_ZdlPv.*|_ZdaPv.*)$")


def fail(msg):
    print(f"footprint: {msg}", file=sys.stderr)
    sys.exit(2)


def sections(elf):
    try:
        out = subprocess.run([SIZE, "-A", "-d", str(elf)], check=True, capture_output=True, text=True).stdout
    except FileNotFoundError:
        fail(f"{SIZE} not found (install gcc-arm-none-eabi)")
    except subprocess.CalledProcessError as e:
        fail(f"{SIZE} failed on {elf}: {e.stderr.strip()}")
    sizes = {"text": 0, "data": 0, "bss": 0, "stack": 0}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 3 or not parts[0].startswith("."):
            continue
        name, size = parts[0], int(parts[1])
        if name in TEXT:
            sizes["text"] += size
        elif name in DATA:
            sizes["data"] += size
        elif name in BSS:
            sizes["bss"] += size
        elif name in STACK:
            sizes["stack"] += size
    return sizes


def heap_symbols(elf):
    try:
        out = subprocess.run([NM, str(elf)], check=True, capture_output=True, text=True).stdout
    except subprocess.CalledProcessError as e:
        fail(f"{NM} failed on {elf}: {e.stderr.strip()}")
    found = []
    for line in out.splitlines():
        sym = line.split()[-1] if line.split() else ""
        if HEAP_SYMBOLS.match(sym):
            found.append(sym)
    return sorted(set(found))


def reports(text):
    return {k: int(v) for k, v in re.findall(r"^\[mps2\] (\w+)=(\d+)\s*$", text, re.M)}


def run_firmware(elf, machine):
    # -icount shift=0: deterministic, and the benchmarks need it.
    p = subprocess.run([str(RUNNER), "--machine", machine, "--icount", "--timeout", "120", str(elf)],
                       capture_output=True, text=True)
    return p.returncode, reports(p.stdout)


def budget_for(budget, name):
    fw = budget.get("firmware", {})
    b = dict(fw.get("*", {}))
    b.update(fw.get(name, {}))
    return b


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("elfs", nargs="*", type=pathlib.Path)
    ap.add_argument("--manifest", type=pathlib.Path)
    ap.add_argument("--no-run", action="store_true")
    ap.add_argument("--budget", type=pathlib.Path, default=ROOT / "platform" / "mps2" / "budget.json")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--no-heap", action="store_true")
    ap.add_argument("--run", metavar="MACHINE")
    ap.add_argument("--skip-run", action="append", default=[], metavar="NAME")
    ap.add_argument("--log", action="append", default=[], metavar="NAME=FILE")
    a = ap.parse_args()

    try:
        budget = json.loads(a.budget.read_text())
    except (OSError, json.JSONDecodeError) as e:
        fail(f"cannot read budget {a.budget}: {e}")
    totals = budget.get("totals", {})
    cpu = None
    if a.manifest:
        try:
            man = json.loads(a.manifest.read_text())
        except (OSError, json.JSONDecodeError) as e:
            fail(f"cannot read manifest {a.manifest}: {e}")
        for fw in man.get("firmware", []):
            a.elfs.append(pathlib.Path(fw["elf"]))
            if not fw.get("run", True):
                a.skip_run.append(fw["name"])
            log = fw.get("log")
            if log and pathlib.Path(log).is_file() and not any(x.startswith(fw["name"] + "=") for x in a.log):
                a.log.append(f"{fw['name']}={log}")
        if not a.run and not a.no_run:
            a.run = man.get("machine")
        cpu = man.get("cpu")
        print(f"firmware for {man.get('cpu', '?')} on QEMU {man.get('machine', '?')} ({a.manifest})")
    if not a.elfs:
        fail("no firmware ELF given (pass ELFs or --manifest)")
    logs = {}
    for item in a.log:
        name, sep, path = item.partition("=")
        if not sep:
            fail(f"--log wants NAME=FILE, got {item!r}")
        try:
            logs[name] = reports(pathlib.Path(path).read_text(errors="replace"))
        except OSError as e:
            fail(f"cannot read log {path}: {e}")

    problems = []
    extra = []
    own_totals = []
    header = f"{'firmware':<24} {'text':>7} {'data':>6} {'bss':>6} {'stack':>6} {'flash':>7} {'ram':>6} {'stack_hwm':>9} {'tls_heap_hwm':>12}"
    print(header)
    print("-" * len(header))
    for elf in a.elfs:
        if not elf.is_file():
            fail(f"no such firmware: {elf}")
        name = elf.name[:-4] if elf.name.endswith(".elf") else elf.name
        s = sections(elf)
        flash = s["text"] + s["data"]
        ram = s["data"] + s["bss"] + s["stack"]
        rep = dict(logs.get(name, {}))
        if a.run and name not in a.skip_run and name not in logs:
            rc, rep = run_firmware(elf, a.run)
            if rc != 0:
                problems.append(f"{name}: exited with {rc} under {a.run}")
        hwm = rep.get("stack_hwm")
        tls = rep.get("tls_heap_hwm")
        print(f"{name:<24} {s['text']:>7} {s['data']:>6} {s['bss']:>6} {s['stack']:>6} {flash:>7} {ram:>6} "
              f"{hwm if hwm is not None else '-':>9} {tls if tls is not None else '-':>12}")
        for k, v in sorted(rep.items()):
            if k == "td_step_instructions":
                cpu_budget = budget.get("td_step_instructions", {})
                if cpu in cpu_budget:
                    limit = f" (budget {cpu_budget[cpu]})"
                else:
                    limit = " (" + ", ".join(f"budget on {c}: {n}" for c, n in cpu_budget.items()) + ")"
                extra.append(f"{name}: instructions per local TD(0) step (d = 8, float, qemu -icount shift=0) = {v}"
                             + limit)
            elif k not in ("stack_hwm", "stack_size", "tls_heap_hwm"):
                extra.append(f"{name}: {k} = {v}")
        b = budget_for(budget, name)
        for key in ("text", "data", "bss", "stack"):
            if key in b and s[key] > b[key]:
                problems.append(f"{name}: {key} is {s[key]} bytes, budget {b[key]}")
        t = dict(totals)
        t.update(b.get("totals", {}))
        if "flash" in t and flash + t.get("provision", 0) > t["flash"]:
            problems.append(f"{name}: flash {flash} + provisioning {t.get('provision', 0)} bytes exceeds {t['flash']}")
        if "ram" in t and ram > t["ram"]:
            problems.append(f"{name}: RAM {ram} bytes exceeds {t['ram']}")
        if b.get("totals"):
            own_totals.append(f"{name}: flash <= {t.get('flash', '?')} B (incl. {t.get('provision', 0)} B provisioning), "
                              f"RAM <= {t.get('ram', '?')} B")
        if hwm is not None and s["stack"] and hwm >= s["stack"]:
            problems.append(f"{name}: stack high-water mark {hwm} reached the stack size {s['stack']} (overflow)")
        if a.no_heap:
            syms = heap_symbols(elf)
            if syms:
                problems.append(f"{name}: heap symbols linked: {', '.join(syms)}")
    for line in extra:
        print(line)
    print(f"budget: flash <= {totals.get('flash', '?')} B (incl. {totals.get('provision', 0)} B provisioning), "
          f"RAM <= {totals.get('ram', '?')} B; per-section budgets in {a.budget.name}")
    for line in own_totals:
        print(f"budget of {line}")
    if a.no_heap and not problems:
        print(f"no-heap: no malloc/free/calloc/realloc/new/delete symbol in {len(a.elfs)} firmware ELF(s)")
    for p in problems:
        print(f"FAIL {p}")
    if problems and (a.check or a.no_heap):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

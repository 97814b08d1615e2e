#!/usr/bin/env python3
"""Table and figure of the Garnet compression sweep (reads run.sh's outputs)."""
import json, os, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

out, dest = sys.argv[1], sys.argv[2]

def load(name):
    with open(os.path.join(out, name, "summary.json")) as f:
        return json.load(f)

raw = load("raw")
d, n, T = raw["settings"]["dim"], raw["settings"]["agents"], raw["settings"]["rounds"]
f32_bits = n * d * 32 * T  # uplink of float32 payloads over the run
rows = [("raw", "none (float64 in the simulator; float32 reference)", None)]
for b in (8, 4, 2):
    rows += [(f"round{b}_cv", f"rounding b={b}, clip 0.5", True), (f"round{b}_nocv", f"rounding b={b}, clip 0.5", False)]
for s in (7, 1):
    rows += [(f"dither{s}_cv", f"dithering s={s} (float32 norm)", True), (f"dither{s}_nocv", f"dithering s={s} (float32 norm)", False)]

print("| quantizer | control variates | uplink bits / coordinate | uplink / float32 | FedLSA final error | SCAFFLSA final error | SCAFFLSA / uncompressed |")
print("|---|---|---|---|---|---|---|")
ref = {a: raw["algorithms"][a]["final_error_mean"] for a in ("fedlsa", "scafflsa")}
points = {}
for name, label, cv in rows:
    s = load(name)
    alg = s["algorithms"]
    up = alg["scafflsa"]["bits_up"]  # per run, all rounds
    bpc = 32.0 if cv is None else up / (n * d * T)
    ratio = "1 (reference)" if cv is None else f"{up / f32_bits:.3f}"
    e_f, e_s = alg["fedlsa"]["final_error_mean"], alg["scafflsa"]["final_error_mean"]
    cvs = "-" if cv is None else ("yes" if cv else "no")
    r = e_s / ref["scafflsa"]
    print(f"| {label} | {cvs} | {bpc:.2f} | {ratio} | {e_f:.3e} | {e_s:.3e} | {r:.2f} |" if r < 1e3 else f"| {label} | {cvs} | {bpc:.2f} | {ratio} | {e_f:.3e} | {e_s:.3e} | {r:.1e} |")
    if name.startswith("round"):
        points.setdefault(("fedlsa", cv), []).append((bpc, e_f))
        points.setdefault(("scafflsa", cv), []).append((bpc, e_s))

fig, ax = plt.subplots(figsize=(6.5, 4.2))
for (alg, cv), pts in sorted(points.items()):
    pts.sort()
    ax.semilogy([p[0] for p in pts], [p[1] for p in pts], "o-" if cv else "s--",
                color="tab:green" if alg == "fedlsa" else "tab:blue",
                label=f"{alg}, {'with' if cv else 'without'} compression CV")
for alg, c in (("fedlsa", "tab:green"), ("scafflsa", "tab:blue")):
    ax.axhline(ref[alg], color=c, lw=0.8, ls=":", label=f"{alg}, uncompressed")
ax.set_xlabel("uplink bits per coordinate (stochastic rounding, clip 0.5)")
ax.set_ylabel(f"final ‖θ_T − θ*‖² (mean of {raw['settings']['runs']} runs)")
ax.set_xticks([2, 4, 8])
ax.grid(True, which="both", alpha=0.3)
ax.legend(fontsize=7)
fig.tight_layout()
fig.savefig(os.path.join(dest, "bits_vs_error.png"), dpi=110)

#!/usr/bin/env python3
"""Figures and tables of the FedEM toy from the metrics.csv files of run.sh."""
import csv, json, sys, os
from collections import defaultdict
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt

out, dest = sys.argv[1], sys.argv[2]

def load(name):
    curves = defaultdict(lambda: defaultdict(list))  # alg -> round -> [errors]
    with open(os.path.join(out, name, "metrics.csv")) as f:
        for row in csv.DictReader(f):
            curves[row["algorithm"]][int(row["round"])].append(float(row["error"]))
    return {a: ([r for r in sorted(v)], [sum(v[r]) / len(v[r]) for r in sorted(v)]) for a, v in curves.items()}

def summary(name):
    with open(os.path.join(out, name, "summary.json")) as f:
        return json.load(f)

fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
styles = {"1": "-", "0.5": "--", "0.1": ":"}
for ax, het in zip(axes, ["homogeneous", "heterogeneous"]):
    for p in ["1", "0.5", "0.1"]:
        c = load(f"{het}_p{p}")
        for alg, color in [("fedem", "tab:blue"), ("fedem-naive", "tab:red")]:
            r, e = c[alg]
            ax.semilogy(r, [max(x, 1e-32) for x in e], styles[p], color=color, label=f"{alg}, p={p}")
    ax.set_title(f"{het} agents, dithering s=4")
    ax.set_xlabel("iteration k")
    ax.grid(True, which="both", alpha=0.3)
axes[0].set_ylabel("E‖h(Ŝ_k)‖² (5 runs)")
axes[1].legend(fontsize=7)
fig.tight_layout()
fig.savefig(os.path.join(dest, "fedem_toy.png"), dpi=110)

print("| agents | p | FedEM final E||h||^2 | naive FedEM final E||h||^2 | ratio naive/FedEM |")
print("|---|---|---|---|---|")
for het in ["homogeneous", "heterogeneous"]:
    for p in ["1", "0.5", "0.1"]:
        s = summary(f"{het}_p{p}")["algorithms"]
        a, b = s["fedem"]["final_error_mean"], s["fedem-naive"]["final_error_mean"]
        print(f"| {het} | {p} | {a:.2e} | {b:.2e} | {b / max(a, 1e-300):.1e} |")

# VR-FedEM: sample evaluations to reach ||h||^2 <= 1e-8 (run 0), mini-batch b = 10.
fig, ax = plt.subplots(figsize=(6, 4))
print()
print("| algorithm | local statistics | final E||h||^2 | sample evaluations to ||h||^2 <= 1e-8 | total sample evaluations |")
print("|---|---|---|---|---|")
for name, alg, label in [("fullpass", "fedem", "FedEM, full pass (m = 300)"),
                         ("minibatch", "fedem", "FedEM, mini-batch b = 10"),
                         ("minibatch", "vr-fedem", "VR-FedEM, b = 10, k_in = 10")]:
    s = summary(name)
    m = s["settings"]["points_per_agent"]; n = s["settings"]["agents"]; b = s["settings"]["batch"]
    kin = s["settings"]["inner_iters"]
    r, e = load(name)[alg]
    # evaluations per iteration (all agents, p = 1): initial pass n m, then
    def evals(k):
        if alg == "fedem":
            return n * m + k * n * (b if b else m) if "mini" in label else n * m + k * n * m
        cycles = (k + kin - 1) // kin  # iterations 0, k_in, 2 k_in, ... are full passes
        return n * m + cycles * n * m + (k - cycles) * n * 2 * b
    hit = next((k for k, x in zip(r, e) if x <= 1e-8), None)
    ax.loglog([max(evals(k), 1) for k in r], [max(x, 1e-32) for x in e], label=label)
    tot = s["algorithms"][alg]["sample_evaluations_per_run"]
    print(f"| {alg} | {label} | {s['algorithms'][alg]['final_error_mean']:.2e} | "
          f"{evals(hit) if hit is not None else 'never'} | {tot} |")
ax.set_xlabel("sample evaluations (all agents)")
ax.set_ylabel("‖h(Ŝ_k)‖²")
ax.grid(True, which="both", alpha=0.3)
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(os.path.join(dest, "vr_fedem.png"), dpi=110)

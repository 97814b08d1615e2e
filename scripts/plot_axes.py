"""What makes a run's plot readable at a glance, shared by scripts/plot_error.py,
scripts/plot_loss.py and scripts/plot_accuracy.py: whole-number round ticks,
at least three labelled ticks on a log axis, and curves that stay visible
where they coincide (a marker of their own, placed at offset rounds, and a
legend note naming the curve they lie on).
"""

import math

import plot_data

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
MARKS_PER_CURVE = 8


def round_axis(ax):
    """Whole-number ticks on the x (communication round) axis, in steps of 1, 2 or 5 times a power of ten."""
    from matplotlib.ticker import MaxNLocator
    ax.xaxis.set_major_locator(MaxNLocator(integer=True, steps=[1, 2, 5, 10]))


def tick_label(v):
    """A tick's text: 0.2, 40, 1500, or 2×10⁻⁵ beyond 10^-3 .. 10^5."""
    if v == 0:
        return "0"
    k = math.floor(math.log10(abs(v)) + 1e-9)
    if -3 <= k <= 4:
        return "%g" % float("%.4g" % v)
    m = "%g" % round(v / 10.0 ** k, 3)
    return r"$10^{%d}$" % k if m == "1" else r"$%s\times10^{%d}$" % (m, k)


def log_ticks(lo, hi, min_labels=3):
    """Tick values for a log axis over [lo, hi] with at least min_labels of them,
    or None when the powers of ten alone are enough."""
    k_lo, k_hi = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    inside = lambda t: lo * (1 - 1e-9) <= t <= hi * (1 + 1e-9)  # noqa: E731
    if sum(1 for k in range(k_lo, k_hi + 1) if inside(10.0 ** k)) >= min_labels:
        return None
    enough = None  # the coarsest steps giving min_labels; four or more read better
    for subs in ((1, 2, 5), (1, 2, 3, 5), (1, 2, 3, 4, 5, 6, 8), (1, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8, 9)):
        ticks = [m * 10.0 ** k for k in range(k_lo, k_hi + 1) for m in subs if inside(m * 10.0 ** k)]
        if len(ticks) >= max(min_labels, 4):
            return ticks
        if len(ticks) >= min_labels and enough is None:
            enough = ticks
    if enough:
        return enough
    from matplotlib.ticker import MaxNLocator  # less than a factor 1.5: evenly spaced round values
    return [t for t in MaxNLocator(nbins=5).tick_values(lo, hi) if t > 0 and inside(t)]


def log_axis(ax, min_labels=3):
    """Log y axis over the plotted data with at least min_labels labelled ticks
    (1-2-5 or finer steps, plain numbers, when the data spans few decades).
    Call after everything is drawn: it fixes the y limits."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter
    ax.set_yscale("log")
    lo, hi = ax.get_ylim()
    ax.set_ylim(lo, hi)
    ticks = log_ticks(lo, hi, min_labels)
    if ticks is None:
        return
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: tick_label(v)))
    ax.yaxis.set_minor_formatter(NullFormatter())


def same_curve(a, b, np):
    """True when two (x, y) curves have the same rounds and values (to 1e-9 relative)."""
    return (len(a[0]) == len(b[0]) and len(a[0]) > 0 and np.array_equal(a[0], b[0])
            and np.allclose(a[1], b[1], rtol=1e-9, atol=0.0, equal_nan=True))


def curve_styles(curves, np):
    """Per curve {name: (x, y)} (in drawing order): plot keywords giving each a
    marker of its own at rounds offset from the other curves' markers, and a
    legend note "(coincides with NAME)" for a curve equal to an earlier one."""
    names = list(curves)
    styles = {}
    for i, name in enumerate(names):
        x = curves[name][0]
        step = max(1, len(x) // MARKS_PER_CURVE)
        styles[name] = {
            "marker": MARKERS[i % len(MARKERS)],
            "markersize": 5,
            "markevery": ((i * step) // max(1, len(names)) % step, step),
            "note": "",
        }
        for earlier in names[:i]:
            if same_curve(curves[earlier], curves[name], np):
                styles[name]["note"] = " (coincides with %s)" % earlier
                break
    return styles


def draw_means(ax, series, np, label, linestyle="-", colors=None, hollow=False):
    """Draw every algorithm's mean over runs of `series` (plot_data.Series), a
    +/- 1 std band when it has several runs, each curve with its own marker
    (hollow ones half a step later for a second series in the same colours);
    label(alg) names a curve. Returns {algorithm: colour} in drawing order."""
    curves = {}
    for alg in series.order:
        x, mean, std = plot_data.curve(series, alg, np)
        if len(x):
            curves[alg] = (x, mean, std)
    styles = curve_styles({a: c[:2] for a, c in curves.items()}, np)
    positives = [v for c in curves.values() for v in c[1] if v > 0]
    floor = 0.5 * min(positives) if positives else 0.0  # keeps a band's lower edge on a log axis
    drawn = {}
    for alg, (x, mean, std) in curves.items():
        nruns = len(series.runs[alg])
        text = label(alg) + ("" if nruns <= 1 else " (mean of %d runs, band ±1 std)" % nruns)
        st = styles[alg]
        kw = {"color": colors[alg]} if colors and alg in colors else {}
        every = st["markevery"]
        if hollow:
            kw["markerfacecolor"] = "white"
            every = ((every[0] + every[1] // 2) % every[1], every[1])
        (line,) = ax.plot(x, mean, linestyle=linestyle, linewidth=1.6, marker=st["marker"],
                          markersize=st["markersize"], markevery=every,
                          label=text + st["note"], **kw)
        drawn[alg] = line.get_color()
        if nruns > 1:
            ax.fill_between(x, np.maximum(mean - std, floor), mean + std, color=drawn[alg],
                            alpha=0.2, linewidth=0)
    return drawn


def finish_rounds_figure(fig, ax, ylabel, title):
    """The round axis, labels, grids and legend that error.png and loss.png share."""
    round_axis(ax)
    ax.set_xlabel("communication round")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.4)
    ax.grid(True, which="minor", alpha=0.15)
    ax.legend(loc="best", fontsize="small")
    fig.tight_layout()
    return fig

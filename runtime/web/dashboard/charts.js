// fedrt dashboard: SVG line charts and histograms drawn to their box's width; docs/dashboard.md.
// Series grow a point at a time and keep what a redraw needs (extents, a per-pixel-column summary),
// so a redraw costs O(new points + width) however many rounds are held: see series, screenPoints.
'use strict';
const Charts = (() => {
  const SVGNS = 'http://www.w3.org/2000/svg', { ok, num, ms, el } = Fmt;
  const MARKS_MAX = 200; // points get a mark (with its value as tooltip) while they stay legible

  function sv(tag, attrs, text) { // an SVG element; null and '' attributes are left out
    const e = document.createElementNS(SVGNS, tag);
    for (const k in attrs) if (attrs[k] != null && attrs[k] !== '') e.setAttribute(k, attrs[k]);
    if (text != null) e.textContent = text;
    return e;
  }
  const empty = (plot) => { plot.textContent = ''; plot.append(el('div', 'empty', 'no data yet')); };

  function extent(arr, fn) {
    let lo = Infinity, hi = -Infinity;
    for (const a of arr) { const v = fn(a); if (v < lo) lo = v; if (v > hi) hi = v; }
    return [lo, hi];
  }
  function niceStep(span, n) {
    const raw = span / Math.max(1, n), p = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / p;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
  }
  function linTicks(lo, hi, n, integer) {
    let step = niceStep(hi - lo || 1, n);
    if (integer) step = Math.max(1, Math.round(step));
    const out = [];
    for (let v = Math.ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step) out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
    return out;
  }
  function logTicks(lo, hi) { // lo, hi are log10 values
    for (const ms of [[1], [1, 2, 5], [1, 2, 3, 4, 5, 6, 7, 8, 9]]) {
      if (ms.length === 1 && hi - lo < 1.5) continue;
      const step = ms.length === 1 ? Math.max(1, Math.ceil((hi - lo) / 7)) : 1, out = [];
      for (let k = Math.floor(lo); k <= Math.ceil(hi); k += step)
        for (const m of ms) { const v = Math.log10(m) + k; if (v >= lo - 1e-9 && v <= hi + 1e-9) out.push(v); }
      if (out.length >= 3 || ms.length === 9) return out;
    }
    return [];
  }
  const fmtLogTick = (v) => { const x = Math.pow(10, v); return x >= 1e-3 && x < 1e4 ? String(parseFloat(x.toPrecision(2))) : x.toExponential(0); };

  // A frame: the plot area, its scales, grid, axes and tick labels; returns what the caller draws with.
  function frame(plot, xd, yd, o) {
    const W = Math.max(240, plot.clientWidth || 400), H = o.height || 200;
    const M = { l: 52, r: 12, t: 8, b: 30 };
    const w = W - M.l - M.r, h = H - M.t - M.b;
    const svg = sv('svg', { width: W, height: H, viewBox: `0 0 ${W} ${H}`, class: 'chart-svg' });
    const X = (x) => M.l + (xd[1] === xd[0] ? w / 2 : (x - xd[0]) / (xd[1] - xd[0]) * w);
    const Y = (y) => M.t + h - (yd[1] === yd[0] ? h / 2 : (y - yd[0]) / (yd[1] - yd[0]) * h);
    const g = sv('g', { class: 'grid' });
    for (const t of o.yMinor || []) g.append(sv('line', { x1: M.l, x2: M.l + w, y1: Y(t).toFixed(1), y2: Y(t).toFixed(1), class: 'minor' }));
    for (const t of o.yTicks) {
      const y = Y(t).toFixed(1);
      g.append(sv('line', { x1: M.l, x2: M.l + w, y1: y, y2: y }));
      svg.append(sv('text', { x: M.l - 6, y: +y + 3.5, class: 'tick', 'text-anchor': 'end' }, o.yFmt(t)));
    }
    for (const t of o.xTicks) {
      const x = X(t).toFixed(1);
      g.append(sv('line', { x1: x, x2: x, y1: M.t, y2: M.t + h }));
      svg.append(sv('text', { x, y: M.t + h + 14, class: 'tick', 'text-anchor': 'middle' }, o.xFmt(t)));
    }
    svg.prepend(g);
    svg.append(sv('path', { d: `M${M.l},${M.t}V${M.t + h}H${M.l + w}`, class: 'axis' }));
    if (o.xLabel) svg.append(sv('text', { x: M.l + w, y: H - 3, class: 'axis-label', 'text-anchor': 'end' }, o.xLabel));
    plot.textContent = '';
    plot.append(svg);
    return { svg, X, Y, M, w, h };
  }

  // A series: props (name, color, dash, opacity) and its points (xs increasing, ys), added with
  // append, which keeps the y extent.
  function series(props) {
    return Object.assign({ xs: [], ys: [], yLo: Infinity, yHi: -Infinity, cols: null }, props);
  }
  function append(s, x, y) {
    s.xs.push(x);
    s.ys.push(y);
    if (y < s.yLo) s.yLo = y;
    if (y > s.yHi) s.yHi = y;
  }

  // The screen points of series s with at most 4 per pixel column: in each column, the first, lowest,
  // highest and last point, in order (a column of 4 points or fewer keeps them all). The line looks
  // the same as through every point, and its path has O(width) segments. The columns' summary is
  // kept on s for the x scale X (X.key names its domain and width) and extended by the points added
  // since the last call: a redraw at an unchanged x scale costs O(new points + width).
  function screenPoints(s, X, Y) {
    let c = s.cols;
    if (!c || c.key !== X.key) c = s.cols = { key: X.key, col: [], first: [], lo: [], hi: [], last: [], upto: 0 };
    for (let i = c.upto; i < s.xs.length; i++) {
      const col = Math.round(X(s.xs[i])), k = c.col.length - 1;
      if (k >= 0 && c.col[k] === col) {
        c.last[k] = i;
        if (s.ys[i] < s.ys[c.lo[k]]) c.lo[k] = i;
        if (s.ys[i] > s.ys[c.hi[k]]) c.hi[k] = i;
      } else {
        c.col.push(col); c.first.push(i); c.lo.push(i); c.hi.push(i); c.last.push(i);
      }
    }
    c.upto = s.xs.length;
    const out = [];
    for (let k = 0; k < c.col.length; k++)
      for (const i of [...new Set([c.first[k], c.lo[k], c.hi[k], c.last[k]])].sort((a, b) => a - b))
        out.push([X(s.xs[i]), Y(s.ys[i])]);
    return out;
  }

  // list: series (above); o: { log, zero, xMax, xLabel, xName }.
  function line(card, list, o) {
    const plot = card.querySelector('.plot'), legend = card.querySelector('.legend');
    list = list.filter((s) => s.xs.length);
    const total = list.reduce((n, s) => n + s.xs.length, 0);
    if (legend) legend.textContent = '';
    if (!total) return empty(plot);
    const tf = o.log ? Math.log10 : (v) => v; // increasing: the extents of the values give those drawn
    let [x0, x1] = [Math.min(...list.map((s) => s.xs[0])), Math.max(...list.map((s) => s.xs[s.xs.length - 1]))];
    let [y0, y1] = [tf(Math.min(...list.map((s) => s.yLo))), tf(Math.max(...list.map((s) => s.yHi)))];
    // The x axis spans the whole run (or experiment) from the start, so curves grow rightwards.
    if (ok(o.xMax)) x1 = Math.max(x1, o.xMax);
    x0 = Math.min(x0, 0);
    if (x0 === x1) x1 = x0 + 1;
    let yTicks, yMinor = [];
    if (o.log) {
      const pad = Math.max(0.3 - (y1 - y0), 0) / 2 + (y1 - y0) * 0.04;
      y0 -= pad; y1 += pad;
      yTicks = logTicks(y0, y1);
      // Unlabelled 2..9 lines between labelled decades, while there are few decades.
      if (y1 - y0 <= 6) for (let k = Math.floor(y0); k <= y1; k++)
        for (let m = 2; m <= 9; m++) { const v = k + Math.log10(m); if (v > y0 && v < y1 && !yTicks.some((t) => Math.abs(t - v) < 1e-9)) yMinor.push(v); }
    } else {
      if (o.zero) y0 = Math.min(0, y0);
      if (y0 === y1) { y0 -= Math.abs(y0) * 0.1 || 1; y1 += Math.abs(y1) * 0.1 || 1; }
      const st = niceStep(y1 - y0, 4);
      y0 = Math.floor(y0 / st) * st; y1 = Math.ceil(y1 / st) * st;
      yTicks = linTicks(y0, y1, 4);
    }
    const f = frame(plot, [x0, x1], [y0, y1], {
      xTicks: linTicks(x0, x1, Math.max(2, Math.floor(plot.clientWidth / 80)), true), yTicks, yMinor, xLabel: o.xLabel,
      xFmt: (v) => String(v), yFmt: o.log ? fmtLogTick : num,
    });
    const X = Object.assign((x) => f.X(x), { key: `${x0},${x1},${f.w}` }), Y = (y) => f.Y(tf(y));
    const marks = total <= MARKS_MAX;
    for (const s of list) {
      const d = screenPoints(s, X, Y).map((p, i) => (i ? 'L' : 'M') + p[0].toFixed(1) + ',' + p[1].toFixed(1)).join('');
      f.svg.append(sv('path', { d, class: 'series', stroke: s.color, 'stroke-dasharray': s.dash, 'stroke-opacity': s.opacity }));
      if (!marks && s.xs.length > 1) continue;
      s.xs.forEach((x, i) => {
        const c = sv('circle', { cx: X(x).toFixed(1), cy: Y(s.ys[i]).toFixed(1), r: 2.4, fill: s.color, 'fill-opacity': s.opacity, class: 'mark' });
        c.append(sv('title', {}, `${s.name}, ${o.xName || 'round'} ${x}: ${num(s.ys[i])}`));
        f.svg.append(c);
      });
    }
    for (const s of list) { // the legend: each series' line style, name and last value
      const item = el('span', 'item'), sw = sv('svg', { width: 22, height: 8, class: 'swatch' });
      sw.append(sv('line', { x1: 0, x2: 22, y1: 4, y2: 4, stroke: s.color, 'stroke-width': 2, 'stroke-dasharray': s.dash, 'stroke-opacity': s.opacity }));
      item.append(sw, el('span', '', s.name), el('span', 'last', num(s.ys[s.ys.length - 1])));
      legend.append(item);
    }
  }

  function quantile(sorted, q) {
    const i = (sorted.length - 1) * q, lo = Math.floor(i), hi = Math.ceil(i);
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (i - lo);
  }

  // The first index of sorted array v at which pred (false, then true along v) holds; v.length if none.
  function firstWhere(v, pred) {
    let a = 0, b = v.length;
    while (a < b) { const m = (a + b) >> 1; if (pred(v[m])) b = m; else a = m + 1; }
    return a;
  }
  // Inserts x into the ascending array v, after any equal values.
  function insertSorted(v, x) { v.splice(firstWhere(v, (y) => y > x), 0, x); }

  // 20 bins from the fastest to the slowest round, with the median and p90 marked; returns the summary
  // line. v: the values in ascending order (insertSorted), so a redraw costs O(bins log n).
  function histogram(card, v) {
    const plot = card.querySelector('.plot');
    if (!v.length) { empty(plot); return 'no rounds with a latency yet'; }
    const n = v.length, med = quantile(v, 0.5), p90 = quantile(v, 0.9), max = v[n - 1];
    let lo = v[0], hi = max;
    if (hi === lo) { lo = Math.max(0, lo - 1); hi += 1; }
    const bins = 20, bw = (hi - lo) / bins, bin = (x) => Math.min(bins - 1, Math.floor((x - lo) / bw));
    const counts = [];
    for (let b = 0, at = 0; b < bins; b++) { // bin(x) grows with x: each bin is a run of v
      const end = firstWhere(v, (x) => bin(x) > b);
      counts.push(end - at);
      at = end;
    }
    const cmax = extent(counts, (c) => c)[1];
    const f = frame(plot, [lo, hi], [0, cmax], {
      xTicks: linTicks(lo, hi, Math.max(2, Math.floor(plot.clientWidth / 90))), yTicks: linTicks(0, cmax, 4, true),
      xFmt: num, yFmt: String, xLabel: 'ms',
    });
    counts.forEach((c, i) => {
      if (!c) return;
      const x = f.X(lo + i * bw), x2 = f.X(lo + (i + 1) * bw), y = f.Y(c);
      const bar = sv('rect', { x: (x + 0.5).toFixed(1), y: y.toFixed(1), width: Math.max(1, x2 - x - 1).toFixed(1), height: (f.Y(0) - y).toFixed(1), class: 'hbar' });
      bar.append(sv('title', {}, `${ms(lo + i * bw)}–${ms(lo + (i + 1) * bw)} ms: ${c} round${c === 1 ? '' : 's'}`));
      f.svg.append(bar);
    });
    for (const [q, name, cls] of [[med, 'median', 'q-median'], [p90, 'p90', 'q-p90']]) {
      const x = f.X(q).toFixed(1);
      f.svg.append(sv('line', { x1: x, x2: x, y1: f.M.t, y2: f.M.t + f.h, class: 'qline ' + cls }));
      f.svg.append(sv('text', { x: +x + 3, y: f.M.t + (name === 'p90' ? 22 : 10), class: 'qlabel ' + cls }, `${name} ${ms(q)}`));
    }
    return `median ${ms(med)} ms, p90 ${ms(p90)} ms, max ${ms(max)} ms over ${n} round${n === 1 ? '' : 's'}`;
  }

  return { line, histogram, series, append, insertSorted, sv, screenPoints };
})();

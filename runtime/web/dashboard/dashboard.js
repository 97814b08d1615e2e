// fedrt dashboard: polls the coordinator's api/live (api/run, api/rounds and api/devices in one)
// and draws the run, its curves and the devices table; docs/dashboard.md.
'use strict';
(() => {
  const POLL_MS = 2000, RETRY_MS = 2000, TIMEOUT_MS = 5000, ROW_LIMIT = 500;
  // Charts are redrawn at most this often: rounds may close many times a second, and a redraw
  // (SVG, layout, paint) is the page's largest cost, taken from the machine that runs the fleet.
  const CHART_MS = 5000;
  const PALETTE = ['#1f6fd1', '#d9480f', '#2b8a3e', '#7048e8', '#c2255c', '#0b7285', '#b8860b', '#495057'];
  const RUN_DASHES = ['', '7 4', '2 3', '10 3 2 3', '4 2'];
  const COUNT_STATES = ['connected', 'sampled', 'submitted', 'dropped', 'refused', 'revoked', 'offline', 'disconnected'];
  const PHASES = ['advertise', 'shares', 'masked', 'unmask'];
  const SVGNS = 'http://www.w3.org/2000/svg';
  const S = { run: null, rounds: [], roundsVer: 0, drawnVer: -1, drawnAt: 0, devices: [], counts: {}, downSince: null, settingsKey: '',
    filter: '', showAll: false, rows: new Map() }; // the page's state: the last answers, and the table's view
  const $ = (id) => document.getElementById(id);

  function el(tag, cls, text, id) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = text;
    if (id) e.id = id;
    return e;
  }
  function sv(tag, attrs, text) { // an SVG element; null and '' attributes are left out
    const e = document.createElementNS(SVGNS, tag);
    for (const k in attrs) if (attrs[k] != null && attrs[k] !== '') e.setAttribute(k, attrs[k]);
    if (text != null) e.textContent = text;
    return e;
  }
  const pct = (a, b) => (b > 0 ? (100 * Math.min(1, a / b)).toFixed(1) : '0') + '%';
  const empty = (plot) => { plot.textContent = ''; plot.append(el('div', 'empty', 'no data yet')); };
  const setText = (e, t) => { if (e.textContent !== t) e.textContent = t; };
  const ok = (v) => typeof v === 'number' && isFinite(v);

  // ---- formatting ----
  function fmtNum(v) { // 4 significant digits, exponent outside [1e-3, 1e5)
    if (!ok(v)) return '—';
    const a = Math.abs(v);
    return a !== 0 && (a >= 1e5 || a < 1e-3) ? v.toExponential(2) : String(a >= 100 ? Math.round(v * 10) / 10 : parseFloat(v.toPrecision(4)));
  }
  const fmtMs = (v) => (!ok(v) ? '—' : v >= 100 ? String(Math.round(v)) : String(parseFloat(v.toPrecision(3))));
  function fmtBytes(b) { // SI units: 1 kB = 1000 B
    if (!ok(b)) return '—';
    if (b < 1000) return b + ' B';
    let i = -1;
    do { b /= 1000; i++; } while (b >= 1000 && i < 3);
    return (b >= 100 ? b.toFixed(0) : b >= 10 ? b.toFixed(1) : b.toFixed(2)) + ' ' + ['kB', 'MB', 'GB', 'TB'][i];
  }
  function fmtDuration(s) { // 4:05 or 1:02:05
    if (!ok(s) || s < 0) return '—';
    const p = (n) => String(Math.floor(n)).padStart(2, '0'), h = Math.floor(s / 3600);
    return (h ? `${h}:${p(s / 60 % 60)}` : String(Math.floor(s / 60))) + ':' + p(s % 60);
  }
  function fmtAgo(s) {
    if (!ok(s)) return 'never';
    s = Math.max(0, s);
    return s < 60 ? Math.round(s) + ' s ago' : s < 3600 ? Math.floor(s / 60) + ' min ago'
      : s < 86400 ? Math.floor(s / 3600) + ' h ago' : Math.floor(s / 86400) + ' d ago';
  }
  const clock = (d) => d.toTimeString().slice(0, 8);

  // ---- polling ----
  async function getJSON(url) {
    const ctl = new AbortController();
    const t = setTimeout(() => ctl.abort(), TIMEOUT_MS);
    try {
      const r = await fetch(url, { credentials: 'same-origin', cache: 'no-store', signal: ctl.signal });
      if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
      return await r.json();
    } finally { clearTimeout(t); }
  }

  // Rounds arrive in seq order from seq = the number held; a seq past that would leave a hole: dropped.
  function mergeRounds(body) {
    if (!body || !Array.isArray(body.rounds)) return;
    const reset = ok(body.total) && body.total < S.rounds.length; // another run answers now: start over
    if (reset) S.rounds = [];
    for (const r of body.rounds) if (r.seq <= S.rounds.length) S.rounds[r.seq] = r;
    if (reset || body.rounds.length) S.roundsVer++;
  }

  async function poll() {
    let up = true;
    try {
      // One request per poll: the run, the rounds not yet held and the devices, taken at one instant.
      const { run, devices: devs, rounds } = await getJSON(`api/live?since=${S.rounds.length}`);
      S.run = run;
      S.devices = Array.isArray(devs.devices) ? devs.devices : [];
      S.counts = devs.counts || {};
      mergeRounds(rounds);
      S.downSince = null;
    } catch (e) {
      up = false;
      if (!S.downSince) S.downSince = new Date();
      $('banner').title = String(e && e.message);
    }
    try { render(); } catch (e) { console.error(e); }
    setTimeout(poll, up ? POLL_MS : RETRY_MS);
  }

  // Everything shown stays while the coordinator is unreachable: only the banner and status change.
  function render() {
    const banner = $('banner');
    banner.hidden = !S.downSince;
    if (S.downSince) {
      setText(banner, `coordinator unreachable since ${clock(S.downSince)} (the run may have finished)`);
      return setStatus('unreachable');
    }
    if (!S.run) return;
    renderHeader(S.run);
    renderSettings(S.run);
    renderSecagg(S.run);
    const now = Date.now();
    if (S.drawnVer !== S.roundsVer && (now - S.drawnAt >= CHART_MS || S.run.status !== 'running')) {
      S.drawnVer = S.roundsVer;
      S.drawnAt = now;
      drawCharts();
      renderRecent();
    }
    renderDevices();
  }

  // ---- header, settings, secagg ----
  function setStatus(s) {
    const e = $('status');
    setText(e, s);
    e.className = 'status status-' + String(s).replace(/[^a-z]/gi, '');
  }
  function renderHeader(run) {
    setText($('experiment'), run.experiment || '');
    document.title = `fedrt · ${run.experiment || ''} · ${run.rounds_done}/${run.rounds_total}`;
    setStatus(run.status || 'unknown');
    setText($('rounds-done'), String(run.rounds_done ?? 0));
    setText($('rounds-total'), String(run.rounds_total ?? 0));
    $('rounds-bar').style.width = pct(run.rounds_done, run.rounds_total);
    const c = run.current;
    let text = run.status === 'waiting' ? 'waiting for devices' : 'no round open';
    if (c) {
      text = `${c.algorithm} run ${c.run} round ${c.label}: ${c.submitted}/${c.sampled} submitted`;
      if (ok(c.opened_at) && ok(run.now)) text += ` (open ${fmtDuration(run.now - c.opened_at)})`;
    }
    setText($('current-round'), text);
    $('current-bar').style.width = c ? pct(c.submitted, c.sampled) : '0%';
    setText($('elapsed'), fmtDuration((ok(run.finished_at) ? run.finished_at : run.now) - run.started_at));
    setText($('address'), run.address || '');
  }

  function renderSettings(run) { // rebuilt only when a value changed
    const rows = [
      ['experiment', run.experiment], ['problem', run.problem], ['agents', run.agents], ['dim', run.dim],
      ['algorithms', (run.algorithms || []).join(', ')], ['runs', run.runs], ['rounds per run', run.rounds_per_run],
      ['local steps', run.local_steps], ['secagg', run.secagg_enabled ? 'on (SecAgg+)' : 'off'], ['auth', run.auth],
      ['deadline_ms', run.deadline_ms], ['quorum', run.quorum], ['address', run.address], ['error_metric', run.error_metric],
    ];
    for (const k of Object.keys(run.settings || {})) rows.push([k, run.settings[k]]);
    const key = JSON.stringify(rows);
    if (key === S.settingsKey) return;
    S.settingsKey = key;
    const tb = $('settings').tBodies[0];
    tb.replaceChildren(...rows.map(([k, v]) => {
      const tr = el('tr');
      tr.dataset.key = k;
      tr.append(el('th', '', k), el('td', '', v == null ? '—' : typeof v === 'object' ? JSON.stringify(v) : String(v)));
      return tr;
    }));
  }

  function renderSecagg(run) {
    const box = $('secagg'), sa = run.secagg;
    box.textContent = '';
    if (!sa) {
      box.append(el('span', 'muted', run.secagg_enabled === false ? 'SecAgg+ off' : 'no secure aggregation round open'));
      return;
    }
    const steps = el('div', 'phases'), names = PHASES.includes(sa.phase) ? PHASES : PHASES.concat([sa.phase]);
    steps.append(...names.map((p) => el('span', 'phase' + (p === sa.phase ? ' current' : ''), p)));
    const line = el('div', 'secagg-line');
    const count = el('span', 'muted', 'answered ');
    count.append(el('b', 'secagg-answered', `${sa.answered}/${sa.n}`, 'secagg-answered'));
    line.append(el('span', 'secagg-phase', sa.phase, 'secagg-phase'), count);
    const bar = el('div', 'bar'), fill = el('div', 'fill');
    fill.style.width = pct(sa.answered, sa.n);
    bar.append(fill);
    box.append(steps, line, bar);
  }

  function renderRecent() {
    const tb = $('recent-rounds').tBodies[0];
    tb.textContent = '';
    for (const r of S.rounds.slice(-12).reverse()) {
      const tr = el('tr', r.failure ? 'failed' : '');
      const many = S.run && S.run.runs > 1;
      tr.append(el('td', 'num', String(r.seq)), el('td', '', `${r.algorithm}${many ? ` run ${r.run}` : ''} · ${r.label}`),
        el('td', 'num', `${r.agents}/${r.sampled}`), el('td', 'num', fmtNum(r.error)),
        el('td', 'num', ok(r.latency_ms) ? fmtMs(r.latency_ms) + ' ms' : '—'), el('td', 'closed', r.closed_by || ''));
      if (r.failure) tr.lastChild.append(el('span', 'fail', ' ' + r.failure));
      tb.append(tr);
    }
  }

  // ---- charts ----
  function colorOf(alg) {
    const algs = (S.run && S.run.algorithms) || [];
    let i = algs.indexOf(alg);
    if (i < 0) { i = algs.length; for (const ch of String(alg)) i = (i * 31 + ch.charCodeAt(0)) % 997; }
    return PALETTE[i % PALETTE.length];
  }
  // One series per (algorithm, run) of field's values against the round within the run (FedEM's
  // initial exchange, round -1, left out); bySeq: one per algorithm against seq, every round.
  function seriesOf(field, opt = {}) {
    const m = new Map(), many = S.run && S.run.runs > 1 && !opt.bySeq;
    for (const r of S.rounds) {
      const v = r[field], run = opt.bySeq ? 0 : r.run, key = r.algorithm + '\u0001' + run;
      if ((r.round < 0 && !opt.bySeq) || !ok(v) || (opt.positive && v <= 0)) continue;
      if (!m.has(key)) m.set(key, { name: r.algorithm + (many ? ` run ${run}` : '') + (opt.suffix || ''), color: colorOf(r.algorithm),
        dash: opt.dash || RUN_DASHES[run % RUN_DASHES.length], opacity: opt.opacity || 1, pts: [] });
      m.get(key).pts.push([opt.bySeq ? r.seq : r.round + 1, v]);  // rounds counted from 1, as in the log
    }
    return [...m.values()];
  }

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

  function lineChart(card, series, o) {
    const plot = card.querySelector('.plot'), legend = card.querySelector('.legend');
    const all = series.flatMap((s) => s.pts);
    if (legend) legend.textContent = '';
    if (!all.length) return empty(plot);
    const tf = o.log ? Math.log10 : (v) => v;
    let [x0, x1] = extent(all, (p) => p[0]), [y0, y1] = extent(all, (p) => tf(p[1]));
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
      xFmt: (v) => String(v), yFmt: o.log ? fmtLogTick : fmtNum,
    });
    const marks = all.length <= 200; // points (with their values as tooltips) while they stay legible
    for (const s of series) {
      const d = s.pts.map((p, i) => (i ? 'L' : 'M') + f.X(p[0]).toFixed(1) + ',' + f.Y(tf(p[1])).toFixed(1)).join('');
      f.svg.append(sv('path', { d, class: 'series', stroke: s.color, 'stroke-dasharray': s.dash, 'stroke-opacity': s.opacity }));
      if (!marks && s.pts.length > 1) continue;
      for (const p of s.pts) {
        const c = sv('circle', { cx: f.X(p[0]).toFixed(1), cy: f.Y(tf(p[1])).toFixed(1), r: 2.4, fill: s.color, 'fill-opacity': s.opacity, class: 'mark' });
        c.append(sv('title', {}, `${s.name}, ${o.xName || 'round'} ${p[0]}: ${fmtNum(p[1])}`));
        f.svg.append(c);
      }
    }
    for (const s of series) { // the legend: each series' line style, name and last value
      const item = el('span', 'item'), sw = sv('svg', { width: 22, height: 8, class: 'swatch' });
      sw.append(sv('line', { x1: 0, x2: 22, y1: 4, y2: 4, stroke: s.color, 'stroke-width': 2, 'stroke-dasharray': s.dash, 'stroke-opacity': s.opacity }));
      item.append(sw, el('span', '', s.name), el('span', 'last', fmtNum(s.pts[s.pts.length - 1][1])));
      legend.append(item);
    }
  }

  function quantile(sorted, q) {
    const i = (sorted.length - 1) * q, lo = Math.floor(i), hi = Math.ceil(i);
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (i - lo);
  }

  function histogram(card, values) {
    const plot = card.querySelector('.plot'), stats = $('latency-stats');
    if (!values.length) { setText(stats, 'no rounds with a latency yet'); return empty(plot); }
    const v = values.slice().sort((a, b) => a - b), n = v.length;
    const med = quantile(v, 0.5), p90 = quantile(v, 0.9), max = v[n - 1];
    setText(stats, `median ${fmtMs(med)} ms, p90 ${fmtMs(p90)} ms, max ${fmtMs(max)} ms over ${n} round${n === 1 ? '' : 's'}`);
    let lo = v[0], hi = max;
    if (hi === lo) { lo = Math.max(0, lo - 1); hi += 1; }
    const bins = 20, bw = (hi - lo) / bins, counts = new Array(bins).fill(0);
    for (const x of v) counts[Math.min(bins - 1, Math.floor((x - lo) / bw))]++;
    const cmax = extent(counts, (c) => c)[1];
    const f = frame(plot, [lo, hi], [0, cmax], {
      xTicks: linTicks(lo, hi, Math.max(2, Math.floor(plot.clientWidth / 90))), yTicks: linTicks(0, cmax, 4, true),
      xFmt: fmtNum, yFmt: String, xLabel: 'ms',
    });
    counts.forEach((c, i) => {
      if (!c) return;
      const x = f.X(lo + i * bw), x2 = f.X(lo + (i + 1) * bw), y = f.Y(c);
      const bar = sv('rect', { x: (x + 0.5).toFixed(1), y: y.toFixed(1), width: Math.max(1, x2 - x - 1).toFixed(1), height: (f.Y(0) - y).toFixed(1), class: 'hbar' });
      bar.append(sv('title', {}, `${fmtMs(lo + i * bw)}–${fmtMs(lo + (i + 1) * bw)} ms: ${c} round${c === 1 ? '' : 's'}`));
      f.svg.append(bar);
    });
    for (const [q, name, cls] of [[med, 'median', 'q-median'], [p90, 'p90', 'q-p90']]) {
      const x = f.X(q).toFixed(1);
      f.svg.append(sv('line', { x1: x, x2: x, y1: f.M.t, y2: f.M.t + f.h, class: 'qline ' + cls }));
      f.svg.append(sv('text', { x: +x + 3, y: f.M.t + (name === 'p90' ? 22 : 10), class: 'qlabel ' + cls }, `${name} ${fmtMs(q)}`));
    }
  }

  function drawCharts() {
    const run = S.run || {};
    $('error-title').textContent = `Error per round: ${run.error_metric || 'error'} (log scale)`;
    const xLabel = 'round in run', xMax = run.rounds_per_run;
    lineChart($('chart-error'), seriesOf('error', { positive: true }), { log: true, xLabel, xMax });
    const loss = seriesOf('train_loss').concat(seriesOf('local_loss', { dash: '3 3', opacity: 0.5, suffix: ' local' }));
    $('chart-loss').hidden = !loss.length;
    if (loss.length) lineChart($('chart-loss'), loss, { xLabel, xMax });
    const acc = seriesOf('test_accuracy');
    $('chart-accuracy').hidden = !acc.length;
    if (acc.length) lineChart($('chart-accuracy'), acc, { xLabel, xMax });
    lineChart($('chart-latency'), seriesOf('latency_ms', { bySeq: true }), { zero: true, xLabel: 'round seq', xName: 'seq', xMax: run.rounds_total - 1 });
    histogram($('chart-latency-hist'), S.rounds.map((r) => r.latency_ms).filter(ok));
  }

  // ---- devices ----
  const COLS = ['id', 'index', 'platform', 'state', 'reason', 'last_seen', 'rounds', 'bytes_up', 'bytes_down', 'last_work_ms', 'connections'];
  const NUMERIC = new Set(['index', 'last_seen', 'rounds', 'bytes_up', 'bytes_down', 'last_work_ms', 'connections']);

  // The filter: a substring of the id or state; a whole state name matches that state only ("connected", not "disconnected").
  function matches(d, q) {
    const st = String(d.state || '').toLowerCase(), whole = COUNT_STATES.includes(q) || q === 'registering';
    return !q || String(d.id).toLowerCase().includes(q) || (whole ? st === q : st.includes(q));
  }

  function cellValues(d, now) {
    return [String(d.id), String(d.index ?? ''), d.platform || '', d.state || '', d.reason || '',
      ok(d.last_seen) ? fmtAgo(now - d.last_seen) : 'never', String(d.rounds ?? '—'), fmtBytes(d.bytes_up),
      fmtBytes(d.bytes_down), ok(d.last_work_ms) ? String(d.last_work_ms) : '—', String(d.connections ?? '—')];
  }

  // One row per device, kept across polls (S.rows); only the cells whose text changed are written.
  function rowFor(d) {
    let tr = S.rows.get(d.id);
    if (tr) return tr;
    tr = el('tr');
    tr.dataset.id = d.id;
    tr._v = [];
    for (const c of COLS) tr.append(el('td', c === 'state' ? 'state' : NUMERIC.has(c) ? 'num' : c === 'id' ? 'mono' : ''));
    tr.cells[COLS.indexOf('state')].append(el('span', 'badge'));
    S.rows.set(d.id, tr);
    return tr;
  }

  function updateRow(tr, d, now) {
    cellValues(d, now).forEach((v, i) => {
      if (tr._v[i] === v) return;
      tr._v[i] = v;
      const td = tr.cells[i];
      if (COLS[i] === 'state') { td.className = 'state state-' + v.replace(/[^a-z_-]/gi, ''); td.firstChild.textContent = v; }
      else td.textContent = v;
      if (COLS[i] === 'platform' || COLS[i] === 'reason') td.title = v; // the columns have fixed widths: full text on hover
    });
    const peer = `${d.id}: ${d.peer ? `peer ${d.peer}` : 'never connected'}`;
    if (tr.cells[0].title !== peer) tr.cells[0].title = peer;
  }

  function renderCounts() {
    const box = $('device-counts'), key = JSON.stringify([S.counts, S.filter]);
    if (box.dataset.key === key) return;
    box.dataset.key = key;
    box.textContent = '';
    for (const k of COUNT_STATES.concat(Object.keys(S.counts).filter((k) => !COUNT_STATES.includes(k)))) {
      const n = S.counts[k] ?? 0, b = el('button', `pill state-${k.replace(/[^a-z_-]/gi, '')}${n ? '' : ' zero'}${S.filter === k ? ' active' : ''}`);
      Object.assign(b, { type: 'button', title: `show the ${k} devices` });
      b.dataset.state = k;
      b.append(el('span', 'pill-name', k), el('span', 'pill-count', String(n)));
      box.append(b);
    }
  }

  function renderDevices() {
    renderCounts();
    const now = ok(S.run && S.run.now) ? S.run.now : Date.now() / 1000;
    const q = S.filter.trim().toLowerCase();
    const list = S.devices.filter((d) => matches(d, q)).sort((a, b) => (a.index - b.index) || (a.id < b.id ? -1 : 1));
    const shown = S.showAll ? list : list.slice(0, ROW_LIMIT);
    const tb = $('devices').tBodies[0];
    let at = tb.firstChild;
    for (const d of shown) {
      const tr = rowFor(d);
      updateRow(tr, d, now);
      if (tr === at) at = at.nextSibling; else tb.insertBefore(tr, at);
    }
    while (at) { const next = at.nextSibling; tb.removeChild(at); at = next; }
    if (S.rows.size > S.devices.length + ROW_LIMIT) {
      const ids = new Set(S.devices.map((d) => d.id));
      for (const id of S.rows.keys()) if (!ids.has(id)) S.rows.delete(id);
    }
    setText($('devices-total'), `(${S.devices.length})`);
    setText($('devices-showing'), `showing ${shown.length} of ${list.length === S.devices.length ? S.devices.length : `${list.length} matching, ${S.devices.length}`}`);
    const all = $('devices-all');
    all.hidden = list.length <= ROW_LIMIT;
    setText(all, S.showAll ? `show first ${ROW_LIMIT}` : 'show all');
  }

  function setup() {
    const filter = $('device-filter');
    filter.addEventListener('input', () => { S.filter = filter.value; if (S.run) renderDevices(); });
    $('device-counts').addEventListener('click', (ev) => {
      const b = ev.target.closest('button[data-state]');
      if (!b) return;
      S.filter = S.filter === b.dataset.state ? '' : b.dataset.state;
      filter.value = S.filter;
      renderDevices();
    });
    $('devices-all').addEventListener('click', () => { S.showAll = !S.showAll; renderDevices(); });
    // Charts are drawn to their box's width: redraw when the width changes (once per frame at most).
    const charts = document.querySelector('.charts');
    let lastW = 0;
    new ResizeObserver(() => {
      if (charts.clientWidth !== lastW && S.run) { lastW = charts.clientWidth; drawCharts(); }
    }).observe(charts);
    poll();
  }

  setup(); // the script is deferred: the page is parsed
})();

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
  const RECENT = 12; // rows of the recent-rounds table
  // The charts' series, each grown a round at a time as rounds arrive: [field, options]. One series per
  // (algorithm, run) of field against the round within the run (FedEM's initial exchange, round -1,
  // left out); bySeq: one per algorithm against seq, every round.
  const SERIES = [['error', { positive: true }], ['train_loss', {}], ['local_loss', { dash: '3 3', opacity: 0.5, suffix: ' local' }],
    ['test_accuracy', {}], ['latency_ms', { bySeq: true }]];
  const S = { run: null, held: 0, recent: [], series: null, roundsVer: 0, drawnVer: -1, drawnAt: 0, drawnRounds: 0,
    devices: [], counts: {}, downSince: null, settingsKey: '',
    filter: '', showAll: false, rows: new Map() }; // the page's state: the last answers, and the table's view
  const $ = (id) => document.getElementById(id);

  const { ok, el } = Fmt;
  const pct = (a, b) => (b > 0 ? (100 * Math.min(1, a / b)).toFixed(1) : '0') + '%';
  const setText = (e, t) => { if (e.textContent !== t) e.textContent = t; };

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

  // The rounds held: their count, the last RECENT, and the charts' series (by field, in the order
  // they began) with the latencies in ascending order. A round is added once, when it arrives.
  function clearRounds() {
    S.held = 0;
    S.recent = [];
    S.series = { keys: new Map(), latencies: [] };
    for (const [field] of SERIES) S.series[field] = [];
  }
  clearRounds();

  function addRound(r) {
    for (const [field, opt] of SERIES) {
      const v = r[field], run = opt.bySeq ? 0 : r.run, key = field + '\u0001' + r.algorithm + '\u0001' + run;
      if ((r.round < 0 && !opt.bySeq) || !ok(v) || (opt.positive && v <= 0)) continue;
      let s = S.series.keys.get(key);
      if (!s) {
        const many = S.run && S.run.runs > 1 && !opt.bySeq;
        s = Charts.series({ name: r.algorithm + (many ? ` run ${run}` : '') + (opt.suffix || ''), color: colorOf(r.algorithm),
          dash: opt.dash || RUN_DASHES[run % RUN_DASHES.length], opacity: opt.opacity || 1 });
        S.series.keys.set(key, s);
        S.series[field].push(s);
      }
      Charts.append(s, opt.bySeq ? r.seq : r.round + 1, v);  // rounds counted from 1, as in the log
    }
    if (ok(r.latency_ms)) Charts.insertSorted(S.series.latencies, r.latency_ms);
    S.recent.push(r);
    if (S.recent.length > RECENT) S.recent.shift();
    S.held++;
  }

  // Rounds arrive in seq order from seq = the number held; one held already is skipped, and one past
  // that (a hole) ends the merge: the next poll asks from the hole again.
  function mergeRounds(body) {
    if (!body || !Array.isArray(body.rounds)) return;
    const reset = ok(body.total) && body.total < S.held; // another run answers now: start over
    if (reset) clearRounds();
    const before = S.held;
    for (const r of body.rounds) {
      if (r.seq > S.held) break;
      if (r.seq === S.held) addRound(r);
    }
    if (reset || S.held !== before) S.roundsVer++;
  }

  async function poll() {
    let up = true;
    try {
      // One request per poll: the run, the rounds not yet held and the devices, taken at one instant.
      const { run, devices: devs, rounds, gateways } = await getJSON(`api/live?since=${S.held}`);
      S.run = run;
      S.gateways = Array.isArray(gateways) ? gateways : [];
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
      setText(banner, `coordinator unreachable since ${Fmt.clock(S.downSince)} (the run may have finished)`);
      return setStatus('unreachable');
    }
    if (!S.run) return;
    renderHeader(S.run);
    renderSettings(S.run);
    renderSecagg(S.run);
    renderGateways();
    const now = Date.now();
    // The first rounds are drawn at once; later ones at most every CHART_MS, and all when the run ends.
    if (S.drawnVer !== S.roundsVer && (now - S.drawnAt >= CHART_MS || !S.drawnRounds || S.run.status !== 'running')) {
      S.drawnVer = S.roundsVer;
      S.drawnAt = now;
      S.drawnRounds = S.held;
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
      if (ok(c.opened_at) && ok(run.now)) text += ` (open ${Fmt.duration(run.now - c.opened_at)})`;
    }
    setText($('current-round'), text);
    $('current-bar').style.width = c ? pct(c.submitted, c.sampled) : '0%';
    setText($('elapsed'), Fmt.duration((ok(run.finished_at) ? run.finished_at : run.now) - run.started_at));
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
    const p = run.privacy; // central DP-FedAvg: the guarantee's settings and the epsilon spent (docs/privacy.md)
    if (p) {
      rows.push(['privacy', `${p.mechanism} DP-FedAvg, clip ${p.clip}, noise_multiplier ${p.noise_multiplier}, ` +
        `delta ${p.delta}` + (p.epsilon_budget != null ? `, epsilon_budget ${p.epsilon_budget}` : '') +
        (p.private ? '' : ' (test_seed: NOT private)')]);
      for (const e of run.epsilon || []) rows.push([`epsilon ${e.algorithm} run ${e.run}`, Number(e.epsilon).toPrecision(6)]);
    }
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

  function renderSecagg(run) { // rebuilt only when the phase or a count changed
    const box = $('secagg'), sa = run.secagg, key = JSON.stringify([sa, run.secagg_enabled]);
    if (box.dataset.key === key) return;
    box.dataset.key = key;
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
    for (const r of S.recent.slice().reverse()) {
      const tr = el('tr', r.failure ? 'failed' : '');
      const many = S.run && S.run.runs > 1;
      tr.append(el('td', 'num', String(r.seq)), el('td', '', `${r.algorithm}${many ? ` run ${r.run}` : ''} · ${r.label}`),
        el('td', 'num', `${r.agents}/${r.sampled}`), el('td', 'num', Fmt.num(r.error)),
        el('td', 'num', ok(r.latency_ms) ? Fmt.ms(r.latency_ms) + ' ms' : '—'), el('td', 'closed', r.closed_by || ''));
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
  function drawCharts() {
    const run = S.run || {}, ser = S.series;
    $('error-title').textContent = `Error per round: ${run.error_metric || 'error'} (log scale)`;
    const xLabel = 'round in run', xMax = run.rounds_per_run;
    Charts.line($('chart-error'), ser.error, { log: true, xLabel, xMax });
    const loss = ser.train_loss.concat(ser.local_loss);
    $('chart-loss').hidden = !loss.length;
    if (loss.length) Charts.line($('chart-loss'), loss, { xLabel, xMax });
    $('chart-accuracy').hidden = !ser.test_accuracy.length;
    if (ser.test_accuracy.length) Charts.line($('chart-accuracy'), ser.test_accuracy, { xLabel, xMax });
    Charts.line($('chart-latency'), ser.latency_ms, { zero: true, xLabel: 'round seq', xName: 'seq', xMax: run.rounds_total - 1 });
    setText($('latency-stats'), Charts.histogram($('chart-latency-hist'), ser.latencies));
  }

  // ---- gateways (docs/gateways.md): one row each, their devices up and the open round's aggregate ----
  function renderGateways() {
    const card = $('gateways-card'), list = S.gateways || [];
    card.hidden = list.length === 0;
    const key = JSON.stringify(list);
    if (card.hidden || card.dataset.key === key) return;
    card.dataset.key = key;
    const tb = $('gateways').tBodies[0];
    tb.textContent = '';
    for (const g of list) {
      const tr = el('tr');
      const state = el('td', 'state state-' + (g.state === 'up' ? 'connected' : 'disconnected'));
      state.append(el('span', 'badge', g.state));
      const round = g.round === 'handed_up' ? 'aggregate handed up' : g.round === 'waiting' ? 'waiting for its devices' : '—';
      tr.append(el('td', 'mono', g.id), state, el('td', 'mono', g.peer || ''), el('td', 'num', `${g.devices_up} / ${g.provisioned}`),
        el('td', '', round));
      tr.cells[0].title = `show ${g.id}'s devices`;
      tr.cells[0].style.cursor = 'pointer';
      tr.cells[0].addEventListener('click', () => { $('device-filter').value = g.id; S.filter = g.id; renderDevices(); });
      tb.append(tr);
    }
  }

  // ---- devices ----
  const COLS = ['id', 'index', 'platform', 'via', 'state', 'reason', 'last_seen', 'rounds', 'bytes_up', 'bytes_down', 'last_work_ms', 'connections'];
  const NUMERIC = new Set(['index', 'last_seen', 'rounds', 'bytes_up', 'bytes_down', 'last_work_ms', 'connections']);

  // The filter: a substring of the id or state, or a gateway's id (its devices); a whole state name matches
  // that state only ("connected", not "disconnected").
  function matches(d, q) {
    const st = String(d.state || '').toLowerCase(), whole = COUNT_STATES.includes(q) || q === 'registering';
    return !q || String(d.id).toLowerCase().includes(q) || String(d.via || '').toLowerCase() === q ||
      (whole ? st === q : st.includes(q));
  }

  function cellValues(d, now) {
    return [String(d.id), String(d.index ?? ''), d.platform || '', d.via || '', d.state || '', d.reason || '',
      ok(d.last_seen) ? Fmt.ago(now - d.last_seen) : 'never', String(d.rounds ?? '—'), Fmt.bytes(d.bytes_up),
      Fmt.bytes(d.bytes_down), ok(d.last_work_ms) ? String(d.last_work_ms) : '—', String(d.connections ?? '—')];
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

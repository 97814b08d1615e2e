// fedrt dashboard: number, byte and time formatting shared by the page and its charts; docs/dashboard.md.
'use strict';
const Fmt = (() => {
  const ok = (v) => typeof v === 'number' && isFinite(v);
  function num(v) { // 4 significant digits, exponent outside [1e-3, 1e5)
    if (!ok(v)) return '—';
    const a = Math.abs(v);
    return a !== 0 && (a >= 1e5 || a < 1e-3) ? v.toExponential(2) : String(a >= 100 ? Math.round(v * 10) / 10 : parseFloat(v.toPrecision(4)));
  }
  const ms = (v) => (!ok(v) ? '—' : v >= 100 ? String(Math.round(v)) : String(parseFloat(v.toPrecision(3))));
  function bytes(b) { // SI units: 1 kB = 1000 B
    if (!ok(b)) return '—';
    if (b < 1000) return b + ' B';
    let i = -1;
    do { b /= 1000; i++; } while (b >= 1000 && i < 3);
    return (b >= 100 ? b.toFixed(0) : b >= 10 ? b.toFixed(1) : b.toFixed(2)) + ' ' + ['kB', 'MB', 'GB', 'TB'][i];
  }
  function duration(s) { // 4:05 or 1:02:05
    if (!ok(s) || s < 0) return '—';
    const p = (n) => String(Math.floor(n)).padStart(2, '0'), h = Math.floor(s / 3600);
    return (h ? `${h}:${p(s / 60 % 60)}` : String(Math.floor(s / 60))) + ':' + p(s % 60);
  }
  function ago(s) {
    if (!ok(s)) return 'never';
    s = Math.max(0, s);
    return s < 60 ? Math.round(s) + ' s ago' : s < 3600 ? Math.floor(s / 60) + ' min ago'
      : s < 86400 ? Math.floor(s / 3600) + ' h ago' : Math.floor(s / 86400) + ' d ago';
  }
  const clock = (d) => d.toTimeString().slice(0, 8);
  function el(tag, cls, text, id) { // an HTML element
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = text;
    if (id) e.id = id;
    return e;
  }
  return { ok, num, ms, bytes, duration, ago, clock, el };
})();

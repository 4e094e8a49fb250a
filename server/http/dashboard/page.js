/* page.js - the dashboard's script (index.html; served as GET /page.js): the job list, the
   last N decisions of the selected job, the token form. timeline.js adds the view over time. */
'use strict';

/* The JSON API the page reads ({job} and {limit} are filled in, URL-encoded). */
const API = {
  jobs: '/v1/jobs',
  policies: '/v1/policies',
  decisions: '/v1/jobs/{job}/decisions?limit={limit}',
  config: '/v1/jobs/{job}/config',
  decision: '/v1/decisions/{id}',
};
const REFRESH_MS = 10000;
const TOKEN_KEY = 'governor.token';
const OPT_MIN = 'job.autoscaler.vertex.min-parallelism';
const OPT_MAX = 'job.autoscaler.vertex.max-parallelism';
const OPT_UTIL = 'job.autoscaler.utilization.target';
const OPT_BOUNDARY = 'job.autoscaler.target.utilization.boundary';
const OPT_UMIN = 'job.autoscaler.utilization.min';
const OPT_UMAX = 'job.autoscaler.utilization.max';

/* One color per reason code: greens settle, oranges/reds act or block, greys wait. */
const REASON_COLORS = {
  COLLECTING_METRICS: '#a9b1bd',
  WITHIN_TARGET: '#3b9e5f',
  HIGH_BACKLOG: '#d9480f',
  HIGH_UTILIZATION: '#f08c00',
  LOW_UTILIZATION: '#1c7ed6',
  SCALE_DOWN_DELAYED: '#74c0fc',
  LIMIT_REACHED: '#862e9c',
  KEY_PARALLELISM_LIMIT: '#c2255c',
  INEFFECTIVE_SCALING: '#e8590c',
  MEMORY_PRESSURE: '#5f3dc4',
  QUOTA_REACHED: '#9c36b5',
  EXCLUDED_PERIOD: '#868e96',
  SCALING_DISABLED: '#495057',
  VETOED: '#e03131',
  PLUGIN_ERROR: '#c92a2a',
  JOB_NOT_RUNNING: '#343a40',
};
const OTHER_REASON = '#ced4da';
/* Vertex series colors (utilization, backlog), in the job's topological order. */
const PALETTE = ['#2f6fdb', '#e07b00', '#2e9d57', '#c2255c', '#7048e8', '#0c8599', '#a61e4d',
                 '#5c940d', '#d6336c', '#364fc7'];

const state = { job: null, limit: 200, timer: null, busy: false, last: null, memToken: '' };

/* The SVG namespace, taken from an element the HTML parser made (no URL written here). */
const SVG_NS = (() => {
  const d = document.createElement('div');
  d.innerHTML = '<svg></svg>';
  return d.firstChild.namespaceURI;
})();

/* ------------------------------------------------------------------ helpers -- */

function $(id) { return document.getElementById(id); }

/* An element (SVG when ns) with attributes, appended to parent, with text content. */
function mk(tag, attrs, parent, text, ns) {
  const e = ns ? document.createElementNS(SVG_NS, tag) : document.createElement(tag);
  for (const k in attrs || {}) {
    if (attrs[k] !== undefined && attrs[k] !== null) e.setAttribute(k, attrs[k]);
  }
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (parent) parent.appendChild(e);
  return e;
}
function svg(tag, attrs, parent, text) { return mk(tag, attrs, parent, text, true); }
function titled(e, text) { svg('title', {}, e, text); return e; }

function fillUrl(tpl, vars) {
  return tpl.replace(/\{(\w+)\}/g, (_, k) => encodeURIComponent(vars[k]));
}

function getToken() {
  try { return localStorage.getItem(TOKEN_KEY) || ''; } catch (e) { return ''; }
}
function setToken(t) {
  try {
    if (t) localStorage.setItem(TOKEN_KEY, t); else localStorage.removeItem(TOKEN_KEY);
  } catch (e) { /* storage disabled: the token lives until the page closes */ }
  state.memToken = t;
}

class AuthError extends Error {}

/* GET path from the API; JSON body, AuthError on 401, Error with the envelope's message else. */
async function api(path) {
  const headers = { Accept: 'application/json' };
  const t = getToken() || state.memToken;
  if (t) headers.Authorization = 'Bearer ' + t;
  const r = await fetch(path, { headers, cache: 'no-store' });
  if (r.status === 401) throw new AuthError('401');
  let body = null;
  try { body = await r.json(); } catch (e) { body = null; }
  if (!r.ok) {
    const m = body && body.error && body.error.message ? body.error.message : r.statusText;
    const err = new Error('GET ' + path + ': ' + r.status + ' ' + m);
    err.status = r.status;
    throw err;
  }
  return body;
}

function pad2(n) { return String(n).padStart(2, '0'); }
/* Times are shown in UTC, like the stored epoch milliseconds and the server's logs. */
function fmtTime(ms, withDate, withSec) {
  const d = new Date(ms);
  let s = pad2(d.getUTCHours()) + ':' + pad2(d.getUTCMinutes());
  if (withSec) s += ':' + pad2(d.getUTCSeconds());
  if (withDate) s = d.getUTCFullYear() + '-' + pad2(d.getUTCMonth() + 1) + '-' + pad2(d.getUTCDate()) + ' ' + s;
  return s;
}
function fmtStamp(ms) { return fmtTime(ms, true, true) + ' UTC'; }

function fmtNum(v) {
  if (v === null || v === undefined || !isFinite(v)) return 'n/a';
  const a = Math.abs(v);
  const units = [[1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k']];
  for (const [u, s] of units) {
    if (a >= u) return +(v / u).toPrecision(3) + s;
  }
  if (a === 0 || Number.isInteger(v)) return String(v);
  return String(+v.toPrecision(3));
}

/* Up to ~n round ticks covering [lo, hi]. */
function niceTicks(lo, hi, n, integer) {
  if (!(hi > lo)) hi = lo + 1;
  const raw = (hi - lo) / Math.max(1, n);
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  let step = mag;
  for (const m of [1, 2, 2.5, 5, 10]) {
    step = m * mag;
    if (step >= raw) break;
  }
  if (integer) step = Math.max(1, Math.ceil(step));
  const ticks = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) ticks.push(+v.toPrecision(12));
  return { ticks, step };
}
function niceCeil(v, integer) {
  const t = niceTicks(0, v, 4, integer);
  return Math.ceil(v / t.step - 1e-9) * t.step || t.step;
}

const TIME_STEPS = [1e3, 5e3, 10e3, 15e3, 30e3, 60e3, 120e3, 300e3, 600e3, 900e3, 1800e3,
                    3600e3, 7200e3, 10800e3, 21600e3, 43200e3, 86400e3, 172800e3, 604800e3];
function timeTicks(t0, t1, maxTicks) {
  let step = TIME_STEPS[TIME_STEPS.length - 1];
  for (const s of TIME_STEPS) {
    if ((t1 - t0) / s <= maxTicks) { step = s; break; }
  }
  const ticks = [];
  for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) ticks.push(t);
  return { ticks, withDate: t1 - t0 > 86400e3 || new Date(t0).getUTCDate() !== new Date(t1).getUTCDate(), withSec: step < 60e3 };
}

/* ---------------------------------------------------------------- the model -- */

/*
 * The decisions (newest first from the API) as a time line for the charts. cfg: GET /config
 * (effective options with their layer); used: the newest decision's effective options (a map
 * of strings), or null.
 */
function model(decisions, cfg, used) {
  const ds = decisions.slice().sort((a, b) => a.at - b.at || a.decision_id - b.decision_id);
  const order = [];
  const seen = new Set();
  /* Vertex order: the newest decision's (topological), then any that only older ones had. */
  for (const d of decisions) {
    for (const v of d.vertices || []) {
      if (!seen.has(v.id)) { seen.add(v.id); order.push(v.id); }
    }
  }
  const t0 = ds.length ? ds[0].at : 0;
  const tl = ds.length ? ds[ds.length - 1].at : 0;
  const gaps = [];
  for (let i = 1; i < ds.length; i++) gaps.push(ds[i].at - ds[i - 1].at);
  gaps.sort((a, b) => a - b);
  /* The last decision holds for one typical interval, so that its step is visible. */
  const tail = gaps.length ? Math.max(gaps[gaps.length >> 1], 1000) : 60000;
  const eff = (cfg && cfg.effective) || {};
  const optVal = (k) => {
    if (used && used[k] !== undefined && used[k] !== null) return String(used[k]);
    return eff[k] && eff[k].value !== undefined && eff[k].value !== null ? String(eff[k].value) : '';
  };
  const optNum = (k) => {
    const v = optVal(k);
    if (v === '') return null;
    const n = parseFloat(v);
    return isFinite(n) ? n : null;
  };
  /* The layer: /config's, unless the newest decision used another value (the sample's own). */
  const optSrc = (k) => {
    const src = (eff[k] && eff[k].source) || '';
    if (used && used[k] !== undefined && (!eff[k] || String(eff[k].value) !== String(used[k]))) return 'sample config';
    return src;
  };
  const util = optNum(OPT_UTIL);
  const boundary = optNum(OPT_BOUNDARY);
  let umin = optNum(OPT_UMIN), umax = optNum(OPT_UMAX);
  if (util !== null && boundary !== null) {
    if (umin === null) umin = Math.max(0, util - boundary);
    if (umax === null) umax = Math.min(1, util + boundary);
  }
  return {
    ds, order, t0, t1: tl + tail,
    minP: optNum(OPT_MIN), maxP: optNum(OPT_MAX), minSrc: optSrc(OPT_MIN), maxSrc: optSrc(OPT_MAX),
    util, umin, umax,
  };
}

function vertexOf(d, id) {
  for (const v of d.vertices || []) if (v.id === id) return v;
  return null;
}
function evaluated(v, k) {
  if (!v || !v.evaluated) return null;
  const x = v.evaluated[k];
  return typeof x === 'number' && isFinite(x) ? x : null;
}

/* ---------------------------------------------------------------- the charts -- */

const M = { left: 64, right: 84, top: 16, bottom: 24 };

/* An SVG of width w with a plot area, its time axis and x(t). */
function chartFrame(parent, w, h, m, cls, attrs) {
  const s = svg('svg', Object.assign({ class: cls, width: w, height: h, viewBox: '0 0 ' + w + ' ' + h, role: 'img' }, attrs || {}), parent);
  const pw = w - M.left - M.right, ph = h - M.top - M.bottom;
  const x = (t) => M.left + (m.t1 > m.t0 ? (t - m.t0) / (m.t1 - m.t0) : 0) * pw;
  const tt = timeTicks(m.t0, m.t1, Math.max(2, Math.floor(pw / 95)));
  const gx = svg('g', { class: 'x-axis' }, s);
  for (const t of tt.ticks) {
    const xx = x(t);
    svg('line', { class: 'grid', x1: xx, x2: xx, y1: M.top, y2: M.top + ph }, gx);
    svg('text', { x: xx, y: M.top + ph + 15, 'text-anchor': 'middle' }, gx, fmtTime(t, tt.withDate, tt.withSec));
  }
  svg('line', { class: 'axis', x1: M.left, x2: M.left + pw, y1: M.top + ph, y2: M.top + ph }, s);
  return { s, x, pw, ph, top: M.top, left: M.left };
}

/* A y axis over [0, ymax] with grid lines; returns y(v). */
function yAxis(f, ymax, integer, fmt) {
  const y = (v) => f.top + f.ph - (Math.max(0, Math.min(v, ymax)) / ymax) * f.ph;
  const g = svg('g', { class: 'y-axis' }, f.s);
  for (const v of niceTicks(0, ymax, Math.max(2, Math.floor(f.ph / 28)), integer).ticks) {
    if (v > ymax + 1e-9) continue;
    svg('line', { class: 'grid', x1: f.left, x2: f.left + f.pw, y1: y(v), y2: y(v) }, g);
    svg('text', { x: f.left - 6, y: y(v) + 4, 'text-anchor': 'end' }, g, (fmt || fmtNum)(v));
  }
  svg('line', { class: 'axis', x1: f.left, x2: f.left, y1: f.top, y2: f.top + f.ph }, f.s);
  return y;
}

/* Step-line points: each value holds from its decision to the next (the last to m.t1). */
function stepPoints(m, x, y, values) {
  const pts = [];
  for (let i = 0; i < values.length; i++) {
    if (values[i] === null) continue;
    const xa = x(m.ds[i].at);
    const xb = x(i + 1 < m.ds.length ? m.ds[i + 1].at : m.t1);
    pts.push(xa.toFixed(1) + ',' + y(values[i]).toFixed(1), xb.toFixed(1) + ',' + y(values[i]).toFixed(1));
  }
  return pts;
}

/* The band [a, b] of decision i along x: from it to the next decision (the time it held). */
function band(m, x, i) {
  const a = m.ds[i].at;
  const b = i + 1 < m.ds.length ? m.ds[i + 1].at : m.t1;
  return [x(a), Math.max(x(b), x(a) + 1.5)];
}

function legend(parent, items) {
  const l = mk('div', { class: 'legend' }, parent);
  for (const it of items) {
    const k = mk('span', { class: 'key' }, l);
    const sw = mk('span', { class: 'swatch ' + (it.kind || '') }, k);
    if (it.color) sw.style.background = it.color;
    k.appendChild(document.createTextNode(it.label));
  }
  return l;
}

/* Current and target parallelism of one vertex, with the min/max parallelism options. */
function parallelismChart(parent, m, vid, w) {
  const cur = m.ds.map((d) => { const v = vertexOf(d, vid); return v && typeof v.current === 'number' ? v.current : null; });
  const tgt = m.ds.map((d) => { const v = vertexOf(d, vid); return v && typeof v.target === 'number' ? v.target : null; });
  let dmax = 1;
  for (const v of cur.concat(tgt)) if (v !== null && v > dmax) dmax = v;
  if (m.minP !== null && m.minP > dmax) dmax = m.minP;
  /* max-parallelism joins the scale only when it is near the data; else it is marked off scale. */
  const maxOn = m.maxP !== null && m.maxP <= dmax * 2.5;
  const ymax = niceCeil(Math.max(dmax * 1.15, maxOn ? m.maxP * 1.08 : 0, dmax + 1), true);
  const f = chartFrame(parent, w, 170, m, 'chart chart-parallelism', { 'data-vertex': vid });
  const y = yAxis(f, ymax, true);
  const pc = stepPoints(m, f.x, y, cur);
  if (pc.length) {
    const base = (f.top + f.ph).toFixed(1);
    const first = pc[0].split(',')[0], last = pc[pc.length - 1].split(',')[0];
    svg('polygon', { class: 'area-current', points: first + ',' + base + ' ' + pc.join(' ') + ' ' + last + ',' + base }, f.s);
  }
  svg('polyline', { class: 'series-current', points: pc.join(' '), 'data-vertex': vid }, f.s);
  svg('polyline', { class: 'series-target', points: stepPoints(m, f.x, y, tgt).join(' '), 'data-vertex': vid }, f.s);
  const xr = f.left + f.pw;
  if (m.minP !== null) {
    svg('line', { class: 'limit limit-min', x1: f.left, x2: xr, y1: y(m.minP), y2: y(m.minP) }, f.s);
    svg('text', { class: 'limit-label', x: xr + 6, y: y(m.minP) + 4 }, f.s, 'min ' + fmtNum(m.minP));
  }
  if (m.maxP !== null) {
    /* Off scale: drawn above the plot area, apart from the top grid line. */
    const yy = maxOn ? y(m.maxP) : f.top - 9;
    svg('line', { class: 'limit limit-max' + (maxOn ? '' : ' off-scale'), x1: f.left, x2: xr, y1: yy, y2: yy }, f.s);
    titled(svg('text', { class: 'limit-label', x: xr + 6, y: yy + 4 }, f.s, 'max ' + fmtNum(m.maxP) + (maxOn ? '' : ' \u2191')),
           maxOn ? 'max-parallelism ' + m.maxP : 'max-parallelism ' + m.maxP + ' is above this scale');
  }
  /* Hover: one column per decision with the vertex's figures. */
  const g = svg('g', { class: 'hovers' }, f.s);
  m.ds.forEach((d, i) => {
    const v = vertexOf(d, vid);
    if (!v) return;
    const [a, b] = band(m, f.x, i);
    const lines = [fmtStamp(d.at), vid + ': current ' + v.current + ', target ' + v.target +
                   (v.raw_target !== undefined && v.raw_target !== v.target ? ' (raw ' + v.raw_target + ')' : ''),
                   'reason ' + (v.reason || d.reason)];
    if (v.constraints && v.constraints.length) lines.push('constraints: ' + v.constraints.join(', '));
    if (v.message) lines.push(v.message);
    titled(svg('rect', { class: 'hover', x: a, y: f.top, width: b - a, height: f.ph }, g), lines.join('\n'));
  });
  return f.s;
}

/* The reason of each decision: one row for the job, one per vertex. */
function reasonsChart(parent, m, w) {
  const rows = ['job'].concat(m.order);
  const rh = 18, gap = 4, top = 12;
  const h = top + rows.length * (rh + gap) + M.bottom;
  const f = chartFrame(parent, w, h, m, 'chart chart-reasons', { id: 'reasons' });
  const counts = {};
  rows.forEach((row, r) => {
    const yy = top + r * (rh + gap);
    titled(svg('text', { class: 'row-label', x: f.left - 6, y: yy + rh - 5, 'text-anchor': 'end' }, f.s,
               row.length > 10 ? row.slice(0, 9) + '\u2026' : row), row);
    const g = svg('g', { class: r === 0 ? 'reasons-job' : 'reasons-vertex', 'data-vertex': r === 0 ? null : row }, f.s);
    m.ds.forEach((d, i) => {
      const [a, b] = band(m, f.x, i);
      let reason, text;
      if (r === 0) {
        reason = d.reason;
        counts[reason] = (counts[reason] || 0) + 1;
        text = fmtStamp(d.at) + '\n' + d.action + ' \u2014 ' + d.reason + (d.execute ? ' (executed)' : '') +
               (d.message ? '\n' + d.message : '');
      } else {
        const v = vertexOf(d, row);
        if (!v) return;
        reason = v.reason || d.reason;
        counts[reason] = counts[reason] || 0;
        text = fmtStamp(d.at) + '\n' + row + ': ' + reason + ', ' + v.current + ' \u2192 ' + v.target +
               (v.constraints && v.constraints.length ? '\nconstraints: ' + v.constraints.join(', ') : '') +
               (v.message ? '\n' + v.message : '');
      }
      const rect = svg('rect', {
        class: r === 0 ? 'reason-mark' : 'vertex-reason-mark', x: a.toFixed(1), y: yy,
        width: Math.max(1.5, b - a - (b - a > 4 ? 1 : 0)).toFixed(1), height: rh,
        fill: REASON_COLORS[reason] || OTHER_REASON, 'data-reason': reason, 'data-at': d.at,
      }, g);
      titled(rect, text);
    });
    if (r === 0) {
      /* A tick above the job row where the client was told to apply the decision. */
      m.ds.forEach((d) => {
        if (!d.execute) return;
        const xx = f.x(d.at);
        titled(svg('path', { class: 'exec-mark', d: 'M' + (xx - 4) + ',' + (yy - 8) + 'h8l-4,6z' }, f.s),
               fmtStamp(d.at) + ': executed ' + d.action);
      });
    }
  });
  const items = Object.keys(counts).sort().map((k) => ({
    color: REASON_COLORS[k] || OTHER_REASON,
    label: k + (counts[k] ? ' \u00d7' + counts[k] : ''),
  }));
  items.push({ label: 'executed', color: '#1b2230', kind: 'exec' });
  const l = legend(parent, items);
  l.id = 'reason-legend';
  return f.s;
}

/* A line per vertex of one evaluated figure over time (only vertices that have it). */
function seriesChart(parent, m, w, key, opts) {
  const series = [];
  m.order.forEach((vid, k) => {
    const vals = m.ds.map((d) => evaluated(vertexOf(d, vid), key));
    if (vals.some((v) => v !== null)) series.push({ vid, vals, color: PALETTE[k % PALETTE.length] });
  });
  if (!series.length) {
    mk('div', { class: 'empty-chart', id: opts.id + '-empty' }, parent, opts.empty);
    return null;
  }
  let dmax = 0;
  for (const s of series) for (const v of s.vals) if (v !== null && v > dmax) dmax = v;
  const ymax = opts.ymax ? Math.max(opts.ymax, niceCeil(dmax || 1)) : niceCeil(Math.max(dmax * 1.1, 1));
  const f = chartFrame(parent, w, opts.h || 170, m, 'chart chart-' + key, { id: opts.id });
  const y = yAxis(f, ymax, false, opts.fmt);
  if (opts.decorate) opts.decorate(f, y);
  for (const s of series) {
    const pts = [];
    s.vals.forEach((v, i) => { if (v !== null) pts.push(f.x(m.ds[i].at).toFixed(1) + ',' + y(v).toFixed(1)); });
    svg('polyline', { class: opts.cls, points: pts.join(' '), stroke: s.color, 'data-vertex': s.vid }, f.s);
    if (s.vals.length <= 120) {
      s.vals.forEach((v, i) => {
        if (v === null) return;
        titled(svg('circle', { cx: f.x(m.ds[i].at).toFixed(1), cy: y(v).toFixed(1), r: 2.6, fill: s.color }, f.s),
               fmtStamp(m.ds[i].at) + '\n' + s.vid + ': ' + opts.label + ' ' + (opts.fmt || fmtNum)(v));
      });
    }
  }
  legend(parent, series.map((s) => ({ color: s.color, label: s.vid, kind: 'line' })).concat(opts.extraLegend || []));
  return f.s;
}

/* ------------------------------------------------------------------ the page -- */

function setStatus(text, error) {
  const s = $('status');
  s.textContent = text;
  s.className = error ? 'error' : '';
}

function showToken(refused) {
  const f = $('token-form');
  f.hidden = false;
  $('token-hint').textContent = refused
    ? 'The stored token was refused; type another. It is kept in this browser (localStorage).'
    : 'It is kept in this browser (localStorage) and sent as Authorization: Bearer.';
  document.body.dataset.state = 'token';
  setStatus('');
  $('policy').textContent = 'policies: token needed';
  $('forget').hidden = !(getToken() || state.memToken);
  $('job').textContent = '';
  $('jobs').textContent = '';
  if (document.activeElement !== $('token-input')) $('token-input').focus();
}

function renderPolicies(p) {
  const el = $('policy');
  el.textContent = '';
  if (!p) return;
  el.appendChild(document.createTextNode('policies '));
  mk('b', { id: 'policy-revision' }, el, p.revision || 'native');
  const n = (p.plugins || []).length;
  el.appendChild(document.createTextNode(' \u00b7 ' + n + ' plugin' + (n === 1 ? '' : 's')));
  const lr = p.last_reload;
  if (lr && lr.ok === false) {
    mk('span', { class: 'bad' }, el, ' \u00b7 last reload failed: ' + (lr.error || '?'));
  } else if (lr && lr.at) {
    el.appendChild(document.createTextNode(' \u00b7 loaded ' + fmtStamp(lr.at)));
  }
  el.title = (p.plugins || []).map((x) => x.name + ' (' + x.kind + ', ' + x.file + ')').join('\n');
}

function renderJobs(jobs) {
  const ul = $('jobs');
  ul.textContent = '';
  if (!jobs.length) {
    mk('li', { class: 'empty' }, ul, 'No jobs yet.');
    return;
  }
  for (const j of jobs) {
    const li = mk('li', {}, ul);
    const a = mk('a', { href: '?job=' + encodeURIComponent(j.job), 'data-job': j.job,
                        class: j.job === state.job ? 'selected' : null }, li, j.job);
    if (j.last_at) mk('small', {}, a, 'last sample ' + fmtStamp(j.last_at));
    a.addEventListener('click', (ev) => {
      ev.preventDefault();
      select(j.job);
    });
  }
}

function renderLatest(parent, d) {
  const p = mk('section', { class: 'panel', id: 'latest' }, parent);
  mk('h3', {}, p, 'Latest decision');
  const dl = mk('dl', { class: 'latest' }, p);
  const row = (k, v) => { mk('dt', {}, dl, k); return mk('dd', {}, dl, v); };
  const dd = row('at', fmtStamp(d.at) + '  (decision ' + d.decision_id + ')');
  void dd;
  const r = row('reason', '');
  const b = mk('span', { class: 'badge' }, r, d.reason);
  b.style.background = REASON_COLORS[d.reason] || OTHER_REASON;
  r.appendChild(document.createTextNode('  ' + d.action + (d.execute ? ', executed' : ', not executed')));
  if (d.message) row('message', d.message);
  row('parallelism', (d.vertices || []).map((v) => v.id + ' ' + v.current +
      (v.target !== v.current ? ' \u2192 ' + v.target : '')).join(',  '));
  if (d.policy_revision) row('policy revision', d.policy_revision);
}

function renderRecent(parent, m) {
  const p = mk('section', { class: 'panel', id: 'recent' }, parent);
  mk('h3', {}, p, 'Recent decisions');
  const t = mk('table', { class: 'recent' }, p);
  const hr = mk('tr', {}, mk('thead', {}, t));
  for (const h of ['id', 'at (UTC)', 'action', 'reason', 'parallelism']) mk('th', {}, hr, h);
  const tb = mk('tbody', {}, t);
  for (const d of m.ds.slice(-15).reverse()) {
    const tr = mk('tr', {}, tb);
    mk('td', { class: 'num' }, tr, d.decision_id);
    mk('td', { class: 'num' }, tr, fmtTime(d.at, true, true));
    mk('td', {}, tr, d.action + (d.execute ? ', executed' : ''));
    const rc = mk('td', { class: 'reason' }, tr);
    const sw = mk('span', { class: 'swatch' }, rc);
    sw.style.background = REASON_COLORS[d.reason] || OTHER_REASON;
    rc.appendChild(document.createTextNode(d.reason));
    mk('td', { class: 'par' }, tr, (d.vertices || []).map((v) => v.id + '\u00a0' +
       (v.target !== v.current ? v.current + '\u2192' + v.target : v.current)).join(', '));
    /* The message on a row of its own, under its decision: readable at any width. */
    if (d.message) mk('td', { class: 'msg', colspan: 5 }, mk('tr', { class: 'msg' }, tb), d.message);
  }
}

function renderJob(job, decisions, cfg, cfgError, used) {
  const root = $('job');
  root.textContent = '';
  mk('h2', { id: 'job-title' }, root, job);
  const m = model(decisions, cfg, used);
  const sub = mk('div', { id: 'job-sub' }, root);
  if (!m.ds.length) {
    sub.textContent = 'No decisions stored for this job yet.';
    return;
  }
  sub.textContent = m.ds.length + ' decision' + (m.ds.length === 1 ? '' : 's') + ' from ' +
    fmtStamp(m.ds[0].at) + ' to ' + fmtStamp(m.ds[m.ds.length - 1].at) +
    (m.minP !== null ? ' \u00b7 min-parallelism ' + m.minP + ' (' + m.minSrc + ')' : '') +
    (m.maxP !== null ? ', max-parallelism ' + m.maxP + ' (' + m.maxSrc + ')' : '') +
    (cfgError ? ' \u00b7 config unavailable: ' + cfgError : '');
  renderLatest(root, m.ds[m.ds.length - 1]);
  const w = Math.max(420, Math.floor(root.clientWidth) - 30);

  const rp = mk('section', { class: 'panel' }, root);
  const rh = mk('h3', {}, rp, 'Decision reasons');
  mk('span', { class: 'note' }, rh, 'one mark per decision; hover for the message');
  reasonsChart(rp, m, w);

  const pp = mk('section', { class: 'panel', id: 'parallelism' }, root);
  const ph = mk('h3', {}, pp, 'Parallelism per vertex');
  mk('span', { class: 'note' }, ph, 'current (applied) and target (decided) over time; hover for each decision');
  legend(pp, [{ label: 'current', color: 'var(--current)', kind: 'line' },
              { label: 'target', color: 'var(--target)', kind: 'line' },
              { label: 'min / max parallelism (job options)', kind: 'dashed' }]);
  for (const vid of m.order) {
    const box = mk('div', { class: 'vertex-chart', 'data-vertex': vid }, pp);
    mk('div', { class: 'vertex-name' }, box).appendChild(mk('b', {}, null, vid));
    parallelismChart(box, m, vid, w);
  }

  const up = mk('section', { class: 'panel' }, root);
  const uh = mk('h3', {}, up, 'Utilization');
  mk('span', { class: 'note' }, uh, 'evaluated load (busy time, 0..1) per vertex' +
     (m.util !== null ? '; band: the utilization bounds around the target ' + m.util : ''));
  seriesChart(up, m, w, 'load', {
    id: 'utilization', cls: 'series-load', label: 'load', ymax: 1, h: 170,
    fmt: (v) => (+v.toFixed(2)).toString(),
    empty: 'No utilization reported yet (no busy time in the samples).',
    decorate: (f, y) => {
      if (m.umin !== null && m.umax !== null) {
        svg('rect', { class: 'target-band', x: f.left, width: f.pw, y: y(m.umax), height: Math.max(0, y(m.umin) - y(m.umax)) }, f.s);
      }
      if (m.util !== null) {
        svg('line', { class: 'target-line', x1: f.left, x2: f.left + f.pw, y1: y(m.util), y2: y(m.util) }, f.s);
        svg('text', { class: 'target-label', x: f.left + f.pw + 6, y: y(m.util) + 4 }, f.s, 'target ' + m.util);
      }
    },
    extraLegend: m.util !== null ? [{ label: 'target utilization and bounds', color: '#2e9d57', kind: 'line' }] : [],
  });

  const bp = mk('section', { class: 'panel' }, root);
  const bh = mk('h3', {}, bp, 'Backlog');
  mk('span', { class: 'note' }, bh, 'evaluated lag of the sources (pending records)');
  seriesChart(bp, m, w, 'lag', {
    id: 'backlog', cls: 'series-lag', label: 'lag', h: 150,
    empty: 'No backlog reported (no source sends pending_records).',
  });

  renderRecent(root, m);
}

function readQuery() {
  const q = new URLSearchParams(location.search);
  if (q.get('job')) state.job = q.get('job');
  const l = parseInt(q.get('limit') || '', 10);
  if (l >= 1 && l <= 1000) {
    state.limit = l;
    const sel = $('limit');
    if (![...sel.options].some((o) => +o.value === l)) mk('option', { value: l }, sel, 'last ' + l);
    sel.value = String(l);
  }
}

function writeQuery() {
  const q = new URLSearchParams(location.search);
  if (state.job) q.set('job', state.job); else q.delete('job');
  if (state.limit !== 200) q.set('limit', state.limit); else q.delete('limit');
  const s = q.toString();
  history.replaceState(null, '', s ? '?' + s : location.pathname);
}

function select(job) {
  state.job = job;
  writeQuery();
  refresh();
}

async function refresh() {
  if (state.busy) return;
  state.busy = true;
  try {
    const [jobs, pol] = await Promise.all([api(API.jobs), api(API.policies)]);
    $('token-form').hidden = true;
    $('forget').hidden = !(getToken() || state.memToken);
    const list = (jobs && jobs.jobs) || [];
    if (!state.job && list.length) {
      /* No job asked for: the one with the newest sample. */
      state.job = list.slice().sort((a, b) => (b.last_at || 0) - (a.last_at || 0))[0].job;
      writeQuery();
    }
    renderPolicies(pol);
    renderJobs(list);
    if (!state.job) {
      const root = $('job');
      root.textContent = '';
      mk('h2', { id: 'job-title' }, root, 'No jobs yet');
      mk('div', { id: 'job-sub' }, root, 'A job appears here once it has POSTed its metrics to /v1/jobs/{job}/metrics.');
    } else {
      const job = state.job;
      const [dec, cfg] = await Promise.all([
        api(fillUrl(API.decisions, { job, limit: state.limit })),
        api(fillUrl(API.config, { job })).then((c) => ({ c }), (e) => {
          if (e instanceof AuthError) throw e;
          return { err: e.message };
        }),
      ]);
      const decisions = (dec && dec.decisions) || [];
      /* The options the newest decision was made with (null when its record cannot be read). */
      let used = null;
      if (decisions.length && decisions[0].decision_id !== undefined) {
        try {
          const rec = await api(fillUrl(API.decision, { id: decisions[0].decision_id }));
          used = rec && rec.config && typeof rec.config === 'object' ? rec.config : null;
        } catch (e) {
          if (e instanceof AuthError) throw e;
        }
      }
      if (job === state.job) {
        state.last = { job, decisions, cfg: cfg.c, err: cfg.err, used };
        renderJob(job, decisions, cfg.c, cfg.err, used);
        if (!list.some((j) => j.job === job)) {
          mk('div', { class: 'empty-chart' }, $('job-sub'), 'This job is not in GET /v1/jobs (deleted or never seen); its stored history is shown.');
        }
      }
    }
    setStatus('Updated ' + fmtTime(Date.now(), false, true) + ' UTC' +
              ($('auto').checked ? ' \u00b7 next refresh in 10 s' : ''));
    document.body.dataset.state = 'ready';
  } catch (e) {
    if (e instanceof AuthError) {
      /* A token was sent and refused, or none was there yet. */
      showToken(Boolean(getToken() || state.memToken));
    } else {
      setStatus(String(e.message || e), true);
      document.body.dataset.state = 'error';
    }
  } finally {
    state.busy = false;
  }
}

function schedule() {
  clearInterval(state.timer);
  state.timer = $('auto').checked ? setInterval(refresh, REFRESH_MS) : null;
}

$('token-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const t = $('token-input').value.trim();
  if (!t) return;
  setToken(t);
  $('token-input').value = '';
  refresh();
});
$('forget').addEventListener('click', () => {
  setToken('');
  refresh();
});
$('limit').addEventListener('change', () => {
  state.limit = parseInt($('limit').value, 10) || 200;
  writeQuery();
  refresh();
});
$('auto').addEventListener('change', schedule);
let resizeTimer = null;
window.addEventListener('resize', () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(() => {
    if (state.last && state.last.job === state.job && document.body.dataset.state === 'ready') {
      renderJob(state.last.job, state.last.decisions, state.last.cfg, state.last.err, state.last.used);
    }
  }, 150);
});

readQuery();
refresh();
schedule();

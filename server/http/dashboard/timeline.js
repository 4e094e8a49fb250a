/* timeline.js - the dashboard's view over time (GET /timeline.js, after page.js, whose helpers
   it uses: api, $, mk, svg, titled, fillUrl, fmtTime, fmtStamp, fmtNum, niceTicks, timeTicks,
   state). For the selected job it reads GET /v1/jobs/{job}/timeline (bucketed series) and
   GET /v1/jobs/{job}/advice, and draws in #timeline:
     - a range picker (1 h, 6 h, 24 h, 7 d, custom from/to) with zoom and pan buttons;
     - advice banners (div.advice-banner[data-pattern]): the advice over the range, or over
       the 24 hours up to its end when it is shorter;
     - figures on one time axis with a shared cursor: parallelism per vertex
       (figure[data-chart=parallelism][data-vertex]), the rationale band (one labelled segment
       per run of a reason, linking to the decision's record), utilization against its target
       and bounds, backlog seconds with the lag threshold and the SLO; each a labelled figure
       with its data table behind a "show data" control (details > table.tl-data, one row per
       bucket with data, tr[data-bucket]);
     - #tl-readout: the values of the bucket under the cursor (span[data-vertex][data-field]);
     - table#tl-events: the executed decisions.
   Colours are the Okabe-Ito set (colour-blind safe), and every series also has a dash pattern
   and every reason segment a text code. URL parameters from, to (epoch ms) and step (ms) pick
   the range. window.governorTimeline.select(i) moves the cursor to bucket i (for tests). */
'use strict';

/* The JSON API this view reads (filled in and URL-encoded by fillUrl). */
const TL_API = {
  timeline: '/v1/jobs/{job}/timeline?from={from}&to={to}&step={step}',
  advice: '/v1/jobs/{job}/advice?window={window}&to={to}',
};
const TL_RANGES = [['1 h', 3600e3], ['6 h', 6 * 3600e3], ['24 h', 86400e3], ['7 d', 7 * 86400e3]];
const TL_COLORS = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#000000',
                   '#F0E442'];
const TL_DASH = ['', '6 3', '2 3', '8 3 2 3', '1 2', '10 4'];
/* Reasons: an Okabe-Ito colour and a text code each; others grey with their initials. */
const TL_REASONS = {
  COLLECTING_METRICS: ['#BBBBBB', 'CM'], WITHIN_TARGET: ['#009E73', 'WT'],
  HIGH_BACKLOG: ['#D55E00', 'HB'], HIGH_UTILIZATION: ['#E69F00', 'HU'],
  LOW_UTILIZATION: ['#0072B2', 'LU'], SCALE_DOWN_DELAYED: ['#56B4E9', 'SD'],
  LIMIT_REACHED: ['#CC79A7', 'LR'], KEY_PARALLELISM_LIMIT: ['#882255', 'KP'],
  JOB_NOT_RUNNING: ['#333333', 'NR'],
};
const TL_M = { left: 64, right: 84, top: 10, bottom: 22 };
const TL_STEPS = [1e3, 5e3, 10e3, 15e3, 30e3, 60e3, 120e3, 300e3, 600e3, 900e3, 1800e3, 3600e3,
                  7200e3, 10800e3, 21600e3, 43200e3, 86400e3];

const tl = { job: null, from: 0, to: 0, step: 0, span: 6 * 3600e3, data: null, advice: null,
             adviceKey: '', adviceAt: 0, sel: -1, busy: false, fixed: false };

/* The server's default step (timeline_auto_step): round, at most 360 buckets. */
function tlAutoStep(span) {
  const want = Math.ceil(span / 360);
  for (const s of TL_STEPS) if (s >= want) return s;
  return Math.ceil(want / 86400e3) * 86400e3;
}

function tlReason(code) {
  const r = TL_REASONS[code];
  if (r) return r;
  return ['#999999', code.split('_').map((w) => w[0]).join('')];
}

function tlFmtVal(v, digits) {
  if (v === null || v === undefined) return '–';
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  return digits === undefined ? String(v) : (+v).toFixed(digits);
}

/* Sets the range to [to - span, to), to rounded up to a whole step. */
function tlSetRange(to, span) {
  tl.span = Math.max(60e3, Math.min(31 * 86400e3, span));
  tl.step = tlAutoStep(tl.span);
  tl.to = Math.ceil(to / tl.step) * tl.step;
  tl.from = tl.to - tl.span;
}

/* The view's frame: controls, banners, the figures' container, the readout, the events. */
function tlFrame() {
  const root = $('timeline');
  root.textContent = '';
  const sec = mk('section', { class: 'panel', id: 'tl-panel' }, root);
  const h = mk('h3', {}, sec, 'Over time');
  mk('span', { class: 'note', id: 'tl-range' }, h);
  const bar = mk('div', { class: 'tl-bar', role: 'toolbar', 'aria-label': 'time range' }, sec);
  for (const [label, span] of TL_RANGES) {
    const b = mk('button', { type: 'button', 'data-span': String(span) }, bar, label);
    b.addEventListener('click', () => { tl.fixed = false; tlSetRange(Date.now(), span); tlLoad(); });
  }
  const zoom = [['zoom in', 'zoom-in', () => tlSetRange(tl.to - tl.span / 4, tl.span / 2)],
                ['zoom out', 'zoom-out', () => tlSetRange(tl.to + tl.span / 2, tl.span * 2)],
                ['◀ earlier', 'pan-left', () => tlSetRange(tl.to - tl.span / 2, tl.span)],
                ['later ▶', 'pan-right', () => tlSetRange(tl.to + tl.span / 2, tl.span)]];
  for (const [label, id, fn] of zoom) {
    const b = mk('button', { type: 'button', id: 'tl-' + id }, bar, label);
    b.addEventListener('click', () => { tl.fixed = true; fn(); tlLoad(); });
  }
  const form = mk('form', { id: 'tl-custom' }, bar);
  mk('input', { id: 'tl-from', placeholder: 'from (RFC 3339 or ms)', size: '22', 'aria-label': 'from' }, form);
  mk('input', { id: 'tl-to', placeholder: 'to', size: '22', 'aria-label': 'to' }, form);
  mk('button', { type: 'submit' }, form, 'custom');
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const p = (s) => (/^-?\d+$/.test(s) ? +s : Date.parse(/[zZ]|[+-]\d\d:\d\d$/.test(s) ? s : s + 'Z'));
    const f = p($('tl-from').value.trim()), t = p($('tl-to').value.trim());
    if (!(t > f)) { $('tl-range').textContent = 'custom range: from must be before to'; return; }
    tl.fixed = true;
    tlSetRange(t, t - f);
    tlLoad();
  });
  mk('div', { id: 'tl-advice' }, sec);
  mk('div', { id: 'tl-readout', 'aria-live': 'polite' }, sec);
  mk('div', { id: 'tl-figures' }, sec);
  const ev = mk('details', { id: 'tl-events-box' }, sec);
  mk('summary', {}, ev, 'executed decisions');
  mk('table', { id: 'tl-events', class: 'tl-data' }, ev);
}

/* One labelled figure: caption, chart (svg) and its data table behind "show data". */
function tlFigure(parent, chart, caption, vertex, height) {
  const fig = mk('figure', { class: 'tl-figure', 'data-chart': chart, 'data-vertex': vertex }, parent);
  mk('figcaption', {}, fig, caption);
  const w = Math.max(480, Math.min(1400, ($('tl-figures').clientWidth || 900) - 4));
  const s = svg('svg', { class: 'tl-chart', width: w, height, viewBox: '0 0 ' + w + ' ' + height,
                         role: 'img', 'aria-label': caption }, fig);
  const box = { x0: TL_M.left, x1: w - TL_M.right, y0: TL_M.top, y1: height - TL_M.bottom, svg: s };
  box.x = (t) => box.x0 + (t - tl.from) / (tl.to - tl.from) * (box.x1 - box.x0);
  svg('rect', { class: 'tl-bg', x: box.x0, y: box.y0, width: box.x1 - box.x0, height: box.y1 - box.y0 }, s);
  const tt = timeTicks(tl.from, tl.to, Math.max(2, Math.floor((box.x1 - box.x0) / 110)));
  for (const t of tt.ticks) {
    svg('line', { class: 'tl-grid', x1: box.x(t), x2: box.x(t), y1: box.y0, y2: box.y1 }, s);
    svg('text', { class: 'tl-tick', x: box.x(t), y: height - 6, 'text-anchor': 'middle' }, s,
        fmtTime(t, tt.withDate, tt.withSec));
  }
  svg('line', { class: 'tl-cursor', x1: -10, x2: -10, y1: box.y0, y2: box.y1 }, s);
  s.addEventListener('mousemove', (e) => {
    const r = s.getBoundingClientRect();
    const t = tl.from + (e.clientX - r.left - box.x0) / (box.x1 - box.x0) * (tl.to - tl.from);
    tlSelect(Math.floor((t - tl.from) / tl.step));
  });
  const det = mk('details', { class: 'tl-show' }, fig);
  mk('summary', {}, det, 'show data');
  const table = mk('table', { class: 'tl-data' }, det);
  return { box, table };
}

function tlYAxis(box, ymax, integer, fmt) {
  const y = (v) => box.y1 - v / ymax * (box.y1 - box.y0);
  for (const v of niceTicks(0, ymax, 4, integer).ticks) {
    svg('line', { class: 'tl-grid', x1: box.x0, x2: box.x1, y1: y(v), y2: y(v) }, box.svg);
    svg('text', { class: 'tl-tick', x: box.x0 - 6, y: y(v) + 4, 'text-anchor': 'end' }, box.svg,
        fmt ? fmt(v) : fmtNum(v));
  }
  return y;
}

/* A series over the buckets: a path through the bucket centres, broken where null; step:
   a horizontal segment across each bucket instead (parallelism). */
function tlLine(box, y, values, attrs, step) {
  const t = tl.data.t;
  let d = '', open = false;
  for (let i = 0; i < t.length; i++) {
    const v = values[i];
    if (v === null || v === undefined) { open = false; continue; }
    const x0 = box.x(t[i]), x1 = box.x(Math.min(t[i] + tl.step, tl.to));
    if (step) {
      d += (open ? 'L' : 'M') + x0.toFixed(1) + ' ' + y(v).toFixed(1) + 'L' + x1.toFixed(1) + ' ' + y(v).toFixed(1);
    } else {
      d += (open ? 'L' : 'M') + ((x0 + x1) / 2).toFixed(1) + ' ' + y(v).toFixed(1);
    }
    open = true;
  }
  return svg('path', Object.assign({ d, fill: 'none' }, attrs), box.svg);
}

function tlTable(table, head, rows) {
  const tr = mk('tr', {}, mk('thead', {}, table));
  for (const h of head) mk('th', { scope: 'col' }, tr, h);
  const tb = mk('tbody', {}, table);
  for (const r of rows) {
    const row = mk('tr', { 'data-bucket': r.bucket }, tb);
    r.cells.forEach((c, k) => mk(k ? 'td' : 'th', k ? {} : { scope: 'row' }, row, c));
  }
}

/* Rows for the buckets where any of the series has a value. */
function tlRows(series, digits) {
  const rows = [];
  tl.data.t.forEach((t, i) => {
    if (series.every((s) => s[i] === null || s[i] === undefined)) return;
    rows.push({ bucket: i, cells: [fmtTime(t, true, tl.step < 60e3)].concat(
      series.map((s, k) => tlFmtVal(s[i], digits && digits[k]))) });
  });
  return rows;
}

function tlParallelism(parent, v, k) {
  const { box, table } = tlFigure(parent, 'parallelism', 'Parallelism of ' + v.id +
                                  ': current (solid), target (dashed), min and max (dotted)', v.id, 150);
  const all = v.current.concat(v.target, v.min).filter((x) => x !== null);
  const maxShown = v.max.filter((x) => x !== null);
  let top = Math.max(1, ...all);
  if (maxShown.length && Math.max(...maxShown) <= top * 2) top = Math.max(top, ...maxShown);
  const y = tlYAxis(box, niceCeil(top * 1.1, true), true);
  const col = TL_COLORS[k % TL_COLORS.length];
  tlLine(box, y, v.min, { class: 'tl-limit tl-min', stroke: '#666', 'stroke-dasharray': '1 3' }, true);
  tlLine(box, y, v.max.map((x) => (x !== null && x <= top * 2 ? x : null)),
         { class: 'tl-limit tl-max', stroke: '#666', 'stroke-dasharray': '1 3' }, true);
  tlLine(box, y, v.current, { class: 'tl-current', stroke: col, 'stroke-width': 2 }, true);
  tlLine(box, y, v.target, { class: 'tl-target', stroke: '#000', 'stroke-width': 1.5, 'stroke-dasharray': '5 3' }, true);
  tlTable(table, ['time (UTC)', 'current', 'target', 'min', 'max'],
          tlRows([v.current, v.target, v.min, v.max]));
}

function tlReasons(parent) {
  const { box, table } = tlFigure(parent, 'reasons', 'Rationale: the job reason of each run of decisions (click a segment for its first decision)', '', 64);
  const r = tl.data.reasons;
  const rows = [];
  r.runs.forEach((run, k) => {
    const [start, end, code, first, n] = run;
    const next = k + 1 < r.runs.length ? r.runs[k + 1][0] : Math.min(end + tl.step, tl.to);
    const x0 = box.x(start), x1 = Math.max(x0 + 2, box.x(next));
    const name = r.codes[code];
    const [color, short] = tlReason(name);
    const a = svg('a', { href: '/v1/decisions/' + first, class: 'tl-run', 'data-reason': name,
                         'data-first': String(first) }, box.svg);
    titled(svg('rect', { x: x0, y: box.y0 + 4, width: x1 - x0, height: box.y1 - box.y0 - 8, fill: color }, a),
           name + ': ' + n + ' decision(s) from ' + fmtStamp(start) + ', first #' + first);
    if (x1 - x0 > 18) {
      svg('text', { class: 'tl-code', x: (x0 + x1) / 2, y: (box.y0 + box.y1) / 2 + 4,
                    'text-anchor': 'middle' }, a, short);
    }
    rows.push({ bucket: '', cells: [fmtTime(start, true, true), fmtTime(end, true, true), name + ' (' + short + ')', '#' + first, String(n)] });
  });
  tlTable(table, ['from (UTC)', 'last (UTC)', 'reason', 'first decision', 'decisions'], rows);
}

function tlUtilization(parent) {
  const vs = tl.data.vertices;
  const { box, table } = tlFigure(parent, 'utilization', 'Utilization per vertex against its target (dashed) and bounds (band; hatched where a backlog switched them off)', '', 170);
  const y = tlYAxis(box, 1, false, (v) => Math.round(v * 100) + '%');
  if (vs.length) {
    const b = vs[0];
    tl.data.t.forEach((t, i) => {
      if (b.util_min[i] === null) return;
      const x0 = box.x(t), x1 = box.x(Math.min(t + tl.step, tl.to));
      svg('rect', { class: tl.data.bounds_off[i] ? 'tl-band tl-off' : 'tl-band', x: x0, width: x1 - x0,
                    y: y(b.util_max[i]), height: y(b.util_min[i]) - y(b.util_max[i]) }, box.svg);
    });
    tlLine(box, y, b.util_target, { class: 'tl-util-target', stroke: '#000', 'stroke-dasharray': '5 3' }, true);
  }
  vs.forEach((v, k) => tlLine(box, y, v.util, { class: 'tl-util', 'data-vertex': v.id,
    stroke: TL_COLORS[k % TL_COLORS.length], 'stroke-width': 2, 'stroke-dasharray': TL_DASH[k % TL_DASH.length] }));
  const head = ['time (UTC)'].concat(vs.map((v) => v.id), ['target', 'lower', 'upper', 'bounds off']);
  const b = vs[0] || { util_target: [], util_min: [], util_max: [] };
  tlTable(table, head, tlRows(vs.map((v) => v.util).concat([b.util_target, b.util_min, b.util_max, tl.data.bounds_off]),
                              vs.map(() => 3).concat([2, 2, 2, undefined])));
}

function tlBacklog(parent) {
  const vs = tl.data.vertices.filter((v) => v.backlog_s.some((x) => x !== null));
  const { box, table } = tlFigure(parent, 'backlog', 'Backlog in seconds (lag / input rate) per source, with the lag threshold and the SLO', '', 150);
  const vals = [].concat(...vs.map((v) => v.backlog_s)).filter((x) => x !== null);
  const lines = [tl.data.lag_threshold_s, tl.data.slo_lag_s].filter((x) => x !== null);
  const y = tlYAxis(box, niceCeil(Math.max(1, ...vals, ...lines) * 1.1), false, (v) => fmtNum(v) + ' s');
  const labels = [];
  const hline = (v, cls, label) => {
    svg('line', { class: cls, x1: box.x0, x2: box.x1, y1: y(v), y2: y(v) }, box.svg);
    labels.push({ y: y(v) + 4, cls, label });
  };
  if (tl.data.lag_threshold_s !== null) hline(tl.data.lag_threshold_s, 'tl-threshold', 'threshold');
  if (tl.data.slo_lag_s !== null) hline(tl.data.slo_lag_s, 'tl-slo', 'SLO');
  /* Two lines close together (an SLO near the lag threshold) keep their labels a text line
     apart, the lower one moved down (up when that leaves the chart). */
  labels.sort((a, b) => a.y - b.y);
  for (let k = 1; k < labels.length; k++) {
    if (labels[k].y - labels[k - 1].y < 12) labels[k].y = labels[k - 1].y + 12;
  }
  const over = labels.length ? labels[labels.length - 1].y - (box.y1 + 4) : 0;
  if (over > 0) labels.forEach((l) => { l.y -= over; });
  for (const l of labels) {
    svg('text', { class: 'tl-tick tl-line-label', 'data-line': l.cls, x: box.x1 + 4, y: l.y }, box.svg, l.label);
  }
  vs.forEach((v, k) => tlLine(box, y, v.backlog_s, { class: 'tl-backlog', 'data-vertex': v.id,
    stroke: TL_COLORS[k % TL_COLORS.length], 'stroke-width': 2, 'stroke-dasharray': TL_DASH[k % TL_DASH.length] }));
  tlTable(table, ['time (UTC)'].concat(vs.map((v) => v.id + ' (s)')), tlRows(vs.map((v) => v.backlog_s), vs.map(() => 1)));
}

function tlAdvice() {
  const box = $('tl-advice');
  box.textContent = '';
  const a = tl.advice && tl.advice.advice;
  if (!a) return;
  for (const x of a) {
    const b = mk('div', { class: 'advice-banner', role: 'note', 'data-pattern': x.pattern }, box);
    mk('b', {}, b, x.pattern.replace(/_/g, ' ').toLowerCase() + ': ');
    mk('span', {}, b, x.message + '. ');
    if (x.option) {
      mk('span', { class: 'advice-option' }, b, 'Advice: ' + x.option + ' ' + x.current + ' → ' + x.advised + ' (' + x.expected_effect + '). ');
    }
    if (x.replay && x.replay.message) mk('div', { class: 'advice-replay' }, b, x.replay.message);
  }
}

function tlEvents() {
  const table = $('tl-events');
  table.textContent = '';
  tlTable(table, ['time (UTC)', 'decision', 'action', 'reason', 'changes', 'applied'],
          tl.data.events.map((e) => ({ bucket: '', cells: [fmtStamp(e.at), '#' + e.decision_id, e.action, e.reason,
            e.changes || '', e.applied === null ? 'not known yet' : (e.applied ? 'yes' : 'no')] })));
}

/* The cursor at bucket i on every chart, its values in the readout, its rows marked. */
function tlSelect(i) {
  if (!tl.data || i < 0 || i >= tl.data.t.length) return;
  tl.sel = i;
  const t = tl.data.t[i];
  for (const fig of document.querySelectorAll('#tl-figures figure')) {
    const s = fig.querySelector('svg');
    const c = s.querySelector('.tl-cursor');
    const w = +s.getAttribute('width');
    const x = TL_M.left + (t + tl.step / 2 - tl.from) / (tl.to - tl.from) * (w - TL_M.right - TL_M.left);
    c.setAttribute('x1', x);
    c.setAttribute('x2', x);
    for (const r of fig.querySelectorAll('tr.sel')) r.classList.remove('sel');
    const row = fig.querySelector('tr[data-bucket="' + i + '"]');
    if (row) row.classList.add('sel');
  }
  const ro = $('tl-readout');
  ro.textContent = '';
  ro.dataset.bucket = String(i);
  mk('b', {}, ro, fmtTime(t, true, true) + ' – ' + fmtTime(t + tl.step, false, true) + ' UTC: ');
  const field = (p, v, f, val, digits) => {
    mk('span', { class: 'k' }, p, f + ' ');
    mk('span', { 'data-vertex': v, 'data-field': f }, p, tlFmtVal(val, digits));
    mk('span', {}, p, ' ');
  };
  for (const v of tl.data.vertices) {
    const p = mk('span', { class: 'tl-ro-vertex' }, ro);
    mk('b', {}, p, v.id + ' ');
    field(p, v.id, 'current', v.current[i]);
    field(p, v.id, 'target', v.target[i]);
    field(p, v.id, 'min', v.min[i]);
    field(p, v.id, 'max', v.max[i]);
    field(p, v.id, 'util', v.util[i], 3);
    field(p, v.id, 'util_target', v.util_target[i], 2);
    field(p, v.id, 'util_min', v.util_min[i], 2);
    field(p, v.id, 'util_max', v.util_max[i], 2);
    field(p, v.id, 'backlog_s', v.backlog_s[i], 1);
  }
  field(mk('span', {}, ro), '', 'bounds_off', tl.data.bounds_off[i]);
}

function tlRender() {
  const figs = $('tl-figures');
  figs.textContent = '';
  $('tl-range').textContent = fmtStamp(tl.from) + ' → ' + fmtStamp(tl.to) + ', ' +
    tl.data.t.length + ' buckets of ' + fmtNum(tl.step / 1000) + ' s, ' + tl.data.decisions + ' decisions';
  tl.data.vertices.forEach((v, k) => tlParallelism(figs, v, k));
  tlReasons(figs);
  tlUtilization(figs);
  tlBacklog(figs);
  tlEvents();
  tlAdvice();
  const last = tl.data.t.length - 1;
  let i = tl.sel >= 0 && tl.sel <= last ? tl.sel : last;
  while (i > 0 && tl.data.vertices.every((v) => v.current[i] === null)) i--;
  tlSelect(i);
}

/* GET with the page's token; the browser revalidates with the ETag (a 304 reuses its copy). */
async function tlGet(path) {
  const headers = { Accept: 'application/json' };
  const t = getToken() || state.memToken;
  if (t) headers.Authorization = 'Bearer ' + t;
  const r = await fetch(path, { headers, cache: 'no-cache' });
  const body = await r.json().catch(() => null);
  if (!r.ok) throw new Error('GET ' + path + ': ' + r.status + ' ' + (body && body.error ? body.error.message : ''));
  return body;
}

async function tlLoad() {
  if (!tl.job || tl.busy) return;
  tl.busy = true;
  const root = $('timeline');
  root.dataset.state = 'loading';
  try {
    const vars = { job: tl.job, from: tl.from, to: tl.to, step: tl.step,
                   window: Math.min(Math.max(tl.to - tl.from, 86400e3), 31 * 86400e3) };
    /* The advice replays the job's history: asked again on a new range, or every 5 min. */
    const key = tl.job + ' ' + vars.window + ' ' + (tl.fixed ? tl.to : 'live');
    const again = !tl.advice || tl.adviceKey !== key || Date.now() - tl.adviceAt > 300e3;
    const [data, advice] = await Promise.all([
      tlGet(fillUrl(TL_API.timeline, vars)),
      again ? tlGet(fillUrl(TL_API.advice, vars)).catch(() => null) : Promise.resolve(tl.advice)]);
    tl.data = data;
    if (again) {
      tl.advice = advice;
      tl.adviceKey = key;
      tl.adviceAt = Date.now();
    }
    tlRender();
    root.dataset.state = 'ready';
  } catch (e) {
    root.dataset.state = 'error';
    $('tl-range').textContent = String(e.message || e);
  } finally {
    tl.busy = false;
  }
}

/* A job was selected: its range ends now, or at its newest decision when that is older. */
async function tlStart(job) {
  tl.job = job;
  tl.sel = -1;
  tl.advice = null;
  tlFrame();
  const q = new URLSearchParams(location.search);
  if (q.has('from') && q.has('to')) {
    tl.fixed = true;
    tl.from = +q.get('from');
    tl.to = +q.get('to');
    tl.span = tl.to - tl.from;
    tl.step = q.has('step') ? +q.get('step') : tlAutoStep(tl.span);
  } else {
    let end = Date.now();
    try {
      const d = await api(fillUrl(API.decisions, { job, limit: 1 }));
      if (d.decisions.length && d.decisions[0].at < end - tl.span) end = d.decisions[0].at + 1;
    } catch (e) { /* the range ends now */ }
    tlSetRange(end, tl.span);
  }
  await tlLoad();
}

window.governorTimeline = { select: tlSelect, state: () => tl };

/* Follows the page's job selection, and refreshes with it when the range ends now. */
setInterval(() => {
  if (state.job && state.job !== tl.job) tlStart(state.job);
}, 300);
setInterval(() => {
  if (!tl.job || tl.fixed || !$('auto') || !$('auto').checked) return;
  if (tl.to >= Date.now() - tl.step) { tlSetRange(Date.now(), tl.span); tlLoad(); }
}, 10000);

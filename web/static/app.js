// The page: running a query (app.js), the legend, the zoom, the refresh and
// the wiring of the controls. Its parts: state.js (the state and the URL),
// controls.js (the query controls), api.js (requests to hourglass),
// query.js (query building), errors.js (errors next to their control),
// table.js (the table and the downloads), status.js (the status panel) and
// chart.js (the chart).

import { Chart, seriesColor } from './chart.js';
import { attach } from './complete.js';
import { startView, startRange } from './start.js';
import { parseDuration, localDateTime, formatCount, tzName } from './format.js';
import {
  $, DEFAULTS, clone, state, result, chart, setState, setResult, setChart,
  readURL, urlOf, writeURL, timeRange,
} from './state.js';
import {
  DEFAULT_AGGS, setRunQuery, fillControls, fillTimeControls, readControls, setOptions, setMode,
  setView, addFilterRow, currentMetric, loadLists, retypeFilters,
} from './controls.js';
import { APIError, api, suggest, tagKeys } from './api.js';
import { queryTSDB, queryProm, LONG_RANGE } from './query.js';
import { clearErrors, showError, explain, validate, quote } from './errors.js';
import { forgetRows, renderTable, csvText, jsonText, download } from './table.js';
import { pollStatus } from './status.js';

const PRESETS = ['5m', '15m', '30m', '1h', '3h', '6h', '12h', '1d', '2d', '7d', '30d'];

let runSeq = 0, inflight = null, zoomStack = [];

// ---- running a query ----

function setBusy(s) { document.body.dataset.state = s; }

function finish(s) {
  setBusy(s);
  document.body.dataset.run = String(Number(document.body.dataset.run) + 1);
}

let lastKey = '';

// runQuery reads the controls, puts the state in the URL and runs the query.
// A run asked for by a control's change event (opts.force unset) is skipped
// when it would ask exactly what the page already asked: a control can fire
// change twice (a pick from a list, then leaving the field).
async function runQuery(opts = {}) {
  const push = opts.push !== false;
  readControls();
  const key = urlOf({ ...state, hide: [], view: '' });
  if (!opts.force && key === lastKey) return;
  lastKey = key;
  clearErrors();
  writeURL(push);
  fillTimeControls();
  if (inflight) inflight.abort();
  const my = ++runSeq;
  if (!validate()) { clearResult(); finish('error'); return; }
  const ctl = new AbortController();
  inflight = ctl;
  setBusy('loading');
  const [start, end] = timeRange(Date.now());
  const began = performance.now();
  try {
    const r = state.mode === 'tsdb' ? await queryTSDB(start, end, ctl.signal) : await queryProm(start, end, ctl.signal);
    if (my !== runSeq) return;
    inflight = null;
    r.start = start; r.end = end; r.mode = state.mode;
    r.took = performance.now() - began;
    showResult(r);
    finish(r.series.length ? 'ready' : 'empty');
  } catch (e) {
    if (e.name === 'AbortError' || my !== runSeq) return;
    inflight = null;
    const [target, text] = e instanceof APIError ? explain(e) : ['general', String(e)];
    showError(target, text);
    clearResult();
    $('message').textContent = 'The query failed: see the message above.';
    finish('error');
  }
}

// clearResult empties the chart (over the range asked for), the legend and
// the table, so a failed query never leaves the previous one's data shown.
function clearResult() {
  setResult(null);
  forgetRows(false);
  chart.setData([], timeRange(Date.now()));
  $('chart').dataset.series = '0';
  $('chart').dataset.points = '0';
  $('legend').replaceChildren();
  renderTable();
  $('dl-csv').disabled = $('dl-json').disabled = true;
  $('rollup-note').hidden = true;
}

function showResult(r) {
  // Ids name series uniquely; colours follow the series' order.
  const seen = new Map();
  r.series.forEach((s, i) => {
    let id = s.label, n = seen.get(id) || 0;
    seen.set(id, n + 1);
    if (n) id += ` #${n + 1}`;
    s.id = id;
    s.color = seriesColor(i);
  });
  setResult(r);
  forgetRows(true);
  chart.hidden = new Set(state.hide);
  chart.setData(r.series, [r.start, r.end]);
  const points = r.series.reduce((a, s) => a + s.t.length, 0);
  $('chart').dataset.series = String(r.series.length);
  $('chart').dataset.points = String(points);
  renderLegend();
  if (state.view === 'table') renderTable();
  $('dl-csv').disabled = $('dl-json').disabled = r.series.length === 0;
  const sec = t => localDateTime(Math.floor(t / 1000) * 1000);
  const span = `${sec(r.start)} – ${state.to === null ? 'now' : sec(r.end)} (${tzName()})`;
  if (r.series.length === 0) {
    $('message').textContent = r.mode === 'tsdb'
      ? `No data: no series of ${quote(state.metric)} match these filters between ${span}.`
      : `No data: the expression returned no series between ${span}.`;
  } else {
    $('message').textContent = `${formatCount(r.series.length)} series, ${formatCount(points)} points · ${span} · ${Math.round(r.took)} ms`;
  }
  showRollupNote(r);
}

// showRollupNote says beside the chart whether the answer came from
// rollups (docs/rollups.md), and which downsample the page picked for a
// long range when none was set.
function showRollupNote(r) {
  const note = $('rollup-note');
  let text = '';
  if (r.rollup) text = `from ${r.rollup} rollups`;
  else if (r.end - r.start >= LONG_RANGE && r.series.length) text = 'from raw points';
  if (text && r.picked) text += ` (downsample ${r.picked} picked for the long range)`;
  note.textContent = text;
  note.hidden = !text;
  note.dataset.rollup = r.rollup || '';
}

// ---- legend ----

function renderLegend() {
  const ul = $('legend');
  const hidden = new Set(state.hide);
  ul.replaceChildren(...(result ? result.series : []).map(s => {
    const li = document.createElement('li');
    li.dataset.id = s.id;
    if (hidden.has(s.id)) li.className = 'off';
    const b = document.createElement('button');
    b.type = 'button';
    b.title = `${s.metric}${Object.keys(s.tags).length ? ' ' + s.label : ''}: click to hide or show, Shift-click to show only this`;
    b.setAttribute('aria-pressed', String(!hidden.has(s.id)));
    const sw = document.createElement('span');
    sw.className = 'swatch';
    sw.style.background = s.color;
    const l = document.createElement('span');
    l.className = 'legend-label';
    l.textContent = s.label;
    b.append(sw, l);
    b.addEventListener('click', e => toggleSeries(s.id, e.shiftKey));
    b.addEventListener('mouseenter', () => chart.highlight(s.id));
    b.addEventListener('mouseleave', () => chart.highlight(null));
    b.addEventListener('focus', () => chart.highlight(s.id));
    b.addEventListener('blur', () => chart.highlight(null));
    li.append(b);
    return li;
  }));
}

function toggleSeries(id, only) {
  const all = result.series.map(s => s.id);
  let hide = new Set(state.hide);
  if (only) {
    const alone = all.every(x => x === id || hide.has(x)) && !hide.has(id);
    hide = alone ? new Set() : new Set(all.filter(x => x !== id));
  } else if (hide.has(id)) hide.delete(id); else hide.add(id);
  state.hide = [...hide];
  chart.setHidden(state.hide);
  renderLegend();
  writeURL(false);
}

// ---- wiring ----

let refreshTimer = 0;
function scheduleRefresh() {
  clearInterval(refreshTimer);
  const ms = parseDuration(state.refresh);
  if (!(ms > 0)) return;
  refreshTimer = setInterval(() => {
    if (document.hidden || state.to !== null || document.body.dataset.state === 'loading') return;
    runQuery({ push: false, force: true });
  }, ms);
}

function zoomTo(t0, t1) {
  zoomStack.push({ range: state.range, from: state.from, to: state.to });
  state.from = t0; state.to = t1;
  runQuery({ force: true });
}

function resetZoom() {
  const prev = zoomStack.pop();
  if (prev) { state.range = prev.range; state.from = prev.from; state.to = prev.to; }
  else if (state.from !== null) { state.from = null; state.to = null; }
  else return;
  runQuery({ force: true });
}

// openOnData starts a page opened without a query (no URL state) on the
// newest written metric (start.js), or lists the metrics to pick, unless
// the user has begun a query meanwhile.
async function openOnData() {
  $('message').textContent = 'Looking for the newest data…';
  const v = await startView(api).catch(() => ({ names: [] }));
  if (runSeq > 0 || location.search || state.mode !== 'tsdb' || currentMetric()) return;
  if (v.metric) {
    state.metric = v.metric;
    Object.assign(state, startRange(v.newest, Date.now(), parseDuration(state.range) || 3600e3));
    fillControls();
    runQuery({ push: false, force: true });
    return;
  }
  const msg = $('message');
  if (!v.names.length) { msg.textContent = 'Nothing is stored yet: write some points (README.md shows how), then reload.'; return; }
  msg.replaceChildren('Choose a metric to start: ', ...v.names.map(m => {
    const b = document.createElement('button');
    b.type = 'button'; b.className = 'link'; b.textContent = m;
    b.addEventListener('click', () => { $('metric').value = m; runQuery({ force: true }); });
    return b;
  }));
}

function init() {
  setRunQuery(runQuery);
  setChart(new Chart($('chart'), { onZoom: zoomTo, onReset: resetZoom }));
  setOptions($('agg'), DEFAULT_AGGS, DEFAULTS.agg);
  setOptions($('ds-fn'), DEFAULT_AGGS.filter(n => n !== 'none'), DEFAULTS.dsFn);
  for (const r of PRESETS) {
    const b = document.createElement('button');
    b.type = 'button'; b.textContent = r; b.dataset.range = r;
    b.addEventListener('click', () => { state.range = r; state.from = null; state.to = null; zoomStack = []; runQuery({ force: true }); });
    $('presets').append(b);
  }
  setState(readURL());
  fillControls();
  chart.setData([], timeRange(Date.now()));

  attach($('metric'), text => suggest('metrics', text));
  attach($('groupby'), async text => {
    const i = text.lastIndexOf(','), head = i >= 0 ? text.slice(0, i + 1) + ' ' : '';
    const have = new Set(text.split(',').map(x => x.trim()));
    const keys = await tagKeys(currentMetric(), text.slice(i + 1).trim());
    return keys.filter(k => !have.has(k)).map(k => head + k);
  });

  $('query').addEventListener('submit', e => { e.preventDefault(); runQuery({ force: true }); });
  for (const b of document.querySelectorAll('[data-mode]')) b.addEventListener('click', () => { if (state.mode !== b.dataset.mode) { clearErrors(); setMode(b.dataset.mode, true); } });
  for (const b of document.querySelectorAll('[data-view]')) b.addEventListener('click', () => setView(b.dataset.view));
  for (const id of ['agg', 'ds-fn', 'ds-fill', 'counter', 'ds-interval', 'groupby', 'step']) $(id).addEventListener('change', () => runQuery());
  $('rate').addEventListener('change', () => { $('counter').disabled = !$('rate').checked; runQuery(); });
  $('metric').addEventListener('change', () => { if ($('metric').value.trim()) runQuery(); });
  $('add-filter').addEventListener('click', () => addFilterRow().querySelector('.tagk').focus());
  $('expr').addEventListener('keydown', e => { if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); runQuery({ force: true }); } });
  $('from').addEventListener('change', () => {
    const t = new Date($('from').value).getTime();
    if (!Number.isFinite(t)) return;
    state.from = t;
    const to = new Date($('to').value).getTime();
    state.to = Number.isFinite(to) ? to : null;
    zoomStack = [];
    runQuery();
  });
  $('to').addEventListener('change', () => {
    const to = new Date($('to').value).getTime();
    if (state.from === null) state.from = timeRange(Date.now())[0];
    state.to = Number.isFinite(to) ? to : null;
    zoomStack = [];
    runQuery();
  });
  $('to-now').addEventListener('click', () => {
    if (state.from !== null && state.to === null) return;
    if (state.from !== null) state.to = null;
    zoomStack = [];
    runQuery();
  });
  $('refresh').addEventListener('change', () => { readControls(); scheduleRefresh(); writeURL(false); });
  $('dl-csv').addEventListener('click', () => download(csvText(), 'text/csv', 'csv'));
  $('dl-json').addEventListener('click', () => download(jsonText(), 'application/json', 'json'));
  window.addEventListener('popstate', () => {
    setState(readURL());
    zoomStack = [];
    fillControls();
    scheduleRefresh();
    if (state.metric || state.expr) runQuery({ push: false, force: true });
  });

  loadLists().then(retypeFilters);
  pollStatus();
  setInterval(pollStatus, 10e3);
  scheduleRefresh();
  if ((state.mode === 'tsdb' && state.metric) || (state.mode === 'promql' && state.expr)) runQuery({ push: false, force: true });
  else {
    $('message').textContent = state.mode === 'tsdb' ? 'Choose a metric to start: its names appear as you type.' : 'Write a PromQL expression and press Run.';
    if (state.mode === 'tsdb') $('metric').focus();
    if (!location.search) openOnData();
  }

  // A small hook for tests and for the curious: what the chart was given,
  // and where it drew it.
  window.hourglass = {
    chart,
    get state() { return clone(state); },
    get result() { return result; },
    csvText: () => csvText(),
    jsonText: () => jsonText(),
  };
}

init();

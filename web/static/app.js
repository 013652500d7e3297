// The page: the query controls and their state (all of it in the URL), the
// requests to hourglass's API, the legend, the table, the downloads and the
// status panel. The chart is chart.js.

import { Chart, seriesColor } from './chart.js';
import { attach, filterNames } from './complete.js';
import { startView, startRange } from './start.js';
import {
  parseDuration, formatDuration, localDateTime, localInputValue, formatValue,
  formatBytes, formatCount, humanDuration, niceStepMs, tzName,
} from './format.js';

const $ = id => document.getElementById(id);
const PRESETS = ['5m', '15m', '30m', '1h', '3h', '6h', '12h', '1d', '2d', '7d', '30d'];
const FILTER_LABELS = {
  literal_or: '=', not_literal_or: '≠', iliteral_or: '= any case', not_iliteral_or: '≠ any case',
  wildcard: 'wildcard', iwildcard: 'wildcard any case', regexp: 'regexp', not_key: 'has no key',
};
const DEFAULT_AGGS = ['avg', 'count', 'dev', 'first', 'last', 'max', 'median', 'min', 'none', 'p50', 'p90', 'p95', 'p99', 'sum', 'zimsum'];
const ROWS_PER_PAGE = 500;
const LOOKUP_LIMIT = 10000;

const DEFAULTS = {
  mode: 'tsdb', metric: '', agg: 'sum', ds: '', dsFn: 'avg', dsFill: 'none', rate: false, counter: false,
  filters: [], groupBy: [], expr: '', step: '', range: '1h', from: null, to: null, refresh: '',
  view: 'chart', hide: [],
};

let state = clone(DEFAULTS);
let result = null;        // the last result shown
let runSeq = 0, inflight = null, zoomStack = [], tablePage = 0, tableRows = null;
let chart = null;

function clone(o) { return JSON.parse(JSON.stringify(o)); }

// ---- the state in the URL ----

function readURL() {
  const p = new URLSearchParams(location.search);
  const s = clone(DEFAULTS);
  if (p.get('mode') === 'promql') s.mode = 'promql';
  s.metric = p.get('m') || '';
  s.agg = p.get('agg') || DEFAULTS.agg;
  const ds = p.get('ds');
  if (ds) {
    const [iv, fn, fill] = ds.split('-');
    s.ds = iv || ''; s.dsFn = fn || 'avg'; s.dsFill = fill || 'none';
  }
  s.rate = p.get('rate') === '1';
  s.counter = p.get('counter') === '1';
  for (const [name, g] of [['f', false], ['fg', true]]) {
    for (const f of p.getAll(name)) {
      const i = f.indexOf('~'), j = f.indexOf('~', i + 1);
      if (i < 0 || j < 0) continue;
      s.filters.push({ k: f.slice(0, i), type: f.slice(i + 1, j), v: f.slice(j + 1), g });
    }
  }
  s.groupBy = (p.get('g') || '').split(',').map(x => x.trim()).filter(Boolean);
  s.expr = p.get('q') || '';
  s.step = p.get('step') || '';
  if (p.get('range') && parseDuration(p.get('range')) > 0) s.range = p.get('range');
  const from = Date.parse(p.get('from') || ''), to = Date.parse(p.get('to') || '');
  if (Number.isFinite(from)) {
    s.from = from;
    if (Number.isFinite(to)) s.to = to;
  }
  s.refresh = p.get('refresh') || '';
  if (p.get('view') === 'table') s.view = 'table';
  s.hide = p.getAll('hide');
  return s;
}

function urlOf(s) {
  const p = new URLSearchParams();
  if (s.mode === 'promql') {
    p.set('mode', 'promql');
    if (s.expr) p.set('q', s.expr);
    if (s.step) p.set('step', s.step);
  } else {
    if (s.metric) p.set('m', s.metric);
    p.set('agg', s.agg);
    if (s.ds) p.set('ds', [s.ds, s.dsFn, s.dsFill].join('-'));
    if (s.rate) p.set('rate', '1');
    if (s.rate && s.counter) p.set('counter', '1');
    for (const f of s.filters) if (f.k) p.append(f.g ? 'fg' : 'f', `${f.k}~${f.type}~${f.v}`);
    if (s.groupBy.length) p.set('g', s.groupBy.join(','));
  }
  if (s.from !== null) {
    p.set('from', new Date(s.from).toISOString());
    if (s.to !== null) p.set('to', new Date(s.to).toISOString());
  } else {
    p.set('range', s.range);
  }
  if (s.refresh) p.set('refresh', s.refresh);
  if (s.view !== 'chart') p.set('view', s.view);
  for (const h of s.hide) p.append('hide', h);
  return '?' + p.toString();
}

function writeURL(push) {
  const u = urlOf(state);
  if (u === location.search) return;
  if (push) history.pushState(null, '', u); else history.replaceState(null, '', u);
}

// ---- controls <-> state ----

function fillControls() {
  setMode(state.mode, false);
  $('metric').value = state.metric;
  ensureOption($('agg'), state.agg);
  $('agg').value = state.agg;
  $('ds-interval').value = state.ds;
  ensureOption($('ds-fn'), state.dsFn);
  $('ds-fn').value = state.dsFn;
  $('ds-fill').value = state.dsFill;
  $('rate').checked = state.rate;
  $('counter').checked = state.counter;
  $('counter').disabled = !state.rate;
  $('filters').replaceChildren();
  for (const f of state.filters) addFilterRow(f);
  $('groupby').value = state.groupBy.join(', ');
  $('expr').value = state.expr;
  $('step').value = state.step;
  $('refresh').value = state.refresh;
  fillTimeControls();
  setView(state.view, false);
}

function fillTimeControls() {
  const [start, end] = timeRange(Date.now());
  $('from').value = localInputValue(start);
  $('to').value = state.to === null ? '' : localInputValue(end);
  $('to').placeholder = 'now';
  for (const b of $('presets').children) {
    b.setAttribute('aria-pressed', state.from === null && b.dataset.range === state.range ? 'true' : 'false');
  }
}

function readControls() {
  state.metric = $('metric').value.trim();
  state.agg = $('agg').value;
  state.ds = $('ds-interval').value.trim();
  state.dsFn = $('ds-fn').value;
  state.dsFill = $('ds-fill').value;
  state.rate = $('rate').checked;
  state.counter = $('counter').checked;
  state.filters = [...$('filters').children].map(row => ({
    k: row.querySelector('.tagk').value.trim(),
    type: row.querySelector('.ftype').value,
    v: row.querySelector('.tagv').value.trim(),
    g: row.querySelector('.fgroup').checked,
  }));
  state.groupBy = $('groupby').value.split(',').map(x => x.trim()).filter(Boolean);
  state.expr = $('expr').value.trim();
  state.step = $('step').value.trim();
  state.refresh = $('refresh').value;
}

function ensureOption(sel, value) {
  if (value && ![...sel.options].some(o => o.value === value)) sel.add(new Option(value, value));
}

function setOptions(sel, names, keep) {
  sel.replaceChildren(...names.map(n => new Option(n, n)));
  ensureOption(sel, keep);
  sel.value = keep;
}

function setMode(mode, run) {
  state.mode = mode;
  for (const b of document.querySelectorAll('[data-mode]')) b.setAttribute('aria-selected', String(b.dataset.mode === mode));
  $('tsdb').hidden = mode !== 'tsdb';
  $('promql').hidden = mode !== 'promql';
  if (run) runQuery();
}

function setView(view, push) {
  state.view = view;
  for (const b of document.querySelectorAll('[data-view]')) b.setAttribute('aria-selected', String(b.dataset.view === view));
  $('chart-pane').hidden = view !== 'chart';
  $('table-pane').hidden = view !== 'table';
  if (view === 'table') renderTable();
  if (push !== false) writeURL(false);
}

let filterTypes = Object.keys(FILTER_LABELS);
let filterDescriptions = {};

function addFilterRow(f = { k: '', type: 'literal_or', v: '', g: false }) {
  const row = document.createElement('div');
  row.className = 'filter';
  const k = document.createElement('input');
  k.className = 'tagk'; k.placeholder = 'tag key'; k.value = f.k; k.setAttribute('aria-label', 'tag key');
  const type = document.createElement('select');
  type.className = 'ftype'; type.setAttribute('aria-label', 'filter type');
  for (const t of filterTypes) {
    const o = new Option(FILTER_LABELS[t] || t, t);
    o.title = filterDescriptions[t] || t;
    type.add(o);
  }
  ensureOption(type, f.type);
  type.value = f.type;
  const v = document.createElement('input');
  v.className = 'tagv'; v.placeholder = 'value, a|b, web*'; v.value = f.v; v.setAttribute('aria-label', 'tag value');
  v.disabled = f.type === 'not_key';
  const gl = document.createElement('label');
  const g = document.createElement('input');
  g.type = 'checkbox'; g.className = 'fgroup'; g.checked = f.g;
  gl.append(g, 'group');
  gl.title = 'one series per value of this tag';
  const rm = document.createElement('button');
  rm.type = 'button'; rm.className = 'remove'; rm.textContent = '×'; rm.title = 'remove this filter';
  rm.setAttribute('aria-label', 'remove filter');
  const err = document.createElement('small');
  err.className = 'err';
  row.append(k, type, v, gl, rm, err);
  $('filters').append(row);
  attach(k, text => tagKeys(currentMetric(), text), () => v.focus());
  attach(v, text => tagValues(currentMetric(), k.value.trim(), text));
  type.addEventListener('change', () => { v.disabled = type.value === 'not_key'; runQuery(); });
  g.addEventListener('change', () => runQuery());
  rm.addEventListener('click', () => { row.remove(); runQuery(); });
  k.addEventListener('change', () => { if (v.value || type.value === 'not_key') runQuery(); });
  v.addEventListener('change', () => { if (k.value) runQuery(); });
  return row;
}

const currentMetric = () => $('metric').value.trim();

// ---- time ----

function timeRange(now) {
  if (state.from !== null) return [state.from, state.to !== null ? state.to : now];
  return [now - (parseDuration(state.range) || 3600e3), now];
}

// ---- API ----

class APIError extends Error {
  constructor(status, body, text) {
    super(text || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

async function api(path, opts = {}) {
  let resp;
  try {
    resp = await fetch(path, { ...opts, headers: { Accept: 'application/json', ...(opts.headers || {}) } });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new APIError(0, null, `Could not reach hourglass at ${location.host}: is the server running?`);
  }
  const text = await resp.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch (e) { body = null; }
  if (!resp.ok || (body && body.status === 'error')) throw new APIError(resp.status, body, text.slice(0, 300));
  return body;
}

const cache = new Map();
function cached(url) {
  const hit = cache.get(url);
  if (hit && Date.now() - hit.at < 30e3) return hit.p;
  const p = api(url).catch(() => null);
  cache.set(url, { at: Date.now(), p });
  return p;
}

async function suggest(type, text) {
  const r = await cached(`/api/suggest?type=${type}&max=100&q=${encodeURIComponent(text)}`);
  return Array.isArray(r) ? r : [];
}

async function lookup(m) {
  const r = await cached(`/api/search/lookup?limit=${LOOKUP_LIMIT}&m=${encodeURIComponent(m)}`);
  return r && Array.isArray(r.results) ? r.results : null;
}

// tagKeys are the tag keys of the metric's series (any metric's when no
// metric is chosen), those matching text first.
async function tagKeys(metric, text) {
  const res = metric ? await lookup(metric) : null;
  if (!res) return suggest('tagk', text);
  const keys = new Set();
  for (const r of res) for (const k in r.tags) keys.add(k);
  return filterNames([...keys], text);
}

// tagValues are the values of key among the metric's series. In a list
// (a|b|c) the last item is completed.
async function tagValues(metric, key, text) {
  const bar = text.lastIndexOf('|');
  const head = bar >= 0 ? text.slice(0, bar + 1) : '', last = text.slice(bar + 1);
  let names;
  const res = metric && key ? await lookup(`${metric}{${key}=*}`) : null;
  if (res) {
    const vals = new Set();
    for (const r of res) if (r.tags[key] !== undefined) vals.add(r.tags[key]);
    names = filterNames([...vals], last);
  } else {
    names = await suggest('tagv', last);
  }
  const have = new Set(head.split('|'));
  return names.filter(n => !have.has(n)).map(n => head + n);
}

function parseValue(x) {
  if (typeof x === 'number') return x;
  if (x === null) return NaN;
  if (x === 'Infinity' || x === '+Inf') return Infinity;
  if (x === '-Infinity' || x === '-Inf') return -Infinity;
  return Number(x); // "NaN" and Prometheus' decimal strings
}

function autoStep(start, end) {
  const px = Math.max(200, chart && chart.plot.width ? chart.plot.width : 1000);
  return Math.max(niceStepMs((end - start) / px), niceStepMs((end - start) / 11000));
}

async function queryTSDB(start, end, signal) {
  const q = { aggregator: state.agg, metric: state.metric };
  if (state.ds) {
    const iv = state.ds === 'auto' ? formatDuration(autoStep(start, end)) : state.ds;
    q.downsample = `${iv}-${state.dsFn}` + (state.dsFill !== 'none' ? `-${state.dsFill}` : '');
  }
  if (state.rate) {
    q.rate = true;
    if (state.counter) q.rateOptions = { counter: true };
  }
  const filters = [];
  for (const f of state.filters) {
    if (!f.k) continue;
    filters.push({ type: f.type, tagk: f.k, filter: f.type === 'not_key' ? '' : f.v, groupBy: f.g });
  }
  for (const k of state.groupBy) filters.push({ type: 'wildcard', tagk: k, filter: '*', groupBy: true });
  if (filters.length) q.filters = filters;
  const body = { start, end, msResolution: true, queries: [q] };
  const r = await api('/api/query?arrays', {
    method: 'POST', body: JSON.stringify(body), signal, headers: { 'Content-Type': 'application/json' },
  });
  const series = (Array.isArray(r) ? r : []).map(x => {
    const dps = x.dps || [];
    const t = new Float64Array(dps.length), v = new Float64Array(dps.length);
    dps.forEach((d, i) => { t[i] = d[0]; v[i] = parseValue(d[1]); });
    const keys = Object.keys(x.tags || {}).sort();
    const label = keys.length ? keys.map(k => `${k}=${x.tags[k]}`).join(', ') : x.metric;
    return { label, metric: x.metric, tags: x.tags || {}, aggregateTags: x.aggregateTags || [], t, v };
  });
  return { series, request: body };
}

async function queryProm(start, end, signal) {
  const step = state.step ? parseDuration(state.step) : autoStep(start, end);
  const p = new URLSearchParams({
    query: state.expr, start: (start / 1000).toFixed(3), end: (end / 1000).toFixed(3), step: (step / 1000).toString(),
  });
  const r = await api('/api/v1/query_range?' + p.toString(), { signal });
  const data = r && r.data ? r.data : { result: [] };
  let res = data.result || [];
  if (data.resultType === 'scalar' || data.resultType === 'string') res = [{ metric: {}, values: [res] }];
  const series = res.map(x => {
    const vals = x.values || (x.value ? [x.value] : []);
    const t = new Float64Array(vals.length), v = new Float64Array(vals.length);
    vals.forEach((d, i) => { t[i] = Math.round(d[0] * 1000); v[i] = parseValue(d[1]); });
    const m = x.metric || {};
    const keys = Object.keys(m).filter(k => k !== '__name__').sort();
    const inner = keys.map(k => `${k}="${m[k]}"`).join(', ');
    const label = (m.__name__ || '') + (inner || !m.__name__ ? `{${inner}}` : '');
    const tags = { ...m };
    delete tags.__name__;
    return { label, metric: m.__name__ || '', tags, aggregateTags: [], t, v, gap: step * 1.5 };
  });
  return { series, request: { query: state.expr, start, end, step } };
}

// ---- errors, next to the control that caused them ----

function clearErrors() {
  for (const e of document.querySelectorAll('.err')) e.textContent = '';
  for (const e of document.querySelectorAll('[aria-invalid]')) e.removeAttribute('aria-invalid');
}

function showError(target, text) {
  let el, input = null;
  const m = /^filter:(\d+)$/.exec(target);
  if (m) {
    const row = $('filters').children[Number(m[1])];
    if (row) { el = row.querySelector('.err'); input = row.querySelector('.tagv'); }
  } else {
    el = document.querySelector(`.err[data-for="${target}"]`);
    input = { metric: $('metric'), agg: $('agg'), ds: $('ds-interval'), groupby: $('groupby'), expr: $('expr'), step: $('step') }[target] || null;
  }
  if (!el) el = document.querySelector('.err[data-for="general"]');
  el.textContent = text;
  if (input) input.setAttribute('aria-invalid', 'true');
}

const cap = s => s ? s[0].toUpperCase() + s.slice(1) : s;
const quote = s => `“${s}”`;

function filterIndex(pred) {
  return state.filters.findIndex(pred);
}

// explain turns an API error into the control it belongs to and a sentence.
function explain(err) {
  if (err.status === 0) return ['general', err.message];
  const b = err.body || {};
  if (state.mode === 'promql') {
    const e = b.error || err.message;
    let m;
    if (/exceeded maximum resolution/.test(e)) {
      const [start, end] = timeRange(Date.now());
      return ['step', `Too many points per series for this range: use a step of at least ${formatDuration(niceStepMs((end - start) / 11000))}, or a shorter range.`];
    }
    if ((m = /invalid parameter "query": (?:(\d+):(\d+): )?(?:parse error: )?(.*)$/s.exec(e))) {
      let s = m[1] ? `The expression has a syntax error at ${m[1] === '1' ? '' : `line ${m[1]}, `}column ${m[2]}: ${m[3]}.` : `The expression cannot be read: ${m[3]}.`;
      if (/unexpected character: '\.'/.test(e)) s += ' Names with dots are written {__name__="sys.cpu.user"}.';
      return ['expr', s];
    }
    if ((m = /invalid parameter "step": (.*)$/.exec(e))) return ['step', cap(m[1]) + '.'];
    if (b.errorType === 'timeout') return ['time', 'The query ran longer than the server allows: try a shorter time range or a narrower expression.'];
    if (b.errorType === 'execution' || b.errorType === 'bad_data') return ['expr', cap(e)];
    if (err.status >= 500) return ['general', `The server could not run the query (${e}). Trying again may help.`];
    return ['general', cap(e)];
  }
  const e = (b.error && b.error.message) || err.message;
  let m;
  if ((m = /^No such name for 'metrics': '(.*)'$/.exec(e))) return ['metric', `No metric named ${quote(m[1])} has been written. The list under the field shows the names there are.`];
  if ((m = /^No such name for 'tagk': '(.*)'$/.exec(e))) {
    const i = filterIndex(f => f.k === m[1]);
    return [i >= 0 ? `filter:${i}` : 'groupby', `No series has a tag key named ${quote(m[1])}.`];
  }
  if ((m = /^No such name for 'tagv': '(.*)'$/.exec(e))) {
    const i = filterIndex(f => f.v.split('|').includes(m[1]));
    return [i >= 0 ? `filter:${i}` : 'general', `No series has the tag value ${quote(m[1])}.`];
  }
  const filterWhy = why => {
    let n;
    if ((n = /Could not find a tag value filter of the type: (.*)/.exec(why))) return `${quote(n[1])} is not a filter type.`;
    if ((n = /error parsing regexp: (.*)/s.exec(why))) return `This is not a valid regular expression: ${n[1]}.`;
    return cap(why);
  };
  if ((m = /^When parsing tag '([^=]*)=.*?': (.*)$/s.exec(e))) {
    const i = filterIndex(f => f.k === m[1]);
    return [i >= 0 ? `filter:${i}` : 'general', filterWhy(m[2])];
  }
  const details = b.error && b.error.details;
  if (e === 'Unable to parse the given JSON' && details) {
    // The body is the page's own, so what failed to parse is a filter:
    // the regexp that does not compile, or the one the reason names.
    let i = -1;
    if (/regexp/.test(details)) {
      const bad = v => { try { new RegExp(v); return false; } catch (x) { return true; } };
      i = filterIndex(f => f.type.includes('regexp') && bad(f.v));
      if (i < 0) i = filterIndex(f => f.type.includes('regexp'));
    }
    if (i < 0) i = filterIndex(f => f.k && ((f.v && details.includes(f.v)) || details.includes(f.type)));
    return [i >= 0 ? `filter:${i}` : 'general', filterWhy(details)];
  }
  if ((m = /^invalid downsample spec "[^"]*": (.*)$/.exec(e))) return ['ds', cap(m[1]) + '.'];
  if ((m = /^No such aggregation function: (.*)$/.exec(e))) {
    const onDS = state.ds && m[1] === state.dsFn && m[1] !== state.agg;
    return [onDS ? 'ds' : 'agg', `${quote(m[1])} is not an aggregation function.`];
  }
  if (/must be greater than the start time/.test(e)) return ['time', 'The end of the time range must be after its start.'];
  if (err.status === 413) return ['time', cap(e) + '.'];
  if (err.status === 408) return ['time', 'The query ran longer than the server allows: try a shorter time range, fewer series or a downsample.'];
  if (err.status >= 500) return ['general', `The server could not run the query (${e}). Trying again may help.`];
  return ['general', cap(e)];
}

// validate checks what the page can check before asking the server.
function validate() {
  let ok = true;
  if (state.mode === 'tsdb') {
    if (!state.metric) { showError('metric', 'Choose a metric: start typing its name.'); ok = false; }
    if (state.ds && state.ds !== 'auto' && !(parseDuration(state.ds) > 0) && !/^\d+(n|c|dc|wc|nc|yc|hc|mc)$|^0all$/.test(state.ds)) {
      showError('ds', `${quote(state.ds)} is not an interval: write it like 30s, 5m, 1h or 1d, "auto", or leave it empty.`);
      ok = false;
    }
    state.filters.forEach((f, i) => {
      if (f.k && !f.v && f.type !== 'not_key') { showError(`filter:${i}`, `Give a value for ${quote(f.k)}, or remove the filter.`); ok = false; }
      if (!f.k && f.v) { showError(`filter:${i}`, 'Give the tag key this value is for.'); ok = false; }
    });
  } else {
    if (!state.expr) { showError('expr', 'Write a PromQL expression, such as up or rate(x[5m]).'); ok = false; }
    if (state.step && !(parseDuration(state.step) > 0)) { showError('step', `${quote(state.step)} is not a step: write it like 15s or 1m, or leave it empty.`); ok = false; }
  }
  const [start, end] = timeRange(Date.now());
  if (!(end > start)) { showError('time', 'The end of the time range must be after its start.'); ok = false; }
  return ok;
}

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
  result = null;
  tableRows = null;
  chart.setData([], timeRange(Date.now()));
  $('chart').dataset.series = '0';
  $('chart').dataset.points = '0';
  $('legend').replaceChildren();
  renderTable();
  $('dl-csv').disabled = $('dl-json').disabled = true;
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
  result = r;
  tableRows = null;
  tablePage = 0;
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

// ---- table ----

function allTimes() {
  let n = 0;
  for (const s of result.series) n += s.t.length;
  const all = new Float64Array(n);
  let o = 0;
  for (const s of result.series) { all.set(s.t, o); o += s.t.length; }
  all.sort();
  let k = 0;
  for (let i = 0; i < all.length; i++) if (i === 0 || all[i] !== all[i - 1]) all[k++] = all[i];
  return all.subarray(0, k);
}

function valueAt(s, t) {
  let lo = 0, hi = s.t.length;
  while (lo < hi) { const m = (lo + hi) >>> 1; if (s.t[m] < t) lo = m + 1; else hi = m; }
  return lo < s.t.length && s.t[lo] === t ? s.v[lo] : undefined;
}

function renderTable() {
  const table = $('table'), pager = $('pager');
  if (!result || result.series.length === 0) {
    table.replaceChildren();
    pager.replaceChildren();
    return;
  }
  if (!tableRows) tableRows = allTimes();
  const pages = Math.max(1, Math.ceil(tableRows.length / ROWS_PER_PAGE));
  tablePage = Math.min(tablePage, pages - 1);
  const thead = document.createElement('thead');
  const hr = document.createElement('tr');
  const th0 = document.createElement('th');
  th0.textContent = `time (${tzName()})`;
  hr.append(th0);
  for (const s of result.series) {
    const th = document.createElement('th');
    th.dataset.id = s.id;
    const sw = document.createElement('span');
    sw.className = 'swatch';
    sw.style.background = s.color;
    th.append(sw, ' ', s.label);
    hr.append(th);
  }
  thead.append(hr);
  const tbody = document.createElement('tbody');
  const from = tablePage * ROWS_PER_PAGE, to = Math.min(tableRows.length, from + ROWS_PER_PAGE);
  for (let i = from; i < to; i++) {
    const t = tableRows[i];
    const tr = document.createElement('tr');
    tr.dataset.t = String(t);
    const td0 = document.createElement('td');
    td0.textContent = localDateTime(t);
    tr.append(td0);
    for (const s of result.series) {
      const td = document.createElement('td');
      const v = valueAt(s, t);
      if (v !== undefined) td.textContent = formatValue(v);
      tr.append(td);
    }
    tbody.append(tr);
  }
  table.replaceChildren(thead, tbody);
  pager.replaceChildren();
  if (pages > 1) {
    const prev = document.createElement('button');
    prev.type = 'button'; prev.textContent = '‹ earlier'; prev.disabled = tablePage === 0;
    prev.addEventListener('click', () => { tablePage--; renderTable(); });
    const next = document.createElement('button');
    next.type = 'button'; next.textContent = 'later ›'; next.disabled = tablePage >= pages - 1;
    next.addEventListener('click', () => { tablePage++; renderTable(); });
    const info = document.createElement('span');
    info.textContent = `rows ${formatCount(from + 1)}–${formatCount(to)} of ${formatCount(tableRows.length)} (page ${tablePage + 1} of ${pages}); the CSV has them all`;
    pager.append(prev, next, info);
  }
}

// ---- downloads ----

function csvCell(s) {
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

const rawValue = v => Number.isNaN(v) ? 'NaN' : v === Infinity ? '+Inf' : v === -Infinity ? '-Inf' : String(v);

// csvText is the table as CSV: one row per timestamp, one column per series.
export function csvText(r = result) {
  if (!tableRows) tableRows = allTimes();
  const times = tableRows;
  const lines = [['time', 'timestamp_ms', ...r.series.map(s => s.label)].map(csvCell).join(',')];
  const idx = r.series.map(() => 0);
  for (const t of times) {
    const row = [new Date(t).toISOString(), String(t)];
    r.series.forEach((s, j) => {
      let i = idx[j];
      while (i < s.t.length && s.t[i] < t) i++;
      idx[j] = i;
      row.push(i < s.t.length && s.t[i] === t ? rawValue(s.v[i]) : '');
    });
    lines.push(row.join(','));
  }
  return lines.join('\n') + '\n';
}

// jsonText is the result as JSON: the request, then each series with its
// points as [timestamp_ms, value] (NaN and ±Inf as strings).
export function jsonText(r = result) {
  const out = {
    mode: r.mode, start: r.start, end: r.end, request: r.request,
    series: r.series.map(s => ({
      name: s.label, metric: s.metric, tags: s.tags, aggregateTags: s.aggregateTags,
      dps: Array.from(s.t, (t, i) => [t, Number.isFinite(s.v[i]) ? s.v[i] : rawValue(s.v[i])]),
    })),
  };
  return JSON.stringify(out, null, 1) + '\n';
}

function download(text, type, ext) {
  const name = (state.mode === 'tsdb' ? state.metric : 'promql').replace(/[^\w.-]+/g, '_');
  const stamp = new Date(result.start).toISOString().replace(/[:.]/g, '').slice(0, 15);
  const a = document.createElement('a');
  a.href = URL.createObjectURL(new Blob([text], { type }));
  a.download = `hourglass-${name}-${stamp}.${ext}`;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 60e3);
}

// ---- status panel ----

let prevStatus = null;

async function pollStatus() {
  if (document.hidden) return;
  let s;
  try { s = await api('/api/status'); } catch (e) {
    $('st-uptime').textContent = 'unreachable';
    return;
  }
  $('st-version').textContent = s.version + (s.revision ? ` (${s.revision})` : '');
  $('st-uptime').textContent = humanDuration(s.uptimeSeconds * 1000);
  $('st-series').textContent = formatCount(s.series);
  $('st-series').title = `${formatCount(s.headSeries)} with points in memory (${formatCount(s.pointsInHead)} points)`;
  let rate, title;
  if (prevStatus && s.now > prevStatus.now) {
    rate = (s.pointsStored - prevStatus.pointsStored) * 1000 / (s.now - prevStatus.now);
    title = `over the last ${humanDuration(s.now - prevStatus.now)}`;
  } else {
    rate = s.uptimeSeconds > 0 ? s.pointsStored / s.uptimeSeconds : 0;
    title = 'average since the server started';
  }
  $('st-rate').textContent = rate >= 100 ? formatCount(rate) : String(Number(rate.toFixed(1)));
  $('st-rate').title = `${title}; ${formatCount(s.pointsStored)} points stored since start, ${formatCount(s.pointsRejected)} rejected`;
  $('st-wal').textContent = formatBytes(s.walBytes);
  $('st-store').textContent = s.storeBytes === null ? 'n/a' : formatBytes(s.storeBytes);
  $('status').dataset.series = String(s.series);
  prevStatus = s;
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

async function loadLists() {
  const [aggs, filters] = await Promise.all([cached('/api/aggregators'), cached('/api/config/filters')]);
  const names = Array.isArray(aggs) && aggs.length ? aggs : DEFAULT_AGGS;
  setOptions($('agg'), names, $('agg').value || state.agg);
  setOptions($('ds-fn'), names.filter(n => n !== 'none'), $('ds-fn').value || state.dsFn);
  if (filters && typeof filters === 'object') {
    const known = Object.keys(FILTER_LABELS).filter(t => t in filters);
    filterTypes = known.concat(Object.keys(filters).filter(t => !(t in FILTER_LABELS)).sort());
    for (const t in filters) filterDescriptions[t] = filters[t].description || t;
  }
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
  chart = new Chart($('chart'), { onZoom: zoomTo, onReset: resetZoom });
  setOptions($('agg'), DEFAULT_AGGS, DEFAULTS.agg);
  setOptions($('ds-fn'), DEFAULT_AGGS.filter(n => n !== 'none'), DEFAULTS.dsFn);
  for (const r of PRESETS) {
    const b = document.createElement('button');
    b.type = 'button'; b.textContent = r; b.dataset.range = r;
    b.addEventListener('click', () => { state.range = r; state.from = null; state.to = null; zoomStack = []; runQuery({ force: true }); });
    $('presets').append(b);
  }
  state = readURL();
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
    state = readURL();
    zoomStack = [];
    fillControls();
    scheduleRefresh();
    if (state.metric || state.expr) runQuery({ push: false, force: true });
  });

  loadLists().then(() => {
    // Filter rows made before the lists arrived get the server's types.
    for (const row of $('filters').children) {
      const sel = row.querySelector('.ftype'), keep = sel.value;
      sel.replaceChildren(...filterTypes.map(t => { const o = new Option(FILTER_LABELS[t] || t, t); o.title = filterDescriptions[t] || t; return o; }));
      ensureOption(sel, keep);
      sel.value = keep;
    }
  });
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

// The page's shared state and the URL that holds it: every control's value
// is in the query string, so a URL is a view to reload or share. The state,
// the last result shown and the chart are live bindings here, set only
// through setState, setResult and setChart.

import { parseDuration } from './format.js';

export const $ = id => document.getElementById(id);

export const DEFAULTS = {
  mode: 'tsdb', metric: '', agg: 'sum', ds: '', dsFn: 'avg', dsFill: 'none', rate: false, counter: false,
  filters: [], groupBy: [], expr: '', step: '', range: '1h', from: null, to: null, refresh: '',
  view: 'chart', hide: [],
};

export let state = clone(DEFAULTS);
export let result = null; // the last result shown
export let chart = null;

export function setState(s) { state = s; }
export function setResult(r) { result = r; }
export function setChart(c) { chart = c; }

export function clone(o) { return JSON.parse(JSON.stringify(o)); }

// ---- the state in the URL ----

export function readURL() {
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

export function urlOf(s) {
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

export function writeURL(push) {
  const u = urlOf(state);
  if (u === location.search) return;
  if (push) history.pushState(null, '', u); else history.replaceState(null, '', u);
}

export function timeRange(now) {
  if (state.from !== null) return [state.from, state.to !== null ? state.to : now];
  return [now - (parseDuration(state.range) || 3600e3), now];
}

// The query controls: the state shown in them and read back from them, the
// mode and view tabs, the filter rows and the lists the server offers
// (aggregators, filter types). A change that should run the query calls the
// function given to setRunQuery (app.js's runQuery).

import { attach } from './complete.js';
import { $, state, writeURL, timeRange } from './state.js';
import { cached, tagKeys, tagValues } from './api.js';
import { renderTable } from './table.js';
import { localInputValue } from './format.js';

export const FILTER_LABELS = {
  literal_or: '=', not_literal_or: '≠', iliteral_or: '= any case', not_iliteral_or: '≠ any case',
  wildcard: 'wildcard', iwildcard: 'wildcard any case', regexp: 'regexp', not_key: 'has no key',
};
export const DEFAULT_AGGS = ['avg', 'count', 'dev', 'first', 'last', 'max', 'median', 'min', 'none', 'p50', 'p90', 'p95', 'p99', 'sum', 'zimsum'];

let runQuery = () => {};

// setRunQuery sets what the controls call to run the query.
export function setRunQuery(fn) { runQuery = fn; }

export function fillControls() {
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

export function fillTimeControls() {
  const [start, end] = timeRange(Date.now());
  $('from').value = localInputValue(start);
  $('to').value = state.to === null ? '' : localInputValue(end);
  $('to').placeholder = 'now';
  for (const b of $('presets').children) {
    b.setAttribute('aria-pressed', state.from === null && b.dataset.range === state.range ? 'true' : 'false');
  }
}

export function readControls() {
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

export function ensureOption(sel, value) {
  if (value && ![...sel.options].some(o => o.value === value)) sel.add(new Option(value, value));
}

export function setOptions(sel, names, keep) {
  sel.replaceChildren(...names.map(n => new Option(n, n)));
  ensureOption(sel, keep);
  sel.value = keep;
}

export function setMode(mode, run) {
  state.mode = mode;
  for (const b of document.querySelectorAll('[data-mode]')) b.setAttribute('aria-selected', String(b.dataset.mode === mode));
  $('tsdb').hidden = mode !== 'tsdb';
  $('promql').hidden = mode !== 'promql';
  if (run) runQuery();
}

export function setView(view, push) {
  state.view = view;
  for (const b of document.querySelectorAll('[data-view]')) b.setAttribute('aria-selected', String(b.dataset.view === view));
  $('chart-pane').hidden = view !== 'chart';
  $('table-pane').hidden = view !== 'table';
  if (view === 'table') renderTable();
  if (push !== false) writeURL(false);
}

let filterTypes = Object.keys(FILTER_LABELS);
let filterDescriptions = {};

export function addFilterRow(f = { k: '', type: 'literal_or', v: '', g: false }) {
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

export const currentMetric = () => $('metric').value.trim();

export async function loadLists() {
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


// retypeFilters gives filter rows made before the lists arrived the
// server's types.
export function retypeFilters() {
  for (const row of $('filters').children) {
    const sel = row.querySelector('.ftype'), keep = sel.value;
    sel.replaceChildren(...filterTypes.map(t => { const o = new Option(FILTER_LABELS[t] || t, t); o.title = filterDescriptions[t] || t; return o; }));
    ensureOption(sel, keep);
    sel.value = keep;
  }
}

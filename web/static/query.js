// Query building: the state as an OpenTSDB /api/query body or a PromQL
// /api/v1/query_range request, and the answer as series for the chart.

import { state, chart } from './state.js';
import { api } from './api.js';
import { parseDuration, formatDuration, niceStepMs } from './format.js';

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

// Rollups (docs/rollups.md): over a range of LONG_RANGE or more the page
// downsamples even when no interval is set, and its automatic interval
// (or PromQL step) is whole hours, at least one: a multiple of the 1h
// rollups (the default -rollup.intervals), so the server answers from
// them (168 points a series over 7 days, 720 over 30). The answer says
// whether it did (the X-Hourglass-Rollup header, PromQL's infos).
export const LONG_RANGE = 7 * 86400e3;
const HOUR = 3600e3;

function rollupStep(ms) { return Math.max(HOUR, Math.ceil(ms / HOUR) * HOUR); }

function rollupInfo(infos) {
  for (const s of infos || []) {
    const m = /read from (\S+) rollups/.exec(s);
    if (m) return m[1];
  }
  return '';
}

export async function queryTSDB(start, end, signal) {
  const q = { aggregator: state.agg, metric: state.metric };
  const long = end - start >= LONG_RANGE;
  const picked = !state.ds && long;
  const ds = picked ? 'auto' : state.ds;
  if (ds) {
    const auto = long ? rollupStep(autoStep(start, end)) : autoStep(start, end);
    const iv = ds === 'auto' ? formatDuration(auto) : ds;
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
  const seen = {};
  const r = await api('/api/query?arrays', {
    method: 'POST', body: JSON.stringify(body), signal, headers: { 'Content-Type': 'application/json' }, seen,
  });
  const rollup = (seen.headers && seen.headers.get('X-Hourglass-Rollup')) || '';
  const series = (Array.isArray(r) ? r : []).map(x => {
    const dps = x.dps || [];
    const t = new Float64Array(dps.length), v = new Float64Array(dps.length);
    dps.forEach((d, i) => { t[i] = d[0]; v[i] = parseValue(d[1]); });
    const keys = Object.keys(x.tags || {}).sort();
    const label = keys.length ? keys.map(k => `${k}=${x.tags[k]}`).join(', ') : x.metric;
    return { label, metric: x.metric, tags: x.tags || {}, aggregateTags: x.aggregateTags || [], t, v };
  });
  return { series, request: body, rollup, picked: picked ? q.downsample : '' };
}

export async function queryProm(start, end, signal) {
  const long = end - start >= LONG_RANGE;
  const step = state.step ? parseDuration(state.step) : (long ? rollupStep(autoStep(start, end)) : autoStep(start, end));
  const p = new URLSearchParams({
    query: state.expr, start: (start / 1000).toFixed(3), end: (end / 1000).toFixed(3), step: (step / 1000).toString(),
  });
  // Selectors whose range and the step are an hour or more read rollups.
  if (long && step >= HOUR) p.set('max_source_resolution', formatDuration(step));
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
  const req = { query: state.expr, start, end, step };
  if (p.has('max_source_resolution')) req.max_source_resolution = p.get('max_source_resolution');
  return { series, request: req, rollup: rollupInfo(r && r.infos), picked: '' };
}

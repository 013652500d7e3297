// The requests to hourglass's API, and the names (metrics, tag keys, tag
// values) the controls complete from it.

import { filterNames } from './complete.js';

const LOOKUP_LIMIT = 10000;

export class APIError extends Error {
  constructor(status, body, text) {
    super(text || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

// api fetches path and returns its JSON body. opts.seen, when given, gets
// the answer's response headers (the rollup an /api/query was read from).
export async function api(path, opts = {}) {
  const { seen, ...fetchOpts } = opts;
  let resp;
  try {
    resp = await fetch(path, { ...fetchOpts, headers: { Accept: 'application/json', ...(opts.headers || {}) } });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new APIError(0, null, `Could not reach hourglass at ${location.host}: is the server running?`);
  }
  if (seen) seen.headers = resp.headers;
  const text = await resp.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch (e) { body = null; }
  if (!resp.ok || (body && body.status === 'error')) throw new APIError(resp.status, body, text.slice(0, 300));
  return body;
}

const cache = new Map();
export function cached(url) {
  const hit = cache.get(url);
  if (hit && Date.now() - hit.at < 30e3) return hit.p;
  const p = api(url).catch(() => null);
  cache.set(url, { at: Date.now(), p });
  return p;
}

export async function suggest(type, text) {
  const r = await cached(`/api/suggest?type=${type}&max=100&q=${encodeURIComponent(text)}`);
  return Array.isArray(r) ? r : [];
}

export async function lookup(m) {
  const r = await cached(`/api/search/lookup?limit=${LOOKUP_LIMIT}&m=${encodeURIComponent(m)}`);
  return r && Array.isArray(r.results) ? r.results : null;
}

// tagKeys are the tag keys of the metric's series (any metric's when no
// metric is chosen), those matching text first.
export async function tagKeys(metric, text) {
  const res = metric ? await lookup(metric) : null;
  if (!res) return suggest('tagk', text);
  const keys = new Set();
  for (const r of res) for (const k in r.tags) keys.add(k);
  return filterNames([...keys], text);
}

// tagValues are the values of key among the metric's series. In a list
// (a|b|c) the last item is completed.
export async function tagValues(metric, key, text) {
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

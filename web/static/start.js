// The view a page opened without a query starts on, so that it never opens
// on "No data" when something is stored: the newest written of the first
// metrics (by name), over a range that holds its newest point; or, when no
// newest point can be found, the metrics' names to pick from.
//
// It stays cheap whatever is stored: one /api/suggest for at most
// START_METRICS names, one /api/search/lookup with limit=1 for each (the
// series index alone), and one /api/query/last for those few series (which
// reads one day of each). A metric is dated by one of its series, so a
// metric whose other series are newer may be passed over.

export const START_METRICS = 20;

// startView returns {names: [...]} with the metric names found (none when
// nothing is stored), and, when a newest point was found, metric (its
// metric's name) and newest (its time in ms). api is the page's fetch
// helper: api(path, opts) resolves to the parsed JSON or throws.
export async function startView(api) {
  const names = await api(`/api/suggest?type=metrics&max=${START_METRICS}`);
  if (!Array.isArray(names) || !names.length) return { names: [] };
  const found = await Promise.all(names.map(m =>
    api(`/api/search/lookup?limit=1&m=${encodeURIComponent(m)}`).catch(() => null)));
  const metricOf = new Map();
  found.forEach((r, i) => {
    const s = r && Array.isArray(r.results) ? r.results[0] : null;
    if (s && s.tsuid) metricOf.set(String(s.tsuid).toUpperCase(), names[i]);
  });
  if (!metricOf.size) return { names };
  const last = await api('/api/query/last', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ queries: [{ tsuids: [...metricOf.keys()] }] }),
  }).catch(() => null);
  let best = null;
  for (const p of Array.isArray(last) ? last : []) {
    const t = Number(p.timestamp);
    if (Number.isFinite(t) && metricOf.has(String(p.tsuid).toUpperCase()) && (!best || t > best.t)) best = { t, tsuid: String(p.tsuid).toUpperCase() };
  }
  if (!best) return { names };
  return { names, metric: metricOf.get(best.tsuid), newest: best.t };
}

// startRange is the time range to show a newest point at newest (ms) when
// it is now: the relative range rangeMs when that holds it, else an
// absolute one from an hour before it to a minute after it.
export function startRange(newest, now, rangeMs) {
  if (newest <= now && newest >= now - rangeMs) return { from: null, to: null };
  return { from: newest - 3600e3, to: newest + 60e3 };
}

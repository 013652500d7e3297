// The result table (a page at a time) and the downloads (CSV and JSON).

import { $, state, result } from './state.js';
import { localDateTime, formatValue, formatCount, tzName } from './format.js';

const ROWS_PER_PAGE = 500;

let tablePage = 0, tableRows = null;

// forgetRows drops the table's rows, made again from the next result shown;
// with firstPage the table also goes back to its first page.
export function forgetRows(firstPage) {
  tableRows = null;
  if (firstPage) tablePage = 0;
}

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

export function renderTable() {
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

export function download(text, type, ext) {
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

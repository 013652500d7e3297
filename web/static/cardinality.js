// The cardinality panel: what /api/v1/status/tsdb says of the series index
// (Prometheus' TSDB status), loaded when the panel is opened and again on
// Refresh: the metrics with the most series, the label names with the most
// values and the label pairs in the most series. It is the first place to
// look when the series count explodes.
import { formatCount } from './format.js';

const $ = id => document.getElementById(id);

function fillTable(tbody, rows, link) {
  tbody.replaceChildren(...rows.map(r => {
    const tr = document.createElement('tr');
    const name = document.createElement('td');
    if (link) {
      const a = document.createElement('a');
      a.href = link(r.name);
      a.textContent = r.name;
      name.append(a);
    } else {
      name.textContent = r.name;
    }
    const value = document.createElement('td');
    value.textContent = formatCount(r.value);
    value.dataset.value = String(r.value);
    tr.append(name, value);
    return tr;
  }));
  if (rows.length === 0) {
    const tr = document.createElement('tr');
    const td = document.createElement('td');
    td.colSpan = 2;
    td.textContent = 'none yet';
    tr.append(td);
    tbody.append(tr);
  }
}

async function load() {
  const panel = $('cardinality');
  const msg = $('card-message');
  const limit = $('card-limit').value;
  panel.dataset.state = 'loading';
  msg.textContent = 'Loading…';
  let body;
  try {
    const resp = await fetch(`/api/v1/status/tsdb?limit=${encodeURIComponent(limit)}`, { headers: { Accept: 'application/json' } });
    body = await resp.json();
    if (!resp.ok || body.status !== 'success') throw new Error(body.error || `HTTP ${resp.status}`);
  } catch (e) {
    panel.dataset.state = 'error';
    msg.textContent = `The server could not say: ${e.message}`;
    return;
  }
  const d = body.data;
  fillTable($('card-metrics'), d.seriesCountByMetricName, m => `/?m=${encodeURIComponent(m)}`);
  fillTable($('card-labels'), d.labelValueCountByLabelName);
  fillTable($('card-pairs'), d.seriesCountByLabelValuePair);
  msg.textContent = `${formatCount(d.headStats.numSeries)} series, ${formatCount(d.headStats.numLabelPairs)} label pairs, ` +
    `${formatCount(d.headStats.chunkCount)} chunks in memory`;
  panel.dataset.series = String(d.headStats.numSeries);
  panel.dataset.state = 'done';
}

export function initCardinality() {
  const panel = $('cardinality');
  if (!panel) return;
  panel.addEventListener('toggle', () => { if (panel.open) load(); });
  $('card-refresh').addEventListener('click', load);
  $('card-limit').addEventListener('change', load);
}

initCardinality();

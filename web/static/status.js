// The status panel: version, uptime, series, write rate and disk use from
// /api/status, polled while the page is visible.

import { $ } from './state.js';
import { api } from './api.js';
import { formatBytes, formatCount, humanDuration } from './format.js';

let prevStatus = null;

export async function pollStatus() {
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

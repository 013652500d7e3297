// Pure functions shared by the chart, the table and the controls: durations,
// local times, SI-scaled numbers and axis ticks. Nothing here touches the DOM.

const SEC = 1000, MIN = 60 * SEC, HOUR = 60 * MIN, DAY = 24 * HOUR;

const UNITS = { ms: 1, s: SEC, m: MIN, h: HOUR, d: DAY, w: 7 * DAY, y: 365 * DAY };

// parseDuration reads "500ms", "15s", "5m", "1h", "30d", "1w" (and sums such
// as "1h30m") as milliseconds; anything else is NaN.
export function parseDuration(s) {
  s = String(s || '').trim();
  if (!s) return NaN;
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h|d|w|y)/gy;
  let total = 0, m, end = 0;
  while ((m = re.exec(s)) !== null) {
    total += parseFloat(m[1]) * UNITS[m[2]];
    end = re.lastIndex;
  }
  return end === s.length && total > 0 ? total : NaN;
}

// formatDuration writes ms as the shortest duration parseDuration reads back
// ("1h", "90s", "1h30m").
export function formatDuration(ms) {
  if (!(ms > 0)) return '0s';
  const parts = [];
  for (const [u, n] of [['d', DAY], ['h', HOUR], ['m', MIN], ['s', SEC]]) {
    if (ms >= n) {
      const k = Math.floor(ms / n);
      parts.push(k + u);
      ms -= k * n;
    }
  }
  if (ms > 0) parts.push(Math.round(ms) + 'ms');
  return parts.join('');
}

// humanDuration is a rounded duration for people: "3d 4h", "5m 2s".
export function humanDuration(ms) {
  if (!(ms >= 0)) return '';
  const out = [];
  for (const [u, n] of [['d', DAY], ['h', HOUR], ['m', MIN], ['s', SEC]]) {
    if (ms >= n || (u === 's' && out.length === 0)) {
      const k = Math.floor(ms / n);
      out.push(k + u);
      ms -= k * n;
    }
    if (out.length === 2) break;
  }
  return out.join(' ');
}

const pad = (n, w = 2) => String(n).padStart(w, '0');

// localDateTime writes t (Unix ms) in local time as "2026-11-01 14:05:09",
// with milliseconds when t has them.
export function localDateTime(t) {
  const d = new Date(t);
  let s = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  if (d.getMilliseconds()) s += '.' + pad(d.getMilliseconds(), 3);
  return s;
}

// localInputValue is t as a datetime-local input's value.
export function localInputValue(t) {
  return localDateTime(t).replace(' ', 'T').replace(/\.\d+$/, '');
}

// tzName names the browser's time zone for labels ("UTC+01:00" or its IANA name).
export function tzName() {
  try {
    const z = Intl.DateTimeFormat().resolvedOptions().timeZone;
    if (z) return z;
  } catch (e) { /* fall through */ }
  const off = -new Date().getTimezoneOffset();
  return `UTC${off < 0 ? '-' : '+'}${pad(Math.floor(Math.abs(off) / 60))}:${pad(Math.abs(off) % 60)}`;
}

// formatValue writes a value exactly enough for a tooltip or a table:
// integers whole, other numbers to 7 significant digits, NaN and ±Inf by name.
export function formatValue(v) {
  if (v === null || v === undefined) return '';
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  if (Number.isInteger(v) && Math.abs(v) < 1e15) return String(v);
  const s = Number(v.toPrecision(7));
  return String(s);
}

const PREFIXES = ['y', 'z', 'a', 'f', 'p', 'n', 'µ', 'm', '', 'k', 'M', 'G', 'T', 'P', 'E', 'Z', 'Y'];

// siPrefix returns the SI prefix and its factor for a magnitude.
export function siPrefix(mag) {
  if (!(mag > 0) || !Number.isFinite(mag)) return { prefix: '', factor: 1 };
  let e = Math.floor(Math.log10(mag) / 3);
  // Guard against log10 rounding just under a power of 1000.
  if (mag / Math.pow(1000, e + 1) >= 1 - 1e-12) e++;
  e = Math.max(-8, Math.min(8, e));
  return { prefix: PREFIXES[e + 8], factor: Math.pow(1000, e) };
}

// formatSI writes one value with an SI prefix and up to `digits`
// significant digits: 1500 → "1.5k", 0.002 → "2m".
export function formatSI(v, digits = 4) {
  if (!Number.isFinite(v)) return formatValue(v);
  if (v === 0) return '0';
  const { prefix, factor } = siPrefix(Math.abs(v));
  return String(Number((v / factor).toPrecision(digits))) + prefix;
}

// niceStep rounds a raw step up to 1, 2, 2.5 or 5 times a power of ten.
export function niceStep(raw) {
  if (!(raw > 0) || !Number.isFinite(raw)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  const f = raw / p;
  const m = f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10;
  return m * p;
}

// valueAxis chooses the value axis for data in [min, max] drawn over `pixels`
// pixels: bounds on whole steps, the ticks, and their labels, all scaled by
// one SI prefix (the largest tick's) so they read alike: 0, 0.5M, 1M, 1.5M.
export function valueAxis(min, max, pixels, minSpacing = 30) {
  if (!Number.isFinite(min) || !Number.isFinite(max)) { min = 0; max = 1; }
  if (min > max) [min, max] = [max, min];
  if (min === max) {
    const d = min === 0 ? 1 : Math.abs(min) * 0.1;
    min -= d; max += d;
  }
  const n = Math.max(2, Math.floor(pixels / minSpacing));
  const step = niceStep((max - min) / n);
  const lo = Math.floor(min / step + 1e-9) * step;
  const hi = Math.ceil(max / step - 1e-9) * step;
  const ticks = [];
  for (let i = 0; ; i++) {
    const v = Number((lo + i * step).toPrecision(12));
    if (v > hi + step * 1e-9) break;
    ticks.push(v === 0 ? 0 : v);
  }
  const mag = Math.max(Math.abs(lo), Math.abs(hi));
  const { prefix, factor } = siPrefix(mag);
  const decimals = Math.max(0, Math.min(12, Math.ceil(-Math.log10(step / factor) - 1e-9)));
  const labels = ticks.map(v => {
    if (v === 0) return '0';
    return String(Number((v / factor).toFixed(decimals))) + prefix;
  });
  return { min: lo, max: hi, step, ticks, labels, prefix };
}

// Time steps the time axis may use. Calendar steps (months, years) are
// counted in local calendar units, the others in milliseconds.
const TIME_STEPS = [
  1, 2, 5, 10, 20, 50, 100, 200, 500,
  SEC, 2 * SEC, 5 * SEC, 10 * SEC, 15 * SEC, 30 * SEC,
  MIN, 2 * MIN, 5 * MIN, 10 * MIN, 15 * MIN, 30 * MIN,
  HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR,
  DAY, 2 * DAY, 7 * DAY,
].map(ms => ({ ms })).concat([
  { months: 1, ms: 30 * DAY }, { months: 3, ms: 91 * DAY }, { months: 6, ms: 182 * DAY },
  { months: 12, ms: 365 * DAY }, { months: 24, ms: 730 * DAY }, { months: 60, ms: 1826 * DAY },
  { months: 120, ms: 3652 * DAY },
]);

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

// offsetMs is the local time's offset from UTC at t, in ms.
const offsetMs = t => -new Date(t).getTimezoneOffset() * MIN;

// timeAxis chooses ticks for [t0, t1] (Unix ms) over `pixels` pixels, at
// least minSpacing apart, aligned on local wall-clock time: whole minutes,
// hours, local midnights, Mondays, first days of months. Each tick has a
// label; a tick that starts a new day (or month, year) also gets the date as
// a second line, so the axis says which day it shows.
export function timeAxis(t0, t1, pixels, minSpacing = 90) {
  const span = t1 - t0;
  if (!(span > 0) || !(pixels > 0)) return { step: null, ticks: [] };
  const want = span * minSpacing / pixels;
  const step = TIME_STEPS.find(s => s.ms >= want) || TIME_STEPS[TIME_STEPS.length - 1];
  const ts = [];
  if (step.months) {
    const d = new Date(t0);
    let y = d.getFullYear(), m = d.getMonth();
    m = Math.floor(m / Math.min(step.months, 12)) * Math.min(step.months, 12);
    if (step.months > 12) y = Math.floor(y / (step.months / 12)) * (step.months / 12);
    for (let i = 0; i < 1000; i++) {
      const t = new Date(y, m, 1).getTime();
      if (t > t1) break;
      if (t >= t0) ts.push(t);
      m += step.months;
    }
  } else if (step.ms >= DAY) {
    const d = new Date(t0);
    let day = new Date(d.getFullYear(), d.getMonth(), d.getDate());
    if (step.ms === 7 * DAY) {
      // Weeks start on Monday.
      day = new Date(day.getFullYear(), day.getMonth(), day.getDate() - ((day.getDay() + 6) % 7));
    }
    const k = step.ms / DAY;
    for (let i = 0; i < 1000; i++) {
      const t = day.getTime();
      if (t > t1) break;
      // Every k-th day of the month for 2-day steps: 1, 3, 5, ...
      if (t >= t0 && (k !== 2 || (day.getDate() - 1) % 2 === 0)) ts.push(t);
      day = new Date(day.getFullYear(), day.getMonth(), day.getDate() + (k === 2 ? 1 : k));
    }
  } else {
    // Fixed steps, aligned on local wall-clock multiples of the step.
    const off = offsetMs(t0);
    let w = Math.ceil((t0 + off) / step.ms) * step.ms;
    for (let i = 0; i < 2000; i++) {
      let t = w - offsetMs(w - off);
      if (t > t1) break;
      if (t >= t0 && (ts.length === 0 || t > ts[ts.length - 1])) ts.push(t);
      w += step.ms;
    }
  }
  const ticks = [];
  let prev = null;
  for (const t of ts) {
    const d = new Date(t);
    let label, date = '';
    if (step.months) {
      label = step.months >= 12 ? String(d.getFullYear()) : MONTHS[d.getMonth()];
      if (step.months < 12 && (prev === null || prev.getFullYear() !== d.getFullYear())) date = String(d.getFullYear());
    } else if (step.ms >= DAY) {
      label = `${MONTHS[d.getMonth()]} ${d.getDate()}`;
      if (prev === null || prev.getFullYear() !== d.getFullYear()) date = String(d.getFullYear());
    } else {
      label = `${pad(d.getHours())}:${pad(d.getMinutes())}`;
      if (step.ms < MIN) label += `:${pad(d.getSeconds())}`;
      if (step.ms < SEC) label += `.${pad(d.getMilliseconds(), 3)}`;
      if (prev === null || prev.getDate() !== d.getDate() || prev.getMonth() !== d.getMonth()) {
        date = `${MONTHS[d.getMonth()]} ${d.getDate()}`;
      }
    }
    ticks.push({ t, label, date });
    prev = d;
  }
  return { step: step.months ? { months: step.months } : { ms: step.ms }, ticks };
}

// formatBytes writes a size in binary units: 1536 → "1.5 KiB".
export function formatBytes(n) {
  if (n === null || n === undefined || !Number.isFinite(n)) return '–';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i === 0 ? String(n) : n.toFixed(n < 10 ? 1 : 0)) + ' ' + u[i];
}

// formatCount writes a count with thousands separators.
export function formatCount(n) {
  if (!Number.isFinite(n)) return '–';
  return Math.round(n).toLocaleString('en-US');
}

// niceStepMs rounds a step for PromQL up to a whole number of seconds that a
// person would pick: 1s, 2s, 5s, 10s, 15s, 30s, 1m, ...
export function niceStepMs(raw) {
  const steps = [SEC, 2 * SEC, 5 * SEC, 10 * SEC, 15 * SEC, 30 * SEC, MIN, 2 * MIN, 5 * MIN, 10 * MIN,
    15 * MIN, 30 * MIN, HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR, DAY];
  return steps.find(s => s >= raw) || Math.ceil(raw / DAY) * DAY;
}

// Errors, next to the control that caused them: what the page checks before
// asking the server (validate), and the server's answers turned into a
// sentence on the right control (explain).

import { $, state, timeRange } from './state.js';
import { parseDuration, formatDuration, niceStepMs } from './format.js';

export function clearErrors() {
  for (const e of document.querySelectorAll('.err')) e.textContent = '';
  for (const e of document.querySelectorAll('[aria-invalid]')) e.removeAttribute('aria-invalid');
}

export function showError(target, text) {
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
export const quote = s => `“${s}”`;

function filterIndex(pred) {
  return state.filters.findIndex(pred);
}

// explain turns an API error into the control it belongs to and a sentence.
export function explain(err) {
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
export function validate() {
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

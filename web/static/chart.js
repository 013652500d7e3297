// The line chart: a canvas for the axes and the lines, a second canvas on top
// for the crosshair and the zoom selection, and an HTML tooltip.
//
// Lines are decimated per pixel column (M4: the first, lowest, highest and
// last point of each column), so a frame costs one pass over the points in
// view and a few path segments per column, whatever the number of points.
// Hover redraws only the top canvas.

import { timeAxis, valueAxis, formatValue, localDateTime } from './format.js';

// A palette legible on light and dark backgrounds; further series get
// colours spread round the hue circle by the golden angle.
const PALETTE = ['#2f7ed8', '#f28f1c', '#2ca02c', '#d62728', '#9467bd', '#17a2b8',
  '#c8a200', '#e377c2', '#8c6d31', '#7cb518', '#e0598b', '#5a7bd6'];

function hslHex(h, s, l) {
  s /= 100; l /= 100;
  const k = n => (n + h / 30) % 12;
  const a = s * Math.min(l, 1 - l);
  const f = n => l - a * Math.max(-1, Math.min(k(n) - 3, Math.min(9 - k(n), 1)));
  const x = v => Math.round(v * 255).toString(16).padStart(2, '0');
  return '#' + x(f(0)) + x(f(8)) + x(f(4));
}

export function seriesColor(i) {
  if (i < PALETTE.length) return PALETTE[i];
  return hslHex((i * 137.508) % 360, 62, 48);
}

// lowerBound is the first index i with a[i] >= x.
function lowerBound(a, x) {
  let lo = 0, hi = a.length;
  while (lo < hi) {
    const m = (lo + hi) >>> 1;
    if (a[m] < x) lo = m + 1; else hi = m;
  }
  return lo;
}

// nearest is the index of the point of s nearest to t, or -1.
function nearest(s, t) {
  const n = s.t.length;
  if (n === 0) return -1;
  const i = lowerBound(s.t, t);
  if (i === 0) return 0;
  if (i === n) return n - 1;
  return t - s.t[i - 1] <= s.t[i] - t ? i - 1 : i;
}

export class Chart {
  // el is an empty element the chart fills; opts.onZoom(t0, t1) is called
  // after a drag selects a range, opts.onReset() after a double click.
  constructor(el, opts = {}) {
    this.el = el;
    this.opts = opts;
    el.classList.add('chart');
    this.canvas = document.createElement('canvas');
    this.canvas.className = 'chart-base';
    this.top = document.createElement('canvas');
    this.top.className = 'chart-top';
    this.tip = document.createElement('div');
    this.tip.className = 'chart-tip';
    this.tip.hidden = true;
    this.tip.setAttribute('role', 'status');
    el.append(this.canvas, this.top, this.tip);
    this.series = [];
    this.range = [0, 1];   // the range asked for
    this.view = null;      // the range shown, when zoomed client-side
    this.hidden = new Set();
    this.hl = null;
    this.hover = null;     // {x, y} of the pointer in CSS px
    this.drag = null;
    this.stats = { renders: 0, ms: 0, points: 0, segments: 0 };
    this.w = 0; this.h = 0; this.dpr = 1;
    this.plot = { left: 0, top: 0, width: 0, height: 0 };
    this.ro = new ResizeObserver(() => this.resize());
    this.ro.observe(el);
    this.bindEvents();
  }

  // setData replaces the series. Each series is
  // {id, label, color, t: Float64Array (Unix ms, ascending), v: Float64Array, gap?: ms}.
  // range is [start, end] in Unix ms: the time axis always spans it.
  setData(series, range) {
    this.series = series;
    this.range = range.slice();
    this.view = null;
    this.render();
    this.drawTop();
  }

  setHidden(ids) {
    this.hidden = new Set(ids);
    this.render();
    this.drawTop();
  }

  highlight(id) {
    if (this.hl === id) return;
    this.hl = id;
    this.render();
  }

  setView(t0, t1) {
    this.view = [t0, t1];
    this.render();
    this.drawTop();
  }

  xRange() { return this.view || this.range; }

  resize() {
    const r = this.el.getBoundingClientRect();
    const w = Math.max(100, Math.floor(r.width)), h = Math.max(120, Math.floor(r.height));
    const dpr = window.devicePixelRatio || 1;
    if (w === this.w && h === this.h && dpr === this.dpr) return;
    this.w = w; this.h = h; this.dpr = dpr;
    for (const c of [this.canvas, this.top]) {
      c.width = Math.round(w * dpr);
      c.height = Math.round(h * dpr);
      c.style.width = w + 'px';
      c.style.height = h + 'px';
    }
    this.render();
    this.drawTop();
  }

  theme() {
    const cs = getComputedStyle(this.el);
    const v = (name, def) => (cs.getPropertyValue(name) || '').trim() || def;
    return {
      text: v('--chart-text', '#444'),
      grid: v('--chart-grid', 'rgba(0,0,0,0.08)'),
      axis: v('--chart-axis', 'rgba(0,0,0,0.35)'),
      cross: v('--chart-cross', 'rgba(0,0,0,0.5)'),
      select: v('--chart-select', 'rgba(47,126,216,0.15)'),
      bg: v('--chart-bg', '#fff'),
      font: `12px ${cs.fontFamily || 'sans-serif'}`,
    };
  }

  visible() { return this.series.filter(s => !this.hidden.has(s.id)); }

  // yExtent is the min and max of the visible series' finite values in view.
  yExtent(x0, x1) {
    let lo = Infinity, hi = -Infinity;
    for (const s of this.visible()) {
      const a = Math.max(0, lowerBound(s.t, x0) - 1), b = Math.min(s.t.length, lowerBound(s.t, x1) + 1);
      const v = s.v;
      for (let i = a; i < b; i++) {
        const y = v[i];
        if (y < lo) lo = y;
        if (y > hi) hi = y;
      }
    }
    return [lo, hi];
  }

  // toPixel maps a time and a value to CSS pixels in the canvas, as drawn.
  toPixel(t, v) {
    const p = this.plot, [x0, x1] = this.xRange();
    return {
      x: p.left + (t - x0) * p.width / (x1 - x0),
      y: p.top + p.height - (v - this.yAxis.min) * p.height / (this.yAxis.max - this.yAxis.min),
    };
  }

  toTime(x) {
    const p = this.plot, [x0, x1] = this.xRange();
    return x0 + (x - p.left) * (x1 - x0) / p.width;
  }

  render() {
    if (!this.w) return;
    const began = performance.now();
    const th = this.theme();
    const ctx = this.canvas.getContext('2d');
    const { w, h, dpr } = this;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, h);
    ctx.font = th.font;
    const [x0, x1] = this.xRange();

    // The value axis, then the margin its labels need.
    const [lo, hi] = this.yExtent(x0, x1);
    const pad = 6; // inner padding so lines at the bounds are not clipped
    const top = 10, bottom = h - 38;
    this.yAxis = valueAxis(lo, hi, bottom - top - 2 * pad, 32);
    let labelW = 0;
    for (const l of this.yAxis.labels) labelW = Math.max(labelW, ctx.measureText(l).width);
    const left = Math.ceil(labelW) + 14, right = w - 14;
    // The plot rectangle lines are drawn in (the axes sit pad px outside).
    this.plot = { left: left + pad, top: top + pad, width: right - left - 2 * pad, height: bottom - top - 2 * pad };
    const p = this.plot;

    // Grid and labels.
    ctx.lineWidth = 1;
    ctx.strokeStyle = th.grid;
    ctx.fillStyle = th.text;
    ctx.textAlign = 'right';
    ctx.textBaseline = 'middle';
    ctx.beginPath();
    this.yAxis.ticks.forEach((v, i) => {
      const y = Math.round(this.toPixel(x0, v).y) + 0.5;
      ctx.moveTo(left, y); ctx.lineTo(right, y);
      ctx.fillText(this.yAxis.labels[i], left - 6, y);
    });
    const ta = timeAxis(x0, x1, p.width, 96);
    this.xTicks = ta.ticks;
    ctx.textAlign = 'center';
    ctx.textBaseline = 'top';
    for (const tk of ta.ticks) {
      const x = Math.round(this.toPixel(tk.t, 0).x) + 0.5;
      ctx.moveTo(x, top); ctx.lineTo(x, bottom);
      ctx.fillText(tk.label, x, bottom + 6);
      if (tk.date) ctx.fillText(tk.date, x, bottom + 21);
    }
    ctx.stroke();
    ctx.strokeStyle = th.axis;
    ctx.beginPath();
    ctx.moveTo(left, top); ctx.lineTo(left, bottom + 0.5); ctx.lineTo(right, bottom + 0.5);
    ctx.stroke();

    // The lines, clipped to the plot area; a highlighted series on top.
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, top, right - left, bottom - top);
    ctx.clip();
    let points = 0, segments = 0, columns = 0;
    const vis = this.visible();
    // A highlighted series that is hidden highlights nothing.
    const hs = vis.find(s => s.id === this.hl);
    // Series with several points a pixel column are rasterised into one
    // pixel buffer (stroking paths that long costs far more than their
    // pixels); the others, and a highlighted series, are stroked.
    const inView = s => Math.min(s.t.length, lowerBound(s.t, x1) + 1) - Math.max(0, lowerBound(s.t, x0) - 1);
    const raster = vis.filter(s => s !== hs && inView(s) > 2 * p.width);
    if (raster.length) {
      const box = { x: left, y: top, w: right - left, h: bottom - top };
      const r = this.rasterize(raster, box, hs ? 46 : 255);
      ctx.drawImage(this.off, 0, 0, r.w, r.h, box.x, box.y, r.w / dpr, r.h / dpr);
      points += r.points; columns += r.columns;
    }
    for (const s of vis) {
      if (s === hs || raster.includes(s)) continue;
      const r = this.drawSeries(ctx, s, hs ? 0.18 : 1, 1.5);
      points += r.points; segments += r.segments;
    }
    if (hs) {
      const r = this.drawSeries(ctx, hs, 1, 2.5);
      points += r.points; segments += r.segments;
    }
    ctx.restore();

    this.stats = {
      renders: this.stats.renders + 1, ms: performance.now() - began, points, segments, columns,
      series: vis.length, rasterized: raster.length,
    };
    this.el.dataset.renders = String(this.stats.renders);
  }

  // rasterize draws dense series into a pixel buffer the size of box (CSS
  // px) and puts it on this.off: per device pixel column, a vertical run
  // from the lowest to the highest point there, joined to the neighbouring
  // columns, one and a half pixels thick. Columns with no point between two
  // points are interpolated; NaN and gaps break the line as drawSeries does.
  rasterize(series, box, alpha) {
    const dpr = this.dpr, W = Math.max(1, Math.round(box.w * dpr)), H = Math.max(1, Math.round(box.h * dpr));
    if (!this.off) this.off = document.createElement('canvas');
    if (this.off.width !== W || this.off.height !== H || !this.img) {
      this.off.width = W; this.off.height = H;
      this.img = this.off.getContext('2d').createImageData(W, H);
      this.buf = new Uint32Array(this.img.data.buffer);
    }
    const buf = this.buf;
    buf.fill(0);
    const p = this.plot, [x0, x1] = this.xRange();
    const kx = p.width * dpr / (x1 - x0), ky = p.height * dpr / (this.yAxis.max - this.yAxis.min);
    const ox = (p.left - box.x) * dpr, oy = (p.top + p.height - box.y) * dpr, y0 = this.yAxis.min;
    const half = Math.max(1, Math.round(0.75 * dpr));
    let points = 0, columns = 0;
    for (const s of series) {
      const hex = parseInt(s.color.slice(1), 16);
      const px = ((alpha << 24) | ((hex & 0xff) << 16) | (hex & 0xff00) | (hex >> 16)) >>> 0;
      const bar = (c, lo, hi) => {
        if (c < 0 || c >= W) return;
        lo = Math.max(0, Math.floor(lo) - half + 1);
        hi = Math.min(H - 1, Math.floor(hi) + half);
        for (let y = lo; y <= hi; y++) buf[y * W + c] = px;
        columns++;
      };
      const T = s.t, V = s.v, gap = s.gap || Infinity;
      const a = Math.max(0, lowerBound(T, x0) - 1), b = Math.min(T.length, lowerBound(T, x1) + 1);
      points += b - a;
      let col = NaN, first = 0, mn = 0, mx = 0, last = 0, prevCol = NaN, prevLast = 0, prevT = -Infinity;
      const flush = () => {
        if (col !== col) return;
        if (prevCol === prevCol) {
          // Join to the previous column, through any empty columns between.
          const n = col - prevCol;
          for (let k = 1; k < n; k++) {
            const ya = prevLast + (first - prevLast) * (k - 1) / n, yb = prevLast + (first - prevLast) * k / n;
            bar(prevCol + k, Math.min(ya, yb), Math.max(ya, yb));
          }
          const yj = prevLast + (first - prevLast) * (n - 1) / n;
          mn = Math.min(mn, yj, prevLast); mx = Math.max(mx, yj, prevLast);
        }
        bar(col, mn, mx);
        prevCol = col; prevLast = last;
      };
      for (let i = a; i < b; i++) {
        const v = V[i], t = T[i];
        if (v !== v || v === Infinity || v === -Infinity || t - prevT > gap) {
          flush(); col = NaN; prevCol = NaN;
          prevT = t;
          if (v !== v || v === Infinity || v === -Infinity) continue;
        }
        prevT = t;
        const c = Math.floor(ox + (t - x0) * kx), y = oy - (v - y0) * ky;
        if (c !== col) { flush(); col = c; first = mn = mx = last = y; }
        else { if (y < mn) mn = y; if (y > mx) mx = y; last = y; }
      }
      flush();
    }
    this.off.getContext('2d').putImageData(this.img, 0, 0);
    return { w: W, h: H, points, columns };
  }

  // drawSeries draws one series: per pixel column, a path through its
  // first, lowest, highest and last points; NaN values and gaps longer than
  // s.gap break the line; a point with no neighbour on either side is a dot,
  // and so is every point when they are far apart.
  drawSeries(ctx, s, alpha, width) {
    const p = this.plot, [x0, x1] = this.xRange();
    const T = s.t, V = s.v, n = T.length;
    const a = Math.max(0, lowerBound(T, x0) - 1), b = Math.min(n, lowerBound(T, x1) + 1);
    const kx = p.width / (x1 - x0), ky = p.height / (this.yAxis.max - this.yAxis.min);
    const y0 = this.yAxis.min, base = p.top + p.height, left = p.left;
    const dense = (b - a) * 8 > p.width; // fewer than one point per 8 px: draw dots too
    const gap = s.gap || Infinity;
    ctx.globalAlpha = alpha;
    ctx.strokeStyle = s.color;
    ctx.fillStyle = s.color;
    ctx.lineWidth = width;
    ctx.lineJoin = dense ? 'bevel' : 'round';
    ctx.beginPath();
    const dots = [];
    let col = NaN, fx = 0, fy = 0, lx = 0, ly = 0, mn = 0, mx = 0, cnt = 0;
    let pen = false, run = 0, runX = 0, runY = 0, segs = 0;
    const flush = () => {
      if (cnt === 0) return;
      if (!pen) { ctx.moveTo(fx, fy); pen = true; } else if (cnt === 1) { ctx.lineTo(fx, fy); segs++; }
      if (cnt > 1) {
        // A column of many points: one vertical stroke over their range,
        // drawn in the direction the values went, then on from there.
        const cx = left + col + 0.5;
        if (mn === mx) { ctx.lineTo(lx, ly); segs++; }
        else if (fy <= ly) { ctx.lineTo(cx, mn); ctx.lineTo(cx, mx); segs += 2; }
        else { ctx.lineTo(cx, mx); ctx.lineTo(cx, mn); segs += 2; }
      }
      cnt = 0;
    };
    const endRun = () => {
      flush();
      if (run === 1) dots.push(runX, runY);
      pen = false; run = 0; col = NaN;
    };
    let prevT = -Infinity;
    for (let i = a; i < b; i++) {
      const v = V[i], t = T[i];
      if (v !== v || v === Infinity || v === -Infinity) { endRun(); prevT = t; continue; }
      if (t - prevT > gap) endRun();
      prevT = t;
      const x = left + (t - x0) * kx, y = base - (v - y0) * ky;
      const c = Math.floor(x - left);
      if (c !== col) {
        flush();
        col = c; fx = lx = x; fy = ly = mn = mx = y; cnt = 1;
      } else {
        lx = x; ly = y; cnt++;
        if (y < mn) mn = y;
        if (y > mx) mx = y;
      }
      if (run === 0) { runX = x; runY = y; }
      run++;
      if (!dense) dots.push(x, y);
    }
    endRun();
    ctx.stroke();
    if (dots.length) {
      ctx.beginPath();
      const r = Math.max(2.5, width + 1);
      for (let i = 0; i < dots.length; i += 2) {
        ctx.moveTo(dots[i] + r, dots[i + 1]);
        ctx.arc(dots[i], dots[i + 1], r, 0, 2 * Math.PI);
      }
      ctx.fill();
    }
    ctx.globalAlpha = 1;
    return { points: Math.max(0, b - a), segments: segs };
  }

  // valuesAt is what the crosshair shows at pointer x: the time of the point
  // nearest to it, and for every visible series the point nearest to that
  // time, or none when the time lies outside the series' points.
  valuesAt(x) {
    const p = this.plot;
    const tc = this.toTime(Math.max(p.left, Math.min(p.left + p.width, x)));
    let best = null, bestD = Infinity;
    const vis = this.visible();
    for (const s of vis) {
      const i = nearest(s, tc);
      if (i >= 0 && Math.abs(s.t[i] - tc) < bestD) { bestD = Math.abs(s.t[i] - tc); best = s.t[i]; }
    }
    if (best === null) return null;
    const [x0, x1] = this.xRange();
    const slack = 4 * (x1 - x0) / p.width; // four pixels of time
    const rows = [];
    for (const s of vis) {
      const i = nearest(s, best);
      if (i < 0) continue;
      const t = s.t[i];
      const before = i > 0 ? t - s.t[i - 1] : 0, after = i < s.t.length - 1 ? s.t[i + 1] - t : 0;
      const reach = Math.max(before, after) / 2 + slack;
      if (Math.abs(t - best) > reach) continue;
      rows.push({ id: s.id, label: s.label, color: s.color, t, v: s.v[i] });
    }
    return { t: best, rows };
  }

  bindEvents() {
    const top = this.top;
    const pos = e => {
      const r = top.getBoundingClientRect();
      return { x: e.clientX - r.left, y: e.clientY - r.top };
    };
    const inPlot = q => q.x >= this.plot.left - 6 && q.x <= this.plot.left + this.plot.width + 6 &&
      q.y >= this.plot.top - 6 && q.y <= this.plot.top + this.plot.height + 6;
    top.addEventListener('pointerdown', e => {
      if (e.button !== 0) return;
      const q = pos(e);
      if (!inPlot(q)) return;
      this.drag = { x0: q.x, x1: q.x };
      top.setPointerCapture(e.pointerId);
      e.preventDefault();
    });
    top.addEventListener('pointermove', e => {
      const q = pos(e);
      if (this.drag) this.drag.x1 = q.x;
      this.hover = inPlot(q) || this.drag ? q : null;
      // One redraw a frame, however many moves the frame saw.
      if (!this.frame) this.frame = requestAnimationFrame(() => { this.frame = 0; this.drawTop(); });
    });
    top.addEventListener('pointerup', e => {
      if (!this.drag) return;
      const d = this.drag;
      this.drag = null;
      const lo = Math.min(d.x0, d.x1), hi = Math.max(d.x0, d.x1);
      if (hi - lo >= 5) {
        const t0 = Math.round(this.toTime(Math.max(lo, this.plot.left)));
        const t1 = Math.round(this.toTime(Math.min(hi, this.plot.left + this.plot.width)));
        if (t1 > t0) {
          this.setView(t0, t1);
          if (this.opts.onZoom) this.opts.onZoom(t0, t1);
          return;
        }
      }
      this.drawTop();
    });
    top.addEventListener('pointercancel', () => { this.drag = null; this.drawTop(); });
    top.addEventListener('pointerleave', () => {
      if (this.drag) return;
      this.hover = null;
      this.drawTop();
    });
    top.addEventListener('dblclick', e => {
      e.preventDefault();
      if (this.opts.onReset) this.opts.onReset();
    });
  }

  // drawTop draws the crosshair, the dots and tooltip, or the selection.
  drawTop() {
    const ctx = this.top.getContext('2d');
    const { w, h, dpr } = this;
    if (!w) return;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, h);
    const th = this.theme(), p = this.plot;
    if (this.drag) {
      const lo = Math.max(p.left, Math.min(this.drag.x0, this.drag.x1));
      const hi = Math.min(p.left + p.width, Math.max(this.drag.x0, this.drag.x1));
      ctx.fillStyle = th.select;
      ctx.fillRect(lo, p.top - 6, hi - lo, p.height + 12);
      this.tip.hidden = true;
      return;
    }
    const at = this.hover && this.series.length ? this.valuesAt(this.hover.x) : null;
    this.hoverAt = at;
    if (!at || at.rows.length === 0) {
      this.tip.hidden = true;
      return;
    }
    const x = Math.round(this.toPixel(at.t, 0).x) + 0.5;
    ctx.strokeStyle = th.cross;
    ctx.lineWidth = 1;
    ctx.setLineDash([4, 3]);
    ctx.beginPath();
    ctx.moveTo(x, p.top - 6); ctx.lineTo(x, p.top + p.height + 6);
    if (this.hover.y >= p.top && this.hover.y <= p.top + p.height) {
      ctx.moveTo(p.left - 6, Math.round(this.hover.y) + 0.5);
      ctx.lineTo(p.left + p.width + 6, Math.round(this.hover.y) + 0.5);
    }
    ctx.stroke();
    ctx.setLineDash([]);
    for (const r of at.rows) {
      if (!Number.isFinite(r.v)) continue;
      const q = this.toPixel(r.t, r.v);
      ctx.beginPath();
      ctx.arc(q.x, q.y, r.id === this.hl ? 5 : 3.5, 0, 2 * Math.PI);
      ctx.fillStyle = r.color;
      ctx.fill();
      ctx.strokeStyle = th.bg;
      ctx.lineWidth = 1.5;
      ctx.stroke();
    }
    this.renderTip(at);
  }

  renderTip(at) {
    const tip = this.tip;
    const rows = at.rows.slice().sort((a, b) => (Number.isFinite(b.v) ? b.v : -Infinity) - (Number.isFinite(a.v) ? a.v : -Infinity));
    tip.replaceChildren();
    const head = document.createElement('div');
    head.className = 'tip-time';
    head.textContent = localDateTime(at.t);
    head.dataset.t = String(at.t);
    tip.append(head);
    const list = document.createElement('div');
    list.className = 'tip-rows' + (rows.length > 24 ? ' tip-cols' : '');
    for (const r of rows) {
      const row = document.createElement('div');
      row.className = 'tip-row' + (r.id === this.hl ? ' tip-hl' : '');
      row.dataset.id = r.id;
      row.dataset.value = String(r.v);
      row.dataset.t = String(r.t);
      const sw = document.createElement('span');
      sw.className = 'swatch';
      sw.style.background = r.color;
      const l = document.createElement('span');
      l.className = 'tip-label';
      l.textContent = r.label;
      const v = document.createElement('span');
      v.className = 'tip-value';
      v.textContent = formatValue(r.v);
      row.append(sw, l, v);
      if (r.t !== at.t) {
        const o = document.createElement('span');
        o.className = 'tip-at';
        o.textContent = '@' + localDateTime(r.t).slice(11);
        row.append(o);
      }
      list.append(row);
    }
    tip.append(list);
    tip.hidden = false;
    // Beside the pointer, flipped to stay inside the chart.
    const tw = tip.offsetWidth, tH = tip.offsetHeight;
    let left = this.hover.x + 16;
    if (left + tw > this.w) left = Math.max(0, this.hover.x - 16 - tw);
    let topY = Math.max(0, Math.min(this.hover.y - tH / 2, this.h - tH));
    tip.style.left = left + 'px';
    tip.style.top = topY + 'px';
  }
}

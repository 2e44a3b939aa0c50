// The waveform seek bar: min/max pairs from /api/waveform drawn on a canvas. Only the pairs in
// view are read each frame, folded into one column per device pixel, and drawn as two paths
// (played, not yet played): a frame costs O(visible pairs + width), never one DOM node a point.
'use strict';

const POLL_MS = 400;        // while the server is still computing a track's pyramid
const REFETCH_MS = 90;      // after the last zoom or scroll step, ask for the view's own level
const MIN_SPAN_S = 0.05;    // the deepest zoom: 50 ms across the canvas

/** One track's waveform on one canvas; `onSeek(seconds)` is called on a click. */
export class WaveformView {
  constructor(canvas, { onSeek = null, label = 'Waveform' } = {}) {
    this.canvas = canvas;
    this.context = canvas.getContext('2d', { alpha: false });
    this.onSeek = onSeek;
    this.track = null;
    this.duration = 0;
    this.from = 0; this.to = 0;           // the view, in seconds of the track
    this.position = -1;                    // the playhead, -1 when not playing
    this.overview = null;                  // the whole track at the canvas' width
    this.detail = null;                    // the view at its own level, once asked
    this.density = 1;                      // pairs asked per device pixel (tests raise it)
    this.dirty = true;
    this.generation = 0;
    this.refetchTimer = 0;
    this.pointers = new Map();
    this.followUntil = 0;
    // The playing track's bar is a slider (PageUp/PageDown, Home/End); the others are pictures.
    canvas.setAttribute('role', onSeek ? 'slider' : 'img');
    canvas.setAttribute('aria-label', label);
    if (onSeek) {
      canvas.setAttribute('aria-valuemin', '0');
      canvas.setAttribute('aria-valuemax', '0');
      canvas.setAttribute('aria-valuenow', '0');
    }
    canvas.tabIndex = onSeek ? 0 : -1;
    this.listen();
    views.add(this);
    schedule();
  }

  /** Shows `track` (an API track item, or null) at full length. */
  setTrack(track) {
    if (this.track && track && this.track.id === track.id) return;
    this.track = track;
    this.duration = track ? Number(track.duration_s) || 0 : 0;
    this.from = 0; this.to = this.duration;
    this.overview = this.detail = null;
    this.generation++;
    if (this.onSeek) this.canvas.setAttribute('aria-valuemax', String(Math.round(this.duration)));
    else this.canvas.setAttribute('aria-label', track ? 'Waveform of ' + (track.title || track.path) : 'No queued track');
    if (track && track.id !== undefined) this.load('overview', 0, this.duration, this.generation);
    this.invalidate();
  }

  /** Replaces the drawn data (the frame-time measurement gives synthetic pairs this way). */
  setData(level, response) { this[level] = response; this.invalidate(); }

  setPosition(seconds) {
    if (seconds === this.position) return;
    this.position = seconds;
    const span = this.to - this.from;
    // A zoomed view follows the playhead unless the listener scrolled a moment ago.
    if (seconds >= 0 && span < this.duration && performance.now() > this.followUntil &&
        (seconds < this.from || seconds > this.to)) this.setView(seconds - span * 0.1, seconds + span * 0.9);
    const now = String(Math.max(0, Math.round(seconds)));
    if (this.onSeek && now !== this.valueNow) { this.valueNow = now; this.canvas.setAttribute('aria-valuenow', now); }
    // While playing this runs every frame: redrawn only when the playhead moves to another pixel.
    const x = span > 0 && seconds >= 0 ? Math.round((seconds - this.from) / span * this.width()) : -1;
    if (this.dirty || x !== this.drawnPlayX) this.invalidate();
  }

  invalidate() { this.dirty = true; schedule(); }

  /** Zooms by `factor` (> 1 zooms in) around the time under `anchorX` (CSS px; default the playhead or centre). */
  zoom(factor, anchorX) {
    if (!this.duration) return;
    const span = this.to - this.from;
    let anchor;
    if (anchorX !== undefined) anchor = this.from + span * anchorX / Math.max(1, this.canvas.clientWidth);
    else anchor = this.position >= this.from && this.position <= this.to ? this.position : (this.from + this.to) / 2;
    const next = Math.min(this.duration, Math.max(MIN_SPAN_S, span / factor));
    const ratio = span > 0 ? (anchor - this.from) / span : 0.5;
    this.setView(anchor - next * ratio, anchor - next * ratio + next);
  }

  scroll(seconds) {
    const span = this.to - this.from;
    this.setView(this.from + seconds, this.from + seconds + span);
  }

  setView(from, to) {
    const span = Math.min(this.duration, to - from);
    from = Math.max(0, Math.min(this.duration - span, from));
    this.from = from; this.to = from + span;
    this.invalidate();
    clearTimeout(this.refetchTimer);
    if (span < this.duration * 0.999 && this.track) {
      const generation = this.generation;
      this.refetchTimer = setTimeout(() => this.load('detail', this.from, this.to, generation), REFETCH_MS);
    } else {
      this.detail = null;
    }
  }

  width() { return Math.max(1, Math.round(this.canvas.clientWidth * (window.devicePixelRatio || 1))); }

  /** Fetches pairs for [from, to); polls while the server is still computing them. */
  async load(level, from, to, generation) {
    const width = Math.min(8192, Math.round(this.width() * this.density));   // the route's most
    const url = '/api/waveform/' + encodeURIComponent(this.track.id) + '?from=' + from.toFixed(3) + '&to=' + to.toFixed(3) +
                '&width=' + width;
    for (;;) {
      let body;
      try {
        const response = await fetch(url);
        if (!response.ok) return;            // 404 unknown, 422 undecodable: the bar stays plain
        body = await response.json();
      } catch { return; }
      if (generation !== this.generation) return;
      body.width = width;
      this[level] = body;
      this.invalidate();
      if (body.complete !== false) return;
      await new Promise(resolve => setTimeout(resolve, POLL_MS));
      if (generation !== this.generation || (level === 'detail' && (this.from !== from || this.to !== to))) return;
    }
  }

  /** The data that covers the view most finely. */
  source() {
    const d = this.detail;
    if (d && d.data && d.from <= this.from + 1e-6 && d.to >= this.to - 1e-6) return d;
    return this.overview;
  }

  draw() {
    this.dirty = false;
    const canvas = this.canvas, ratio = window.devicePixelRatio || 1;
    const w = this.width(), h = Math.max(1, Math.round(canvas.clientHeight * ratio));
    if (canvas.width !== w || canvas.height !== h) { canvas.width = w; canvas.height = h; }
    const g = this.context;
    g.fillStyle = '#f1f4f9';
    g.fillRect(0, 0, w, h);
    const span = this.to - this.from;
    const playX = this.position >= 0 && span > 0 ? (this.position - this.from) / span * w : -1;
    if (playX > 0) { g.fillStyle = '#dbe5f6'; g.fillRect(0, 0, Math.min(w, playX), h); }
    const source = this.source();
    let drawn = 0;
    if (source && source.data && source.data.length >= 2 && span > 0) {
      const pairs = source.data.length >> 1, data = source.data;
      // The answer cuts [from, to) into equal spans: as many as its level has pairs there, at
      // most the width asked; an incomplete answer gives the first of them.
      const spans = source.complete === false && source.width && source.samples_per_pair && source.sample_rate
        ? Math.min(source.width, Math.ceil((source.to - source.from) * source.sample_rate / source.samples_per_pair - 1e-6))
        : pairs;
      const pairSeconds = (source.to - source.from) / Math.max(1, spans);
      const first = Math.max(0, Math.floor((this.from - source.from) / pairSeconds));
      const last = Math.min(pairs, Math.ceil((this.to - source.from) / pairSeconds));
      const lows = columnsLow.length >= w ? columnsLow : (columnsLow = new Float32Array(w * 2));
      const highs = columnsHigh.length >= w ? columnsHigh : (columnsHigh = new Float32Array(w * 2));
      lows.fill(2, 0, w); highs.fill(-2, 0, w);
      const pxPerSecond = w / span;
      for (let i = first; i < last; i++) {
        const t = source.from + i * pairSeconds;
        const x0 = Math.floor((t - this.from) * pxPerSecond);
        const x1 = Math.min(w - 1, Math.floor((t + pairSeconds - this.from) * pxPerSecond));
        const low = data[2 * i] / 32768, high = data[2 * i + 1] / 32768;
        for (let x = Math.max(0, x0); x <= x1; x++) {
          if (low < lows[x]) lows[x] = low;
          if (high > highs[x]) highs[x] = high;
        }
      }
      drawn = last - first;
      const mid = h / 2, scale = h / 2 - 1;
      const split = Math.max(0, Math.min(w, Math.round(playX)));
      for (const [start, end, color] of [[0, split, '#1a56c4'], [split, w, '#6b7f99']]) {
        if (end <= start) continue;
        g.beginPath();
        for (let x = start; x < end; x++) {
          if (highs[x] < lows[x]) continue;
          g.moveTo(x + 0.5, mid - highs[x] * scale - 0.5);
          g.lineTo(x + 0.5, mid - lows[x] * scale + 0.5);
        }
        g.strokeStyle = color;
        g.lineWidth = 1;
        g.stroke();
      }
    } else {
      g.fillStyle = '#c7d0dc';
      g.fillRect(0, h / 2 - 1, w, 2);
    }
    if (playX >= 0 && playX <= w) { g.fillStyle = '#0d3a8a'; g.fillRect(Math.round(playX) - 1, 0, 2, h); }
    this.drawnPlayX = playX >= 0 ? Math.round(playX) : -1;
    this.visiblePairs = drawn;
  }

  listen() {
    const canvas = this.canvas;
    canvas.addEventListener('wheel', event => {
      event.preventDefault();
      this.followUntil = performance.now() + 3000;
      if (event.ctrlKey || !event.shiftKey && Math.abs(event.deltaY) >= Math.abs(event.deltaX)) {
        this.zoom(Math.exp(-event.deltaY * (event.ctrlKey ? 0.01 : 0.002)), event.offsetX);
      } else {
        this.scroll((event.deltaX || event.deltaY) / Math.max(1, canvas.clientWidth) * (this.to - this.from));
      }
    }, { passive: false });
    canvas.addEventListener('pointerdown', event => {
      canvas.setPointerCapture(event.pointerId);
      this.pointers.set(event.pointerId, { x: event.offsetX, startX: event.offsetX, moved: false });
    });
    canvas.addEventListener('pointermove', event => {
      const pointer = this.pointers.get(event.pointerId);
      if (!pointer) return;
      if (this.pointers.size === 2) {           // pinch: the distance between the two pointers
        const [a, b] = [...this.pointers.values()];
        const before = Math.abs(a.x - b.x);
        pointer.x = event.offsetX;
        const after = Math.abs(a.x - b.x);
        if (before > 4 && after > 4) this.zoom(after / before, (a.x + b.x) / 2);
        a.moved = b.moved = true;
      } else {
        const dx = event.offsetX - pointer.x;
        pointer.x = event.offsetX;
        if (Math.abs(event.offsetX - pointer.startX) > 4) pointer.moved = true;
        if (pointer.moved) this.scroll(-dx / Math.max(1, canvas.clientWidth) * (this.to - this.from));
      }
      this.followUntil = performance.now() + 3000;
    });
    const release = event => {
      const pointer = this.pointers.get(event.pointerId);
      this.pointers.delete(event.pointerId);
      if (event.type === 'pointerup' && pointer && !pointer.moved && this.onSeek && this.duration) {
        this.onSeek(this.from + (this.to - this.from) * event.offsetX / Math.max(1, canvas.clientWidth));
      }
    };
    canvas.addEventListener('pointerup', release);
    canvas.addEventListener('pointercancel', release);
    canvas.addEventListener('keydown', event => {
      if (!this.onSeek || !this.duration) return;
      const step = event.key === 'Home' ? -Infinity : event.key === 'End' ? Infinity :
                   event.key === 'PageDown' ? -30 : event.key === 'PageUp' ? 30 : 0;
      if (step) { event.preventDefault(); event.stopPropagation();
                  this.onSeek(Math.max(0, Math.min(this.duration - 0.1, Math.max(0, this.position) + step))); }
    });
  }

  destroy() { views.delete(this); clearTimeout(this.refetchTimer); this.generation++; }
}

// One requestAnimationFrame loop draws every view that changed.
const views = new Set();
let columnsLow = new Float32Array(0), columnsHigh = new Float32Array(0);
let frameRequested = false;
function schedule() {
  if (frameRequested) return;
  frameRequested = true;
  requestAnimationFrame(() => {
    frameRequested = false;
    for (const view of views) if (view.dirty) view.draw();
  });
}

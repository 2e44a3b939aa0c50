// Gapless playback of a queue through Media Source Extensions. Every track is appended to one
// SourceBuffer: fMP4 fragments of streamd's HLS renditions (AAC, FLAC, Opus) or the MP3/ADTS
// file's own frames (Chromium's audio/mpeg and audio/aac byte streams). Each track's
// timestampOffset puts its first decoded sample (the encoder's delay included) where the
// previous track ended, less the delay, and appendWindowStart/End cut the delay and padding, so
// the element plays the album as one stream. A queue holding a track MSE cannot carry (WAV,
// AIFF, Vorbis, ALAC, HE-AAC) plays wholly through Web Audio instead (`PCMSession`): streamd
// decodes each track (`/media/<path>?format=wav&rate=<the context's rate>`, the decoder's gapless
// output resampled by libsoxr), the page reads the response a block at a time and schedules
// AudioBuffers back to back on the AudioContext's clock, a bounded time ahead of the playhead.
'use strict';

const AHEAD_S = 60;           // append at most this far past the playhead (bounded memory)
const BEHIND_S = 30;          // and keep this much played audio for short seeks back
const FIRST_CHUNK = 64 << 10; // an MP3/ADTS file is fetched in ranges: a small first one starts sooner
const CHUNK = 512 << 10;
// Samples a decoder adds before the encoder's delay: mpg123 and ffmpeg's MP3 decoder (Chromium's)
// start 529 samples late (the synthesis filterbank's delay), which the LAME tag does not count.
const DECODER_DELAY = {};
const PREROLL_NUDGE_S = 2e-6;
const HLS_ORIGIN_S = 1;        // streamd's fMP4 fragments present a track's first sample at 1 s (HLSTrackPlan.timelineOrigin)

const PCM_AHEAD_S = 20;       // Web Audio: decoded audio scheduled past the playhead (bounded memory)
const PCM_FIRST_S = 0.1;      // the first block of a session is short, the first sound comes sooner,
const PCM_BLOCK_S = 1;        // and the blocks double from there up to this
const PCM_LEAD_S = 0.04;      // a session's first block starts this far after "now"
// A block starts 1/1000 of a frame before its frame: Chromium rounds a start time up to the next
// frame and plays a buffer started between frames interpolated, so a start time that lands an ulp
// after its frame would drop the block's first sample; 0.001 frame early changes none audibly.
const PCM_EARLY_FRAMES = 1e-3;

/** True when MSE cannot carry the track here (by its catalog codec and container): the queue then plays through Web Audio. */
export function needsWebAudio(track) {
  const codec = (track.codec || '').toLowerCase(), container = (track.container || '').toLowerCase();
  if (codec === 'mp3') return container !== 'mp3';
  if (container === 'adts') return codec !== 'aac';
  return !(['aac', 'flac', 'opus'].includes(codec) && ['mp4', 'flac', 'ogg'].includes(container));
}

/** The catalog's gapless values in the track item (first play without /api/index), or null when the item has none. */
function itemIndex(track) {
  if (typeof track.encoder_delay !== 'number' || !(track.total_samples > 0) || !(track.sample_rate > 0)) return null;
  const frames = track.total_samples - track.encoder_delay - (track.encoder_padding || 0);
  return { encoder_delay: track.encoder_delay, sample_rate: track.sample_rate, duration_s: frames / track.sample_rate,
           first_frame_offset: track.first_frame_offset, audio_end_offset: track.size };
}

/** What a track needs to be appended: MIME type, parser mode, delay and length in samples, and its byte chunks. */
async function describe(track) {
  const encoded = track.url.startsWith('/media/') ? track.url.slice('/media/'.length) : encodeURIComponent(track.path);
  const known = itemIndex(track);
  const index = known ? Promise.resolve(known)
                      : fetch('/api/index/' + encoded + '?t=0').then(r => r.ok ? r.json() : null).catch(() => null);
  const codec = (track.codec || '').toLowerCase(), container = (track.container || '').toLowerCase();
  const raw = codec === 'mp3' && container === 'mp3' ? 'audio/mpeg' : container === 'adts' ? 'audio/aac' : null;
  let mime, chunks, mode;
  if (raw) {
    const info = await index;
    if (!info) return { mse: false };
    mime = raw; mode = 'sequence';
    chunks = [];
    const start = info.first_frame_offset || 0, end = info.audio_end_offset || track.size;
    for (let at = start, size = FIRST_CHUNK; at < end; at += size, size = CHUNK) {
      chunks.push({ url: track.url, from: at, to: Math.min(end, at + size) - 1 });
    }
    return finish(info);
  }
  const base = '/hls/' + encoded + '/';
  const [master, media] = await Promise.all([text(base + 'master.m3u8'), text(base + 'index.m3u8')]);
  if (!master || !media || !/EXT-X-MAP/.test(media)) return { mse: false };
  const codecs = (master.match(/CODECS="([^"]+)"/) || [])[1];
  mime = 'audio/mp4; codecs="' + codecs + '"'; mode = 'segments';
  const init = media.match(/#EXT-X-MAP:URI="([^"]+)"/)[1];
  chunks = [{ url: base + init }];
  let t = 0;
  for (const [, seconds, uri] of media.matchAll(/#EXTINF:([\d.]+),[^\n]*\n([^#\n][^\n]*)/g)) {
    chunks.push({ url: base + uri, t }); t += Number(seconds);
  }
  // AAC goes in as ADTS (audio/aac), re-framed from the fMP4 fragments here: Chromium trims an
  // MP4 AAC track's last frame at appendWindowEnd no further than the whole frame, so the
  // encoder's padding played at each join; its ADTS parser trims to the sample, as for MP3.
  // HE-AAC (mp4a.40.5, .29) is left to Web Audio: ADTS cannot say its SBR layer's delay and
  // Chromium trims MP4 AAC only to whole frames, so either way its padding played at each join.
  if (/^mp4a\.40\.(5|29)$/.test(codecs || '')) return { mse: false };
  let remux = null;
  if (/^mp4a\.40\.[1-4]$/.test(codecs || '') && window.MediaSource && MediaSource.isTypeSupported('audio/aac')) {
    remux = 'adts'; mime = 'audio/aac'; mode = 'sequence';
  }
  const described = finish(await index);
  if (described.mse) described.remux = remux;
  return described;

  function finish(info) {
    if (!info || !window.MediaSource || !MediaSource.isTypeSupported(mime)) return { mse: false };
    const rate = info.sample_rate || track.sample_rate;
    // Opus: the browser drops the pre-skip itself (dOps and the init's edit list).
    const delay = codec === 'opus' ? 0 : (info.encoder_delay || 0) + (DECODER_DELAY[codec] || 0);
    return { mse: true, mime, mode, chunks, rate, delay, frames: Math.round((info.duration_s || track.duration_s) * rate) };
  }
}

async function text(url) {
  try { const r = await fetch(url); return r.ok ? await r.text() : null; } catch { return null; }
}

async function bytes(chunk, signal) {
  const headers = chunk.from !== undefined ? { Range: 'bytes=' + chunk.from + '-' + chunk.to } : {};
  const response = await fetch(chunk.url, { headers, signal });
  if (!response.ok) throw new Error(chunk.url + ': ' + response.status);
  return response.arrayBuffer();
}

/** One MediaSource: the tracks appended back to back from a queue position. */
class Session {
  constructor(player, index, offset) {
    this.player = player; this.audio = player.audio;
    this.entries = [];            // {index, track, start, seconds}
    this.cursor = null;           // the entry being appended and its next chunk
    this.alive = true;
    this.ops = Promise.resolve();
    this.abort = new AbortController();
    this.startIndex = index; this.startOffset = offset;
    this.ms = new MediaSource();
    this.url = URL.createObjectURL(this.ms);
    this.opened = new Promise(resolve => this.ms.addEventListener('sourceopen', resolve, { once: true }));
    this.audio.src = this.url;
    this.pump().catch(error => { if (this.alive) console.warn('gapless loader:', error); });
  }

  close() {
    this.alive = false; this.abort.abort();
    URL.revokeObjectURL(this.url);
  }

  entryAt(time) {
    let found = null;
    for (const entry of this.entries) if (time >= entry.start - 1e-6) found = entry;
    return found;
  }

  now() { return this.audio.currentTime; }

  /** Runs `work` on the SourceBuffer when its previous operation has finished. */
  run(work) {
    const op = this.ops.then(() => new Promise((resolve, reject) => {
      if (!this.alive) return resolve();
      const sb = this.sb;
      const done = () => { sb.removeEventListener('updateend', done); sb.removeEventListener('error', fail); resolve(); };
      const fail = () => { sb.removeEventListener('updateend', done); sb.removeEventListener('error', fail); reject(new Error('SourceBuffer error')); };
      try {
        if (work(sb) === false) return resolve();
      } catch (error) { return reject(error); }
      if (sb.updating) { sb.addEventListener('updateend', done); sb.addEventListener('error', fail); } else resolve();
    }));
    this.ops = op.catch(() => {});
    return op;
  }

  bufferedEnd() {
    const b = this.sb ? this.sb.buffered : null;
    return b && b.length ? b.end(b.length - 1) : 0;
  }

  async pump() {
    await this.opened;
    while (this.alive) {
      if (!this.cursor && !(await this.openNext())) break;
      if (!this.alive) return;
      const chunk = this.cursor.desc.chunks[this.cursor.next];
      if (!chunk) { this.cursor = null; continue; }
      if (this.bufferedEnd() - this.audio.currentTime > AHEAD_S) { await this.progress(); continue; }
      this.cursor.next++;
      let data = await bytes(chunk, this.abort.signal);
      if (!this.alive) return;
      if (this.cursor.desc.remux === 'adts') {
        if (chunk.t === undefined) {        // the init segment: only its configuration is kept
          this.cursor.adts = adtsConfig(data);
          if (!this.cursor.adts) throw new Error('AAC configuration ADTS cannot carry');
          continue;
        }
        data = adtsFrames(data, this.cursor.adts);
      }
      await this.appendWithRoom(data);
      if (this.pendingSeek !== undefined && this.audio.readyState >= 1 && this.bufferedEnd() > this.pendingSeek) {
        this.audio.currentTime = this.pendingSeek;
        this.pendingSeek = undefined;
      }
    }
    if (!this.alive) return;
    await this.run(() => { if (this.ms.readyState === 'open') this.ms.endOfStream(); return false; });
  }

  progress() {
    return new Promise(resolve => {
      const done = () => { clearTimeout(timer); this.audio.removeEventListener('timeupdate', done); resolve(); };
      const timer = setTimeout(done, 1000);
      this.audio.addEventListener('timeupdate', done);
    });
  }

  async appendWithRoom(data) {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.run(sb => sb.appendBuffer(data));
        break;
      } catch (error) {
        if (error.name !== 'QuotaExceededError' || attempt > 20 || !this.alive) throw error;
        await this.trimBehind(5);
        await this.progress();
      }
    }
    const b = this.sb.buffered;
    if (b.length && this.audio.currentTime - b.start(0) > BEHIND_S * 2) await this.trimBehind(BEHIND_S);
  }

  trimBehind(keep) {
    const end = this.audio.currentTime - keep;
    return this.run(sb => { if (end > 0 && sb.buffered.length && sb.buffered.start(0) < end) sb.remove(0, end); else return false; });
  }

  /** Prepares the next queue position (or the first) for appending; false when the session ends there. */
  async openNext() {
    const last = this.entries[this.entries.length - 1];
    const index = last ? this.player.following(last.index) : this.startIndex;
    if (index === null || index === undefined) return false;
    const track = this.player.queue[index];
    const desc = await this.player.describe(track);
    if (!this.alive) return false;
    if (!desc.mse) { this.fallbackNext = index; return false; }
    const start = last ? last.start + last.seconds : 0;
    const seconds = desc.frames / desc.rate;
    const offset = last ? 0 : this.startOffset;
    // Start mid-track (a resumed position, a far seek): from the chunk that holds the offset.
    let next = 0;
    if (offset > 0 && desc.chunks.length > 1 && desc.chunks[1].t !== undefined) {
      next = 1;
      while (next + 1 < desc.chunks.length && desc.chunks[next + 1].t <= offset) next++;
    } else if (offset > 0) {
      const fraction = offset / seconds;
      while (next + 1 < desc.chunks.length && (next + 1) / desc.chunks.length <= fraction) next++;
      if (next > 0) { this.player.note('resumed an MP3/ADTS track from its first chunk'); next = 0; }
    }
    const entry = { index, track, start, seconds };
    this.entries.push(entry);
    await this.run(() => {
      if (!this.sb) {
        this.sb = this.ms.addSourceBuffer(desc.mime);
      } else if (this.mime !== desc.mime) {
        this.sb.changeType(desc.mime);
      }
      this.mime = desc.mime;
      if (this.sb.mode !== desc.mode) this.sb.mode = desc.mode;
      // 2 µs early: a first kept frame that starts exactly at appendWindowStart is not "partially
      // trimmed", so Chromium would not keep the frame before it as the decoder's preroll, and an
      // AAC decoder started cold gets its first frame wrong. 2 µs is a tenth of a sample.
      // In sequence mode (MP3, ADTS) the first appended frame lands at timestampOffset: a
      // mid-track start begins at its segment's time.
      const first = desc.mode === 'sequence' && next > 0 && desc.chunks[next].t !== undefined ? desc.chunks[next].t : 0;
      // fMP4 (segments mode) carries its own times, which start at the HLS variants' shared origin.
      const origin = desc.mode === 'segments' ? HLS_ORIGIN_S : 0;
      this.sb.timestampOffset = start + first - origin - desc.delay / desc.rate - (desc.delay ? PREROLL_NUDGE_S : 0);
      this.sb.appendWindowEnd = Infinity;
      this.sb.appendWindowStart = start;
      this.sb.appendWindowEnd = start + seconds;
      return false;
    });
    // A start mid-track seeks once the first media segment is in (the element has metadata then).
    if (!last && offset > 0) this.pendingSeek = start + offset;
    // A mid-track start still needs the init segment first.
    this.cursor = { entry, desc, next: 0, skipTo: next };
    if (next > 1) { this.cursor.desc = { ...desc, chunks: [desc.chunks[0], ...desc.chunks.slice(next)] }; }
    return true;
  }

  /** The queue changed after the playing track: forget what was appended beyond it. */
  truncateAfter(entry) {
    const k = this.entries.indexOf(entry);
    if (k < 0) return;
    const dropped = this.entries.splice(k + 1);
    if (!dropped.length && !this.ended()) return;
    if (this.cursor && dropped.includes(this.cursor.entry)) {
      // The loader is mid-way through a dropped track: start a new session at the playhead instead.
      this.player.restartAtPlayhead(); return;
    }
    const end = entry.start + entry.seconds;
    this.run(sb => { sb.remove(end, Infinity); });
    if (!this.cursor && this.ended()) { this.player.restartAtPlayhead(); }
  }

  ended() { return this.ms.readyState === 'ended'; }
}

/** The RIFF/WAVE header of streamd's `format=wav` answer: {channels, rate, float, bytes, dataAt}, null until whole, or an error. */
function waveHeader(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length < 12) return null;
  if (view.getUint32(0) !== 0x52494646 || view.getUint32(8) !== 0x57415645) throw new Error('not a WAV answer');
  let format = null;
  for (let at = 12; at + 8 <= bytes.length;) {
    const id = view.getUint32(at), size = view.getUint32(at + 4, true);
    if (id === 0x64617461) {              // 'data': the samples follow to the end
      if (!format) throw new Error('WAV data before its format');
      return { ...format, dataAt: at + 8 };
    }
    if (at + 8 + size > bytes.length) return null;
    if (id === 0x666d7420 && size >= 16) { // 'fmt '
      const tag = view.getUint16(at + 8, true), channels = view.getUint16(at + 10, true);
      const rate = view.getUint32(at + 12, true), bits = view.getUint16(at + 22, true);
      if (!((tag === 3 && bits === 32) || (tag === 1 && bits === 16)) || channels < 1 || channels > 8 || rate < 1) {
        throw new Error('WAV format ' + tag + '/' + bits + ' bits is not float 32 or PCM 16');
      }
      format = { channels, rate, float: tag === 3, bytes: bits / 8 };
    }
    at += 8 + size + (size & 1);
  }
  return null;
}

/** Web Audio playback of the queue from a position: each track's decoded PCM is read from streamd
 *  a block at a time and scheduled on the context's clock right after the previous block. */
class PCMSession {
  constructor(player, index, offset, output) {
    this.player = player; this.context = output.context; this.gain = output.gain;
    this.entries = [];            // {index, track, start (context seconds of the track's 0), seconds, end}
    this.sources = new Set();
    this.alive = true; this.finished = false; this.loaded = false;
    this.abort = new AbortController();
    this.frame = null;            // the context frame the next block starts at
    this.pump(index, offset).catch(error => {
      if (!this.alive) return;
      console.warn('Web Audio loader:', error);
      this.loaded = true;
      if (!this.entries.length) player.pcmFailed(index, offset);
    });
  }

  close() {
    this.alive = false; this.abort.abort();
    // A context of its own (another rate than the page's) renders nothing more: it sleeps.
    if (this.context !== this.player.context) this.context.suspend().catch(() => {});
    for (const node of this.sources) { node.onended = null; try { node.stop(); } catch { } node.disconnect(); }
    this.sources.clear();
  }

  entryAt(time) {
    let found = null;
    for (const entry of this.entries) if (time >= entry.start + (entry.from || 0) - 1e-6) found = entry;
    return found;
  }

  now() { return this.context.currentTime; }

  /** Seconds of audio scheduled past the playhead. */
  ahead() { return this.frame === null ? 0 : this.frame / this.context.sampleRate - this.context.currentTime; }

  async pump(index, offset) {
    while (this.alive && index !== null && index !== undefined) {
      const track = this.player.queue[index];
      if (!track) break;
      try {
        // A restart at a track's very end (a queue edited after it ended) goes on with the next.
        if (!(offset > 0 && track.duration_s && offset >= track.duration_s - 0.005)) await this.load(index, track, offset);
      } catch (error) {
        // The first track failing is the session's failure (the element may play it); a later
        // one is skipped, with a gap, as a player skips a file it cannot read.
        if (!this.alive || !this.entries.length) throw error;
        this.player.note('Web Audio skipped ' + track.path + ': ' + error.message);
      }
      offset = 0;
      index = this.player.following(index);
    }
    this.loaded = true;
    if (this.alive && !this.sources.size) this.finish();
  }

  async load(index, track, offset) {
    const rate = this.context.sampleRate;
    const url = track.url + '?format=wav&rate=' + rate + (offset > 0 ? '&offset=' + offset.toFixed(4) : '');
    let response;
    for (let attempt = 0; ; attempt++) {
      response = await fetch(url, { signal: this.abort.signal });
      // 503: every encode slot is busy; decoding is fast, so a slot frees soon.
      if (response.status !== 503 || attempt >= 20) break;
      await new Promise(resolve => setTimeout(resolve, 250));
    }
    if (!response.ok) throw new Error(url + ': ' + response.status);
    const reader = response.body.getReader();
    let pending = new Uint8Array(0), format = null, entry = null, written = 0;
    let block = (this.frame === null ? PCM_FIRST_S : PCM_BLOCK_S);
    const flush = (frames) => {
      const bytesPerFrame = format.channels * format.bytes;
      const data = pending.subarray(0, frames * bytesPerFrame);
      const buffer = this.context.createBuffer(format.channels, frames, format.rate);
      const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
      const channels = [];
      for (let c = 0; c < format.channels; c++) channels.push(new Float32Array(frames));
      for (let i = 0, at = 0; i < frames; i++) {
        for (let c = 0; c < format.channels; c++, at += format.bytes) {
          channels[c][i] = format.float ? view.getFloat32(at, true) : view.getInt16(at, true) / 32768;
        }
      }
      channels.forEach((samples, c) => buffer.copyToChannel(samples, c));
      pending = pending.slice(frames * bytesPerFrame);
      this.schedule(buffer, entry);
      written += frames;
    };
    try {
      while (this.alive) {
        // Bounded: no more than PCM_AHEAD_S is decoded ahead of the playhead (nor held here).
        while (this.alive && this.ahead() > PCM_AHEAD_S) await new Promise(resolve => setTimeout(resolve, 250));
        const { done, value } = await reader.read();
        if (!this.alive) return;
        if (value && value.length) {
          const joined = new Uint8Array(pending.length + value.length);
          joined.set(pending); joined.set(value, pending.length); pending = joined;
        }
        if (!format) {
          const header = waveHeader(pending);
          if (!header) { if (done) throw new Error(url + ': no WAV header'); continue; }
          if (header.rate !== rate) throw new Error(url + ': answered at ' + header.rate + ' Hz, not ' + rate);
          format = header; pending = pending.slice(header.dataAt);
          entry = { index, track, start: 0, from: offset, seconds: (track.duration_s || 0) };
        }
        const bytesPerFrame = format.channels * format.bytes;
        while (pending.length >= Math.round(block * rate) * bytesPerFrame) {
          flush(Math.round(block * rate)); block = Math.min(PCM_BLOCK_S, block * 2);
        }
        if (done) {
          const rest = Math.floor(pending.length / bytesPerFrame);
          if (rest > 0) flush(rest);
          break;
        }
      }
    } finally {
      reader.cancel().catch(() => {});
    }
    if (entry) entry.seconds = offset + written / rate;
  }

  schedule(buffer, entry) {
    const context = this.context, rate = context.sampleRate;
    const soonest = Math.ceil((context.currentTime + (this.frame === null ? PCM_LEAD_S : 0.02)) * rate);
    if (this.frame === null || this.frame < soonest) {
      // The first block, or the loader fell behind the playhead (an underrun: a gap is unavoidable).
      if (this.frame !== null) this.player.note('Web Audio underrun at ' + context.currentTime.toFixed(3) + ' s');
      this.frame = soonest;
    }
    if (entry.blocks === undefined) {
      entry.blocks = 0; entry.start = this.frame / rate - entry.from;
      this.entries.push(entry);
    }
    entry.blocks++;
    const node = context.createBufferSource();
    node.buffer = buffer;
    node.connect(this.gain);
    node.start((this.frame - PCM_EARLY_FRAMES) / rate);
    this.frame += buffer.length;
    entry.end = this.frame / rate;
    this.sources.add(node);
    node.onended = () => {
      this.sources.delete(node); node.disconnect();
      if (this.alive && this.loaded && !this.sources.size) this.finish();
    };
  }

  finish() {
    if (this.finished) return;
    this.finished = true;
    this.player.pcmEnded(this);
  }

  /** The queue changed after the playing track: what was scheduled past it is made again (after the
   *  end, nothing is scheduled: play then goes on with what follows). */
  truncateAfter() { if (!this.finished) this.player.restartAtPlayhead(); }
  ended() { return this.finished; }
}

/** The queue and its playback: `play(queue, index)`, next/previous, seek, shuffle, repeat, ReplayGain. */
export class GaplessPlayer extends EventTarget {
  constructor(audio) {
    super();
    this.audio = audio;
    this.queue = [];
    this.index = -1;
    this.repeat = 'off';          // off, all, one
    this.shuffled = null;         // the queue's order before shuffling
    this.replayGain = 'album';
    this.session = null;
    this.fallback = false;        // the element plays a /media file directly
    this.described = new Map();
    this.contextOptions = { latencyHint: 'playback' };
    this.notes = [];
    audio.addEventListener('ended', () => this.onEnded());
    audio.addEventListener('play', () => this.emit('state'));
    audio.addEventListener('pause', () => this.emit('state'));
    audio.addEventListener('timeupdate', () => this.tick());
    const frame = () => { if (!this.paused) this.tick(); requestAnimationFrame(frame); };
    requestAnimationFrame(frame);
  }

  emit(name) { this.dispatchEvent(new Event(name)); }
  note(text) { this.notes.push(text); }

  describe(track) {
    const key = track.id + '|' + track.etag;
    if (!this.described.has(key)) {
      const promise = describe(track);
      this.described.set(key, promise);
      promise.then(d => { if (!d.mse) this.described.delete(key); }, () => this.described.delete(key));
      if (this.described.size > 64) this.described.delete(this.described.keys().next().value);
    }
    return this.described.get(key);
  }

  /** The Web Audio graph: element → gain (ReplayGain) → output. Made on the first play (a user gesture). */
  graph() {
    if (!this.context) {
      this.context = new AudioContext(this.contextOptions);
      this.source = this.context.createMediaElementSource(this.audio);
      this.gain = this.context.createGain();
      this.source.connect(this.gain).connect(this.context.destination);
      this.applyGain();
    }
    // A paused Web Audio queue is a suspended context: it resumes when that queue (or another) plays,
    // else its scheduled blocks would sound until the next queue replaced them.
    if (this.context.state === 'suspended' && !(this.webAudio && this.pcmPaused)) this.context.resume().catch(() => {});
    return this.context;
  }

  get track() { return this.queue[this.index] || null; }

  /** True when the queue plays through Web Audio (a PCMSession) rather than the element. */
  get webAudio() { return this.session instanceof PCMSession; }
  get paused() { return this.webAudio ? this.pcmPaused : this.audio.paused; }
  get ended() { return this.webAudio ? this.session.finished : this.audio.ended; }

  pause() {
    if (!this.webAudio) { this.audio.pause(); return; }
    if (this.pcmPaused) return;
    this.pcmPaused = true;
    this.session.context.suspend().catch(() => {});
    this.emit('state');
  }

  resume() {
    if (!this.webAudio) { this.audio.play().catch(() => {}); return; }
    if (this.session.finished) {
      const next = this.following(this.index);
      this.start(next !== null && next !== this.index ? next : this.index, 0);
      return;
    }
    this.pcmPaused = false;
    this.session.context.resume().catch(() => {});
    this.emit('state');
  }

  /** Seconds into the playing track. */
  get position() {
    if (this.cued) return this.pendingOffset || 0;
    if (!this.session) return this.audio.currentTime || 0;
    const entry = this.session.entries.find(e => e.index === this.index);
    return entry ? Math.max(0, this.session.now() - entry.start) : this.pendingOffset || 0;
  }

  following(index) {
    if (this.repeat === 'one') return index;
    if (index + 1 < this.queue.length) return index + 1;
    return this.repeat === 'all' && this.queue.length ? 0 : null;
  }

  play(queue, index, offset = 0) {
    if (queue) { this.queue = queue.slice(); this.shuffled = null; }
    if (index < 0 || index >= this.queue.length) return;
    this.graph();
    this.start(index, offset);
    this.emit('queue');
  }

  /** Loads `index` at `offset` seconds without playing (a restored position). */
  cue(queue, index, offset) {
    this.queue = queue.slice(); this.index = index; this.pendingOffset = offset; this.cued = true;
    this.emit('queue'); this.emit('track');
  }

  async start(index, offset, autoplay = true) {
    if (this.session) { this.session.close(); this.session = null; }
    this.cued = false;
    this.index = index; this.pendingOffset = offset;
    this.applyGain();
    this.emit('track');
    const track = this.queue[index];
    const token = this.startToken = {};
    // One path for the whole queue: Web Audio when any of its tracks needs it (a handover between
    // the element and Web Audio could not be sample-exact), else MSE.
    let web = this.queue.some(needsWebAudio), desc = null;
    if (!web) {
      desc = await this.describe(track);
      if (token !== this.startToken) return;
      web = !desc.mse;
    }
    if (web && window.AudioContext && this.context) {
      this.fallback = false;
      this.audio.pause();
      this.pcmPaused = !autoplay;
      const output = this.pcmOutput(track.sample_rate);
      if (autoplay) output.context.resume().catch(() => {}); else output.context.suspend().catch(() => {});
      this.session = new PCMSession(this, index, offset, output);
      this.applyGain();
      this.emit('state');
      return;
    }
    if (this.context && this.context.state === 'suspended') this.context.resume().catch(() => {});
    if (desc && desc.mse) {
      this.fallback = false;
      this.session = new Session(this, index, offset);
      if (autoplay) this.audio.play().catch(() => {});
    } else {
      this.playElement(index, offset, autoplay);
    }
  }

  /** Where a Web Audio session plays: the page's context when it runs at the tracks' rate, else a
   *  context of that rate (kept per rate), whose output the browser resamples to the device as one
   *  stream; streamd resampling each track alone would leave a step at every join. */
  pcmOutput(rate) {
    const main = this.context;
    if (main.sampleRate === rate || !(rate >= 8000 && rate <= 384000)) return { context: main, gain: this.gain };
    if (!this.pcmOutputs) this.pcmOutputs = new Map();
    let output = this.pcmOutputs.get(rate);
    if (!output) {
      try {
        const context = new AudioContext({ latencyHint: 'playback', sampleRate: rate });
        const gain = context.createGain();
        gain.connect(context.destination);
        output = { context, gain };
      } catch { return { context: main, gain: this.gain }; }
      this.pcmOutputs.set(rate, output);
    }
    return output;
  }

  /** The track from /media in the element, with a gap at its joins: no MSE and no Web Audio path for it. */
  playElement(index, offset, autoplay = true) {
    this.fallback = true;
    this.audio.src = this.queue[index].url;
    if (offset > 0) this.audio.addEventListener('loadedmetadata', () => { this.audio.currentTime = offset; }, { once: true });
    if (autoplay) this.audio.play().catch(() => {});
  }

  /** A Web Audio session could not fetch its first track (transcoding off, an error): the element plays it. */
  pcmFailed(index, offset) {
    if (!this.webAudio) return;
    const playing = !this.pcmPaused;
    this.session.close(); this.session = null;
    if (this.context.state === 'suspended') this.context.resume().catch(() => {});
    this.note('Web Audio failed: the element plays ' + this.queue[index].path);
    this.playElement(index, offset, playing);
  }

  /** The last block of a Web Audio session has played: the queue is over. */
  pcmEnded(session) {
    if (session !== this.session) return;
    this.pcmPaused = true;
    this.emit('time'); this.emit('state');
  }

  restartAtPlayhead() {
    const playing = !this.paused;
    this.start(this.index, this.position, playing);
  }

  tick() {
    if (this.session) {
      const entry = this.session.entryAt(this.session.now());
      if (entry && entry.index !== this.index && !this.audio.seeking) {
        this.index = entry.index;
        this.applyGain();
        this.emit('track');
      }
    }
    this.emit('time');
  }

  onEnded() {
    const session = this.session;
    if (session && session.fallbackNext !== undefined) { this.start(session.fallbackNext, 0); return; }
    if (this.fallback || session) {
      const next = this.following(this.index);
      if (next !== null && (this.fallback || next !== this.index)) { this.start(next, 0); return; }
    }
    this.emit('state');
  }

  toggle() {
    if (this.cued) { this.graph(); this.start(this.index, this.pendingOffset || 0); return; }
    if (!this.track) return;
    this.graph();
    if (this.paused) this.resume(); else this.pause();
  }

  next() { const n = this.index + 1 < this.queue.length ? this.index + 1 : (this.repeat === 'all' ? 0 : null); if (n !== null) this.jump(n); }
  previous() {
    if (this.position > 3) { this.seek(0); return; }
    if (this.index > 0) this.jump(this.index - 1);
  }

  /** Plays queue position `index`: in place when it is already appended, else from a new session. */
  jump(index, offset = 0) {
    this.graph();
    const entry = this.session && this.session.entries.find(e => e.index === index);
    if (entry && this.buffered(entry.start + offset)) {
      this.audio.currentTime = entry.start + offset;
      if (index !== this.index) { this.index = index; this.applyGain(); this.emit('track'); }
      this.audio.play().catch(() => {});
      return;
    }
    this.start(index, offset);
  }

  buffered(time) {
    const b = this.audio.buffered;
    for (let i = 0; i < b.length; i++) if (time >= b.start(i) && time < b.end(i) - 0.05) return true;
    return false;
  }

  /** Seeks within the playing track. */
  seek(seconds) {
    if (!this.track) return;
    if (this.cued) { this.pendingOffset = seconds; this.emit('time'); return; }
    if (this.fallback) { this.audio.currentTime = seconds; return; }
    this.jump(this.index, Math.max(0, seconds));
  }

  setRepeat(mode) { this.repeat = mode; this.queueChanged(); }

  /** Shuffles what follows the playing track; turning it off restores the queue's order. */
  setShuffle(on) {
    if (on && !this.shuffled) {
      this.shuffled = this.queue.slice();
      const rest = this.queue.slice(this.index + 1);
      for (let i = rest.length - 1; i > 0; i--) { const j = Math.floor(Math.random() * (i + 1)); [rest[i], rest[j]] = [rest[j], rest[i]]; }
      this.queue = this.queue.slice(0, this.index + 1).concat(rest);
    } else if (!on && this.shuffled) {
      const current = this.track;
      this.queue = this.shuffled; this.shuffled = null;
      this.index = Math.max(0, this.queue.indexOf(current));
    }
    this.queueChanged();
  }

  /** Queue edits: move `from` to `to`, remove, or insert after the playing track. */
  move(from, to) {
    if (from === to || from < 0 || to < 0 || from >= this.queue.length || to >= this.queue.length) return;
    const current = this.track;
    const [item] = this.queue.splice(from, 1);
    this.queue.splice(to, 0, item);
    this.index = this.queue.indexOf(current);
    this.queueChanged();
  }
  remove(at) {
    if (at < 0 || at >= this.queue.length) return;
    if (at === this.index) { this.queue.splice(at, 1); if (this.queue.length) this.start(Math.min(at, this.queue.length - 1), 0, !this.paused); else { this.stop(); } this.emit('queue'); return; }
    const current = this.track;
    this.queue.splice(at, 1);
    this.index = this.queue.indexOf(current);
    this.queueChanged();
  }
  playNext(tracks) {
    this.queue.splice(this.index + 1, 0, ...tracks);
    if (this.index < 0) this.index = 0;
    this.queueChanged();
  }
  append(tracks) { this.queue.push(...tracks); this.queueChanged(); }

  stop() {
    if (this.session) { this.session.close(); this.session = null; }
    this.pcmPaused = true;
    this.audio.removeAttribute('src'); this.audio.load();
    this.index = -1; this.emit('track');
  }

  queueChanged() {
    // Entries appended for queue positions that moved are re-made from the playing track on.
    if (this.session) {
      for (const entry of this.session.entries) entry.index = this.queue.indexOf(entry.track);
      const current = this.session.entries.find(e => e.index === this.index);
      if (current) {
        const k = this.session.entries.indexOf(current);
        let expected = current.index, stale = false;
        for (const entry of this.session.entries.slice(k + 1)) {
          expected = this.following(expected);
          if (expected === null || entry.index !== expected) { stale = true; break; }
        }
        if (stale || this.session.ended()) this.session.truncateAfter(current);
      }
    }
    this.emit('queue');
  }

  /** ReplayGain as a gain: the album's or the track's value (dB), held under 1/peak so it does not clip. */
  applyGain() {
    if (!this.gain) return;
    const track = this.track;
    let gain = 1;
    if (track && this.replayGain !== 'off') {
      const album = this.replayGain === 'album' && track.rg_album_gain !== null && track.rg_album_gain !== undefined;
      const db = album ? track.rg_album_gain : track.rg_track_gain;
      const peak = album ? track.rg_album_peak : track.rg_track_peak;
      if (typeof db === 'number') gain = Math.pow(10, db / 20);
      if (typeof peak === 'number' && peak > 0) gain = Math.min(gain, 1 / peak);
    }
    this.currentGain = gain;
    this.gain.gain.setValueAtTime(gain, this.context.currentTime);
    const own = this.webAudio ? this.session.gain : null;
    if (own && own !== this.gain) own.gain.setValueAtTime(gain, own.context.currentTime);
  }
}

// fMP4 → ADTS: the AudioSpecificConfig of the init segment's esds gives each frame's 7-byte
// header; a fragment's samples are cut from its mdat by the trun's sizes.
function boxes(view, start, end) {
  const found = [];
  for (let at = start; at + 8 <= end;) {
    let size = view.getUint32(at), header = 8;
    const type = String.fromCharCode(view.getUint8(at + 4), view.getUint8(at + 5), view.getUint8(at + 6), view.getUint8(at + 7));
    if (size === 1) { size = Number(view.getBigUint64(at + 8)); header = 16; } else if (size === 0) size = end - at;
    if (size < header || at + size > end) throw new Error('MP4: box ' + type + ' overruns its parent');
    found.push({ type, start: at, body: at + header, end: at + size });
    at += size;
  }
  return found;
}
function child(view, box, type) {
  return boxes(view, box.body, box.end).find(b => b.type === type);
}
function descriptor(view, at, end) {
  const tag = view.getUint8(at++);
  let length = 0;
  for (let i = 0; i < 4 && at < end; i++) { const b = view.getUint8(at++); length = (length << 7) | (b & 0x7f); if (!(b & 0x80)) break; }
  return { tag, body: at, end: Math.min(end, at + length) };
}

/** The ADTS header fields from an init segment: {profile, frequencyIndex, channels}, or null. */
export function adtsConfig(buffer) {
  const view = new DataView(buffer);
  const moov = boxes(view, 0, view.byteLength).find(b => b.type === 'moov');
  const path = ['trak', 'mdia', 'minf', 'stbl', 'stsd'];
  let box = moov;
  for (const type of path) { box = box && child(view, box, type); }
  if (!box) return null;
  const mp4a = boxes(view, box.body + 8, box.end).find(b => b.type === 'mp4a');
  if (!mp4a) return null;
  const esds = boxes(view, mp4a.body + 28, mp4a.end).find(b => b.type === 'esds');
  if (!esds) return null;
  let es = descriptor(view, esds.body + 4, esds.end);
  if (es.tag !== 3) return null;
  const flags = view.getUint8(es.body + 2);
  let at = es.body + 3;
  if (flags & 0x80) at += 2;
  if (flags & 0x40) at += 1 + view.getUint8(at);
  if (flags & 0x20) at += 2;
  const config = descriptor(view, at, es.end);
  if (config.tag !== 4) return null;
  const specific = descriptor(view, config.body + 13, config.end);
  if (specific.tag !== 5 || specific.end - specific.body < 2) return null;
  const b0 = view.getUint8(specific.body), b1 = view.getUint8(specific.body + 1);
  const profile = b0 >> 3, frequencyIndex = ((b0 & 7) << 1) | (b1 >> 7), channels = (b1 >> 3) & 15;
  if (profile < 1 || profile > 4 || frequencyIndex > 12 || channels < 1 || channels > 7) return null;
  return { profile, frequencyIndex, channels };
}

/** A media segment's AAC frames, each behind an ADTS header. */
export function adtsFrames(buffer, config) {
  const view = new DataView(buffer);
  const top = boxes(view, 0, view.byteLength);
  const out = [];
  let total = 0;
  for (const moof of top.filter(b => b.type === 'moof')) {
    for (const traf of boxes(view, moof.body, moof.end).filter(b => b.type === 'traf')) {
      const tfhd = child(view, traf, 'tfhd');
      const tfhdFlags = view.getUint32(tfhd.body) & 0xffffff;
      let at = tfhd.body + 8, defaultSize = 0;
      if (tfhdFlags & 0x01) at += 8;
      if (tfhdFlags & 0x02) at += 4;
      if (tfhdFlags & 0x08) at += 4;
      if (tfhdFlags & 0x10) defaultSize = view.getUint32(at);
      let base = moof.start;
      for (const trun of boxes(view, traf.body, traf.end).filter(b => b.type === 'trun')) {
        const flags = view.getUint32(trun.body) & 0xffffff, count = view.getUint32(trun.body + 4);
        let p = trun.body + 8, data = base;
        if (flags & 0x01) { data = base + view.getInt32(p); p += 4; }
        if (flags & 0x04) p += 4;
        for (let i = 0; i < count; i++) {
          if (flags & 0x100) p += 4;
          let size = defaultSize;
          if (flags & 0x200) { size = view.getUint32(p); p += 4; }
          if (flags & 0x400) p += 4;
          if (flags & 0x800) p += 4;
          if (data + size > view.byteLength || size > 8184) throw new Error('MP4: sample outside the segment');
          out.push(new Uint8Array(buffer, data, size)); total += size + 7;
          data += size;
        }
        base = data;
      }
    }
  }
  const adts = new Uint8Array(total);
  let at = 0;
  for (const frame of out) {
    const length = frame.length + 7;
    adts[at] = 0xff; adts[at + 1] = 0xf1;
    adts[at + 2] = ((config.profile - 1) << 6) | (config.frequencyIndex << 2) | (config.channels >> 2);
    adts[at + 3] = ((config.channels & 3) << 6) | (length >> 11);
    adts[at + 4] = (length >> 3) & 0xff;
    adts[at + 5] = ((length & 7) << 5) | 0x1f;
    adts[at + 6] = 0xfc;
    adts.set(frame, at + 7);
    at += length;
  }
  return adts.buffer;
}

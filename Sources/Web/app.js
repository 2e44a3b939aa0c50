// The library page: album grid, track lists and search from the JSON API, the queue panel,
// the waveform seek bars and the controls; playback is player.js, drawing waveform.js.
'use strict';
import { GaplessPlayer } from './player.js';
import { WaveformView } from './waveform.js';

const ALBUMS = 48, ROWS = 100, NEXT_WAVES = 3, SAVED = 'streamd.page.v1', SAVED_QUEUE = 'streamd.page.v1.queue';
const $ = id => document.getElementById(id);
const player = new GaplessPlayer($('player'));
const state = { albumOffset: 0, albumTotal: 0, list: [], listStart: 0, search: null, albumClickAt: 0 };

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}
function button(text, label, action) {
  const b = el('button', null, text); b.type = 'button';
  if (label) b.setAttribute('aria-label', label);
  b.addEventListener('click', event => { event.stopPropagation(); action(); });
  return b;
}
function clock(s) {
  if (!isFinite(s)) return '';
  const t = Math.max(0, Math.floor(s)), m = Math.floor(t / 60), r = t % 60;
  return m + ':' + (r < 10 ? '0' : '') + r;
}
async function getJSON(url, signal) {
  const response = await fetch(url, { signal });
  if (!response.ok) throw new Error(url + ': ' + response.status);
  return response.json();
}
// A list answer: the array, the list's whole size (X-Total-Count) and whether more matched (X-More).
async function getList(url, signal) {
  const response = await fetch(url, { signal });
  if (!response.ok) throw new Error(url + ': ' + response.status);
  const items = await response.json();
  return { items, total: Number(response.headers.get('X-Total-Count') || items.length),
           more: response.headers.get('X-More') === 'true' };
}
// A list item whose content is one button: the keyboard reaches it, the list stays a list, and a
// click anywhere on the item (or item.click()) acts.
function activatable(item, action, label, ...content) {
  const b = el('button', 'hit'); b.type = 'button';
  if (label) b.setAttribute('aria-label', label);
  b.append(...content);
  item.appendChild(b);
  item.addEventListener('click', action);
}

// The album grid: one page at a time.
async function showAlbums(offset) {
  const page = await getList('/api/albums?offset=' + offset + '&limit=' + ALBUMS);
  state.albumOffset = offset; state.albumTotal = page.total;
  const items = page.items.map(album => {
    const li = el('li', 'album'); li.dataset.id = album.id;
    const art = el('div', 'art'); art.appendChild(el('span', null, (album.title || '?').slice(0, 1).toUpperCase()));
    // The grid's cells are 152 CSS pixels or a little wider: a 256-pixel thumbnail, 512 on dense screens.
    const img = el('img'); img.alt = ''; img.loading = 'lazy'; img.src = album.cover + '?size=256';
    img.srcset = album.cover + '?size=256 1x, ' + album.cover + '?size=512 2x';
    img.addEventListener('error', () => img.remove());
    art.appendChild(img);
    activatable(li, () => openAlbum(album.id), null,
                art, el('div', 'name', album.title), el('div', 'by', album.artist + (album.year ? ' · ' + album.year : '')));
    const play = button('▶', 'Play album ' + album.title, () => openAlbum(album.id, true));
    play.className = 'play-album';
    li.appendChild(play);
    return li;
  });
  $('albums').replaceChildren(...items);
  const last = offset + page.items.length;
  $('range').textContent = page.total ? (offset + 1) + '–' + last + ' of ' + page.total + ' albums' : 'No albums';
  $('prev').disabled = offset === 0;
  $('next').disabled = last >= page.total;
}
$('prev').addEventListener('click', () => showAlbums(Math.max(0, state.albumOffset - ALBUMS)));
$('next').addEventListener('click', () => showAlbums(state.albumOffset + ALBUMS));

async function openAlbum(id, play = false) {
  state.albumClickAt = performance.now();
  if (play) player.graph();      // inside the click: the autoplay policy lets this context run
  const album = await getJSON('/api/albums/' + id);
  if (play) player.play(album.tracks, 0);
  document.querySelectorAll('.album.selected').forEach(a => a.classList.remove('selected'));
  const card = document.querySelector('.album[data-id="' + id + '"]');
  if (card) card.classList.add('selected');
  showList(album.tracks, album.title + ' — ' + album.artist);
  // Warm the first tracks' playback plans, so "Play all" starts at once.
  album.tracks.slice(0, 2).forEach(track => player.describe(track));
}

// One list of tracks (an album or search results), ROWS rows on screen at a time.
function showList(tracks, heading) {
  state.list = tracks; state.listStart = 0;
  $('heading').textContent = heading;
  $('play-all').disabled = $('queue-all').disabled = tracks.length === 0;
  renderRows();
}
// "FLAC 24/96": lossless and PCM tracks show their depth and rate.
function quality(track) {
  if (!track.bits_per_sample) return '';
  return track.codec.split('_')[0].toUpperCase() + ' ' + track.bits_per_sample + '/' + +(track.sample_rate / 1000).toFixed(1);
}
function renderRows() {
  const start = state.listStart, tracks = state.list.slice(start, start + ROWS);
  const rows = tracks.map((track, i) => {
    const li = el('li', 'track'); li.dataset.index = start + i; li.dataset.path = track.path;
    const title = track.title || track.path.split('/').pop();
    const main = el('span', 'title', title);
    main.appendChild(el('span', 'sub', [track.artist, track.album, quality(track)].filter(Boolean).join(' · ')));
    activatable(li, () => player.play(state.list, start + i), null,
                el('span', 'n', track.track || (start + i + 1)), main, el('span', 'duration', clock(track.duration_s)));
    return li;
  });
  $('rows').replaceChildren(...(rows.length ? rows : [el('li', 'empty', 'No tracks')]));
  const many = state.list.length > ROWS;
  $('rows-prev').hidden = $('rows-next').hidden = !many;
  $('rows-prev').disabled = start === 0;
  $('rows-next').disabled = start + ROWS >= state.list.length;
  $('rows-range').textContent = many ? (start + 1) + '–' + (start + tracks.length) + ' of ' + state.list.length : '';
  markPlaying();
}
$('rows-prev').addEventListener('click', () => { state.listStart = Math.max(0, state.listStart - ROWS); renderRows(); });
$('rows-next').addEventListener('click', () => { state.listStart += ROWS; renderRows(); });
$('play-all').addEventListener('click', () => player.play(state.list, 0));
$('queue-all').addEventListener('click', () => player.append(state.list));

// Search as you type: the newest query wins, older requests are cancelled.
let typing = null;
$('q').addEventListener('input', () => { clearTimeout(typing); typing = setTimeout(search, 40); });
async function search() {
  const q = $('q').value.trim();
  if (state.search) state.search.abort();
  if (!q) { showList([], 'Pick an album or search'); return; }
  const controller = new AbortController();
  state.search = controller;
  try {
    const result = await getList('/api/search?q=' + encodeURIComponent(q) + '&limit=' + ROWS, controller.signal);
    if (controller.signal.aborted) return;
    showList(result.items, result.items.length ? 'Results for “' + q + '”' + (result.more ? ' (first ' + ROWS + ')' : '')
                                               : 'Nothing matches “' + q + '”');
  } catch (error) {
    if (error.name !== 'AbortError') $('heading').textContent = 'Search failed: ' + error.message;
  }
}

function markPlaying() {
  const track = player.track;
  document.querySelectorAll('#rows .track').forEach(li => li.classList.toggle('playing', !!track && li.dataset.path === track.path));
}

// The queue panel: what plays, in order; each entry can move, go next or leave.
function renderQueue() {
  const items = player.queue.slice(0, 200).map((track, i) => {
    const li = el('li', 'queued' + (i === player.index ? ' playing' : '')); li.dataset.path = track.path;
    const name = (track.title || track.path.split('/').pop()) + (track.artist ? ' — ' + track.artist : '');
    const label = el('span', 'label');
    activatable(label, () => player.jump(i), null, name);
    li.append(label,
      button('↑', 'Move up: ' + name, () => player.move(i, i - 1)),
      button('↓', 'Move down: ' + name, () => player.move(i, i + 1)),
      button('⤴', 'Play next: ' + name, () => { if (i !== player.index) player.move(i, i > player.index ? player.index + 1 : player.index); }),
      button('✕', 'Remove: ' + name, () => player.remove(i)));
    return li;
  });
  $('queue').replaceChildren(...(items.length ? items : [el('li', 'empty', 'The queue is empty')]));
}

// Waveforms: the playing track's (the seek bar) and the next ones' in the queue.
const waves = [];
for (let i = 0; i <= NEXT_WAVES; i++) {
  const canvas = el('canvas', i ? 'wave next' : 'wave');
  $('waves').appendChild(canvas);
  waves.push(new WaveformView(canvas, i ? { label: 'Waveform of a queued track' }
                                        : { onSeek: seconds => player.seek(seconds), label: 'Seek bar' }));
}
function showWaves() {
  waves.forEach((view, i) => {
    let index = player.index;
    for (let k = 0; k < i && index !== null && index >= 0; k++) index = player.following(index);
    const track = index !== null && index >= 0 ? player.queue[index] : null;
    view.setTrack(i && track === player.track ? null : track);
    view.canvas.hidden = i > 0 && !track;
  });
}
function zoomAll(factor) { waves.forEach(view => view.zoom(factor)); }
$('zoom-in').addEventListener('click', () => zoomAll(1.5));
$('zoom-out').addEventListener('click', () => zoomAll(1 / 1.5));

// Controls.
$('toggle').addEventListener('click', () => player.toggle());
$('skip').addEventListener('click', () => player.next());
$('back').addEventListener('click', () => player.previous());
$('shuffle').addEventListener('click', () => player.setShuffle(!player.shuffled));
const REPEATS = ['off', 'all', 'one'];
$('repeat').addEventListener('click', () => player.setRepeat(REPEATS[(REPEATS.indexOf(player.repeat) + 1) % 3]));
$('rg').addEventListener('change', () => { player.replayGain = $('rg').value; player.applyGain(); save(); });

function showControls() {
  const playing = !player.paused;
  $('toggle').textContent = playing ? '❙❙ Pause' : '▶ Play';
  $('toggle').setAttribute('aria-label', playing ? 'Pause' : 'Play');
  $('shuffle').setAttribute('aria-pressed', String(!!player.shuffled));
  $('repeat').textContent = 'Repeat: ' + player.repeat;
  $('repeat').setAttribute('aria-label', 'Repeat: ' + player.repeat);
  if ('mediaSession' in navigator) navigator.mediaSession.playbackState = playing ? 'playing' : 'paused';
}

player.addEventListener('track', () => {
  const track = player.track;
  $('now').textContent = track ? (track.artist ? track.artist + ' — ' : '') + (track.title || track.path) : 'Nothing playing';
  if (track) document.body.dataset.playing = track.path; else delete document.body.dataset.playing;
  markPlaying(); renderQueue(); showWaves(); showMediaSession(); save(true);
});
player.addEventListener('queue', () => { renderQueue(); showWaves(); showControls(); save(true); });
player.addEventListener('state', () => { showControls(); save(); });
let lastSaved = 0;
player.addEventListener('time', () => {
  const track = player.track, position = player.position;
  // Every frame while playing: the DOM is touched only when the shown text changes.
  const shown = clock(position) + ' / ' + clock(track ? track.duration_s : 0);
  if (shown !== state.timeShown) { state.timeShown = shown; $('time').textContent = shown; }
  waves[0].setPosition(track ? position : -1);
  if (state.albumClickAt && !player.paused && player.position > 0) {
    document.body.dataset.firstSoundMs = String(Math.round(performance.now() - state.albumClickAt));
    state.albumClickAt = 0;
  }
  if (performance.now() - lastSaved > 2000) save();
});

// The Media Session: lock screens, notifications and headset buttons.
function showMediaSession() {
  if (!('mediaSession' in navigator)) return;
  const track = player.track;
  navigator.mediaSession.metadata = track ? new MediaMetadata({
    title: track.title || track.path.split('/').pop(), artist: track.artist || '', album: track.album || '',
    // Thumbnails the size each lock screen or notification asks for, not the whole picture.
    artwork: track.album_id ? [96, 256, 512].map(size => ({ src: '/api/cover/' + track.album_id + '?size=' + size,
                                                            sizes: size + 'x' + size, type: 'image/jpeg' })) : [] }) : null;
}
if ('mediaSession' in navigator) {
  const handlers = {
    play: () => player.toggle(), pause: () => player.pause(),
    nexttrack: () => player.next(), previoustrack: () => player.previous(),
    seekto: details => player.seek(details.seekTime),
    seekbackward: details => player.seek(Math.max(0, player.position - (details.seekOffset || 10))),
    seekforward: details => player.seek(player.position + (details.seekOffset || 10)),
  };
  for (const [action, handler] of Object.entries(handlers)) {
    try { navigator.mediaSession.setActionHandler(action, handler); } catch { /* not supported here */ }
  }
  let told = { at: -Infinity, position: 0, track: null };
  player.addEventListener('time', () => {
    const track = player.track, now = performance.now(), position = player.position;
    // The browser extrapolates from the last state: told once a second, or at a jump or a new track.
    const expected = told.position + (player.paused ? 0 : (now - told.at) / 1000);
    if (track === told.track && now - told.at < 1000 && Math.abs(position - expected) < 0.25) return;
    told = { at: now, position, track };
    if (track && track.duration_s > 0 && navigator.mediaSession.setPositionState) {
      try { navigator.mediaSession.setPositionState({ duration: track.duration_s, position: Math.min(player.position, track.duration_s), playbackRate: 1 }); } catch { }
    }
  });
}

// Keyboard shortcuts, except while typing in a field.
document.addEventListener('keydown', event => {
  const target = event.target;
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  if (target && (target.tagName === 'INPUT' || target.tagName === 'SELECT' || target.tagName === 'TEXTAREA')) return;
  const onButton = target && target.tagName === 'BUTTON';
  switch (event.key) {
    case ' ': if (onButton) return; player.toggle(); break;
    case 'ArrowRight': player.seek(player.position + 5); break;
    case 'ArrowLeft': player.seek(Math.max(0, player.position - 5)); break;
    case 'n': player.next(); break;
    case 'p': player.previous(); break;
    case '+': case '=': zoomAll(1.5); break;
    case '-': zoomAll(1 / 1.5); break;
    default: return;
  }
  event.preventDefault();
});

// The queue, the track and the position survive a reload.
// The queue (up to 1000 items, ~0.5 MB of JSON) is written only when it changes; the position
// every 2 s while playing is a small record (writing the queue then cost a frame now and then).
function save(queueChanged = false) {
  lastSaved = performance.now();
  try {
    if (queueChanged) localStorage.setItem(SAVED_QUEUE, JSON.stringify(player.queue.slice(0, 1000)));
    localStorage.setItem(SAVED, JSON.stringify({
      index: player.index, position: player.position,
      repeat: player.repeat, shuffled: !!player.shuffled, replayGain: player.replayGain }));
  } catch { /* storage full or off: nothing to remember */ }
}
window.addEventListener('pagehide', () => save(true));
function restore() {
  let saved;
  try { saved = JSON.parse(localStorage.getItem(SAVED) || 'null'); } catch { saved = null; }
  if (!saved) return;
  if (!Array.isArray(saved.queue)) {
    try { saved.queue = JSON.parse(localStorage.getItem(SAVED_QUEUE) || 'null'); } catch { saved.queue = null; }
  }
  player.repeat = REPEATS.includes(saved.repeat) ? saved.repeat : 'off';
  player.replayGain = ['album', 'track', 'off'].includes(saved.replayGain) ? saved.replayGain : 'album';
  $('rg').value = player.replayGain;
  if (Array.isArray(saved.queue) && saved.queue.length && saved.index >= 0 && saved.index < saved.queue.length) {
    player.cue(saved.queue, saved.index, Number(saved.position) || 0);
    $('time').textContent = clock(player.position) + ' / ' + clock(player.track.duration_s);
    waves[0].setPosition(player.position);
  }
  showControls();
}

window.streamPage = { player, waves, save };
restore();
getJSON('/api/status').then(s => { $('summary').textContent = s.tracks + ' tracks'; }).catch(() => {});
showAlbums(0).catch(error => { $('range').textContent = 'Cannot load albums: ' + error.message; });

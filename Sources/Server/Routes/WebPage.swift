import StreamHTTP
import StreamLibrary
import StreamHLS
import StreamRadio
/// The library page at `/`: one self-contained HTML document of a fixed size, whatever the size
/// of the library. Its script fetches what it shows from the JSON API, one page at a time: the
/// album grid (`/api/albums`, covers from `/api/cover/<id>`), an album's tracks
/// (`/api/albums/<id>`) and search results (`/api/search`); one `<audio>` plays a list in order.
public enum WebPage {
    /// Albums in one page of the grid, and most rows in one track list.
    static let albumsPerPage = 48
    static let rowsPerPage = 100

    /// The page, as sent.
    public static let html: String = """
    <!DOCTYPE html>
    <html lang="en"><head><meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>streamd library</title>
    <style>
      * { box-sizing: border-box; }
      body { font: 15px/1.4 system-ui, sans-serif; margin: 0; color: #222; background: #fafafa; }
      header { position: sticky; top: 0; z-index: 2; display: flex; gap: 1rem; align-items: center;
               padding: .7rem 1.2rem; background: #fff; border-bottom: 1px solid #ddd; }
      h1 { font-size: 1.2rem; margin: 0; white-space: nowrap; }
      #q { flex: 1; max-width: 32rem; font: inherit; padding: .45rem .7rem; border: 1px solid #bbb; border-radius: 6px; }
      #summary { color: #666; font-size: .85rem; white-space: nowrap; }
      main { display: grid; grid-template-columns: minmax(0, 3fr) minmax(18rem, 2fr); gap: 1.2rem; padding: 1rem 1.2rem 6rem; }
      @media (max-width: 800px) { main { grid-template-columns: 1fr; } }
      .pager { display: flex; gap: .6rem; align-items: center; margin-bottom: .7rem; color: #555; font-size: .9rem; }
      button { font: inherit; padding: .3rem .7rem; border: 1px solid #bbb; border-radius: 6px; background: #fff; cursor: pointer; }
      button:disabled { opacity: .4; cursor: default; }
      #albums { list-style: none; padding: 0; margin: 0; display: grid; gap: .9rem;
                grid-template-columns: repeat(auto-fill, minmax(9.5rem, 1fr)); }
      .album { cursor: pointer; }
      .album .art { position: relative; aspect-ratio: 1; border-radius: 6px; overflow: hidden;
                    background: linear-gradient(135deg, #cfd8e3, #8fa3bd); }
      .album .art span { position: absolute; inset: 0; display: grid; place-items: center; font-size: 2.4rem; color: #fff; }
      .album img { position: absolute; inset: 0; width: 100%; height: 100%; object-fit: cover; }
      .album.selected .art { outline: 3px solid #2a62c9; }
      .album .name { font-weight: 600; margin-top: .3rem; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
      .album .by { color: #666; font-size: .85rem; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
      #detail h2 { font-size: 1.05rem; margin: 0 0 .5rem; }
      #rows { list-style: none; padding: 0; margin: .6rem 0; }
      .track { display: grid; grid-template-columns: 2.2rem minmax(0, 1fr) auto; gap: .5rem; padding: .35rem .4rem;
               border-bottom: 1px solid #e4e4e4; cursor: pointer; }
      .track:hover { background: #eef3fb; }
      .track.playing { background: #dde8fa; font-weight: 600; }
      .track .n, .track .duration { color: #777; font-variant-numeric: tabular-nums; }
      .track .sub { display: block; color: #666; font-size: .85rem; font-weight: normal; }
      .empty { color: #777; }
      footer { position: fixed; bottom: 0; left: 0; right: 0; display: flex; gap: .8rem; align-items: center;
               padding: .6rem 1.2rem; background: #fff; border-top: 1px solid #ddd; }
      #now { flex: 0 1 22rem; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
      #player { flex: 1; }
    </style></head>
    <body>
    <header><h1>streamd</h1>
      <input id="q" type="search" placeholder="Search titles, artists, albums" autocomplete="off" aria-label="Search">
      <span id="summary"></span></header>
    <main>
      <section id="browse" aria-label="Albums">
        <div class="pager"><button id="prev" disabled>‹ Previous</button><span id="range"></span>
          <button id="next" disabled>Next ›</button></div>
        <ul id="albums"></ul>
      </section>
      <section id="detail" aria-label="Tracks">
        <h2 id="heading">Pick an album or search</h2>
        <div class="pager"><button id="play-all" disabled>▶ Play all</button>
          <button id="rows-prev" hidden>‹</button><span id="rows-range"></span><button id="rows-next" hidden>›</button></div>
        <ol id="rows"></ol>
      </section>
    </main>
    <footer><button id="back" title="Previous track">« Prev</button><button id="skip" title="Next track">Next »</button>
      <span id="now">Nothing playing</span><audio id="player" controls preload="none"></audio></footer>
    <script>
    'use strict';
    const ALBUMS = \(albumsPerPage), ROWS = \(rowsPerPage);
    const $ = id => document.getElementById(id);
    const player = $('player');
    const state = { albumOffset: 0, albumTotal: 0, list: [], listStart: 0, source: null, queue: [], index: -1, search: null };

    function el(tag, cls, text) {
      const node = document.createElement(tag);
      if (cls) node.className = cls;
      if (text !== undefined && text !== null) node.textContent = text;
      return node;
    }
    function clock(s) {
      if (!isFinite(s)) return '';
      const t = Math.round(s), m = Math.floor(t / 60), r = t % 60;
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

    // The album grid: one page at a time.
    async function showAlbums(offset) {
      const page = await getList('/api/albums?offset=' + offset + '&limit=' + ALBUMS);
      state.albumOffset = offset; state.albumTotal = page.total;
      const items = page.items.map(album => {
        const li = el('li', 'album'); li.dataset.id = album.id;
        const art = el('div', 'art'); art.appendChild(el('span', null, (album.title || '?').slice(0, 1).toUpperCase()));
        const img = el('img'); img.alt = ''; img.loading = 'lazy'; img.src = album.cover;
        img.onerror = () => img.remove();
        art.appendChild(img);
        li.append(art, el('div', 'name', album.title), el('div', 'by', album.artist + (album.year ? ' · ' + album.year : '')));
        li.onclick = () => openAlbum(album.id);
        return li;
      });
      $('albums').replaceChildren(...items);
      const last = offset + page.items.length;
      $('range').textContent = page.total ? (offset + 1) + '–' + last + ' of ' + page.total + ' albums' : 'No albums';
      $('prev').disabled = offset === 0;
      $('next').disabled = last >= page.total;
    }
    $('prev').onclick = () => showAlbums(Math.max(0, state.albumOffset - ALBUMS));
    $('next').onclick = () => showAlbums(state.albumOffset + ALBUMS);

    async function openAlbum(id) {
      const album = await getJSON('/api/albums/' + id);
      document.querySelectorAll('.album.selected').forEach(a => a.classList.remove('selected'));
      const card = document.querySelector('.album[data-id="' + id + '"]');
      if (card) card.classList.add('selected');
      showList(album.tracks, album.title + ' — ' + album.artist, 'album:' + id);
    }

    // One list of tracks (an album or search results), ROWS rows on screen at a time.
    function showList(tracks, heading, source) {
      state.list = tracks; state.listStart = 0; state.source = source;
      $('heading').textContent = heading;
      $('play-all').disabled = tracks.length === 0;
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
        const main = el('span', 'title', track.title || track.path.split('/').pop());
        main.appendChild(el('span', 'sub', [track.artist, track.album, quality(track)].filter(Boolean).join(' · ')));
        li.append(el('span', 'n', track.track || (start + i + 1)), main, el('span', 'duration', clock(track.duration_s)));
        li.onclick = () => play(state.list, start + i);
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
    $('rows-prev').onclick = () => { state.listStart = Math.max(0, state.listStart - ROWS); renderRows(); };
    $('rows-next').onclick = () => { state.listStart += ROWS; renderRows(); };
    $('play-all').onclick = () => play(state.list, 0);

    // Search as you type: the newest query wins, older requests are cancelled.
    let typing = null;
    $('q').addEventListener('input', () => {
      clearTimeout(typing);
      typing = setTimeout(search, 40);
    });
    async function search() {
      const q = $('q').value.trim();
      if (state.search) state.search.abort();
      if (!q) { showList([], 'Pick an album or search', null); return; }
      const controller = new AbortController();
      state.search = controller;
      try {
        const result = await getList('/api/search?q=' + encodeURIComponent(q) + '&limit=' + ROWS, controller.signal);
        if (controller.signal.aborted) return;
        showList(result.items, result.items.length ? 'Results for “' + q + '”' + (result.more ? ' (first ' + ROWS + ')' : '')
                                                   : 'Nothing matches “' + q + '”', 'search:' + q);
      } catch (error) {
        if (error.name !== 'AbortError') $('heading').textContent = 'Search failed: ' + error.message;
      }
    }

    // Playback: one <audio>, the queue played in order.
    function play(queue, index) {
      if (index < 0 || index >= queue.length) return;
      state.queue = queue; state.index = index;
      const track = queue[index];
      player.src = track.url;
      player.play().catch(() => {});
      $('now').textContent = (track.artist ? track.artist + ' — ' : '') + (track.title || track.path);
      document.body.dataset.playing = track.path;
      markPlaying();
    }
    function markPlaying() {
      const current = state.queue === state.list ? state.index : -1;
      document.querySelectorAll('#rows .track').forEach(li => li.classList.toggle('playing', Number(li.dataset.index) === current));
    }
    player.addEventListener('ended', () => play(state.queue, state.index + 1));
    player.addEventListener('error', () => setTimeout(() => play(state.queue, state.index + 1), 500));
    $('skip').onclick = () => play(state.queue, state.index + 1);
    $('back').onclick = () => play(state.queue, Math.max(0, state.index - 1));

    getJSON('/api/status').then(s => { $('summary').textContent = s.tracks + ' tracks'; }).catch(() => {});
    showAlbums(0).catch(error => { $('range').textContent = 'Cannot load albums: ' + error.message; });
    </script>
    </body></html>

    """

    /// The page's bytes (built once).
    public static let bytes: [UInt8] = Array(html.utf8)
}

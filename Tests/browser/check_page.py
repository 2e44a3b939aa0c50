#!/usr/bin/env python3
"""Loads streamd's library page in headless Chromium (Debian's chromium + chromium-driver,
driven by selenium) and uses it as a listener would:

- the HTML is small (--max-html-kb, default 200) and the page never shows more than one page of
  albums (48) or rows (100);
- the album grid fills from /api/albums, with covers where /api/cover has one;
- typing a query (--query, default: the title of a track) shows a first row that matches it
  within --budget-ms (default 300), timed in the page from the last keystroke's input event to
  the row being in the DOM;
- an album played with "Play all" starts and advances from track to track (each track is sought
  to its last half second, --advances times; the page plays a queue through Media Source
  Extensions, so positions are the player's within the track, not the element's);
- with --every-track, every track of the library is found through the search box, played in the
  page past half a second with no media error, and its length (the element's duration for a
  track played from /media, the length the page appended for one played through MSE) is checked
  against the catalog;
- with --min-covers N, at least N album covers are shown (loaded, naturalWidth > 0).

usage: check_page.py BASE_URL [--screenshot PATH] [--query TEXT] [--budget-ms N] [--advances N]
                     [--every-track] [--max-html-kb N] [--min-covers N]
Prints one line per check and a last line 'N passed, M failed'; exit 0 only when all pass."""
import argparse, json, sys, time, urllib.parse, urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

PASSED, FAILED = [0], [0]


def check(ok, text):
    print(("ok   " if ok else "FAIL ") + text, flush=True)
    (PASSED if ok else FAILED)[0] += 1
    return ok


def get_json(base, path):
    return json.load(urllib.request.urlopen(base + path, timeout=30))


def get_list(base, path):
    """A list answer: (items, X-Total-Count)."""
    response = urllib.request.urlopen(base + path, timeout=30)
    items = json.load(response)
    return items, int(response.headers.get("X-Total-Count") or len(items))


def wait(driver, script, seconds, interval=0.02):
    """Polls a JS expression until it is truthy; returns its last value."""
    deadline = time.time() + seconds
    value = None
    while time.time() < deadline:
        value = driver.execute_script("return " + script)
        if value:
            return value
        time.sleep(interval)
    return value


def bounded(driver, where):
    albums = driver.execute_script("return document.querySelectorAll('.album').length")
    rows = driver.execute_script("return document.querySelectorAll('#rows .track').length")
    return check(albums <= 48 and rows <= 100, f"{where}: {albums} album cards, {rows} rows on screen (at most 48 and 100)")


def search(driver, query, budget_ms, want_path=None):
    """Types `query` into the box; returns (ms from the last input event to the first row, first row)."""
    box = driver.find_element(By.ID, "q")
    box.clear()
    driver.execute_script("""
        window.__lastInput = 0; window.__firstRow = 0;
        const q = document.getElementById('q');
        if (!window.__hooked) {
          window.__hooked = true;
          q.addEventListener('input', () => { window.__lastInput = performance.now(); window.__firstRow = 0; });
          new MutationObserver(() => {
            const row = document.querySelector('#rows .track');
            const heading = document.getElementById('heading').textContent;
            if (row && heading.startsWith('Results for') && heading.includes(q.value.trim()) && !window.__firstRow)
              window.__firstRow = performance.now();
          }).observe(document.getElementById('rows'), { childList: true });
        }
        """)
    box.send_keys(query)
    wait(driver, "window.__firstRow > 0", max(5, budget_ms / 100))
    elapsed = driver.execute_script("return window.__firstRow - window.__lastInput")
    first = driver.execute_script("""
        const row = document.querySelector('#rows .track');
        return row ? {path: row.dataset.path, text: row.textContent} : null""")
    return elapsed, first


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("--screenshot")
    parser.add_argument("--query")
    parser.add_argument("--budget-ms", type=float, default=300)
    parser.add_argument("--advances", type=int, default=2)
    parser.add_argument("--every-track", action="store_true")
    parser.add_argument("--max-html-kb", type=float, default=200)
    parser.add_argument("--min-covers", type=int, default=0)
    args = parser.parse_args()
    base = args.base.rstrip("/")

    html = urllib.request.urlopen(base + "/", timeout=30).read()
    check(len(html) < args.max_html_kb * 1024, f"page HTML is {len(html)} bytes (limit {args.max_html_kb:.0f} KB)")
    albums, album_total = get_list(base, "/api/albums?offset=0&limit=48")
    first_tracks, _ = get_list(base, "/api/tracks?offset=0&limit=1")

    options = Options()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--autoplay-policy=no-user-gesture-required", "--mute-audio", "--window-size=1200,900"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(60)
    try:
        started = time.time()
        driver.get(base + "/")
        shown = wait(driver, "document.querySelectorAll('.album').length", 20)
        check(shown == len(albums),
              f"album grid shows {shown} of {album_total} albums ({(time.time() - started) * 1000:.0f} ms after load began)")
        covers = wait(driver, "Array.from(document.querySelectorAll('.album img')).filter(i => i.complete && i.naturalWidth > 0).length", 10)
        print(f"info {covers or 0} covers shown on the first page")
        if args.min_covers:
            check((covers or 0) >= args.min_covers, f"{covers or 0} covers shown (at least {args.min_covers})")
        bounded(driver, "first page")

        # Search as you type.
        query = args.query or (first_tracks[0]["title"] if first_tracks else "")
        if query:
            elapsed, first = search(driver, query, args.budget_ms)
            words = [w.lower() for w in query.split()]
            matches = first is not None and all(w in first["text"].lower() for w in words)
            check(first is not None and matches and elapsed is not None and 0 < elapsed <= args.budget_ms,
                  f"typing '{query}' showed a first matching row after {elapsed:.0f} ms (budget {args.budget_ms:.0f} ms): "
                  f"{first['text'][:80] if first else None!r}")
            bounded(driver, "search results")

        # Play an album: "Play all", then each track is sought to its end and the next one must start.
        album = next((a for a in albums if a["track_count"] >= args.advances + 1), None)
        if check(album is not None, f"an album with at least {args.advances + 1} tracks to play"):
            detail = get_json(base, f"/api/albums/{album['id']}")
            paths = [t["path"] for t in detail["tracks"]]
            driver.find_element(By.ID, "q").clear()
            driver.execute_script("document.querySelector(`.album[data-id='%d']`).click()" % album["id"])
            rows = "Array.from(document.querySelectorAll('#rows .track')).map(li => li.dataset.path)"
            wait(driver, f"JSON.stringify({rows}) === {json.dumps(json.dumps(paths[:100], separators=(',', ':')))}", 10)
            listed = driver.execute_script("return " + rows)
            check(listed == paths[:100], f"album '{album['title']}' lists its {len(paths)} tracks in disc/track order: {listed}")
            driver.find_element(By.ID, "play-all").click()
            for step in range(args.advances + 1):
                playing = wait(driver, f"document.body.dataset.playing === {json.dumps(paths[step])} && "
                                       "window.streamPage.player.position > 0.2", 20)
                if not check(bool(playing), f"track {step + 1} of the album plays: {paths[step]}"):
                    break
                if step == args.advances:
                    break
                duration = detail["tracks"][step]["duration_s"]
                driver.execute_script("const p = window.streamPage.player; p.seek(Math.max(0, p.track.duration_s - 0.5))")
                print(f"info sought {paths[step]} to {duration - 0.5:.1f} s of {duration:.1f} s")
            driver.execute_script("window.streamPage.player.pause()")
            bounded(driver, "album")

        if args.every_track:
            catalog, _ = get_list(base, "/api/tracks?offset=0&limit=1000")
            for track in catalog:
                name = track["title"] or track["path"].split("/")[-1]
                search(driver, track["title"] or track["path"].split("/")[-1].rsplit(".", 1)[0], 5000)
                found = wait(driver, f"Array.from(document.querySelectorAll('#rows .track'))"
                                     f".find(li => li.dataset.path === {json.dumps(track['path'])}) ? true : false", 5)
                if not check(bool(found), f"{track['path']}: found by searching '{name}'"):
                    continue
                driver.execute_script(f"Array.from(document.querySelectorAll('#rows .track'))"
                                      f".find(li => li.dataset.path === {json.dumps(track['path'])}).click()")
                # The player is this track's: its MediaSource holds it, or the element plays its /media URL.
                state = wait(driver, f"(() => {{ const p = document.getElementById('player'), player = window.streamPage.player;"
                                     f" const path = {json.dumps(track['path'])}, url = location.origin + {json.dumps(track['url'])};"
                                     f" if (document.body.dataset.playing !== path) return null;"
                                     f" if (p.error) return [-1, p.error.code];"
                                     f" const entry = player.session && player.session.entries.find(e => e.index === player.index);"
                                     f" if (entry && entry.track.path === path && (player.webAudio || p.readyState >= 1)) return [entry.seconds, player.position];"
                                     f" if (!player.session && player.fallback && p.src === url && p.readyState >= 1) return [p.duration, player.position];"
                                     f" return null }})()", 20)
                if not check(bool(state) and state[0] >= 0, f"{track['path']}: metadata loaded: {state}"):
                    continue
                # Raw ADTS carries no duration: browsers estimate it from the first frames' bitrate.
                tolerance = 0.1 * track["duration_s"] if track["container"] == "adts" else 0.5
                check(abs(state[0] - track["duration_s"]) <= tolerance,
                      f"{track['path']}: browser duration {state[0]:.3f} s, catalog {track['duration_s']:.3f} s")
                start = driver.execute_script("return window.streamPage.player.position")
                advanced = wait(driver, f"window.streamPage.player.position > {start + 0.5}"
                                        " ? window.streamPage.player.position : 0", 10)
                check(bool(advanced), f"{track['path']}: played {start:.2f} → {advanced or 0:.2f} s")
                error = driver.execute_script("const e = document.getElementById('player').error; return e ? [e.code, e.message] : null")
                check(error is None, f"{track['path']}: no media error ({error})")
            driver.execute_script("window.streamPage.player.pause()")

        if args.screenshot:
            driver.find_element(By.ID, "q").clear()
            driver.execute_script("document.querySelector('.album') && document.querySelector('.album').click()")
            time.sleep(1)
            driver.execute_script("window.scrollTo(0, 0)")
            driver.save_screenshot(args.screenshot)
    finally:
        driver.quit()
    print(f"{PASSED[0]} passed, {FAILED[0]} failed")
    return 0 if FAILED[0] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

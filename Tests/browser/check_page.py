#!/usr/bin/env python3
"""Loads streamd's library page in headless Chromium (Debian's chromium + chromium-driver,
driven by selenium) and checks it as a listener would: the page renders, every <audio>
loads metadata with a duration matching the catalog within 0.5 s, and after play()
currentTime advances.

usage: check_page.py BASE_URL [--screenshot PATH]
Prints one line per track and a last line 'N passed, M failed'; exit 0 only when all pass."""
import argparse, json, sys, time, urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("base")
    parser.add_argument("--screenshot")
    args = parser.parse_args()
    base = args.base.rstrip("/")
    catalog = json.load(urllib.request.urlopen(base + "/api/tracks", timeout=10))

    options = Options()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--autoplay-policy=no-user-gesture-required", "--mute-audio", "--window-size=1000,900"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(30)
    passed = failed = 0
    try:
        driver.get(base + "/")
        rows = driver.execute_script(
            "return Array.from(document.querySelectorAll('li.track')).map(li => li.dataset.path)")
        if sorted(rows) != sorted(t["path"] for t in catalog):
            print(f"FAIL page lists {len(rows)} tracks, catalog has {len(catalog)}")
            failed += 1
        else:
            print(f"ok   page lists all {len(rows)} tracks")
            passed += 1
        for index, track in enumerate(sorted(catalog, key=lambda t: t["path"])):
            audio = f"document.querySelectorAll('li.track audio')[{index}]"
            deadline = time.time() + 20
            state = None
            while time.time() < deadline:
                state = driver.execute_script(
                    f"const a = {audio}; return [a.readyState, a.duration, a.error && a.error.code];")
                if state[0] >= 1 or state[2]:
                    break
                time.sleep(0.1)
            name = track["path"]
            if not state or state[0] < 1 or state[2]:
                print(f"FAIL {name}: metadata did not load (readyState, duration, error) = {state}")
                failed += 1
                continue
            duration = state[1]
            # Raw ADTS carries no duration: browsers estimate it from the first frames' bitrate,
            # so only a rough match can be asked of them (the catalog's figure is exact).
            tolerance = 0.1 * track["duration_s"] if track["container"] == "adts" else 0.5
            if abs(duration - track["duration_s"]) > tolerance:
                print(f"FAIL {name}: browser duration {duration:.3f} s, catalog {track['duration_s']:.3f} s")
                failed += 1
                continue
            driver.execute_script(f"{audio}.play()")
            start = driver.execute_script(f"return {audio}.currentTime")
            advanced = start
            deadline = time.time() + 10
            while time.time() < deadline and advanced - start < 0.5:
                time.sleep(0.2)
                advanced = driver.execute_script(f"return {audio}.currentTime")
            driver.execute_script(f"{audio}.pause()")
            if advanced - start < 0.5:
                print(f"FAIL {name}: currentTime stayed at {advanced:.2f} s after play()")
                failed += 1
                continue
            print(f"ok   {name}: duration {duration:.3f} s (catalog {track['duration_s']:.3f}), "
                  f"played {start:.2f} → {advanced:.2f} s")
            passed += 1
        if args.screenshot:
            driver.execute_script("window.scrollTo(0, 0)")
            driver.save_screenshot(args.screenshot)
    finally:
        driver.quit()
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Loads the index.html that `streamd package` writes, from a web server serving the package,
in headless Chromium (Debian's chromium + chromium-driver via selenium) and plays every track:
each <audio> must start (currentTime past 1 s) through the browser's native HLS or the page's
Media Source Extensions player, with no media error.

usage: check_hls_package.py BASE_URL
Prints one line per track and a last line 'N passed, M failed'; exit 0 only when all pass."""
import sys, time

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service


def main():
    base = sys.argv[1].rstrip("/")
    options = Options()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--autoplay-policy=no-user-gesture-required", "--mute-audio"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(30)
    passed = failed = 0
    try:
        driver.get(base + "/index.html")
        count = driver.execute_script("return document.querySelectorAll('audio[data-master]').length")
        if count == 0:
            print("FAIL no players on the page")
            failed += 1
        for index in range(count):
            audio = f"document.querySelectorAll('audio[data-master]')[{index}]"
            name = driver.execute_script(f"return {audio}.dataset.master")
            native = not driver.execute_script(
                f"return !!window.MediaSource && MediaSource.isTypeSupported({audio}.dataset.mime)")
            driver.execute_script(f"{audio}.play().catch(e => {{ {audio}.dataset.playError = String(e); }})")
            deadline = time.time() + 20
            state = None
            while time.time() < deadline:
                state = driver.execute_script(
                    f"const a = {audio}; return [a.currentTime, a.error && a.error.code, a.dataset.playError || null];")
                if state[0] > 1.0 or state[1]:
                    break
                time.sleep(0.1)
            driver.execute_script(f"{audio}.pause()")
            path = "native HLS" if native else "MSE player"
            if state and state[0] > 1.0 and not state[1]:
                print(f"ok   {name}: playing at {state[0]:.2f} s ({path})")
                passed += 1
            else:
                print(f"FAIL {name}: (currentTime, error, play error) = {state} ({path})")
                failed += 1
    finally:
        driver.quit()
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

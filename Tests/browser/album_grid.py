#!/usr/bin/env python3
"""Loads streamd's library page in headless Chromium (as check_page.py does) and prints the
album grid's first page as the page shows it: one JSON array of {"id", "name", "by"} (the
card's title line and its artist line), once the grid holds as many cards as /api/albums
lists on its first page (48 at most).

usage: album_grid.py BASE_URL
Exit 0 with the JSON on stdout; 1 with a reason on stderr when the grid does not fill in 20 s."""
import json, sys, time, urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service


def main():
    base = sys.argv[1].rstrip("/")
    expected = len(json.load(urllib.request.urlopen(base + "/api/albums?offset=0&limit=48", timeout=30)))
    options = Options()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1200,900"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(60)
    try:
        driver.get(base + "/")
        deadline = time.time() + 20
        shown = 0
        while time.time() < deadline:
            shown = driver.execute_script("return document.querySelectorAll('#albums .album').length")
            if shown == expected:
                break
            time.sleep(0.05)
        if shown != expected:
            print(f"the grid shows {shown} albums, /api/albums lists {expected}", file=sys.stderr)
            return 1
        cards = driver.execute_script("""
            return Array.from(document.querySelectorAll('#albums .album')).map(li => ({
              id: Number(li.dataset.id), name: li.querySelector('.name').textContent, by: li.querySelector('.by').textContent }))""")
        print(json.dumps(cards, ensure_ascii=False))
        return 0
    finally:
        driver.quit()


if __name__ == "__main__":
    sys.exit(main())

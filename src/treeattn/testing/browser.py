"""Headless Chromium driven by selenium, for the tests and the benchmark of the page of
``treeattn view``. Nothing is downloaded: the browser and its driver must be installed
(Debian: ``apt-get install chromium chromium-driver``; ``pip install selenium``)."""

from __future__ import annotations

import os
import shutil

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
DRIVERS = ("/usr/lib/chromium/chromedriver",)  # where Debian puts it, besides PATH


def headless_chromium():
    """``(driver, "")``, or ``(None, why not)`` where no browser can be had."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        return None, "selenium is not installed (pip install selenium)"
    browser = next((shutil.which(name) for name in BROWSERS if shutil.which(name)), None)
    driver = shutil.which("chromedriver") or next(
        (path for path in DRIVERS if os.path.exists(path)), None
    )
    if browser is None or driver is None:
        return None, "no Chromium with chromedriver (apt-get install chromium chromium-driver)"
    os.environ.setdefault("SE_OFFLINE", "true")  # selenium must not look for downloads
    options = webdriver.ChromeOptions()
    options.add_argument("--headless=new")
    options.add_argument("--disable-dev-shm-usage")  # small /dev/shm in containers
    if os.geteuid() == 0:
        options.add_argument("--no-sandbox")  # Chromium will not start as root without it
    options.binary_location = browser
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=Service(driver)), ""

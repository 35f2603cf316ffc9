"""Headless Debian Chromium for the service's browser tests (never a browser download): import this module
first in a test module; it skips the module when chromium, chromium-driver or selenium are missing."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
if not (CHROMIUM.is_file() and CHROMEDRIVER.is_file()):
    pytest.skip("Debian's chromium and chromium-driver are not installed (apt-get install chromium chromium-driver)",
                allow_module_level=True)
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")

FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1200,900")


@contextlib.contextmanager
def headless_chromium(profile: Path, extra_flags: Sequence[str] = (),
                      capabilities: dict | None = None) -> Iterator:
    """A Chromium webdriver with its profile in ``profile``; Selenium Manager is kept offline meanwhile."""
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    previous = os.environ.get("SE_OFFLINE")
    os.environ["SE_OFFLINE"] = "true"
    options = Options()
    options.binary_location = str(CHROMIUM)
    for name, value in (capabilities or {}).items():
        options.set_capability(name, value)
    for flag in (*FLAGS, *extra_flags, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        if previous is None:
            os.environ.pop("SE_OFFLINE", None)
        else:
            os.environ["SE_OFFLINE"] = previous

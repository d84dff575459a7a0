"""The HTML pages and SVGs in headless Chromium."""

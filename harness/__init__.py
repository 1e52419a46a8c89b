"""What the tests, the benchmarks and the scripts share, and the wheel does not ship.

- ``paths``: the repository's folders, found from this checkout (one place, not one per file);
- ``lab_session``: a real JupyterLab started as `make lab` starts it, driven by Playwright
  (the browser tests and the slider-latency benchmark; needs the `test` extras).

Code that ships (vizlib, coursekit, grader) never imports it: tests/test_layers.py checks that.
"""

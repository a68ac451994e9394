#!/usr/bin/env python3
"""A screenshot of the live dashboard in the middle of a run (docs/images/dashboard.png).

Runs `treefarm run RUN_ARGS --dashboard 127.0.0.1:0`, opens the page in headless Chromium
through chromedriver (Debian `chromium`, `chromium-driver`; the W3C WebDriver protocol,
spoken here with the standard library only), waits until the run has dispatched for
--after seconds and the page has followed the event stream, sizes the window to the whole
page and saves it as PNG; then ends the browser and the run. From the repository's root:

  tools/dashboard-screenshot.py [--build build] [--out docs/images/dashboard.png]
                                [--after 20] [--width 1280] [-- RUN_ARGS...]

RUN_ARGS default to `examples/quickstart.toml --calibrate` (calibrates about 20 s, then
runs). Exit code 0 once the PNG is written, 1 if a step failed (it says which), 2 if the
binary or chromedriver is missing.
"""
import argparse
import base64
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request


def fail(message, code=1):
    print("dashboard-screenshot: " + message, file=sys.stderr)
    sys.exit(code)


def wait_for(what, seconds, probe):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.2)
    raise TimeoutError(what + " within %g s" % seconds)


class Driver:
    """One chromedriver and one headless Chromium session, its files under `home`."""

    def __init__(self, home, width, height):
        env = dict(os.environ, XDG_CONFIG_HOME=home, XDG_CACHE_HOME=home)
        self.log = open(os.path.join(home, "chromedriver.log"), "w+")
        self.proc = subprocess.Popen(["chromedriver", "--port=0"], stdout=self.log, stderr=subprocess.STDOUT,
                                     env=env, start_new_session=True)
        self.session = None

        def port():
            self.log.seek(0)
            m = re.search(r"started successfully on port (\d+)", self.log.read())
            return m and int(m.group(1))

        self.base = "http://127.0.0.1:%d" % wait_for("chromedriver listening", 30, port)
        args = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--hide-scrollbars", "--force-device-scale-factor=1", "--window-size=%d,%d" % (width, height),
                "--user-data-dir=" + os.path.join(home, "profile")]
        caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {"args": args}}}}
        self.session = self.call("POST", "/session", caps)["sessionId"]

    def call(self, method, path, body=None):
        data = None if method in ("GET", "DELETE") else json.dumps(body or {}).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                return json.load(r).get("value")
        except urllib.error.HTTPError as e:
            raise RuntimeError("WebDriver %s %s: %s" % (method, path, e.read()[:500].decode(errors="replace")))

    def run(self, script):
        return self.call("POST", "/session/%s/execute/sync" % self.session, {"script": script, "args": []})

    def close(self):
        if self.session:
            try:
                self.call("DELETE", "/session/" + self.session)
            except Exception:
                pass
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default="build", help="build directory (its bin/treefarm runs)")
    p.add_argument("--out", default="docs/images/dashboard.png", help="the PNG to write")
    p.add_argument("--after", type=float, default=20, help="seconds of dispatching before the shot")
    p.add_argument("--width", type=int, default=1280, help="window width, pixels")
    p.add_argument("run_args", nargs="*", help="arguments of `treefarm run` (after --)")
    a = p.parse_args()
    treefarm = os.path.join(a.build, "bin", "treefarm")
    if not os.access(treefarm, os.X_OK):
        fail(treefarm + " not found (build it first)", 2)
    if not shutil.which("chromedriver"):
        fail("chromedriver not found (Debian chromium-driver; tools/bootstrap.sh installs it)", 2)
    run_args = a.run_args or ["examples/quickstart.toml", "--calibrate"]

    tmp = tempfile.mkdtemp(prefix="treefarm-screenshot-")
    url_file = os.path.join(tmp, "dashboard.url")
    run_log = open(os.path.join(tmp, "run.log"), "w")
    run = subprocess.Popen([treefarm, "run", *run_args, "--out", os.path.join(tmp, "out"), "--quiet",
                            "--dashboard", "127.0.0.1:0", "--dashboard-file", url_file],
                           stdout=run_log, stderr=subprocess.STDOUT)
    driver = None
    try:
        def url():
            if run.poll() is not None:
                raise RuntimeError("treefarm run ended (exit %d): see %s" % (run.returncode, run_log.name))
            return os.path.exists(url_file) and open(url_file).readline().strip()

        address = wait_for("the dashboard's address", 600, url)

        def status():
            with urllib.request.urlopen(address + "api/status", timeout=10) as r:
                return json.load(r)

        driver = Driver(tmp, a.width, 1000)
        driver.call("POST", "/session/%s/url" % driver.session, {"url": address})

        def flowing():
            if run.poll() is not None:
                raise RuntimeError("the run ended before %g s of dispatching: use a longer run" % a.after)
            s = status()
            running = s.get("running")
            page = driver.run("return {rendered: Number(document.body.dataset.rendered || 0),"
                              " connection: document.getElementById('connection').textContent}")
            return (isinstance(running, dict) and running.get("elapsed", 0) >= a.after and page["rendered"] >= 3
                    and page["connection"] == "live" and s)

        wait_for("%g s of dispatching with the page live" % a.after, 900, flowing)
        # The window's height is the page's plus whatever the window keeps for itself.
        height = driver.run("return document.documentElement.scrollHeight")
        frame = driver.run("return window.outerHeight - window.innerHeight")
        driver.call("POST", "/session/%s/window/rect" % driver.session, {"width": a.width, "height": height + frame})
        rendered = driver.run("return Number(document.body.dataset.rendered)")
        wait_for("a render at the new size", 30,
                 lambda: driver.run("return Number(document.body.dataset.rendered)") > rendered)
        png = base64.b64decode(driver.call("GET", "/session/%s/screenshot" % driver.session))
        shot_status = status()  # about what the picture shows
        with open(a.out, "wb") as f:
            f.write(png)
        running = shot_status["running"]
        done = ", ".join("%s %d/%d" % (x["name"], x["done"], x["tasks"]) for x in running["apps"])
        print("%s: %d x %d pixels at %.1f s of dispatching (%s); load average %s" %
              (a.out, a.width, height, running["elapsed"], done, open("/proc/loadavg").read().split()[0]))
    except (RuntimeError, TimeoutError, OSError) as e:
        fail(str(e))
    finally:
        if driver:
            driver.close()
        if run.poll() is None:
            run.send_signal(signal.SIGTERM)  # treefarm run ends its master and workers
            run.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

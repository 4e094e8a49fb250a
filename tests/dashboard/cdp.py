"""cdp.py - drives headless Chromium over the DevTools protocol on a pipe
(--remote-debugging-pipe: Chromium reads NUL-terminated JSON commands on fd 3 and writes
replies and events on fd 4), so that a test can type into the page and read its state without
any websocket library. Python 3 stdlib only."""
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


class Browser:
    """One Chromium with one page. eval(js) returns the value of an expression (awaited)."""

    def __init__(self, chromium, url, timeout=30):
        self.profile = tempfile.mkdtemp(prefix="governor-cdp-")
        self.timeout = timeout
        to_chrome_r, self.w = os.pipe()
        self.r, from_chrome_w = os.pipe()

        def child():
            # Move the pipe ends to fds 3 and 4, clear of anything already there. The
            # parent's other descriptors are close-on-exec (Python's default), hence
            # close_fds=False: it would close 3 and 4 after this runs.
            a = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        self.proc = subprocess.Popen(
            [chromium] + FLAGS + ["--user-data-dir=" + self.profile, "--remote-debugging-pipe",
                                  "about:blank"],
            preexec_fn=child, close_fds=False,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buf = b""
        self.next_id = 0
        self.session = None
        target = self.call("Target.createTarget", {"url": url})["targetId"]
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": target, "flatten": True})["sessionId"]

    def call(self, method, params=None):
        """Sends one command (to the page once attached); returns its result or raises."""
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if self.session and not method.startswith("Target."):
            msg["sessionId"] = self.session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        deadline = time.time() + self.timeout
        while True:
            while b"\0" in self.buf:
                raw, self.buf = self.buf.split(b"\0", 1)
                m = json.loads(raw)
                if m.get("id") == self.next_id:
                    if "error" in m:
                        raise RuntimeError("%s: %s" % (method, m["error"]))
                    return m.get("result", {})
            left = deadline - time.time()
            if left <= 0 or not select.select([self.r], [], [], left)[0]:
                raise TimeoutError("no answer to " + method)
            chunk = os.read(self.r, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self.buf += chunk

    def eval(self, js):
        r = self.call("Runtime.evaluate", {"expression": js, "returnByValue": True,
                                           "awaitPromise": True})
        if "exceptionDetails" in r:
            raise RuntimeError("%s: %s" % (js, r["exceptionDetails"].get("text")))
        return r["result"].get("value")

    def wait(self, js, timeout=10):
        """Polls until the expression is truthy; returns its last value."""
        deadline = time.time() + timeout
        v = None
        while time.time() < deadline:
            try:
                v = self.eval(js)
            except RuntimeError:
                v = None  # the page is navigating
            if v:
                return v
            time.sleep(0.1)
        return v

    def close(self):
        try:
            self.call("Browser.close")
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.w)
        os.close(self.r)
        shutil.rmtree(self.profile, ignore_errors=True)

"""The web console (/console/) in a real browser: Debian's chromium, headless, driven by
Selenium, against a broker-backed `mooncake all` whose tasks call the harness's endpoint.

What an operator does, and sees:
1. the login refuses an unknown token with the gateway's message, and takes the shop token;
   the overview draws its charts and counts;
2. a task submitted through the API, due in 6 s, found by uuid on the task page, goes from
   pending to succeeded there, its attempt on the timeline;
3. a pending task cancelled from the page is never called; one due in an hour, "Run now"
   from the page, is called;
4. a task whose endpoint answers 404 dies; once the endpoint answers 200, requeued from the
   dead letters page it succeeds, the row showing "requeued";
5. a cron job made on the jobs page, its next fire times previewed as it is typed (and a
   bad expression's 400 under the field), paused and deleted;
6. a task body of <script> and <img onerror> shows as text and runs nothing;
7. the `other` app's token asking for shop's task sees the 403 message, not the task, and
   the cluster page says it needs an admin token; an admin token sees the cluster;
8. at a 390 px phone width the overview has no horizontal overflow and the nav folds;
9. the browser's log has no Content-Security-Policy violation.

A screenshot of each page goes to $MOONCAKE_TEST_ARTIFACTS/console/ (or the build's
tests/console-screenshots/, or /tmp/console-screenshots/); the directory is printed.
Chromium, chromedriver (apt) and selenium (pip) come from tools/setup; missing, the test fails.

MOONCAKE_CONSOLE_DIR=gateway/console serves the console's files from that directory
(with the gateway's headers) through a local proxy in front of the gateway, to try an
edit without rebuilding; without it the files are the binary's own. The steps build on
each other (one mooncake, one browser), so they run all together, in order."""
import base64
import http.client
import http.server
import json
import os
import re
import sys
import threading
import time
import uuid as uuidlib

from harness import MOONCAKE_BIN, CallbackServer, Env, now_ms, run

try:
    from selenium import webdriver
    from selenium.common.exceptions import (NoSuchElementException,
                                            StaleElementReferenceException, TimeoutException)
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait
    SELENIUM = None
except ImportError as e:
    SELENIUM = str(e)

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
SHOP = "shop-console-token-0123"
OTHER = "other-console-token-0123"
ADMIN = "admin-console-token-0123"
XSS = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">'
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
PENDING = {"accepted", "pendingStore", "pendingWheel", "held", "calling"}


def shots_dir():
    base = os.environ.get("MOONCAKE_TEST_ARTIFACTS")
    if base:
        return os.path.join(base, "console")
    build = os.path.dirname(os.path.abspath(MOONCAKE_BIN)) if os.path.isabs(MOONCAKE_BIN) else ""
    if build and os.path.exists(os.path.join(build, "CMakeCache.txt")):
        return os.path.join(build, "tests", "console-screenshots")
    return "/tmp/console-screenshots"


SHOTS = shots_dir()


class S:
    """What the tests share: one broker-backed mooncake, one endpoint, one browser."""
    env = server = proc = driver = base = proxy = None
    port = 0
    ok_404 = False  # the endpoint's /flaky path answers 404 until this is set
    log = []        # every browser log entry read so far
    ok_uuid = cancel_uuid = None
    cancel_due = 0


def respond(call):
    if call["path"].startswith("/flaky") and not S.ok_404:
        return (404, {}, b"no such order")
    return (200, {}, b'{"ok":true}')


# ---- the API, as a client would use it --------------------------------------------------

def api(method, path, body=None, token=SHOP):
    c = http.client.HTTPConnection("127.0.0.1", S.port, timeout=30)
    try:
        h = {"Authorization": "Bearer " + token}
        if body is not None:
            h["Content-Type"] = "application/json"
        c.request(method, path, body=None if body is None else json.dumps(body), headers=h)
        r = c.getresponse()
        return r.status, json.loads(r.read() or b"null")
    finally:
        c.close()


def submit(uid, due, path, body="hi", **extra):
    status, a = api("POST", "/submit", {"appId": "shop", "uuid": uid, "expireTime": due,
                                        "callback": {"url": S.server.url(path), "body": body},
                                        **extra})
    assert status == 200, (status, a)


def api_state(uid):
    status, a = api("GET", f"/api/task?appId=shop&uuid={uid}")
    return a["data"]["state"] if status == 200 else None


def wait_api_state(uid, want, timeout=30):
    deadline = time.time() + timeout
    seen = None
    while time.time() < deadline:
        seen = api_state(uid)
        if seen in want:
            return seen
        time.sleep(0.1)
    raise AssertionError(f"{uid}: not {want} after {timeout}s (last {seen})")


def new_uuid(tag):
    return f"console-{tag}-{uuidlib.uuid4().hex[:8]}"


# ---- the browser ---------------------------------------------------------------------------

def start_browser():
    o = webdriver.ChromeOptions()
    o.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,900",
              "--disable-gpu", "--lang=en-US"):
        o.add_argument(a)
    o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=o)


def wait(cond, timeout=20, what="condition"):
    try:
        # A page re-renders what it refreshes: an element found may be gone a moment later.
        return WebDriverWait(S.driver, timeout, poll_frequency=0.1,
                             ignored_exceptions=(NoSuchElementException,
                                                 StaleElementReferenceException)).until(cond)
    except TimeoutException:
        shot("failed-" + what.replace(" ", "-")[:40])
        raise AssertionError(f"timed out after {timeout}s waiting for {what}; page: "
                             f"{S.driver.current_url}\n{body_text()[:1500]}")


def el(css, timeout=20):
    return wait(EC.visibility_of_element_located((By.CSS_SELECTOR, css)), timeout, css)


def body_text():
    try:
        return S.driver.find_element(By.TAG_NAME, "body").text
    except Exception:
        return ""


def shot(name):
    """A PNG of the whole page (up to 5000 px tall), not only the window."""
    os.makedirs(SHOTS, exist_ok=True)
    path = os.path.join(SHOTS, re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") + ".png")
    try:
        w, h = S.driver.execute_script("return [document.documentElement.clientWidth, "
                                       "Math.min(document.documentElement.scrollHeight, 5000)]")
        png = S.driver.execute_cdp_cmd("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": w, "height": h, "scale": 1}})
        with open(path, "wb") as f:
            f.write(base64.b64decode(png["data"]))
    except Exception:  # an open dialog, say: the window as it is
        S.driver.save_screenshot(path)


def read_log():
    S.log.extend(S.driver.get_log("browser"))


def go(route):
    """Shows #/route (a hash change: the page is not reloaded)."""
    S.driver.execute_script("location.hash = arguments[0]", route)


def accept_confirm():
    wait(EC.alert_is_present(), 5, "the confirm dialog")
    S.driver.switch_to.alert.accept()


def login(token):
    d = S.driver
    d.get(S.base + "/console/")
    d.execute_script("sessionStorage.clear()")
    d.get(S.base + "/console/#/overview")
    box = el("#login-token")
    box.clear()
    box.send_keys(token)
    d.find_element(By.ID, "login-submit").click()
    el("#app")


def state_badge():
    return S.driver.execute_script(
        "const b = document.querySelector('#task-state .badge'); return b && b.dataset.state")


def look_up(app, uid):
    go("#/task")
    a = el("#task-form input[name=app]")
    a.clear()
    a.send_keys(app)
    u = S.driver.find_element(By.CSS_SELECTOR, "#task-form input[name=uuid]")
    u.clear()
    u.send_keys(uid)
    S.driver.find_element(By.CSS_SELECTOR, "#task-form button[type=submit]").click()


# ---- the tests ---------------------------------------------------------------------------

def test_login_refuses_a_wrong_token_and_the_overview_draws():
    d = S.driver
    d.get(S.base + "/console/")
    # The files come with the gateway's headers.
    c = http.client.HTTPConnection("127.0.0.1", S.port if not S.proxy else S.proxy, timeout=10)
    c.request("GET", "/console/")
    r = c.getresponse()
    r.read()
    assert r.status == 200 and r.getheader("Content-Security-Policy") == CSP, \
        (r.status, r.getheader("Content-Security-Policy"))
    assert r.getheader("X-Content-Type-Options") == "nosniff"
    el("#login-token")
    assert d.find_element(By.ID, "login-token").get_attribute("type") == "password"
    shot("login")
    box = d.find_element(By.ID, "login-token")
    box.send_keys("not-a-token-0123456789")
    d.find_element(By.ID, "login-submit").click()
    err = el("#login-error")
    assert err.text.strip(), "no message for a refused token"
    assert not d.execute_script("return sessionStorage.length"), "a refused token was kept"
    login(SHOP)
    assert "token" not in d.current_url.lower()
    # The overview: counts, three charts of the last hour.
    wait(lambda d: d.find_elements(By.CSS_SELECTOR, "#overview-kpis .kpi"), what="the counts")
    wait(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#overview-charts svg.chart")) == 3,
         what="three charts")
    read_log()


def test_a_task_goes_from_pending_to_succeeded_on_its_page():
    # Also the task to cancel (next test), due a little later.
    S.cancel_uuid, S.cancel_due = new_uuid("cancel"), now_ms() + 12000
    submit(S.cancel_uuid, S.cancel_due, "/cancel")
    S.ok_uuid = new_uuid("ok")
    submit(S.ok_uuid, now_ms() + 6000, "/ok", body='{"order":42}')
    look_up("shop", S.ok_uuid)
    el("#task-state .badge")
    first = state_badge()
    assert first in PENDING, first
    wait(lambda d: state_badge() == "succeeded", 30, "the task to succeed")
    tl = el("#task-timeline")
    assert "HTTP 200" in tl.text and "SUCCEEDED" in tl.text, tl.text
    assert "/ok" in el("#task-result").text
    shot("task-timeline")
    assert len(S.server.calls_to("/ok")) == 1
    read_log()


def test_a_task_cancelled_from_its_page_is_not_called():
    look_up("shop", S.cancel_uuid)
    el("#task-state .badge")
    assert state_badge() in PENDING, state_badge()
    el("#task-cancel").click()
    accept_confirm()
    wait(lambda d: state_badge() == "cancelled", 20, "the task to be cancelled")
    assert S.driver.find_element(By.ID, "task-cancel").get_attribute("disabled")
    # Past its due time, the endpoint has not been called.
    while now_ms() < S.cancel_due + 1500:
        time.sleep(0.1)
    assert api_state(S.cancel_uuid) == "cancelled"
    assert not S.server.calls_to("/cancel"), "a cancelled task was called"
    read_log()


def test_run_now_from_the_page_calls_a_task_due_later():
    uid = new_uuid("runnow")
    submit(uid, now_ms() + 3_600_000, "/runnow")
    look_up("shop", uid)
    wait(lambda d: state_badge() in PENDING, 10, "the pending task")
    el("#task-run-now").click()
    accept_confirm()
    wait(lambda d: state_badge() == "succeeded", 20, "the task run now to succeed")
    assert len(S.server.calls_to("/runnow")) == 1
    read_log()


def test_a_dead_letter_requeued_from_the_page_succeeds():
    uid = new_uuid("dead")
    submit(uid, now_ms() + 300, "/flaky")
    wait_api_state(uid, {"failed", "dead"})
    S.ok_404 = True
    go("#/dead-letters")
    row = f'tr[data-uuid="{uid}"]'
    el(row)
    S.driver.find_element(By.CSS_SELECTOR, row + " [data-requeue]").click()
    accept_confirm()
    wait(lambda d: d.find_elements(By.CSS_SELECTOR,
                                   row + ' [data-result] .badge[data-state="requeued"]'),
         15, "the requeue result on the row")
    assert S.driver.find_elements(By.CSS_SELECTOR,
                                  row + ' [data-requeued] .badge[data-state="requeued"]'), \
        "the Requeued column says so"
    shot("dead-letters")
    wait_api_state(uid, {"succeeded"})
    look_up("shop", uid)
    wait(lambda d: state_badge() == "succeeded", 15, "the requeued task's page")
    assert [c["nth"] for c in S.server.calls_to("/flaky")] == [1, 2]
    read_log()


def test_a_cron_job_is_previewed_made_paused_and_deleted():
    d = S.driver
    jid = new_uuid("job")
    go("#/jobs")
    el("#job-new").click()
    el("#job-id").send_keys(jid)
    cron = d.find_element(By.ID, "job-cron")
    cron.clear()
    cron.send_keys("61 * * * * ?")
    err = el("#job-cron-error", 10)
    assert "cron" in err.text.lower() or "61" in err.text, err.text
    for _ in range(len("61 * * * * ?")):
        cron.send_keys("\b")
    cron.send_keys("*/30 * * * * ?")
    tz = d.find_element(By.ID, "job-tz")
    tz.clear()
    tz.send_keys("Asia/Tokyo")
    wait(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#job-preview li time")) == 5
         and not d.find_element(By.ID, "job-cron-error").is_displayed(), 10, "five fire times")
    times = [int(t.get_attribute("datetime")[17:19]) for t in
             d.find_elements(By.CSS_SELECTOR, "#job-preview li time")]
    assert all(s in (0, 30) for s in times), times
    d.find_element(By.ID, "job-url").send_keys(S.server.url("/job"))
    shot("jobs-preview")
    d.find_element(By.ID, "job-save").click()
    wait(lambda d: "Saved" in d.find_element(By.ID, "job-save-msg").text, 10, "the save")
    row = f'tr[data-job="{jid}"]'
    wait(lambda d: d.find_elements(By.CSS_SELECTOR, row + '[data-status="ACTIVE"]'), 15,
         "the job listed active")
    shot("jobs")
    d.find_element(By.CSS_SELECTOR, row + ' [data-action="pause"]').click()
    wait(lambda d: d.find_elements(By.CSS_SELECTOR, row + '[data-status="PAUSED"]'), 15,
         "the job paused")
    d.find_element(By.CSS_SELECTOR, row + ' [data-action="delete"]').click()
    accept_confirm()
    wait(lambda d: not d.find_elements(By.CSS_SELECTOR, row), 15, "the job gone")
    read_log()


def test_a_body_of_markup_shows_as_text():
    d = S.driver
    uid = new_uuid("xss")
    submit(uid, now_ms() + 600000, "/xss", body=XSS)
    look_up("shop", uid)
    body = el("#task-body")
    assert body.text == XSS, body.text
    assert not d.find_elements(By.CSS_SELECTOR, "#task-result img, #task-result script")
    go("#/tasks")
    el(f'tr[data-uuid="{uid}"]')
    shot("tasks")
    assert d.execute_script("return typeof window.__xss") == "undefined"
    read_log()


def test_another_apps_token_sees_403_not_the_task():
    d = S.driver
    el("#logout").click()
    wait(lambda d: d.find_element(By.ID, "login").is_displayed(), 5, "the login")
    assert not d.execute_script("return sessionStorage.length"), "logout left the token"
    login(OTHER)
    look_up("shop", S.ok_uuid)
    err = el("#task-result .error")
    assert "403" in err.text, err.text
    assert not d.find_elements(By.CSS_SELECTOR, "#task-state"), "the task was shown"
    assert S.ok_uuid not in el("#task-result").text.replace(S.ok_uuid + ":", "")
    go("#/cluster")
    assert "admin token" in el("#cluster-needs-admin").text
    read_log()


def test_an_admin_sees_the_cluster():
    d = S.driver
    el("#logout").click()
    login(ADMIN)
    box = el("#app-select")
    box.clear()
    box.send_keys("shop\n")
    go("#/cluster")
    wait(lambda d: d.find_elements(By.CSS_SELECTOR, "#cluster-body section.group"), 20,
         "the consumer groups")
    assert d.find_elements(By.CSS_SELECTOR, "#cluster-body .bar")
    shot("cluster")
    go("#/overview")
    wait(lambda d: d.find_elements(By.CSS_SELECTOR, "#overview-cluster .bar"), 20,
         "the partitions' lag on the overview")
    wait(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#overview-charts svg.chart")) == 3,
         what="three charts")
    shot("overview")
    read_log()


def test_the_overview_fits_a_phone():
    d = S.driver
    # A phone: a 390 x 844 CSS px viewport that honours <meta name=viewport> (a desktop
    # window is not let as narrow).
    d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                      {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True})
    try:
        d.refresh()
        wait(lambda d: d.find_elements(By.CSS_SELECTOR, "#overview-kpis .kpi"), what="the counts")
        wait(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#overview-charts svg.chart")) == 3,
             what="three charts")
        shot("phone-overview")
        width, inner = d.execute_script(
            "return [document.documentElement.scrollWidth, window.innerWidth]")
        wide = d.execute_script(
            "return [...document.querySelectorAll('body *')].filter(e => "
            "e.getBoundingClientRect().right > window.innerWidth + 1).slice(0, 5)"
            ".map(e => e.tagName + '.' + e.className)")
        assert width <= inner, f"the page is {width} px wide in a {inner} px window: {wide}"
        assert not d.find_element(By.ID, "nav").is_displayed(), "the nav is not folded"
        d.find_element(By.ID, "menu-toggle").click()
        wait(lambda d: d.find_element(By.ID, "nav").is_displayed(), 5, "the nav to open")
        shot("phone-menu")
    finally:
        d.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    read_log()


def test_no_content_security_policy_violation():
    read_log()
    csp = [e for e in S.log if "Content Security Policy" in e["message"]
           or "Refused to" in e["message"]]
    assert not csp, "\n".join(e["message"] for e in csp)
    # The answers the tests asked for (401 at the login, 403) are logged as failed
    # loads; nothing else may be an error.
    other = [e for e in S.log if e["level"] == "SEVERE"
             and "Failed to load resource" not in e["message"]]
    assert not other, "\n".join(e["message"] for e in other)


# ---- setting up ------------------------------------------------------------------------------

class DevProxy:
    """MOONCAKE_CONSOLE_DIR: /console/* from a directory, everything else forwarded to the
    gateway with its Host header kept (so same-origin stays same-origin)."""

    def __init__(self, directory, upstream):
        types = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
                 ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do(self):
                if self.path.split("?")[0] in ("/console", "/console/") or \
                        self.path.startswith("/console/"):
                    name = self.path.split("?")[0][len("/console/"):] or "index.html"
                    path = os.path.join(directory, os.path.basename(name))
                    if not os.path.isfile(path):
                        return self.answer(404, {}, b"not found")
                    with open(path, "rb") as f:
                        data = f.read()
                    return self.answer(200, {"Content-Type": types.get(
                        os.path.splitext(path)[1], "application/octet-stream"),
                        "Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
                        "Referrer-Policy": "no-referrer", "Cache-Control": "no-cache"}, data)
                n = int(self.headers.get("Content-Length") or 0)
                c = http.client.HTTPConnection("127.0.0.1", upstream, timeout=30)
                c.request(self.command, self.path, body=self.rfile.read(n) if n else None,
                          headers={k: v for k, v in self.headers.items()})
                r = c.getresponse()
                body = r.read()
                c.close()
                self.answer(r.status, {k: v for k, v in r.getheaders()
                                       if k.lower() not in ("content-length", "connection",
                                                            "transfer-encoding")}, body)

            def answer(self, status, headers, body):
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def set_up():
    S.server = CallbackServer(respond=respond)
    S.env = Env(partitions=3)
    S.proc = S.env.start("all", "--app-tokens", f"shop={SHOP},other={OTHER}",
                         "--admin-tokens", ADMIN, "--executor-allow-cidrs", "127.0.0.1/32",
                         wait_ready=False)
    S.env.wait_ready(S.proc, timeout=90)
    S.port = S.proc.http_port
    S.base = f"http://127.0.0.1:{S.port}"
    if os.environ.get("MOONCAKE_CONSOLE_DIR"):
        proxy = DevProxy(os.path.abspath(os.environ["MOONCAKE_CONSOLE_DIR"]), S.port)
        S.proxy = proxy.port
        S.base = f"http://127.0.0.1:{proxy.port}"
        print(f"     console files from {os.environ['MOONCAKE_CONSOLE_DIR']} via {S.base}",
              flush=True)
    # A fresh broker's first transactions take a moment: one task through first.
    submit("console-warm-up", now_ms(), "/warm")
    wait_api_state("console-warm-up", {"succeeded"}, 60)
    S.driver = start_browser()
    print(f"     screenshots in {SHOTS}", flush=True)


def tear_down():
    driver, env, server = S.driver, S.env, S.server
    S.driver = S.env = S.server = None
    if driver:
        driver.quit()
    if env:
        env.stop_all()
    if server:
        server.close()


TESTS = [test_login_refuses_a_wrong_token_and_the_overview_draws,
         test_a_task_goes_from_pending_to_succeeded_on_its_page,
         test_a_task_cancelled_from_its_page_is_not_called,
         test_run_now_from_the_page_calls_a_task_due_later,
         test_a_dead_letter_requeued_from_the_page_succeeds,
         test_a_cron_job_is_previewed_made_paused_and_deleted,
         test_a_body_of_markup_shows_as_text,
         test_another_apps_token_sees_403_not_the_task,
         test_an_admin_sees_the_cluster,
         test_the_overview_fits_a_phone,
         test_no_content_security_policy_violation]

if __name__ == "__main__":
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    if SELENIUM or missing:
        print("FAIL test_console: the browser test needs chromium, chromium-driver and "
              f"selenium (missing: {', '.join(missing) or SELENIUM}); run tools/setup",
              flush=True)
        sys.exit(1)
    try:
        set_up()
        run(TESTS)  # exits
    finally:
        tear_down()

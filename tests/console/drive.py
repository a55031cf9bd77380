"""Drives the web console in a real headless Chromium, the way a person would.

Started by tests/console.rs against the real server, with:
CASELOAD_URL, CASELOAD_USERNAME, CASELOAD_PASSWORD  the server and a user;
CASELOAD_PLUGINS_DIR, CASELOAD_RUNAWAY_WASM          where to drop a plugin, and which;
CASELOAD_G1                                          a G-set file to upload;
CASELOAD_CHROMEDRIVER, CASELOAD_CHROMIUM             the browser;
CASELOAD_AXE                                         axe-core's axe.min.js;
TZ                                                   the browser's time zone, not UTC
                                                     (times must show in it);
CASELOAD_SCREENSHOTS (optional)                      a directory for the docs' screenshots;
CASELOAD_VERSIONED_V1, CASELOAD_VERSIONED_V2         builds 1.0.0 and 2.0.0 of the test guest
                                                     `versioned`, to publish (some scenarios).

Its one argument names the scenario (`tour` by default), one per test of tests/console.rs:
`tour` goes through every page; the others each follow one part of the console closely.

Fails on any step that does not happen, any script error or Content-Security-Policy
violation in the browser's console, and any serious or critical axe-core violation.

Besides the page, the drive watches the page's own calls: `RECORDER` wraps `fetch` (to
see which streams are open and which URLs were asked for, to hold one answer back, and to
make a poll fail as a dropped network does) and the object-URL calls (to see that download
links are freed).
"""

import json
import os
import re
import shutil
import sys
import time
import urllib.parse
import urllib.request
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

BASE = os.environ["CASELOAD_URL"]
SCREENSHOTS = os.environ.get("CASELOAD_SCREENSHOTS")
ZONE = os.environ.get("TZ", "")

RECORDER = """
const record = window.caseloadTest = {
  fetches: [], failPluginEvents: 0, pluginEventFailures: 0, hold: null, objectUrls: new Set(),
};
const originalFetch = window.fetch.bind(window);
window.fetch = async (input, init = {}) => {
  const url = String(input instanceof Request ? input.url : input);
  record.fetches.push({ url, method: init.method ?? 'GET', signal: init.signal ?? null });
  if (record.failPluginEvents > 0 && url.startsWith('/plugin_events')) {
    record.failPluginEvents -= 1;
    record.pluginEventFailures += 1;
    throw new TypeError('Failed to fetch');
  }
  const hold = record.hold;
  if (hold && url === hold.url && !hold.caught) {
    hold.caught = true;
    await hold.released;
    const answer = originalFetch(input, init);
    answer.finally(() => { hold.settled = true; }).catch(() => {});
    return answer;
  }
  return originalFetch(input, init);
};
record.holdNext = (url) => {
  let release;
  const released = new Promise((resolve) => { release = resolve; });
  record.hold = { url, released, release, caught: false, settled: false };
};
record.openStreams = (path) => record.fetches
  .filter((call) => call.url === path && !(call.signal && call.signal.aborted)).length;
const createObjectURL = URL.createObjectURL.bind(URL);
const revokeObjectURL = URL.revokeObjectURL.bind(URL);
URL.createObjectURL = (object) => {
  const url = createObjectURL(object);
  record.objectUrls.add(url);
  return url;
};
URL.revokeObjectURL = (url) => {
  record.objectUrls.delete(url);
  revokeObjectURL(url);
};
"""


def start_browser():
    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("CASELOAD_CHROMIUM", "/usr/bin/chromium")
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--lang=en-US",
                     "--window-size=1280,800", "--disable-gpu", "--force-device-scale-factor=1"]:
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(os.environ["CASELOAD_CHROMEDRIVER"])
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_script_timeout(60)
    return driver


class Console:
    def __init__(self, driver):
        self.driver = driver
        self.console_problems = []
        self.accessibility_problems = []
        with open(os.environ["CASELOAD_AXE"], encoding="utf-8") as file:
            self.axe = file.read()

    def wait(self, condition, what, timeout=60):
        try:
            return WebDriverWait(self.driver, timeout, poll_frequency=0.2,
                                 ignored_exceptions=[StaleElementReferenceException]).until(lambda _: condition())
        except TimeoutException:
            self.collect_console()
            raise AssertionError(f"timed out waiting for {what}; page: {self.driver.current_url}; "
                                 f"console: {self.console_problems}") from None

    def find(self, selector):
        return self.driver.find_element(By.CSS_SELECTOR, selector)

    def all(self, selector):
        return self.driver.find_elements(By.CSS_SELECTOR, selector)

    def text(self, selector):
        return self.driver.execute_script(
            "return document.querySelector(arguments[0])?.innerText.trim() ?? ''", selector)

    def texts(self, selector):
        return self.driver.execute_script(
            "return [...document.querySelectorAll(arguments[0])].map((e) => e.innerText)", selector)

    def go(self, hash_route, heading):
        self.driver.execute_script("location.hash = arguments[0]", hash_route)
        self.wait(lambda: self.text("h1").startswith(heading), f"the page {heading!r}")

    def collect_console(self):
        for entry in self.driver.get_log("browser"):
            message = entry.get("message", "")
            # A refused request (a 4xx the page expects and shows) is logged by the browser as
            # a failed resource load; script errors and policy violations are what count.
            network_4xx = entry.get("source") == "network" and " status of 4" in message
            if "Content Security Policy" in message or (entry["level"] == "SEVERE" and not network_4xx):
                self.console_problems.append(message)

    def check_accessibility(self, page):
        self.driver.execute_script(self.axe)
        violations = self.driver.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "axe.run(document, {resultTypes: ['violations']})"
            ".then((result) => done(result.violations.map((v) => ({id: v.id, impact: v.impact, help: v.help,"
            " nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' '))}))))"
            ".catch((error) => done([{id: 'axe-error', impact: 'critical', help: String(error), nodes: []}]));")
        serious = [v for v in violations if v["impact"] in ("serious", "critical")]
        for violation in serious:
            self.accessibility_problems.append(f"{page}: {violation}")
        print(f"axe on {page}: {len(violations)} violations, {len(serious)} serious or critical")

    def screenshot(self, name, element=None):
        if not SCREENSHOTS:
            return
        path = os.path.join(SCREENSHOTS, name)
        if element is None:
            self.driver.save_screenshot(path)
        else:
            element.screenshot(path)
        print(f"screenshot {path}")

    def job_state(self):
        return self.text(".facts dd .badge")

    def job_id(self):
        return urllib.parse.unquote(self.driver.current_url.split("#/job/")[1])

    def record(self, expression, *arguments):
        """Evaluates `expression` on RECORDER's record, `test`."""
        return self.driver.execute_script(f"const test = window.caseloadTest; return {expression};", *arguments)

    def open_streams(self, path):
        return self.record("test.openStreams(arguments[0])", path)

    def displayed(self, selector):
        return any(element.is_displayed() for element in self.all(selector))

    def button(self, text):
        buttons = self.driver.find_elements(By.XPATH, f"//button[normalize-space()='{text}']")
        assert len(buttons) == 1, f"{len(buttons)} buttons {text!r}"
        return buttons[0]

    def sign_in(self, username=None, password=None):
        """Loads the console afresh (which signs out whoever was signed in) and signs in."""
        username = username or os.environ["CASELOAD_USERNAME"]
        self.driver.get(BASE + "/")
        self.wait(lambda: self.text("h1") == "Sign in", "the sign-in page")
        self.driver.execute_script(RECORDER)
        self.find("#username").send_keys(username)
        self.find("#password").send_keys(password or os.environ["CASELOAD_PASSWORD"], Keys.ENTER)
        self.wait(lambda: self.text("h1") == "Jobs", f"the jobs page after {username} signs in")

    def click(self, selector, what):
        """Clicks the element `selector` finds, again if the page drew it anew meanwhile."""
        self.wait(lambda: self.all(selector) and (self.find(selector).click() or True), what)

    def set_value(self, selector, value, event="input"):
        """Sets a control's value as a paste would, and tells the page."""
        self.driver.execute_script(
            "arguments[0].value = arguments[1];"
            "arguments[0].dispatchEvent(new Event(arguments[2], {bubbles: true}))", self.find(selector), value, event)

    def type_into(self, selector, text):
        """Replaces a control's text by typing, as a person would."""
        element = self.find(selector)
        element.send_keys(Keys.CONTROL, "a")
        element.send_keys(Keys.BACKSPACE, text)

    def editor(self):
        """The launch editor's JSON, or None while it is not JSON."""
        try:
            return json.loads(self.find("#input-editor").get_property("value"))
        except (json.JSONDecodeError, StaleElementReferenceException):
            return None

    def answer_confirm(self, accept):
        """Answers the page's confirmation dialog; its text."""
        alert = WebDriverWait(self.driver, 10).until(lambda driver: driver.switch_to.alert)
        text = alert.text
        if accept:
            alert.accept()
        else:
            alert.dismiss()
        return text

    def value(self, selector):
        return self.find(selector).get_property("value")

    def times(self, selector):
        """Each <time> under `selector`: [its text, its datetime]."""
        return self.driver.execute_script(
            "return [...document.querySelectorAll(arguments[0] + ' time')]"
            ".map((e) => [e.innerText.trim(), e.getAttribute('datetime')])", selector)


class Api:
    """The API as a script calls it, beside the page: a user (the test's by default), its
    own token."""

    def __init__(self, username=None, password=None):
        self.token = None
        self.token = self.send("POST", "/login", {"username": username or os.environ["CASELOAD_USERNAME"],
                                                  "password": password or os.environ["CASELOAD_PASSWORD"]})["access_token"]

    def send(self, method, path, body=None, data=None, content_type="application/json"):
        headers = {"content-type": content_type}
        if self.token:
            headers["authorization"] = f"Bearer {self.token}"
        if body is not None:
            data = json.dumps(body).encode()
        request = urllib.request.Request(BASE + path, data=data, method=method, headers=headers)
        with urllib.request.urlopen(request, timeout=60) as response:
            text = response.read()
            return json.loads(text) if text else None

    def job(self, job_id):
        return self.send("GET", f"/job/{urllib.parse.quote(job_id, safe='')}")["job"][job_id]

    def launch(self, problem, body, project=None):
        suffix = f"?project={project}" if project else ""
        return self.send("POST", f"/problem/{problem}{suffix}", body)["job"]

    def wait_ended(self, job_id):
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            view = self.send("GET", f"/job/{urllib.parse.quote(job_id, safe='')}?wait=10")["job"][job_id]
            if view["status"] in ("COMPLETED", "FAILED", "CANCELLED"):
                return view
        raise AssertionError(f"job {job_id} never ended")

    def upload(self, text, filename, project=None):
        query = urllib.parse.urlencode({"filename": filename, **({"project": project} if project else {})})
        return self.send("POST", f"/data_file?{query}", data=text.encode(), content_type="application/json")

    def publish(self, path, current=True):
        with open(path, "rb") as file:
            return self.send("POST", f"/plugins?current={'true' if current else 'false'}", data=file.read(),
                             content_type="application/wasm")

    def add_user(self, username, password, role):
        self.send("POST", "/admin/users", {"username": username, "password": password, "role": role})


def local_time(rfc3339):
    """An API time as the console must show it in the browser's zone (English):
    `Nov 26, 2026, 13:40:37 GMT+9`."""
    local = datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).astimezone(ZoneInfo(ZONE))
    hours, rest = divmod(int(local.utcoffset().total_seconds()), 3600)
    zone = f"GMT{hours:+d}" + (f":{rest // 60:02d}" if rest else "") if hours or rest else "GMT"
    return f"{local:%b} {local.day}, {local.year}, {local:%H:%M:%S} {zone}"


def assert_times(shown, *expected):
    """`shown` ([text, datetime] of each <time>) are the API's `expected` times, in local time."""
    assert [when for _, when in shown] == list(expected), (shown, expected)
    assert [text for text, _ in shown] == [local_time(when) for when in expected], (shown, expected)


def main():
    scenario = sys.argv[1] if len(sys.argv) > 1 else "tour"
    driver = start_browser()
    console = Console(driver)
    try:
        SCENARIOS[scenario](console)
    finally:
        console.collect_console()
        driver.quit()
    problems = console.console_problems + console.accessibility_problems
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    print(f"console: every step passed ({scenario})")


def completed_count(counts):
    match = re.search(r"COMPLETED\s+(\d+)", counts)
    return int(match.group(1)) if match else 0


def tour(c):
    driver = c.driver
    api = Api()
    driver.get(BASE + "/")
    # Sign in with the keyboard alone: the user name field has the focus; nothing of a
    # signed-in user (the sections, "Sign out") shows yet.
    c.wait(lambda: c.text("h1") == "Sign in", "the sign-in page")
    zone = driver.execute_script("return Intl.DateTimeFormat().resolvedOptions().timeZone")
    assert zone == ZONE and ZONE not in ("", "UTC", "Etc/UTC"), f"the browser's zone is {zone!r}, TZ {ZONE!r}"
    driver.execute_script(RECORDER)
    assert not c.displayed("#nav") and not c.displayed("#sign-out"), "the sign-in page shows the sections or Sign out"
    c.check_accessibility("sign-in")
    focused = driver.switch_to.active_element
    focused.send_keys(os.environ["CASELOAD_USERNAME"], Keys.TAB, os.environ["CASELOAD_PASSWORD"], Keys.ENTER)
    c.wait(lambda: c.text("h1") == "Jobs", "the jobs page after signing in")
    assert c.displayed("#nav") and c.displayed("#sign-out")

    # A plugin dropped into the plugins directory appears as it loads, also after a poll
    # of the plugin events failed as a dropped network does.
    c.go("#/usecases", "Use cases")
    c.wait(lambda: any("maxcut" in t for t in c.texts(".plugin-event")), "the built-in plugins' events")
    loaded = c.times(".plugin-event")[-1]
    assert loaded[0] == local_time(loaded[1]), loaded
    c.record("test.failPluginEvents = 1")
    c.wait(lambda: c.record("test.pluginEventFailures") == 1, "a failed poll of the plugin events")
    shutil.copy(os.environ["CASELOAD_RUNAWAY_WASM"], os.path.join(os.environ["CASELOAD_PLUGINS_DIR"], "runaway.wasm"))
    c.wait(lambda: any("runaway" in t for t in c.texts(".plugin-event[data-kind=loaded]")), "the runaway plugin's load event")
    c.wait(lambda: any("runaway" in t for t in c.texts(".card h2")), "the runaway use case's card")
    c.check_accessibility("use cases")

    # Launch max-cut from the form: the editor starts on the schema's example, checked live.
    # Its versions are listed above: the built-in one, current, with nothing to do on it.
    c.go("#/usecase/maxcut", "Use case maxcut")
    built_in = c.wait(lambda: c.all('.versions tr[data-source="built-in"]'), "maxcut's versions")[0]
    assert "current" in built_in.text and not built_in.find_elements(By.TAG_NAME, "button"), built_in.text
    # A file that is not a component is refused, and the page says the server's why.
    c.find("#plugin-file").send_keys(os.path.abspath(os.environ["CASELOAD_G1"]))
    c.button("Publish").click()
    c.wait(lambda: c.text("#versions-outcome .error"), "the refusal of a file that is not a component")
    c.wait(lambda: c.text("#input-verdict") == "Valid input.", "the example to check valid")
    editor = c.find("#input-editor")
    editor.send_keys(Keys.END, "oops")
    c.wait(lambda: "Not JSON" in c.text("#input-verdict"), "a syntax error to show")
    driver.execute_script("arguments[0].value = JSON.stringify({num_nodes: 5, edges: [[0, 1, 1], [1, 9, 1]]});"
                          "arguments[0].dispatchEvent(new Event('input'))", editor)
    c.wait(lambda: "/edges/1" in c.text("#input-verdict"), "the use case's own message for a bad edge")
    driver.execute_script("arguments[0].value = JSON.stringify({num_nodes: 5, edges: [[0, 1, 1], [1, 2, 1], [2, 3, 1], [3, 4, 1], [4, 0, 1]]});"
                          "arguments[0].dispatchEvent(new Event('input'))", editor)
    c.wait(lambda: c.text("#input-verdict") == "Valid input.", "the fixed input to check valid")
    c.check_accessibility("use case")
    c.find(".launch button[type=submit]").click()
    c.wait(lambda: "#/job/" in driver.current_url, "the new job's page")
    c.wait(lambda: c.job_state() == "COMPLETED", "the small job to complete")
    c.wait(lambda: c.all("canvas.graph"), "the picture of the small cut")
    assert "cut value" in c.text("table.summary").lower(), c.text("table.summary")
    # A finished job offers no cancel; its times are the API's, in the browser's zone.
    small = c.job_id()
    assert not c.displayed("button.danger"), "a completed job offers to cancel it"
    view = api.job(small)
    (execution,) = view["executions"].values()
    c.wait(lambda: len(c.times(".facts")) == 2, "the job's times")
    assert_times(c.times(".facts"), view["created_at"], view["ended_at"])
    assert_times(c.times("table tbody tr"), execution["began_at"])
    # The output's download link is freed when the page is left.
    c.wait(lambda: c.all("a[download]"), "the output's download link")
    assert c.record("test.objectUrls.size") == 1
    # The job is bound to the version then current; rerun on that version, picked from the
    # list, it is a new job that says which job it reran, with the same cut.
    assert c.text(".bound-version").endswith("(current at launch)"), c.text(".bound-version")
    version = c.wait(lambda: [option for option in c.all("#rerun-version option") if option.get_attribute("value")],
                     "the versions to rerun on")[0]
    version.click()
    c.button("Rerun").click()
    c.wait(lambda: "#/job/" in driver.current_url and c.job_id() != small, "the rerun's page")
    rerun = c.job_id()
    c.wait(lambda: "Rerun of" in c.text(".facts"), "the rerun's page to say what it reran")
    assert c.text(f'.facts a[href="#/job/{small}"]') == small, c.text(".facts")
    assert "(pinned as sha256:" in c.text(".bound-version"), c.text(".bound-version")
    c.wait(lambda: c.job_state() == "COMPLETED", "the rerun to complete")
    assert api.send("GET", f"/job/{rerun}/output")["cut_value"] == api.send("GET", f"/job/{small}/output")["cut_value"]
    c.wait(lambda: c.all("a[download]"), "the rerun's download link")

    # QUBO's answer is drawn as its output schema's view says: a grid of its sample.
    qubo = api.send("POST", "/problem/qubo", {"num_variables": 5, "linear": [[0, -1], [3, -2]]})["job"]
    c.go(f"#/job/{qubo}", f"Job {qubo}")
    c.wait(lambda: c.job_state() == "COMPLETED", "the QUBO job to complete")
    c.wait(lambda: c.all("canvas.sample"), "the grid of the QUBO sample")
    assert "Energy" in c.text("table.summary"), c.text("table.summary")

    # Upload G1 with a progress bar, launch it, watch its progress chart and its picture.
    c.go("#/usecase/maxcut", "Use case maxcut")
    assert c.record("test.objectUrls.size") == 0, "the download link outlived its page"
    c.wait(lambda: c.all("#dataset-file"), "the upload form")
    c.find("#dataset-file").send_keys(os.path.abspath(os.environ["CASELOAD_G1"]))
    c.find(".upload button[type=submit]").click()
    c.wait(lambda: c.all("#launch-dataset"), "the upload to finish")
    assert driver.execute_script("return document.getElementById('upload-progress').value") == 1
    c.find("#launch-dataset").click()
    c.wait(lambda: "#/job/" in driver.current_url, "the G1 job's page")
    c.wait(lambda: int(c.find("canvas.chart").get_attribute("data-points") or 0) >= 2,
           "the progress chart to move", timeout=90)
    c.wait(lambda: c.job_state() == "COMPLETED", "G1 to complete", timeout=120)
    # Max-cut reports incumbents: once one is known, the chart draws them.
    c.wait(lambda: c.find("canvas.chart").get_attribute("data-series") == "incumbents",
           "the chart of G1's incumbents")
    picture = c.wait(lambda: c.all("canvas.graph[data-settled=true]"), "G1's layout to settle", timeout=120)[0]
    summary = c.text("table.summary")
    assert "800 on side A" not in summary and "19176" in summary, summary
    # The picture answers the keyboard: zoom in, pan, reset.
    picture.send_keys("+", Keys.ARROW_LEFT, "0")
    if SCREENSHOTS:
        driver.set_window_size(1280, 1000)
        driver.execute_script("document.getElementById('answer-heading').scrollIntoView()")
        time.sleep(0.5)
        c.screenshot("console-maxcut.png")
        driver.set_window_size(1280, 800)
    c.check_accessibility("job")

    # A long job, cancelled from its page.
    c.go("#/usecase/runaway", "Use case runaway")
    editor = c.wait(lambda: c.all("#input-editor"), "the runaway form")[0]
    driver.execute_script("arguments[0].value = JSON.stringify({mode: 'spin', options: {time_limit_s: 60}});"
                          "arguments[0].dispatchEvent(new Event('input'))", editor)
    c.wait(lambda: c.text("#input-verdict") == "Valid input.", "the runaway input to check valid")
    c.find(".launch button[type=submit]").click()
    c.wait(lambda: "#/job/" in driver.current_url, "the runaway job's page")
    c.wait(lambda: c.job_state() == "RUNNING", "the runaway job to start")
    runaway = c.job_id()
    stream = f"/job/{runaway}/events"
    c.wait(lambda: c.open_streams(stream) == 1, "the job page's event stream")
    assert c.displayed("button.danger"), "a running job offers no cancel"
    # Its page left before its first read answers opens no stream: the read is held back
    # until the page is gone, and when the page is opened again it has one stream.
    c.go("#/service", "Service")
    c.wait(lambda: c.open_streams(stream) == 0, "the stream to close with its page")
    c.record("test.holdNext(arguments[0])", f"/job/{runaway}")
    c.go(f"#/job/{runaway}", f"Job {runaway}")
    c.wait(lambda: c.record("test.hold.caught"), "the job page's first read")
    c.go("#/service", "Service")
    c.record("test.hold.release()")
    c.wait(lambda: c.record("test.hold.settled"), "the held read to be answered")
    c.go(f"#/job/{runaway}", f"Job {runaway}")
    c.wait(lambda: c.job_state() == "RUNNING" and c.open_streams(stream) >= 1, "the job page again")
    assert c.open_streams(stream) == 1, f"{c.open_streams(stream)} streams of {stream} open"
    c.find("button.danger").click()
    c.wait(lambda: c.job_state() == "CANCELLED", "the runaway job to be cancelled")
    assert not c.displayed("button.danger"), "a cancelled job offers to cancel it"

    # Ids that need encoding in a URL: a stray '%' in the location, and '/', '?' and '#'
    # typed into "Open".
    c.go("#/job/50%", "Job 50%")
    c.wait(lambda: c.text(".facts .error") == "No job 50%.", "the page of a job that does not exist")
    c.go("#/jobs", "Jobs")
    driver.find_element(By.ID, "job-id").send_keys("a/b?c#d", Keys.ENTER)
    c.wait(lambda: c.text(".facts .error") == "No job a/b?c#d.", "the page of an odd job id")
    assert "/job/a%2Fb%3Fc%23d" in [call["url"] for call in c.record("test.fetches")]

    # The jobs page lists all three, live, with counts per state, times in local time.
    c.go("#/jobs", "Jobs")
    c.wait(lambda: len(c.all("tr[data-job]")) >= 3, "three jobs in the list")
    c.wait(lambda: completed_count(c.text(".counts")) >= 2, "the counts per state")
    c.wait(lambda: c.find(".charts canvas").get_attribute("aria-label").find("ended") >= 0, "the per-minute chart")
    assert_times(c.times(f'tr[data-job="{small}"]'), view["created_at"], view["ended_at"])
    # "Load older jobs" is not offered when there are none, and asks for nothing if pressed.
    assert not c.button("Load older jobs").is_displayed(), "Load older jobs shown with every job listed"
    asked = c.record("test.fetches.length")
    driver.execute_script("arguments[0].click()", c.button("Load older jobs"))
    assert c.record("test.fetches.length") == asked, "a hidden Load older jobs asked again"
    c.screenshot("console-jobs.png")
    c.check_accessibility("jobs")

    # A creation-time filter is picked in local time and asked for in UTC; a job launched
    # after it shows up live.
    since = datetime.now(ZoneInfo(ZONE)).replace(second=0, microsecond=0)
    since_utc = since.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    driver.execute_script("arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('change'))",
                          c.find("#filter-since"), since.strftime("%Y-%m-%dT%H:%M"))
    c.wait(lambda: any(urllib.parse.parse_qs(urllib.parse.urlsplit(call["url"]).query).get("since") == [since_utc]
                       for call in c.record("test.fetches") if call["url"].startswith("/jobs?")),
           f"the list of jobs since {since_utc}")
    fresh = api.send("POST", "/problem/maxcut", {"num_nodes": 3, "edges": [[0, 1, 1], [1, 2, 1]]})["job"]
    c.wait(lambda: c.all(f'tr[data-job="{fresh}"]'), "the job launched after the filter's time to show up")
    driver.execute_script("arguments[0].value = ''; arguments[0].dispatchEvent(new Event('change'))", c.find("#filter-since"))

    # Past a page of jobs, "Load older jobs" adds the older ones once.
    api.send("POST", "/problem/maxcut/batch", {"jobs": [{"num_nodes": 3, "edges": [[0, 1, 1]]}] * 60})
    total = sum(api.send("GET", "/jobs/counts").values())
    c.go("#/service", "Service")
    c.go("#/jobs", "Jobs")
    c.wait(lambda: len(c.all("tr[data-job]")) == 50 and c.button("Load older jobs").is_displayed(), "a first page of 50 jobs")
    c.button("Load older jobs").click()
    c.wait(lambda: not c.button("Load older jobs").is_displayed(), "the last page")
    # Read in one script: the list re-renders rows as its jobs' statuses stream in.
    listed = c.driver.execute_script(
        "return [...document.querySelectorAll('tr[data-job]')].map((row) => row.dataset.job)")
    assert len(listed) == total and len(set(listed)) == total, f"{len(listed)} rows, {len(set(listed))} jobs of {total}"

    # An experiment on a job picked in the list: its input, two seeds, the current version;
    # its page fills in as the runs end.
    c.go("#/jobs", "Jobs")
    c.wait(lambda: c.all(f'tr[data-job="{small}"] input'), "the small job's row")
    c.find(f'tr[data-job="{small}"] input').click()
    c.button("Experiment on selected (1)").click()
    c.wait(lambda: c.text("h1") == "Experiments", "the experiments page")
    c.wait(lambda: [box.get_attribute("value") for box in c.all("input[name=experiment-job]:checked")] == [small],
           "the selected job as the input")
    c.wait(lambda: c.all("input[name=experiment-version]:checked"), "the versions in service")
    seeds = c.find("#experiment-seeds")
    seeds.clear()
    seeds.send_keys("1, 2")
    c.button("Launch experiment").click()
    c.wait(lambda: "#/experiment/" in driver.current_url, "the experiment's page")
    c.wait(lambda: "Done." in c.text("#experiment-progress-text"), "the experiment to end")
    assert "2 of 2 jobs ended: 2 completed" in c.text("#experiment-progress-text"), c.text("#experiment-progress-text")
    cell = c.text('.experiment-results tr[data-input="0"] td')
    assert "COMPLETED" in cell and api.send("GET", f"/job/{small}/output")["cut_value"] <= float(cell.split()[0]), cell
    assert "(baseline)" in c.text(".experiment-summary"), c.text(".experiment-summary")
    c.check_accessibility("experiment")
    c.go("#/experiments", "Experiments")
    c.wait(lambda: len(c.all("tr[data-experiment]")) == 1, "the experiment in the list")
    # From a use case's versions, the form starts on them, current first.
    c.go("#/usecase/maxcut", "Use case maxcut")
    c.wait(lambda: c.all('.versions tr[data-source="built-in"]'), "maxcut's versions")
    c.button("Compare versions in an experiment").click()
    c.wait(lambda: c.text("h1") == "Experiments", "the experiments page from the use case")
    c.wait(lambda: [box.get_attribute("value") for box in c.all("input[name=experiment-version]:checked")] == ["0.1.0"],
           "maxcut's versions")
    c.check_accessibility("experiments")

    # The service: this replica, live, with its workers.
    c.go("#/service", "Service")
    c.wait(lambda: "live" in c.text("tbody"), "this replica's report", timeout=30)
    c.check_accessibility("service")

    # Administration: add a viewer, make it a member, see both in the audit log.
    c.go("#/admin", "Administration")
    c.wait(lambda: c.all('tr[data-user="admin"]'), "the users")
    c.find("#new-username").send_keys("console-user")
    c.find("#new-password").send_keys("console-password-1")
    Select(c.find("#new-role")).select_by_value("viewer")
    c.button("Add user").click()
    c.wait(lambda: c.all('tr[data-user="console-user"]'), "the new user")
    Select(c.find('tr[data-user="console-user"] select')).select_by_value("member")
    c.wait(lambda: "user.changed" in c.text("table.audit"), "the change in the audit log")
    assert "user.created" in c.text("table.audit")
    c.check_accessibility("administration")

    # Projects: in one, the switcher shows its jobs, and launches go to it.
    project = api.send("POST", "/admin/projects", {"name": "console-project"})["id"]
    api.send("PUT", f"/admin/projects/{project}/members/admin", {"role": "member"})
    in_project = api.send("POST", f"/problem/maxcut?project={project}", {"num_nodes": 3, "edges": [[0, 1, 1], [1, 2, 1]]})["job"]
    c.go("#/usecases", "Use cases")
    c.wait(lambda: c.find("#project-label").is_displayed(), "the project switcher")
    Select(c.find("#project")).select_by_visible_text("console-project")
    c.go("#/jobs", "Jobs")
    c.wait(lambda: [row.get_attribute("data-job") for row in c.all("tr[data-job]")] == [in_project], "the project's jobs only")
    c.check_accessibility("jobs of a project")
    Select(c.find("#project")).select_by_visible_text("Personal")

    # Readable on a phone: nothing wider than the screen but the tables' own scrolling.
    driver.set_window_size(390, 844)
    for route, heading in [("#/jobs", "Jobs"), ("#/service", "Service"), ("#/usecase/maxcut", "Use case maxcut")]:
        c.go(route, heading)
        time.sleep(0.5)
        width = driver.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
        assert width[0] <= width[1] + 1, f"{route} is {width[0]} px wide on a {width[1]} px screen"
    c.check_accessibility("jobs on a phone")



SMALL = {"num_nodes": 3, "edges": [[0, 1, 1], [1, 2, 1]]}
SQUARE = {"num_nodes": 4, "edges": [[0, 1, 1], [1, 2, 1], [2, 3, 1], [3, 0, 1]]}


def race_graph():
    """A sparse graph with mixed weights: past enumeration, so no entrant proves its cut and
    every entrant runs."""
    n = 80
    pairs = [(i, j) for i in range(n) for j in ((i + 1) % n, (i * 7 + 3) % n, (i * 13 + 5) % n) if i != j]
    return {"num_nodes": n, "edges": [[i, j, -1 if (i + j) % 3 == 0 else 1] for i, j in pairs]}


def checked_values(c, name):
    return [box.get_attribute("value") for box in c.all(f"input[name={name}]:checked")]


def races(c):
    """A race launched from the use case's page, checked first as its launch is; its page
    lists the entrants by version and seed and marks the winner."""
    driver = c.driver
    api = Api()
    c.sign_in()
    c.go("#/usecase/maxcut", "Use case maxcut")
    c.wait(lambda: c.text("#input-verdict") == "Valid input.", "the example to check valid")
    body = race_graph()
    body["options"] = {"seed": 3, "max_iterations": 2000, "race": {"seeds": 1}}
    c.set_value("#input-editor", json.dumps(body))
    # A race of one entrant is refused by the check, as its launch would be.
    c.wait(lambda: "/options/race" in c.text("#input-verdict"), "the check to refuse a race of one")
    body["options"]["race"] = {"seeds": 3}
    c.set_value("#input-editor", json.dumps(body))
    c.wait(lambda: c.text("#input-verdict") == "Valid input.", "the race to check valid, as its launch is")
    c.find(".launch button[type=submit]").click()
    c.wait(lambda: "#/job/" in driver.current_url, "the race's page")
    race = c.job_id()
    c.wait(lambda: c.job_state() == "COMPLETED", "the race to end", timeout=120)
    view = api.job(race)
    winner = api.send("GET", f"/job/{race}/output")["winner"]
    entrants = view["race"]["entrants"]
    assert len(entrants) == 3, view
    c.wait(lambda: len(c.all("table.entrants tr[data-entrant]")) == 3, "the race's three entrants")
    rows = c.texts("table.entrants tr[data-entrant]")
    for entrant, row in zip(entrants, rows):
        assert f"seed {entrant['seed']}" in row and entrant["version"] in row, (entrant, row)
    c.wait(lambda: len(c.all("table.entrants .badge.winner")) == 1, "the winner marked")
    marked = c.find("table.entrants .badge.winner").find_element(By.XPATH, "./ancestor::tr")
    assert marked.get_attribute("data-entrant") == winner["job"], (marked.text, winner)
    # Each execution is named by its entrant, not three "Attempt 1" rows.
    names = c.texts("table.executions tbody th")
    assert sorted(names) == sorted(f"{e['version']}, seed {e['seed']}" for e in entrants), names
    c.check_accessibility("race")


def launch_form(c):
    """The launch form made from max-cut's schema and the JSON editor beside it, each
    following the other; the options as fields; a data file picked from the caller's."""
    driver = c.driver
    api = Api()
    earlier = api.launch("maxcut", SQUARE)
    api.wait_ended(earlier)
    square = api.upload(json.dumps(SQUARE), "square.json")["data_file_identifier"]
    c.sign_in()
    c.go("#/usecase/maxcut", "Use case maxcut")
    c.wait(lambda: c.all("#input-num_nodes") and c.value("#input-num_nodes") == "5", "the form, on the first example")
    assert "edges" in Select(c.find("#input-form")).first_selected_option.text, "the edge-list form is not chosen"
    assert c.value("#input-edges-0") == "0, 1, 1", c.value("#input-edges-0")
    # The form writes the editor.
    c.type_into("#input-num_nodes", "6")
    c.wait(lambda: (c.editor() or {}).get("num_nodes") == 6, "the editor to follow the node count")
    c.find("#input-edges-add-row").click()
    c.wait(lambda: c.all("#input-edges-6"), "a new edge row")
    assert driver.switch_to.active_element.get_attribute("id") == "input-edges-6", "the new row has no focus"
    driver.switch_to.active_element.send_keys(Keys.CONTROL, "a")
    driver.switch_to.active_element.send_keys(Keys.BACKSPACE, "4, 5, 2")
    c.wait(lambda: (c.editor() or {}).get("edges", [None])[-1] == [4, 5, 2], "the editor to follow the new edge")
    c.wait(lambda: c.text("#input-verdict") == "Valid input.", "the edited input to check valid")
    # The editor writes the form, its form chosen by what the input holds.
    c.set_value("#input-editor", json.dumps({"num_nodes": 3, "adj_matrix": [[0, 1, 0], [1, 0, 1], [0, 1, 0]]}))
    c.wait(lambda: c.all("#input-adj_matrix-2") and c.value("#input-adj_matrix-2") == "0, 1, 0", "the matrix in the form")
    assert "adj_matrix" in Select(c.find("#input-form")).first_selected_option.text
    assert not c.all("#input-edges-0"), "the edge rows stayed beside the matrix"
    # The options, as fields.
    c.type_into("#option-time-limit", "2")
    c.type_into("#option-seed", "7")
    c.type_into("#option-labels", "team:ops, sweep:a")
    c.wait(lambda: (c.editor() or {}).get("options") == {"time_limit_s": 2, "seed": 7}, "the options in the editor")
    c.wait(lambda: (c.editor() or {}).get("labels") == {"team": "ops", "sweep": "a"}, "the labels in the editor")
    c.type_into("#option-race-seeds", "2")
    c.wait(lambda: (c.editor() or {}).get("options", {}).get("race") == {"seeds": 2}, "the race in the editor")
    c.type_into("#option-race-seeds", "")
    c.wait(lambda: "race" not in (c.editor() or {}).get("options", {}), "the race gone from the editor")
    c.wait(lambda: any(option.get_attribute("value") == earlier for option in c.all("#option-warm-start option")),
           "the completed job offered as a warm start")
    Select(c.find("#option-warm-start")).select_by_value(earlier)
    c.wait(lambda: (c.editor() or {}).get("options", {}).get("warm_start") == earlier, "the warm start in the editor")
    Select(c.find("#option-warm-start")).select_by_value("")
    # And back: options typed in the editor show in the fields.
    c.set_value("#input-editor", json.dumps({**SMALL, "options": {"seed": 11, "time_limit_s": 3}, "labels": {"k": "v"}}))
    c.wait(lambda: c.value("#option-seed") == "11" and c.value("#option-time-limit") == "3", "the editor's options in the fields")
    assert c.value("#option-labels") == "k:v", c.value("#option-labels")
    c.check_accessibility("launch form")
    # A data file of the caller's, picked from the list: the form then holds only the
    # parameters that may stand beside it.
    c.find("#launch-source-data-file").click()
    c.wait(lambda: any(square == option.get_attribute("value") for option in c.all("#launch-data-file option")),
           "the uploaded file in the list")
    assert "square.json" in c.text("#launch-data-file"), c.text("#launch-data-file")
    Select(c.find("#launch-data-file")).select_by_value(square)
    c.wait(lambda: (c.editor() or {}).get("data_file_identifier") == square, "the data file in the editor")
    assert "num_nodes" not in c.editor(), c.editor()
    c.wait(lambda: c.all("#input-initial_partition") and not c.all("#input-num_nodes"), "the dataset's parameters alone")
    c.type_into("#input-initial_partition", "0, 1, 0, 1")
    c.wait(lambda: (c.editor() or {}).get("initial_partition") == [0, 1, 0, 1], "the parameter in the editor")
    c.wait(lambda: c.text("#input-verdict") == "Valid input.", "the dataset launch to check valid")
    c.check_accessibility("launch on a data file")
    c.find(".launch button[type=submit]").click()
    c.wait(lambda: "#/job/" in driver.current_url, "the dataset job's page")
    job = c.job_id()
    request = urllib.request.Request(f"{BASE}/job/{job}/input", headers={"authorization": f"Bearer {api.token}"})
    with urllib.request.urlopen(request, timeout=60) as response:
        assert response.headers["caseload-data-file"] == square, dict(response.headers)
    listed = api.send("GET", f"/jobs?ids={job}")["jobs"][0]
    assert listed["labels"] == {"k": "v"}, listed


def experiment_form(c):
    """The experiment form: versions and inputs picked from lists (the use case's versions,
    jobs and data files), each list the chosen use case's."""
    driver = c.driver
    api = Api()
    ring = api.launch("maxcut", {**SQUARE, "labels": {"instance": "ring"}})
    star = api.launch("maxcut", {**SMALL, "labels": {"instance": "star"}})
    quboish = api.launch("qubo", {"num_variables": 2, "linear": [[0, -1]]})
    for job in (ring, star, quboish):
        api.wait_ended(job)
    square = api.upload(json.dumps(SQUARE), "square.json")["data_file_identifier"]
    c.sign_in()
    c.wait(lambda: c.all(f'tr[data-job="{ring}"] input'), "the ring job's row")
    c.find(f'tr[data-job="{ring}"] input').click()
    c.button("Experiment on selected (1)").click()
    c.wait(lambda: c.text("h1") == "Experiments", "the experiments page")
    c.wait(lambda: checked_values(c, "experiment-job") == [ring], "the selected job, checked")
    jobs = c.wait(lambda: [box.get_attribute("value") for box in c.all("input[name=experiment-job]")], "the jobs to pick from")
    assert star in jobs and quboish not in jobs, jobs
    assert "instance:ring" in c.text(f'label[for="experiment-job-{ring}"]'), c.text(f'label[for="experiment-job-{ring}"]')
    c.wait(lambda: [box.get_attribute("value") for box in c.all("input[name=experiment-data-file]")] == [square],
           "the data file to pick")
    maxcut = {v["digest"] for v in api.send("GET", "/problem/maxcut/versions")["versions"]}
    qubo = {v["digest"] for v in api.send("GET", "/problem/qubo/versions")["versions"]}
    digests = lambda: {box.get_attribute("data-digest") for box in c.all("input[name=experiment-version]")}
    c.wait(lambda: digests() == maxcut, "maxcut's versions")
    c.check_accessibility("experiment form")
    # Another use case: its own versions and jobs, none of the previous one's.
    Select(c.find("#experiment-problem")).select_by_value("qubo")
    c.wait(lambda: digests() == qubo, "qubo's versions in place of maxcut's")
    c.wait(lambda: [box.get_attribute("value") for box in c.all("input[name=experiment-job]")] == [quboish], "qubo's jobs")
    assert checked_values(c, "experiment-version"), "no version of qubo checked"
    Select(c.find("#experiment-problem")).select_by_value("maxcut")
    c.wait(lambda: digests() == maxcut, "maxcut's versions again")
    c.wait(lambda: checked_values(c, "experiment-job") == [ring], "the job handed over, checked again")
    c.find(f'#experiment-data-file-{square}').click()
    c.type_into("#experiment-seeds", "1")
    c.button("Launch experiment").click()
    c.wait(lambda: "#/experiment/" in driver.current_url, "the experiment's page")
    experiment = urllib.parse.unquote(driver.current_url.split("#/experiment/")[1])
    inputs = api.send("GET", f"/experiments/{experiment}")["inputs"]
    assert inputs == [{"job": ring}, {"data_file": square}], inputs


def projects(c):
    """With a project chosen: its counts, a teammate's new job showing up, and an experiment
    launched there staying there."""
    driver = c.driver
    api = Api()
    api.add_user("teammate", "teammate-password-1", "member")
    teammate = Api("teammate", "teammate-password-1")
    project = api.send("POST", "/admin/projects", {"name": "console-project"})["id"]
    for member in (os.environ["CASELOAD_USERNAME"], "teammate"):
        api.send("PUT", f"/admin/projects/{project}/members/{member}", {"role": "member"})
    for _ in range(2):
        api.wait_ended(api.launch("maxcut", SMALL))
    first = api.launch("maxcut", SMALL, project)
    api.wait_ended(first)
    c.sign_in()
    c.wait(lambda: c.find("#project-label").is_displayed(), "the project switcher")
    Select(c.find("#project")).select_by_visible_text("console-project")
    c.wait(lambda: [row.get_attribute("data-job") for row in c.all("tr[data-job]")] == [first], "the project's jobs")
    c.wait(lambda: completed_count(c.text(".counts")) == 1, "the project's counts, not the personal ones")
    theirs = teammate.launch("maxcut", SQUARE, project)
    c.wait(lambda: c.all(f'tr[data-job="{theirs}"]'), "the teammate's new job to show up", timeout=30)
    teammate.wait_ended(theirs)
    c.wait(lambda: completed_count(c.text(".counts")) == 2, "the counts to follow", timeout=30)
    c.wait(lambda: c.all(f'tr[data-job="{theirs}"][data-status="COMPLETED"]'), "the teammate's job to end", timeout=30)
    c.find(f'tr[data-job="{theirs}"] input').click()
    c.button("Experiment on selected (1)").click()
    c.wait(lambda: checked_values(c, "experiment-job") == [theirs], "the teammate's job as the input")
    c.type_into("#experiment-seeds", "1")
    c.button("Launch experiment").click()
    c.wait(lambda: "#/experiment/" in driver.current_url, "the experiment's page")
    experiment = urllib.parse.unquote(driver.current_url.split("#/experiment/")[1])
    assert api.send("GET", f"/experiments/{experiment}")["project"] == project, "the experiment is not the project's"
    in_project = [e["id"] for e in api.send("GET", f"/experiments?project={project}")["experiments"]]
    assert in_project == [experiment], in_project
    c.go("#/experiments", "Experiments")
    c.wait(lambda: c.all(f'tr[data-experiment="{experiment}"]'), "the project's experiment in the list")
    c.check_accessibility("experiments of a project")


def roles(c):
    """Each control shown only to who may use it; API keys for every user, projects for
    administrators; retiring a version asks first; a plugins directory's file over the
    registry's current version is said so."""
    api = Api()
    api.add_user("mia", "mia-password-1", "member")
    api.add_user("vic", "vic-password-1", "viewer")
    api.publish(os.environ["CASELOAD_VERSIONED_V1"])
    api.publish(os.environ["CASELOAD_VERSIONED_V2"], current=False)
    shared = api.send("POST", "/admin/projects", {"name": "roles-project"})["id"]
    api.send("PUT", f"/admin/projects/{shared}/members/mia", {"role": "member"})
    api.send("PUT", f"/admin/projects/{shared}/members/vic", {"role": "viewer"})
    watched = api.send("POST", "/admin/projects", {"name": "watched-project"})["id"]
    api.send("PUT", f"/admin/projects/{watched}/members/mia", {"role": "viewer"})

    # A member: no Admin, nothing of the registry's to change, launches.
    c.sign_in("mia", "mia-password-1")
    assert not c.displayed('#nav a[href="#/admin"]'), "a member sees the Admin link"
    assert c.displayed('#nav a[href="#/keys"]'), "no Keys link"
    c.go("#/usecase/versioned", "Use case versioned")
    c.wait(lambda: c.all('.versions tr[data-version="2.0.0"]'), "versioned's versions")
    assert not c.all(".versions button") and not c.displayed("#plugin-file"), "a member is offered the registry's changes"
    assert c.displayed(".launch button[type=submit]"), "a member cannot launch"
    # Her keys: made with what she may grant, shown once, listed, revoked after a question.
    c.go("#/keys", "API keys")
    assert checked_values(c, "scope") == ["read"], checked_values(c, "scope")
    offered = [box.get_attribute("value") for box in c.all("input[name=scope]")]
    assert offered == ["read", "launch"], offered
    c.find("#key-name").send_keys("ci")
    c.find('input[name=scope][value="launch"]').click()
    c.set_value("#key-expires", (datetime.now() + timedelta(days=30)).strftime("%Y-%m-%dT%H:%M"), "change")
    c.wait(lambda: any(o.get_attribute("value") == shared for o in c.all("#key-project option")), "the projects to bind to")
    Select(c.find("#key-project")).select_by_value(shared)
    c.button("Create key").click()
    key = c.wait(lambda: c.text("#new-key"), "the new key, shown once")
    assert key.startswith("cl_"), key
    mine = Api("mia", "mia-password-1")
    listed = mine.send("GET", "/api_keys")["api_keys"]
    assert [(k["name"], k["scopes"], k["project"]) for k in listed] == [("ci", ["read", "launch"], shared)], listed
    assert listed[0]["expires_at"], listed
    c.wait(lambda: c.all(f'tr[data-key="{listed[0]["id"]}"]'), "the key in the list")
    c.check_accessibility("keys")
    c.go("#/jobs", "Jobs")
    c.go("#/keys", "API keys")
    c.wait(lambda: c.all(f'tr[data-key="{listed[0]["id"]}"]'), "the key in the list again")
    assert key not in driver_text(c), "the key's text shown again"
    c.button("Revoke ci").click()
    c.answer_confirm(False)
    assert len(mine.send("GET", "/api_keys")["api_keys"]) == 1, "revoked without asking"
    c.button("Revoke ci").click()
    c.answer_confirm(True)
    c.wait(lambda: not c.all(f'tr[data-key="{listed[0]["id"]}"]'), "the revoked key gone")
    assert mine.send("GET", "/api_keys")["api_keys"] == []

    # A viewer: reads, launches nothing, cancels nothing.
    c.sign_in("vic", "vic-password-1")
    assert not c.displayed('#nav a[href="#/admin"]')
    assert not c.displayed(".actions button"), "a viewer is offered to cancel or experiment"
    c.go("#/usecase/maxcut", "Use case maxcut")
    c.wait(lambda: c.all('.versions tr[data-source="built-in"]'), "maxcut's versions")
    assert not c.displayed(".launch button[type=submit]") and not c.displayed(".upload"), "a viewer is offered to launch"
    c.go("#/experiments", "Experiments")
    c.wait(lambda: c.all("table.experiments"), "the experiments list")
    assert not c.displayed("form.experiment"), "a viewer is offered to launch an experiment"
    c.go("#/keys", "API keys")
    assert [box.get_attribute("value") for box in c.all("input[name=scope]")] == ["read"]
    c.check_accessibility("a viewer's keys")
    # A member who views a project launches nothing there, and cancels nothing.
    c.sign_in("mia", "mia-password-1")
    Select(c.find("#project")).select_by_visible_text("watched-project (viewer)")
    c.go("#/usecase/maxcut", "Use case maxcut")
    c.wait(lambda: c.all('.versions tr[data-source="built-in"]'), "maxcut's versions")
    assert not c.displayed(".launch button[type=submit]"), "a project's viewer is offered to launch in it"
    c.go("#/jobs", "Jobs")
    assert not c.displayed(".actions button"), "a project's viewer is offered to cancel"
    Select(c.find("#project")).select_by_visible_text("roles-project")
    c.go("#/usecase/maxcut", "Use case maxcut")
    c.wait(lambda: c.displayed(".launch button[type=submit]"), "her launch in the project she is a member of")

    # The administrator: Admin, with its projects page.
    c.sign_in()
    assert c.displayed('#nav a[href="#/admin"]')
    c.go("#/admin/projects", "Projects")
    c.find("#new-project-name").send_keys("console-made")
    c.button("Make project").click()
    made = c.wait(lambda: c.all('section[data-project="console-made"]'), "the new project")[0]
    made_id = next(p["id"] for p in api.send("GET", "/admin/projects")["projects"] if p["name"] == "console-made")
    Select(c.find(f"#add-member-{made_id}")).select_by_value("mia")
    c.find('section[data-project="console-made"] .add-member button').click()
    c.wait(lambda: c.all('section[data-project="console-made"] tr[data-member="mia"]'), "mia in the project")
    c.type_into(f"#cap-{made_id}", "5")
    c.find('section[data-project="console-made"] .project-cap button').click()
    c.wait(lambda: project_named(api, "console-made")["max_pending_jobs"] == 5, "the project's cap")
    c.wait(lambda: "Cap on pending jobs\n5" in c.text('section[data-project="console-made"] .facts'), "the cap shown")
    Select(c.find('section[data-project="console-made"] tr[data-member="mia"] select')).select_by_value("viewer")
    c.wait(lambda: project_named(api, "console-made")["members"] == [{"username": "mia", "role": "viewer"}], "mia a viewer")
    c.wait(lambda: c.all('section[data-project="console-made"] tr[data-member="mia"]'), "the members again")
    c.click('section[data-project="console-made"] tr[data-member="mia"] button', "mia's Remove")
    c.answer_confirm(True)
    c.wait(lambda: project_named(api, "console-made")["members"] == [], "mia removed")
    c.check_accessibility("projects")
    # Retiring asks first.
    c.go("#/usecase/versioned", "Use case versioned")
    c.wait(lambda: c.all('.versions tr[data-version="2.0.0"] button.danger'), "the retire button")
    c.button("Retire 2.0.0").click()
    assert "2.0.0" in c.answer_confirm(False)
    assert not version_of(api, "versioned", "2.0.0")["retired"], "retired without asking"
    c.button("Retire 2.0.0").click()
    c.answer_confirm(True)
    c.wait(lambda: version_of(api, "versioned", "2.0.0")["retired"], "2.0.0 retired")
    # A plugins directory's file serves over the registry's current version: said so.
    shutil.copy(os.environ["CASELOAD_VERSIONED_V3"], os.path.join(os.environ["CASELOAD_PLUGINS_DIR"], "versioned.wasm"))
    c.wait(lambda: any(v["source"] == "directory" and v["current"] for v in api.send("GET", "/problem/versioned/versions")["versions"]),
           "the directory's file to serve")
    c.go("#/usecases", "Use cases")
    c.go("#/usecase/versioned", "Use case versioned")
    note = c.wait(lambda: c.text("#versions-note"), "the note on the directory's file")
    assert "versioned.wasm" in note and "1.0.0" in note, note
    c.check_accessibility("versions with a directory's file")


def driver_text(c):
    return c.driver.execute_script("return document.body.innerText + [...document.querySelectorAll('input, textarea, output')].map((e) => e.value).join(' ')")


def project_named(api, name):
    return next(p for p in api.send("GET", "/admin/projects")["projects"] if p["name"] == name)


def version_of(api, problem, version):
    return next(v for v in api.send("GET", f"/problem/{problem}/versions")["versions"] if v["version"] == version)


def readability(c):
    """Numbers, names and durations a person reads at a glance; the jobs list's objective and
    duration; tables on a phone; charts redrawn when the window changes; contrast."""
    driver = c.driver
    api = Api()
    api.publish(os.environ["CASELOAD_VERSIONED_V1"])
    api.publish(os.environ["CASELOAD_VERSIONED_V2"], current=False)
    ring = api.launch("versioned", {"value": 1.2345678912, "labels": {"instance": "ring"}})
    api.wait_ended(ring)
    euler = api.upload(json.dumps({"value": 2.718281828459}), "euler.json")["data_file_identifier"]
    experiment = api.send("POST", "/experiments", {"problem": "versioned", "versions": ["1.0.0", "2.0.0"],
                                                   "inputs": [ring, euler, {"value": 3.14159265358979}],
                                                   "seeds": [1, 2]})["experiment"]
    c.sign_in()
    c.go(f"#/experiment/{experiment}", "Experiment")
    c.wait(lambda: "Done." in c.text("#experiment-progress-text"), "the experiment to end", timeout=120)
    cells = c.texts(".experiment-results td")
    assert cells and not any(re.search(r"\d\.\d{7,}", cell) for cell in cells), cells
    c.wait(lambda: c.texts(".experiment-results tbody th") == ["instance:ring", "euler.json", "inline input 3"],
           "the inputs named by their labels and file names")
    assert c.all(".experiment-results .badge.best"), "no best marked"
    c.check_accessibility("experiment, the best marked")

    # The jobs list: objective and duration.
    c.go("#/jobs", "Jobs")
    headings = c.texts("table.jobs thead th")
    assert "Objective" in headings and "Duration" in headings, headings
    c.wait(lambda: c.all(f'tr[data-job="{ring}"]'), "the ring job's row")
    objective = api.job(ring)["objective"]
    assert c.text(f'tr[data-job="{ring}"] td.objective') == f"{objective:.6g}", c.text(f'tr[data-job="{ring}"] td.objective')
    assert re.fullmatch(r"\d+ ms|\d+(\.\d+)? s", c.text(f'tr[data-job="{ring}"] td.duration')), \
        c.text(f'tr[data-job="{ring}"] td.duration')

    # A running execution's duration goes on.
    long = api.launch("runaway", {"mode": "spin", "options": {"time_limit_s": 30}})
    c.go(f"#/job/{long}", f"Job {long}")
    c.wait(lambda: c.job_state() == "RUNNING", "the long job to run")
    first = c.wait(lambda: c.text("table.executions td.duration"), "its duration")
    c.wait(lambda: c.text("table.executions td.duration") not in ("", first), "the duration to tick", timeout=5)
    api.send("DELETE", f"/job/{long}")

    # A picture follows the window's size once its layout settled: drawn again, not stretched.
    square = api.launch("maxcut", SQUARE)
    api.wait_ended(square)
    c.go(f"#/job/{square}", f"Job {square}")
    picture = c.wait(lambda: c.all("canvas.graph[data-settled=true]"), "the square's layout to settle")[0]
    drawn = lambda: driver.execute_script(
        "const canvas = arguments[0]; return canvas.width === Math.round(canvas.clientWidth * (window.devicePixelRatio || 1))", picture)
    assert drawn(), "the picture is not drawn to its size"
    driver.set_window_size(900, 800)
    c.wait(drawn, "the picture drawn again at the window's size", timeout=10)

    # On a phone: every table either fits or scrolls in a region the keyboard reaches.
    driver.set_window_size(390, 844)
    for route, heading in [("#/jobs", "Jobs"), ("#/admin", "Administration"), (f"#/experiment/{experiment}", "Experiment"),
                           ("#/experiments", "Experiments"), (f"#/job/{ring}", "Job"), ("#/keys", "API keys")]:
        c.go(route, heading)
        c.wait(lambda: c.all("table tbody tr"), f"the tables of {route}")
        time.sleep(0.5)
        width = driver.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
        assert width[0] <= width[1] + 1, f"{route} is {width[0]} px wide on a {width[1]} px screen"
        cut = driver.execute_script("""
            return [...document.querySelectorAll('table')].filter((table) => {
              const region = table.closest('[role=region][tabindex="0"]');
              const box = (region ?? table).getBoundingClientRect();
              return box.right > window.innerWidth + 1 || (!region && table.scrollWidth > table.clientWidth + 1
                  || !region && table.getBoundingClientRect().right > window.innerWidth + 1);
            }).map((table) => table.className || table.querySelector('th')?.innerText);""")
        assert not cut, f"{route} cuts tables {cut}"
        c.check_accessibility(f"{route} on a phone")


SCENARIOS = {
    "tour": tour,
    "races": races,
    "launch_form": launch_form,
    "experiment_form": experiment_form,
    "projects": projects,
    "roles": roles,
    "readability": readability,
}

if __name__ == "__main__":
    main()

"""Drives the web console in a real headless Chromium, the way a person would.

Started by tests/console.rs against the real server, with:
CASELOAD_URL, CASELOAD_USERNAME, CASELOAD_PASSWORD  the server and a user;
CASELOAD_PLUGINS_DIR, CASELOAD_RUNAWAY_WASM          where to drop a plugin, and which;
CASELOAD_G1                                          a G-set file to upload;
CASELOAD_CHROMEDRIVER, CASELOAD_CHROMIUM             the browser;
CASELOAD_AXE                                         axe-core's axe.min.js;
TZ                                                   the browser's time zone, not UTC
                                                     (times must show in it);
CASELOAD_SCREENSHOTS (optional)                      a directory for the docs' screenshots.

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

    def times(self, selector):
        """Each <time> under `selector`: [its text, its datetime]."""
        return self.driver.execute_script(
            "return [...document.querySelectorAll(arguments[0] + ' time')]"
            ".map((e) => [e.innerText.trim(), e.getAttribute('datetime')])", selector)


class Api:
    """The API as a script calls it, beside the page: the same user, its own token."""

    def __init__(self):
        self.token = None
        self.token = self.send("POST", "/login", {"username": os.environ["CASELOAD_USERNAME"],
                                                  "password": os.environ["CASELOAD_PASSWORD"]})["access_token"]

    def send(self, method, path, body=None):
        headers = {"content-type": "application/json"}
        if self.token:
            headers["authorization"] = f"Bearer {self.token}"
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(BASE + path, data=data, method=method, headers=headers)
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.load(response)

    def job(self, job_id):
        return self.send("GET", f"/job/{urllib.parse.quote(job_id, safe='')}")["job"][job_id]


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
    driver = start_browser()
    console = Console(driver)
    try:
        run(console)
    finally:
        console.collect_console()
        driver.quit()
    problems = console.console_problems + console.accessibility_problems
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    print("console: every step passed")


def completed_count(counts):
    match = re.search(r"COMPLETED\s+(\d+)", counts)
    return int(match.group(1)) if match else 0


def run(c):
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
    c.wait(lambda: c.find("#experiment-inputs").get_attribute("value") == small, "the selected job as the input")
    c.wait(lambda: c.find("#experiment-versions").get_attribute("value"), "the versions in service")
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
    c.wait(lambda: c.find("#experiment-versions").get_attribute("value") == "0.1.0", "maxcut's versions")
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


if __name__ == "__main__":
    main()

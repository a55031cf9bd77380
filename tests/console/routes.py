"""The routing use case's picture in a real headless Chromium.

Started by tests/console.rs against the real server, with the environment drive.py takes
(CASELOAD_URL, CASELOAD_USERNAME, CASELOAD_PASSWORD, CASELOAD_CHROMEDRIVER, CASELOAD_AXE,
TZ) and CASELOAD_C101, Solomon's C101 in its text format. Three plans: C101 uploaded as a
dataset (a map, and a timeline of its windows, read from the job's decoded input), a plan of
10,000 clients (the map settles; hovering names a client's route; the keyboard zooms and
pans; a resized window redraws), and an instance given by a matrix alone (a timeline and a
table, no map). Fails on any step that does not happen, any script error or CSP violation,
and any serious or critical axe-core violation. Prints how long the 10,000 clients took to
settle: docs/benchmarks quotes scripts/console-draw-bench.py, not this test.
"""

import json
import os
import random
import sys
import time
import urllib.request

from selenium.webdriver.common.keys import Keys

from drive import BASE, Api, Console, start_browser


def upload(api, path, media_type):
    with open(path, "rb") as file:
        body = file.read()
    request = urllib.request.Request(BASE + "/data_file", data=body, method="POST",
                                     headers={"content-type": media_type,
                                              "authorization": f"Bearer {api.token}"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)["data_file_identifier"]


def wait_completed(c, api, job):
    c.wait(lambda: api.job(job)["status"] == "COMPLETED", f"job {job} to complete", timeout=120)


def run(c):
    driver = c.driver
    api = Api()
    driver.get(BASE + "/")
    c.wait(lambda: c.text("h1") == "Sign in", "the sign-in page")
    driver.switch_to.active_element.send_keys(
        os.environ["CASELOAD_USERNAME"], Keys.TAB, os.environ["CASELOAD_PASSWORD"], Keys.ENTER)
    c.wait(lambda: c.text("h1") == "Jobs", "the jobs page after signing in")

    # C101 as a dataset: its map and its timeline, from the decoded input.
    c101 = upload(api, os.environ["CASELOAD_C101"], "text/x-solomon")
    job = api.send("POST", "/problem/vrp", {"data_file_identifier": c101,
                                              "options": {"time_limit_s": 2, "seed": 1}})["job"]
    wait_completed(c, api, job)
    c.go(f"#/job/{job}", f"Job {job}")
    c.wait(lambda: c.all("canvas.routes-map[data-settled=true]"), "C101's map")
    c.wait(lambda: c.all("canvas.routes-timeline"), "C101's timeline")
    assert len(c.all(".routes-table tbody tr")) == len(api.send("GET", f"/job/{job}/output")["routes"])
    c.check_accessibility("a routing job")

    # Ten thousand clients: the map settles, hovering names a route, the keyboard moves it.
    rng = random.Random(7)
    clients = [{"id": i, "x": rng.randint(0, 10_000), "y": rng.randint(0, 10_000), "demand": rng.randint(1, 10)}
               for i in range(1, 10_001)]
    large = api.send("POST", "/problem/vrp", {"depot": {"x": 5000, "y": 5000}, "clients": clients,
                                               "vehicles": {"capacity": 100},
                                               "options": {"time_limit_s": 3, "seed": 1}})["job"]
    wait_completed(c, api, large)
    started = time.monotonic()
    c.go(f"#/job/{large}", f"Job {large}")
    canvas = c.wait(lambda: c.all("canvas.routes-map[data-settled=true]"), "the 10,000 clients' map")[0]
    print(f"10,000 clients drawn and settled {time.monotonic() - started:.2f} s after the page was asked for")
    size = driver.execute_script("const b = arguments[0].getBoundingClientRect(); return [b.width, b.height];", canvas)
    # Hover the canvas in a grid of places until one names a client.
    named = ""
    for fraction in [(0.5, 0.5), (0.3, 0.3), (0.7, 0.6), (0.2, 0.8), (0.6, 0.2)]:
        driver.execute_script(
            "const [canvas, x, y] = arguments; const b = canvas.getBoundingClientRect();"
            "canvas.dispatchEvent(new PointerEvent('pointermove', {clientX: b.left + x, clientY: b.top + y, bubbles: true}));",
            canvas, size[0] * fraction[0], size[1] * fraction[1])
        named = c.text(".routes-tip")
        if named.startswith("Client"):
            break
    assert named.startswith("Client") and "vehicle" in named, named
    canvas.send_keys("+", "+", Keys.ARROW_LEFT, "0")
    # A window of another size: the map is drawn again at it.
    before = driver.execute_script("return arguments[0].width", canvas)
    driver.set_window_size(800, 900)
    c.wait(lambda: driver.execute_script("return arguments[0].width", canvas) != before, "the map redrawn at the new size")
    driver.set_window_size(1280, 800)

    # A matrix alone: no map; a timeline and a table.
    n = 6
    matrix = [[0 if i == j else 10 + abs(i - j) for j in range(n + 1)] for i in range(n + 1)]
    matrix_job = api.send("POST", "/problem/vrp", {
        "depot": {"time_window": [0, 500]},
        "clients": [{"id": f"m{i}", "demand": 1, "service_time": 5, "time_window": [0, 400]} for i in range(n)],
        "distance_matrix": matrix, "vehicles": {"count": 2, "capacity": 4},
        "options": {"time_limit_s": 1, "seed": 1}})["job"]
    wait_completed(c, api, matrix_job)
    c.go(f"#/job/{matrix_job}", f"Job {matrix_job}")
    c.wait(lambda: c.all("canvas.routes-timeline"), "the matrix instance's timeline")
    assert not c.all("canvas.routes-map"), "a map for an instance without coordinates"
    assert c.all(".routes-table tbody tr"), "no table of routes"
    c.check_accessibility("a routing job without coordinates")


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
    print("routes: every step passed")


if __name__ == "__main__":
    main()

"""How interactive the console's max-cut picture is, in a real headless Chromium.

Loads the console from a running server, draws a random graph (default 2,000 nodes and
20,000 edges, a random partition) with the console's own picture.js, and prints: the time
for the force layout to settle (300 steps, drawn as it goes, at most 12 ms of layout per
frame), the frames' gaps while it settles, and the time of one redraw after the layout
settled (what a pan or a zoom costs), median and worst over 50 redraws.

    python3 scripts/console-draw-bench.py http://127.0.0.1:8080 [--nodes 2000] [--edges 20000]

Needs selenium (PyPI) and Debian's chromium and chromium-driver.
"""

import argparse
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

SCRIPT = """
const [nodes, edges] = arguments;
const done = (result) => { window.benchResult = result; };
import('/console/picture.js').then(async ({ maxCutPicture }) => {
  let seed = 7;
  const random = () => { seed = (Math.imul(seed, 1103515245) + 12345) & 0x7fffffff; return seed / 0x7fffffff; };
  const from = [], to = [], weight = [], seen = new Set();
  while (from.length < edges) {
    const i = Math.floor(random() * nodes), j = Math.floor(random() * nodes);
    const key = Math.min(i, j) * nodes + Math.max(i, j);
    if (i === j || seen.has(key)) continue;
    seen.add(key); from.push(i); to.push(j); weight.push(1);
  }
  const partition = Array.from({ length: nodes }, () => (random() < 0.5 ? 0 : 1));
  const gaps = [];
  let last = performance.now();
  let counting = true;
  const frame = (now) => { gaps.push(now - last); last = now; if (counting) requestAnimationFrame(frame); };
  requestAnimationFrame(frame);
  const started = performance.now();
  const section = maxCutPicture({ n: nodes, from, to, weight }, { partition, cut_value: 0, optimal: false });
  document.body.append(section);
  const canvas = section.querySelector('canvas');
  while (canvas.dataset.settled !== 'true') await new Promise((resolve) => setTimeout(resolve, 20));
  const settled = performance.now() - started;
  counting = false;
  // Panning: one arrow key per frame, and the gaps between the frames shown.
  const panGaps = [];
  let previous = await new Promise(requestAnimationFrame);
  for (let k = 0; k < 40; k += 1) {
    canvas.dispatchEvent(new KeyboardEvent('keydown', { key: k % 2 ? 'ArrowLeft' : 'ArrowRight' }));
    const now = await new Promise(requestAnimationFrame);
    panGaps.push(now - previous);
    previous = now;
  }
  // A full redraw (a zoom): one key, then the frame that shows it.
  const redraws = [];
  for (let k = 0; k < 10; k += 1) {
    const before = performance.now();
    canvas.dispatchEvent(new KeyboardEvent('keydown', { key: k % 2 ? '+' : '-' }));
    await new Promise(requestAnimationFrame);
    redraws.push(performance.now() - before);
  }
  const sorted = (values) => [...values].sort((a, b) => a - b);
  const median = (values) => sorted(values)[Math.floor(values.length / 2)];
  done({ settled_ms: settled, frames: gaps.length, frame_gap_median_ms: median(gaps), frame_gap_max_ms: Math.max(...gaps),
         pan_frame_gap_median_ms: median(panGaps), pan_frame_gap_max_ms: Math.max(...panGaps),
         zoom_to_frame_median_ms: median(redraws), zoom_to_frame_max_ms: Math.max(...redraws) });
});
"""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--edges", type=int, default=20000)
    parser.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    arguments = parser.parse_args()
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,800"]:
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(arguments.chromedriver), options=options)
    try:
        driver.get(arguments.url.rstrip("/") + "/")
        driver.execute_script(SCRIPT, arguments.nodes, arguments.edges)
        result = None
        while result is None:
            time.sleep(1)
            result = driver.execute_script("return window.benchResult ?? null")
    finally:
        driver.quit()
    print(f"{arguments.nodes} nodes, {arguments.edges} edges")
    for name, value in result.items():
        print(f"  {name:22} {value:.1f}" if isinstance(value, float) else f"  {name:22} {value}")


if __name__ == "__main__":
    main()

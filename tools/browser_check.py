"""Runs a JSON script of browser steps in headless Chromium (through Playwright)
and prints one JSON object of results on stdout.

    python3 tools/browser_check.py SCRIPT.json

tools/browser-check runs this inside its venv; see there for the step list.
Exit status: 0 every check passed, 1 a check or action failed, 2 the browser
could not start, 64 the script is malformed.
"""

import json
import os
import sys
import time

CHROMIUM = os.environ.get("SIGHTLINE_CHROMIUM", "/usr/bin/chromium")
# Root has no user namespace sandbox here; Playwright adds --no-sandbox itself
# unless chromiumSandbox is set, but say it so the launch does not depend on that.
LAUNCH_ARGS = ["--no-sandbox"]
DEFAULT_WIDTH, DEFAULT_HEIGHT = 1400, 900
DEFAULT_TIMEOUT_MS = 5000
OPEN_TIMEOUT_MS = 15000

# The one key that names what a step does, and the other keys it may carry.
ACTIONS = {
    "open": {"width", "height", "timeoutMs"},
    "expectText": set(),
    "expectSelector": {"count", "atLeast"},
    "click": {"timeoutMs"},
    "fill": {"timeoutMs"},
    "press": {"timeoutMs"},
    "waitFor": {"timeoutMs"},
    "expectNoCutText": set(),
    "expectNoHorizontalScroll": set(),
    "screenshot": set(),
    "expectNoConsoleErrors": set(),
}


class Malformed(Exception):
    pass


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def validate(steps):
    """Checks the whole script before the browser starts, so a typo costs no launch."""
    if not isinstance(steps, list) or not steps:
        raise Malformed("the script must be a non-empty JSON list of steps")
    opened = False
    for index, step in enumerate(steps):
        where = f"step {index}"
        if not isinstance(step, dict):
            raise Malformed(f"{where}: a step must be a JSON object")
        actions = [key for key in step if key in ACTIONS]
        if len(actions) != 1:
            raise Malformed(f"{where}: a step needs exactly one of {', '.join(ACTIONS)}; found {sorted(step)}")
        action = actions[0]
        extra = set(step) - {action} - ACTIONS[action]
        if extra:
            raise Malformed(f"{where}: {action} does not take {', '.join(sorted(extra))}")
        value = step[action]
        if action == "open":
            if not isinstance(value, str) or not value:
                raise Malformed(f"{where}: open needs a URL string")
            opened = True
        elif not opened:
            raise Malformed(f"{where}: {action} comes before any open")
        if action in ("expectText", "expectSelector", "click", "waitFor", "expectNoCutText", "screenshot"):
            if not isinstance(value, str) or not value:
                raise Malformed(f"{where}: {action} needs a non-empty string")
        if action in ("fill", "press"):
            if not (isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value) and value[0]):
                raise Malformed(f"{where}: {action} needs [\"css\", \"text\"]")
        if action in ("expectNoHorizontalScroll", "expectNoConsoleErrors") and value is not True:
            raise Malformed(f"{where}: {action} takes true")
        for key in ("width", "height", "timeoutMs", "count", "atLeast"):
            if key in step and not (is_int(step[key]) and step[key] >= 0):
                raise Malformed(f"{where}: {key} must be a non-negative integer")
        for key in ("width", "height", "timeoutMs"):
            if key in step and step[key] < 1:
                raise Malformed(f"{where}: {key} must be at least 1")
        if "count" in step and "atLeast" in step:
            raise Malformed(f"{where}: expectSelector takes count or atLeast, not both")


# Finds text a reader cannot see whole, in the elements matching a selector and
# everything inside them: an HTML element whose overflow is hidden or clipped
# and whose content is larger than its box, and an SVG <text> that reaches past
# the <svg> it is drawn in. Elements not rendered, invisible or collapsed to at
# most a pixel (visually hidden labels, closed panels) are hidden, not cut.
CUT_TEXT_JS = r"""
(selector) => {
  const roots = Array.from(document.querySelectorAll(selector));
  const seen = new Set();
  const offenders = [];
  const clips = (v) => v === "hidden" || v === "clip";
  const short = (s) => { s = (s || "").replace(/\s+/g, " ").trim(); return s.length > 100 ? s.slice(0, 97) + "..." : s; };
  const describe = (el) => {
    let s = el.tagName.toLowerCase();
    if (el.id) s += "#" + el.id;
    const cls = el.getAttribute("class");
    if (cls && cls.trim()) s += "." + cls.trim().split(/\s+/).join(".");
    return s;
  };
  const rect = (r) => ({left: Math.round(r.left * 10) / 10, top: Math.round(r.top * 10) / 10,
                        right: Math.round(r.right * 10) / 10, bottom: Math.round(r.bottom * 10) / 10});
  const visible = (el) => {
    const style = getComputedStyle(el);
    return el.getClientRects().length > 0 && style.visibility !== "hidden" && style.display !== "none";
  };
  const checkSvgText = (el) => {
    const text = short(el.textContent);
    if (!text || !visible(el)) return;
    const svg = el.ownerSVGElement;
    if (!svg) return;
    const t = el.getBoundingClientRect(), s = svg.getBoundingClientRect();
    const past = [];
    if (t.left < s.left - 1) past.push("left");
    if (t.right > s.right + 1) past.push("right");
    if (t.top < s.top - 1) past.push("top");
    if (t.bottom > s.bottom + 1) past.push("bottom");
    if (past.length) offenders.push({element: describe(el), text, problem: "SVG text past the " + past.join(", ") + " edge of its svg",
                                     textRect: rect(t), svgRect: rect(s)});
  };
  const checkBox = (el) => {
    const style = getComputedStyle(el);
    const clipX = clips(style.overflowX), clipY = clips(style.overflowY);
    if (!clipX && !clipY) return;
    const text = short(el.innerText);
    if (!text || !visible(el) || el.clientWidth <= 1 || el.clientHeight <= 1) return;
    const wide = clipX && el.scrollWidth > el.clientWidth + 1;
    const tall = clipY && el.scrollHeight > el.clientHeight + 1;
    if (wide || tall) offenders.push({element: describe(el), text,
      problem: "content " + [wide ? "wider" : "", tall ? "taller" : ""].filter(Boolean).join(" and ") + " than its overflow:" + (wide ? style.overflowX : style.overflowY) + " box",
      scrollWidth: el.scrollWidth, clientWidth: el.clientWidth, scrollHeight: el.scrollHeight, clientHeight: el.clientHeight});
  };
  const check = (el) => {
    if (seen.has(el)) return;
    seen.add(el);
    if (el instanceof SVGElement) {
      // <tspan> and <textPath> are measured through the <text> that holds them.
      const text = el.closest("text");
      if (text && (text === el || !seen.has(text))) { seen.add(text); checkSvgText(text); }
    } else {
      checkBox(el);
    }
  };
  for (const root of roots) {
    check(root);
    for (const el of root.querySelectorAll("*")) check(el);
  }
  return {matched: roots.length, checked: seen.size, offenders};
}
"""

# The elements reaching furthest past the right edge of the viewport: the
# likely reason the page scrolls sideways.
WIDE_ELEMENTS_JS = r"""
() => {
  const wide = [];
  for (const el of document.body ? document.body.querySelectorAll("*") : []) {
    const r = el.getBoundingClientRect();
    if (r.right > window.innerWidth + 1) {
      let s = el.tagName.toLowerCase();
      if (el.id) s += "#" + el.id;
      const cls = el.getAttribute("class");
      if (cls && cls.trim()) s += "." + cls.trim().split(/\s+/).join(".");
      wide.push({element: s, right: Math.round(r.right), width: Math.round(r.width)});
    }
  }
  wide.sort((a, b) => b.right - a.right);
  return wide.slice(0, 5);
}
"""


class Run:
    def __init__(self, browser):
        self.browser = browser
        self.context = browser.new_context(viewport={"width": DEFAULT_WIDTH, "height": DEFAULT_HEIGHT})
        self.page = self.context.new_page()
        self.page.set_default_timeout(DEFAULT_TIMEOUT_MS)
        self.failures = []
        self.console_errors = []  # every page's, for the report
        self.since_open = []  # the current page's, for expectNoConsoleErrors
        self.screenshots = []
        self.url = None
        self.page.on("console", self.on_console)
        self.page.on("pageerror", self.on_page_error)
        self.page.on("crash", lambda _: self.record({"kind": "crash", "text": "the page crashed"}))

    def record(self, error):
        error["page"] = self.url
        self.console_errors.append(error)
        self.since_open.append(error)

    def on_console(self, message):
        if message.type != "error":
            return
        location = message.location or {}
        url = location.get("url", "")
        # Chromium asks for /favicon.ico by itself after the load, and logs a
        # 404 as a console error at no fixed time; that says nothing of the page.
        if url.endswith("/favicon.ico") and message.text.startswith("Failed to load resource"):
            return
        self.record({"kind": "console", "text": message.text, "url": url,
                     "line": location.get("lineNumber", -1) + 1})  # Playwright counts lines from 0

    def on_page_error(self, error):
        self.record({"kind": "pageerror", "text": str(error)})

    def fail(self, index, step, expected, found, **detail):
        failure = {"step": index, "action": next(k for k in step if k in ACTIONS), "expected": expected, "found": found}
        failure.update(detail)
        self.failures.append(failure)

    def settle(self):
        # A round trip to the page delivers the console events sent before it.
        self.page.evaluate("() => document.fonts.ready.then(() => true)")

    def step(self, index, step):
        """Runs one step; returns False when later steps cannot mean anything."""
        page = self.page
        timeout = step.get("timeoutMs")
        if "open" in step:
            url = step["open"]
            page.set_viewport_size({"width": step.get("width", DEFAULT_WIDTH), "height": step.get("height", DEFAULT_HEIGHT)})
            self.since_open = []
            self.url = url
            try:
                response = page.goto(url, wait_until="load", timeout=timeout or OPEN_TIMEOUT_MS)
            except Exception as error:
                self.fail(index, step, f"{url} opens", first_line(error))
                return False
            if response is not None and response.status >= 400:
                self.fail(index, step, f"{url} answers 2xx or 3xx", f"HTTP {response.status}")
                return False
            self.settle()
        elif "expectText" in step:
            text = page.evaluate("() => document.body ? document.body.innerText : ''")
            if step["expectText"] not in text:
                self.fail(index, step, f"visible text contains {step['expectText']!r}", f"page text: {clip(text, 300)!r}")
        elif "expectSelector" in step:
            found = page.locator(step["expectSelector"]).count()
            if "count" in step:
                if found != step["count"]:
                    self.fail(index, step, f"exactly {step['count']} element(s) matching {step['expectSelector']!r}", f"{found}")
            elif found < step.get("atLeast", 1):
                self.fail(index, step, f"at least {step.get('atLeast', 1)} element(s) matching {step['expectSelector']!r}", f"{found}")
        elif "click" in step or "fill" in step or "press" in step or "waitFor" in step:
            try:
                if "click" in step:
                    page.click(step["click"], timeout=timeout)
                elif "fill" in step:
                    page.fill(step["fill"][0], step["fill"][1], timeout=timeout)
                elif "press" in step:
                    page.press(step["press"][0], step["press"][1], timeout=timeout)
                else:
                    page.wait_for_selector(step["waitFor"], state="visible", timeout=timeout)
                # A click or key may start a navigation; let it finish loading.
                page.wait_for_load_state("load")
                self.settle()
            except Exception as error:
                target = step.get("click") or step.get("waitFor") or step.get("fill", step.get("press", [""]))[0]
                within = f" within {timeout or DEFAULT_TIMEOUT_MS} ms"
                if "waitFor" in step:
                    self.fail(index, step, f"a visible element matching {target!r}{within}", first_line(error))
                else:
                    self.fail(index, step, f"an element matching {target!r} that can be acted on{within}", first_line(error))
                return False
        elif "expectNoCutText" in step:
            result = page.evaluate(CUT_TEXT_JS, step["expectNoCutText"])
            if result["matched"] == 0:
                self.fail(index, step, f"elements matching {step['expectNoCutText']!r} to check", "none")
            elif result["offenders"]:
                self.fail(index, step, "no cut text", f"{len(result['offenders'])} element(s) with cut text",
                          offenders=result["offenders"])
        elif "expectNoHorizontalScroll" in step:
            sizes = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
            if sizes[0] > sizes[1]:
                self.fail(index, step, f"page width <= viewport width {sizes[1]}", f"scrollWidth {sizes[0]}",
                          widest=page.evaluate(WIDE_ELEMENTS_JS))
        elif "screenshot" in step:
            path = os.path.abspath(step["screenshot"])
            os.makedirs(os.path.dirname(path), exist_ok=True)
            page.screenshot(path=path, full_page=True)
            self.screenshots.append(path)
        elif "expectNoConsoleErrors" in step:
            self.settle()
            if self.since_open:
                self.fail(index, step, "no console or page errors since the page opened",
                          f"{len(self.since_open)} error(s)", errors=list(self.since_open))
        return True


def first_line(error):
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def launch_failure(error):
    """Playwright's first line and what the browser wrote to stderr, without
    its D-Bus complaints (headless Chromium runs without a bus) or the command."""
    text = str(error)
    said, exited = [], ""
    for line in text.split("Call log:")[0].splitlines():
        if "][err] " in line and "dbus" not in line.lower():
            said.append(line.split("][err] ", 1)[1].strip())
    for line in text.splitlines():
        if "<process did exit:" in line:
            exited = line.split("<process did exit:", 1)[1].strip(" >")
    parts = [first_line(error)] + said[:5] + ([f"browser exited: {exited}"] if exited else [])
    return "; ".join(parts)


def clip(text, limit):
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def emit(result, status):
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    sys.exit(status)


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        sys.stderr.write("usage: browser-check SCRIPT.json\n")
        sys.exit(64)
    try:
        with open(sys.argv[1]) as file:
            steps = json.load(file)
        validate(steps)
    except (OSError, ValueError, Malformed) as error:
        message = f"browser-check: cannot use script {sys.argv[1]}: {error}"
        sys.stderr.write(message + "\n")
        emit({"ok": False, "malformed": message}, 64)

    def unavailable(reason):
        message = f"browser-check: the browser could not start: {reason}"
        sys.stderr.write(message + "\n")
        emit({"ok": False, "browserUnavailable": message}, 2)

    if not os.access(CHROMIUM, os.X_OK):
        unavailable(f"no executable Chromium at {CHROMIUM} (apt-get install chromium, or set SIGHTLINE_CHROMIUM)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as error:
        unavailable(f"Playwright is not importable ({error})")

    started = time.monotonic()
    try:
        playwright = sync_playwright().start()
    except Exception as error:
        unavailable(f"the Playwright driver did not start: {first_line(error)}")
    try:
        try:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS, headless=True, timeout=30000)
        except Exception as error:
            unavailable(f"{CHROMIUM} did not launch: {launch_failure(error)}")
        run = Run(browser)
        completed = 0
        for index, step in enumerate(steps):
            try:
                going = run.step(index, step)
            except Exception as error:
                # A crashed page or a dead browser: report it as this step's failure.
                run.fail(index, step, "the step runs", first_line(error))
                going = False
            completed += 1
            if not going:
                break
        result = {
            "ok": not run.failures,
            "browser": f"Chromium {browser.version}",
            "steps": len(steps),
            "completed": completed,
            "failures": run.failures,
            "consoleErrors": run.console_errors,
            "screenshots": run.screenshots,
            "seconds": round(time.monotonic() - started, 2),
        }
        try:
            browser.close()
        except Exception:
            pass
    finally:
        playwright.stop()
    emit(result, 0 if result["ok"] else 1)


if __name__ == "__main__":
    main()

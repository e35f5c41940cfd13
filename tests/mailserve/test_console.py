"""The admin's page (streamnb.mailserve.console): its guards over plain HTTP, then the page
itself driven in Debian's chromium through chromedriver (selenium) against a running daemon."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.apt import Unavailable, apt_install
from tests.mail.postfix import free_port
from tests.mailserve.daemon import HAM_WORDS, SPAM_WORDS, Daemon, corpus, message

PASSWORD = "s3cret pass"
WAIT = 60.0  # seconds the browser may take to show what a step waits for
#: Where the screenshots go: docs/_static with STREAMNB_SCREENSHOTS=1 (what docs/mail.md shows),
#: else the test's own folder (a test run leaves the checkout as it was).
DOCS_STATIC = Path(__file__).resolve().parents[2] / "docs" / "_static"


@pytest.fixture(scope="module")
def password_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("console") / "password"
    out = subprocess.run([sys.executable, "-m", "streamnb.mailserve.auth", str(path)], input=PASSWORD.encode() + b"\n",
                         capture_output=True, timeout=60)  # fmt: skip
    assert out.returncode == 0, out.stderr.decode()
    return path


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    """A filter trained on ``corpus(300)``, its threshold calibrated (1 ham in 20 may be spam)."""
    from streamnb import persistence
    from streamnb.spam import SpamFilter
    from streamnb.text import Tokenizer

    path = tmp_path_factory.mktemp("console") / "model.snb"
    filt, tok = SpamFilter(max_ham_rate=0.05), Tokenizer()
    for raw, label in corpus(300):
        filt.learn_one(tok.transform_one(raw), label)
    persistence.save(filt, path)
    return path


@pytest.fixture()
def daemon(tmp_path, model, password_file) -> Iterator[tuple[Daemon, int]]:
    """A daemon whose page is on its ``--controller`` listener (its port the second item)."""
    copy = tmp_path / "model.snb"
    copy.write_bytes(model.read_bytes())
    port = free_port()
    with Daemon(copy, "--password-file", str(password_file), "--controller", f"127.0.0.1:{port}") as d:
        yield d, port


class Client:
    """Plain HTTP to the page's listener, keeping the session cookie as a browser would."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.cookie: str | None = None
        self.csrf: str | None = None
        self.set_cookie = ""

    def request(self, method: str, path: str, body: Any = None, headers: dict | None = None,
                form: bool = False) -> tuple[int, Any, http.client.HTTPResponse]:  # fmt: skip
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        head = {"Host": f"127.0.0.1:{self.port}", **(headers or {})}
        if self.cookie:
            head["Cookie"] = f"streamnb_session={self.cookie}"
        if self.csrf and "X-CSRF-Token" not in head:
            head["X-CSRF-Token"] = self.csrf
        data = None
        if form:
            from urllib.parse import urlencode

            data, head["Content-Type"] = urlencode(body).encode(), "application/x-www-form-urlencoded"
        elif body is not None:
            data, head["Content-Type"] = json.dumps(body).encode(), "application/json"
        try:
            conn.request(method, path, body=data, headers=head)
            resp = conn.getresponse()
            raw = resp.read()
        finally:
            conn.close()
        ctype = resp.getheader("Content-Type", "")
        return resp.status, json.loads(raw) if "json" in ctype else raw.decode(), resp

    def login(self, password: str = PASSWORD, headers: dict | None = None) -> int:
        status, doc, resp = self.request("POST", "/console/login", {"password": password}, headers, form=True)
        if status == 200:
            self.set_cookie = resp.getheader("Set-Cookie", "")
            self.cookie = self.set_cookie.split(";")[0].split("=", 1)[1]
            self.csrf = doc["csrf"]
        return status


def _learned(d: Daemon) -> dict:
    return d.request("GET", "/stat")[1]["learned_by_class"]


def test_the_page_refuses_what_lacks_the_password_the_session_or_the_origin(daemon):
    d, port = daemon
    c = Client(port)
    status, page, resp = c.request("GET", "/")
    assert status == 200 and '<meta name="viewport"' in page and 'for="password"' in page
    assert "script-src 'self'" in resp.getheader("Content-Security-Policy", "")
    assert resp.getheader("X-Frame-Options") == "DENY"
    assert d.request("GET", "/")[0] == 404  # the page is where learns are: the controller listener
    assert c.request("GET", "/console/state")[1] == {"logged_in": False, "password": True}
    spam = message(SPAM_WORDS[:6], 900).decode()
    before = _learned(d)
    # no session: nothing changes
    for path, body in (("/console/learn", {"message": spam, "class": "spam"}), ("/console/scan", {"message": spam}),
                       ("/console/cutoff", {"name": "spam_cutoff", "value": 0.9})):  # fmt: skip
        status, doc, _ = c.request("POST", path, body)
        assert status == 403 and "log in" in doc["error"], (path, doc)
    assert c.login("wrong") == 403 and c.cookie is None
    assert c.login(headers={"Origin": "http://evil.example"}) == 403  # no login from another site
    assert c.login(headers={"Sec-Fetch-Site": "cross-site"}) == 403
    assert c.login() == 200
    cookie = c.set_cookie.lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie
    assert len(c.cookie or "") >= 40
    # a session but another origin, or no CSRF token, or a wrong one: refused
    for headers in ({"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Site": "same-site"},
                    {"X-CSRF-Token": ""}, {"X-CSRF-Token": "x" * 43}):  # fmt: skip
        for path, body in (("/console/learn", {"message": spam, "class": "spam"}),
                           ("/console/cutoff", {"name": "spam_cutoff", "value": 0.9})):  # fmt: skip
            status, doc, _ = c.request("POST", path, body, headers)
            assert status == 403, (headers, path, doc)
    assert _learned(d) == before
    cutoffs = c.request("GET", "/console/state")[1]["cutoffs"]
    assert not any(v["pinned"] for v in cutoffs.values()) and cutoffs["spam_cutoff"]["why"] == "default"
    # bad input: an error saying what was expected, nothing changed
    for body, words in (({"name": "spam_cutoff", "value": 1.5}, "[0, 1]"), ({"name": "threshold", "value": 0.5}, "unknown"),
                        ({"name": "spam_cutoff", "value": "0.5"}, "[0, 1]"), ({"name": "spam_cutoff", "value": True}, "[0, 1]"),
                        ({"name": "ham_cutoff", "value": 1.0}, "ham <= spam")):  # fmt: skip
        status, doc, _ = c.request("POST", "/console/cutoff", body, {"Origin": f"http://127.0.0.1:{port}"})
        assert status == 400 and words in doc["error"], doc
    assert c.request("GET", "/console/state")[1]["cutoffs"] == cutoffs
    status, doc, _ = c.request("POST", "/console/learn", {"message": spam, "class": "junk"})
    assert status == 400 and "spam" in doc["error"]
    assert _learned(d) == before
    # allowed: same origin, the session and its token
    status, doc, _ = c.request("POST", "/console/learn", {"message": spam, "class": "spam"},
                               {"Origin": f"http://127.0.0.1:{port}", "Sec-Fetch-Site": "same-origin"})  # fmt: skip
    assert status == 200 and doc["class"] == "spam"
    assert _learned(d)["spam"] == before["spam"] + 1
    status, doc, _ = c.request("POST", "/console/scan", {"message": spam})
    assert status == 200 and doc["message_id"] == "900@example.org"
    state = c.request("GET", "/console/state")[1]
    assert state["history"][0]["message_id"] == "900@example.org"
    assert spam.split("\r\n\r\n", 1)[1].strip() not in json.dumps(state)  # tokens, never the body
    # a pinned cut-off is the model's: /stat shows it, and it outlives a restart
    status, doc, _ = c.request("POST", "/console/cutoff", {"name": "spam_cutoff", "value": 0.9})
    assert status == 200 and doc["cutoffs"]["spam_cutoff"]["pinned"] is True
    assert doc["cutoffs"]["spam_cutoff"]["why"].startswith("pinned: on the page at ")
    thresholds = d.request("GET", "/stat")[1]["thresholds"]
    assert thresholds["spam_cutoff"] == pytest.approx(0.9, abs=1e-12) and thresholds["spam_reason"] == "pinned"
    # a report (the spam learned as ham against its verdict) is listed, and undone: back to spam
    assert c.request("POST", "/console/scan", {"message": spam})[1]["label"] == "spam"
    status, doc, _ = c.request("POST", "/console/learn", {"message": spam, "class": "ham"})
    assert status == 200 and doc["moved_from"] == "spam" and doc["report"] is not None
    reports = c.request("GET", "/console/state")[1]["reports"]
    assert [(r["id"], r["class"], r["verdict"], r["message_id"], r["undone"]) for r in reports] == [
        (doc["report"], "ham", "spam", "900@example.org", None)]
    assert c.request("POST", "/console/undo", {"id": doc["report"]}, {"X-CSRF-Token": ""})[0] == 403
    status, undone, _ = c.request("POST", "/console/undo", {"id": doc["report"]})
    assert status == 200 and undone["success"] and undone["report"]["undone"] is not None
    assert c.request("POST", "/console/undo", {"id": doc["report"]})[0] == 409
    assert c.request("POST", "/console/undo", {"id": "x"})[0] == 400
    assert _learned(d)["spam"] == before["spam"] + 1
    # logged out: the session is gone
    assert c.request("POST", "/console/logout", {})[0] == 200
    assert c.request("GET", "/console/state")[1]["logged_in"] is False
    assert c.request("POST", "/console/learn", {"message": spam, "class": "ham"})[0] == 403
    assert _learned(d)["spam"] == before["spam"] + 1
    assert d.stop() == 0
    with Daemon(d.model) as again:
        thresholds = again.request("GET", "/stat")[1]["thresholds"]
        assert thresholds["spam_cutoff"] == pytest.approx(0.9, abs=1e-12) and thresholds["spam_reason"] == "pinned"


def test_without_a_password_file_no_one_logs_in(tmp_path, model):
    copy = tmp_path / "model.snb"
    copy.write_bytes(model.read_bytes())
    with Daemon(copy) as d:  # the page on the HTTP listener, which learns here
        c = Client(d.port)
        assert c.request("GET", "/")[0] == 200
        assert c.request("GET", "/console/state")[1] == {"logged_in": False, "password": False}
        assert c.login("anything") == 403 and c.login("") == 403


# -- the page in a real browser ------------------------------------------------------------


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's chromium and its chromedriver, installed with apt where missing (skipped where
    that is impossible, except under ``CI=true``, where it fails)."""
    try:
        apt_install("chromium", "/usr/bin/chromium", recommends=False)
        apt_install("chromium-driver", "/usr/bin/chromedriver", recommends=False)
    except Unavailable as err:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the browser tests: {err}")
        pytest.skip(str(err))
    return "/usr/bin/chromedriver"


@pytest.fixture()
def browser(chromium: str) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,900",
                "--no-first-run", "--disable-extensions", "--force-device-scale-factor=1"):  # fmt: skip
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(chromium), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def _text(driver: Any, css: str, want: Any) -> str:
    """Wait until the element at ``css`` is shown with a text ``want`` accepts; its text."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    def ready(drv: Any) -> str | bool:
        try:
            found = drv.find_elements(By.CSS_SELECTOR, css)
            return bool(found) and found[0].is_displayed() and want(found[0].text) and found[0].text
        except StaleElementReferenceException:  # redrawn meanwhile
            return False

    return WebDriverWait(driver, WAIT).until(ready, f"{css} never showed the expected text")


def _screenshot(driver: Any, width: int, path: Path) -> None:
    """A PNG of the whole page at ``width`` CSS pixels."""
    driver.set_window_size(width, 900)
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(width, min(int(height) + 140, 6000))  # (+ the window's frame, if any)
    driver.execute_script("window.dispatchEvent(new Event('resize'))")  # the charts redrawn at this width, now
    driver.save_screenshot(str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_page_in_chromium(daemon, browser, tmp_path):
    from selenium.webdriver.common.by import By

    d, port = daemon
    base = f"http://127.0.0.1:{port}/"
    for raw, _ in corpus(40, seed=7):  # recent mail for the history and the charts
        d.check(raw)
    browser.get(base)
    find = browser.find_element
    # log in: a wrong password is refused, the right one opens the page
    find(By.ID, "password").send_keys("wrong")
    find(By.CSS_SELECTOR, "#login button").click()
    _text(browser, "#login-status", lambda t: "wrong password" in t)
    assert not find(By.ID, "console").is_displayed()
    find(By.ID, "password").clear()
    find(By.ID, "password").send_keys(PASSWORD + "\n")  # Enter submits: the keyboard is enough
    _text(browser, "#status", lambda t: "learned spam" in t)
    assert browser.get_cookie("streamnb_session")["httpOnly"] is True
    assert browser.get_cookie("streamnb_session")["sameSite"] == "Strict"
    assert browser.execute_script("return document.cookie") == ""  # HttpOnly: no script reads it
    learned = _learned(d)
    spam_before = learned["spam"]
    _text(browser, "dd[data-name='learned spam']", lambda t: t == f"{spam_before:g}")

    # scan: the verdict and the evidence, as /checkv2 gives them
    raw = message(SPAM_WORDS[:4] + HAM_WORDS[:2], 4242, "offer")
    want = d.check(raw)
    find(By.ID, "message").send_keys(raw.decode().replace("\r\n", "\n"))
    find(By.ID, "scan-button").click()
    label = _text(browser, "#verdict-label", lambda t: t in ("spam", "ham", "unsure"))
    assert label == want["streamnb"]["label"] == "unsure"  # under the default spam cut-off (0.9985)
    assert _text(browser, "#verdict-action", bool) == want["action"] == "no action"
    shown = [li.text.rsplit(" ", 1) for li in find(By.ID, "evidence").find_elements(By.TAG_NAME, "li")]
    symbols = want["symbols"]
    expected = [o.rsplit("(", 1) for o in symbols["STREAMNB_SPAM_TOKENS"]["options"][:10]]
    expected += [o.rsplit("(", 1) for o in symbols.get("STREAMNB_HAM_TOKENS", {"options": []})["options"][:10]]
    assert [t for t, _ in shown] == [t for t, _ in expected] and shown
    for (_, x), (_, y) in zip(shown, expected):  # the page rounds to 3 places, then shows 2
        assert float(x) == pytest.approx(float(y.rstrip(")")), abs=0.0051)
    _text(browser, "#history tbody", lambda t: "4242@example.org" in t)

    # learn it as spam: the counts follow
    find(By.ID, "learn-spam").click()
    _text(browser, "#learned", lambda t: t == "learned as spam")
    _text(browser, "dd[data-name='learned spam']", lambda t: t == f"{spam_before + 1:g}")
    assert _learned(d)["spam"] == spam_before + 1

    # pin the spam cut-off below this message's spamicity: the next verdict calls it spam
    spamicity = d.check(raw)["streamnb"]["spamicity"]
    assert d.check(raw)["streamnb"]["label"] == "unsure"
    cutoff = round(spamicity * 0.9, 6)
    field = find(By.ID, "spam_cutoff")
    field.clear()
    field.send_keys(str(cutoff))
    find(By.ID, "pin").click()
    _text(browser, "dd[data-name='spam cutoff']", lambda t: t.startswith(f"{cutoff:.6f} (pinned: on the page"))
    find(By.ID, "scan-button").click()
    _text(browser, "#verdict-label", lambda t: t == "spam")
    assert _text(browser, "#verdict-action", bool) == "add header"
    assert d.check(raw)["streamnb"]["label"] == "spam"  # the MTA's next verdict too

    # learned as ham against that verdict: a report, listed, and undone from its button
    find(By.ID, "learn-ham").click()
    _text(browser, "#learned", lambda t: t == "learned as ham (moved from spam)")
    _text(browser, "#reports tbody", lambda t: "4242@example.org" in t and "Undo" in t)
    find(By.CSS_SELECTOR, "#reports tbody button").click()
    _text(browser, "#undo-status", lambda t: t.startswith("report ") and t.endswith(" undone"))
    _text(browser, "#reports tbody", lambda t: "undone" in t and "Undo" not in t)
    assert _learned(d)["spam"] == spam_before + 1  # back to spam
    browser.execute_script("window.scrollTo(0, 0)")

    shots = DOCS_STATIC if os.environ.get("STREAMNB_SCREENSHOTS") else tmp_path
    shots.mkdir(parents=True, exist_ok=True)
    _screenshot(browser, 1280, shots / "mail-page.png")
    _screenshot(browser, 390, shots / "mail-page-phone.png")
    width = browser.execute_script("return document.documentElement.scrollWidth")
    assert width <= 390, f"the page is {width} px wide on a 390 px phone"

    # a user's own counts, on request: the user named in the form
    browser.set_window_size(1280, 900)
    find(By.ID, "user").send_keys("Alice@example.com")
    find(By.ID, "learn-ham").click()
    _text(browser, "#learned", lambda t: t == "learned as ham")
    _text(browser, "dd[data-name='alice@example.com: learned ham']", lambda t: t == "1")
    assert d.request("GET", "/stat?user=alice@example.com")[1]["user"]["learned"] == {"spam": 0.0, "ham": 1.0}

    # from the browser, a post without the session's token is refused, and after logging out all are
    status = browser.execute_async_script(
        "const done = arguments[arguments.length - 1]; fetch('/console/cutoff', {method: 'POST', headers: "
        "{'Content-Type': 'application/json'}, body: JSON.stringify({name: 'spam_cutoff', value: null})})"
        ".then(r => done(r.status));")
    assert status == 403
    find(By.CSS_SELECTOR, "#logout button").click()
    _text(browser, "#login-title", lambda t: t == "Log in")
    assert d.check(raw)["streamnb"]["label"] == "spam"  # nothing changed
    assert _learned(d)["spam"] == spam_before + 1

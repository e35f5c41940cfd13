// The admin's page of streamnb's mail daemon: no library, nothing fetched but this daemon's JSON.
"use strict";
(function () {
  let csrf = null;
  let lastState = null;
  const $ = (id) => document.getElementById(id);
  const SVG = "http://www.w3.org/2000/svg";
  const COLORS = { spam: "#b3261e", unsure: "#d4a800", ham: "#1b6e3a" };

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
    if (text !== undefined) node.textContent = text;
    return node;
  }
  async function call(method, path, body, form) {
    const headers = {};
    if (csrf) headers["X-CSRF-Token"] = csrf;
    let payload;
    if (form) { payload = new URLSearchParams(form); }
    else if (body !== undefined) { headers["Content-Type"] = "application/json"; payload = JSON.stringify(body); }
    const resp = await fetch(path, { method, headers, body: payload, credentials: "same-origin" });
    let doc;
    try { doc = await resp.json(); } catch (e) { doc = { error: "HTTP " + resp.status }; }
    if (!resp.ok) throw new Error(doc.error || ("HTTP " + resp.status));
    return doc;
  }

  function show(loggedIn) {
    $("login-box").hidden = loggedIn;
    $("console").hidden = !loggedIn;
    $("logout").hidden = !loggedIn;
  }

  async function refresh() {
    const user = $("user") ? $("user").value.trim() : "";
    const state = await call("GET", "/console/state" + (user ? "?user=" + encodeURIComponent(user) : ""));
    if (!state.logged_in) {
      csrf = null;
      show(false);
      if (state.password === false) $("login-status").textContent = "No --password-file: no one can log in.";
      return;
    }
    csrf = state.csrf;
    lastState = state;
    show(true);
    drawStatus(state);
    drawHistory(state.history);
    drawReports(state.reports || []);
    drawRates(state.minutes);
    drawScores(state);
  }

  function drawStatus(s) {
    const st = s.stat, dl = $("status");
    dl.replaceChildren();
    const rows = [
      ["learned spam", String(st.learned_by_class.spam)], ["learned ham", String(st.learned_by_class.ham)],
      ["tokens", String(st.tokens)], ["users in memory", String(st.users_resident)],
      ["scanned (this process)", String(st.scanned)],
    ];
    for (const [name, c] of Object.entries(s.cutoffs)) {
      const label = name.replace("_", " ");
      rows.push([label, c.value === null ? "none" : c.value.toFixed(6) + " (" + c.why + ")"]);
    }
    if (st.journal_records !== null && st.journal_records !== undefined) rows.push(["journal records", String(st.journal_records)]);
    if (st.user) {  // the user named in the scan form
      rows.push([st.user.name + ": learned spam", String(st.user.learned.spam)],
                [st.user.name + ": learned ham", String(st.user.learned.ham)],
                [st.user.name + ": own filter's weight", st.user.weight.toFixed(3)]);
    }
    for (const [k, v] of rows) { dl.append(el("dt", {}, k)); dl.append(el("dd", { "data-name": k }, v)); }
    $("why").textContent = st.operating_point ? "Why these thresholds: " + st.operating_point : "";
    cutoffFields(s.cutoffs);
  }

  // one field per cut-off the daemon offers (GET /console/state's "cutoffs"), its value the one in force
  function cutoffFields(cutoffs) {
    const box = $("cutoff-fields"), names = Object.keys(cutoffs);
    if (box.dataset.names !== names.join(" ")) {
      box.replaceChildren();
      for (const name of names) {
        box.append(el("label", { for: name }, cutoffs[name].label));
        box.append(el("input", { id: name, name, type: "number", min: "0", max: "1", step: "any", placeholder: "not pinned" }));
      }
      box.dataset.names = names.join(" ");
    }
    for (const name of names) {
      const input = $(name);
      // a pinned cut-off's value is editable; one that follows the model (or is off) shows as empty
      if (document.activeElement !== input) input.value = cutoffs[name].pinned ? cutoffs[name].value : "";
    }
  }

  function tokenList(tokens, side) {
    const span = el("span", { class: "tok tok-" + side });
    span.textContent = tokens.filter((t) => (side === "spam" ? t[1] > 0 : t[1] < 0))
      .map((t) => t[0] + " " + (t[1] > 0 ? "+" : "") + t[1].toFixed(2)).join(", ");
    return span;
  }

  function drawHistory(entries) {
    const body = $("history").tBodies[0];
    body.replaceChildren();
    for (const e of entries) {
      const tr = el("tr");
      // data-label: the column's name, shown beside each cell where the table is stacked (phones)
      tr.append(el("td", { "data-label": "time" }, new Date(e.time * 1000).toTimeString().slice(0, 8)));
      tr.append(el("td", { "data-label": "message-id" }, e.message_id || "—"));
      tr.append(el("td", { "data-label": "user" }, e.user || "(shared)"));
      tr.append(el("td", { class: "label-" + e.label, "data-label": "verdict" }, e.label));
      tr.append(el("td", { "data-label": "spamicity" }, e.spamicity.toFixed(4)));
      tr.append(el("td", { "data-label": "action" }, e.action));
      const a = el("td", { "data-label": "towards spam" }); a.append(tokenList(e.tokens, "spam")); tr.append(a);
      const b = el("td", { "data-label": "towards ham" }); b.append(tokenList(e.tokens, "ham")); tr.append(b);
      body.append(tr);
    }
  }

  function drawReports(reports) {
    const body = $("reports").tBodies[0];
    body.replaceChildren();
    for (const r of reports) {
      const tr = el("tr");
      tr.append(el("td", { "data-label": "time" }, new Date(r.time * 1000).toTimeString().slice(0, 8)));
      tr.append(el("td", { "data-label": "message-id" }, r.message_id || r.digest));
      tr.append(el("td", { "data-label": "user" }, r.user || "(shared)"));
      tr.append(el("td", { class: "label-" + r.class, "data-label": "learned as" }, r.class));
      tr.append(el("td", { class: "label-" + r.verdict, "data-label": "verdict was" }, r.verdict));
      tr.append(el("td", { "data-label": "spamicity" }, r.spamicity.toFixed(4)));
      const cell = el("td");
      if (r.undone) {
        cell.textContent = "undone";
      } else {
        const button = el("button", { type: "button", id: "undo-" + r.id }, "Undo");
        button.addEventListener("click", async () => {
          try {
            await call("POST", "/console/undo", { id: r.id });
            $("undo-status").textContent = "report " + r.id + " undone";
            await refresh();
          } catch (err) { $("undo-status").textContent = err.message; }
        });
        cell.append(button);
      }
      tr.append(cell);
      body.append(tr);
    }
  }

  function drawRates(minutes) {
    const box = $("rate-chart");
    const W = width(box), H = 220, L = 30, R = 50, T = 10, B = 40;
    const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-labelledby": "rate-desc" });
    const n = 180, now = Math.floor(Date.now() / 60000) * 60;
    const byMinute = new Map(minutes.map((m) => [m.minute, m]));
    const cols = [];
    for (let i = n - 1; i >= 0; i--) cols.push(byMinute.get(now - 60 * i) || { spam: 0, unsure: 0, ham: 0, mean_seconds: 0 });
    const most = Math.max(1, ...cols.map((c) => c.spam + c.unsure + c.ham));
    const slowest = Math.max(0.001, ...cols.map((c) => c.mean_seconds));
    const w = (W - L - R) / n, h = H - T - B;
    const total = cols.reduce((a, c) => a + c.spam + c.unsure + c.ham, 0);
    root.append(svg("desc", { id: "rate-desc" }, `Verdicts per minute over the last three hours: ${total} in all; most in a minute ${most}; slowest mean check ${(slowest * 1000).toFixed(2)} ms`));
    root.append(svg("line", { x1: L, y1: T + h, x2: W - R, y2: T + h, stroke: "#888" }));
    cols.forEach((c, i) => {
      let y = T + h;
      for (const label of ["ham", "unsure", "spam"]) {
        const bh = (c[label] / most) * h;
        if (bh > 0) { y -= bh; root.append(svg("rect", { x: L + i * w, y, width: Math.max(1, w - 0.5), height: bh, fill: COLORS[label] })); }
      }
    });
    const busy = cols.map((c, i) => [c, i]).filter(([c]) => c.spam + c.unsure + c.ham > 0);
    const at = ([c, i]) => [L + i * w + w / 2, T + h - (c.mean_seconds / slowest) * h];
    root.append(svg("polyline", { points: busy.map((p) => at(p).join(",")).join(" "), fill: "none", stroke: "#0969da", "stroke-width": 1.5 }));
    for (const p of busy) { const [x, y] = at(p); root.append(svg("circle", { cx: x, cy: y, r: 2.5, fill: "#0969da" })); }
    root.append(svg("text", { x: 2, y: T + 10, "font-size": 11 }, String(most)));
    root.append(svg("text", { x: 2, y: T + h, "font-size": 11 }, "0"));
    root.append(svg("text", { x: W - R + 4, y: T + 10, "font-size": 11, fill: "#0969da" }, (slowest * 1000).toFixed(2) + " ms"));
    root.append(svg("text", { x: L, y: T + h + 13, "font-size": 11 }, "−3 h"));
    root.append(svg("text", { x: W - R, y: T + h + 13, "font-size": 11, "text-anchor": "end" }, "now"));
    legend(root, W, H, [["spam", COLORS.spam], ["unsure", COLORS.unsure], ["ham", COLORS.ham], ["mean latency", "#0969da"]]);
    box.replaceChildren(root);
  }

  // the chart as wide as its box, so its text keeps its size on a phone
  function width(box) { return Math.max(280, Math.round(box.clientWidth || 600)); }

  function legend(root, W, H, items) {
    let x = 30;
    for (const [name, color] of items) {
      root.append(svg("rect", { x, y: H - 18, width: 10, height: 10, fill: color }));
      root.append(svg("text", { x: x + 13, y: H - 9, "font-size": 11 }, name));
      x += 20 + name.length * 6.5;
    }
  }

  function drawScores(s) {
    const box = $("score-chart");
    const W = width(box), H = 220, L = 30, R = 10, T = 10, B = 40;
    const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-labelledby": "score-desc" });
    const hist = s.scores, bins = hist.ham.length, w = (W - L - R) / bins, h = H - T - B;
    const most = Math.max(1, ...hist.ham, ...hist.spam, ...hist.unsure);
    root.append(svg("desc", { id: "score-desc" }, `Spamicity of the last verdicts: ${hist.ham.reduce((a, b) => a + b, 0)} ham, ${hist.unsure.reduce((a, b) => a + b, 0)} unsure, ${hist.spam.reduce((a, b) => a + b, 0)} spam`));
    root.append(svg("line", { x1: L, y1: T + h, x2: W - R, y2: T + h, stroke: "#888" }));
    root.append(svg("text", { x: 2, y: T + 10, "font-size": 11 }, String(most)));
    const third = w / 3;
    ["ham", "unsure", "spam"].forEach((label, k) => {
      hist[label].forEach((c, i) => {
        if (!c) return;
        const bh = (c / most) * h;
        root.append(svg("rect", { x: L + i * w + k * third, y: T + h - bh, width: third - 0.5, height: bh, fill: COLORS[label] }));
      });
    });
    for (let t = 0; t <= 1.0001; t += 0.25) root.append(svg("text", { x: L + t * (W - L - R) - 8, y: T + h + 13, "font-size": 11 }, t.toFixed(2)));
    const CUT = { spam: "#b3261e", ham: "#1b6e3a", reject: "#6f42c1", quarantine: "#0969da" };
    const lines = [];
    for (const [name, c] of Object.entries(s.cutoffs)) {
      const short = name.split("_")[0];
      if (c.value !== null) lines.push([short + (c.pinned ? " (pinned)" : ""), c.value, CUT[short] || "#444"]);
    }
    lines.forEach(([name, p, color], k) => {
      if (p === null) return;
      const x = L + p * (W - L - R);
      root.append(svg("line", { x1: x, y1: T, x2: x, y2: T + h, stroke: color, "stroke-width": 2, "stroke-dasharray": "5 3" }));
      const left = k % 2 === 1 || x > W - 90;  // every other label left of its line, so close lines stay legible
      root.append(svg("text", { x: left ? x - 3 : x + 3, y: T + 12 + 13 * k, "font-size": 11, fill: color, "text-anchor": left ? "end" : "start" }, name + " " + p.toFixed(3)));
    });
    legend(root, W, H, [["ham", COLORS.ham], ["unsure", COLORS.unsure], ["spam", COLORS.spam]]);
    box.replaceChildren(root);
  }

  function showVerdict(v) {
    const box = $("verdict");
    box.replaceChildren();
    const p = el("p");
    p.append("Verdict: ", el("strong", { class: "label-" + v.label, id: "verdict-label" }, v.label),
      ` — spamicity ${v.spamicity.toFixed(6)}, threshold ${v.threshold.toFixed(6)}, action `,
      el("strong", { id: "verdict-action" }, v.action), `, ${v.tokens} tokens`);
    box.append(p);
    const ev = el("div", { class: "evidence", id: "evidence" });
    for (const side of ["spam", "ham"]) {
      const col = el("div");
      col.append(el("h3", {}, "towards " + side));
      const ul = el("ul");
      for (const [tok, x] of v.evidence.filter((t) => (side === "spam" ? t[1] > 0 : t[1] < 0)))
        ul.append(el("li", { class: "tok tok-" + side }, `${tok} ${x > 0 ? "+" : ""}${x.toFixed(2)}`));
      col.append(ul);
      ev.append(col);
    }
    box.append(ev);
  }

  function message() { return { message: $("message").value, user: $("user").value }; }
  function fail(box) { return (err) => { $(box).replaceChildren(el("p", { class: "error" }, err.message)); }; }

  document.addEventListener("DOMContentLoaded", () => {
    $("login").addEventListener("submit", async (ev) => {
      ev.preventDefault();
      try {
        const doc = await call("POST", "/console/login", undefined, { password: $("password").value });
        csrf = doc.csrf;
        $("password").value = "";
        $("login-status").textContent = "";
        await refresh();
      } catch (err) { $("login-status").textContent = err.message; }
    });
    $("logout").addEventListener("submit", async (ev) => {
      ev.preventDefault();
      try { await call("POST", "/console/logout", {}); } finally { csrf = null; show(false); }
    });
    $("user").addEventListener("change", () => { refresh().catch(() => {}); });
    $("upload").addEventListener("change", async () => {
      const file = $("upload").files[0];
      if (file) $("message").value = await file.text();
    });
    $("scan").addEventListener("submit", async (ev) => {
      ev.preventDefault();
      try { showVerdict(await call("POST", "/console/scan", message())); await refresh(); } catch (err) { fail("verdict")(err); }
    });
    for (const label of ["spam", "ham"]) {
      $("learn-" + label).addEventListener("click", async () => {
        try {
          const doc = await call("POST", "/console/learn", { ...message(), class: label });
          const what = doc.already ? "already learned as " + label : "learned as " + label + (doc.moved_from ? " (moved from " + doc.moved_from + ")" : "");
          $("verdict").replaceChildren(el("p", { id: "learned" }, what));
          await refresh();
        } catch (err) { fail("verdict")(err); }
      });
    }
    $("cutoffs").addEventListener("submit", async (ev) => {
      ev.preventDefault();
      try {
        for (const name of Object.keys(lastState ? lastState.cutoffs : {})) {
          const text = $(name).value.trim();
          const c = lastState.cutoffs[name], now = c.pinned ? c.value : null;
          const value = text === "" ? null : Number(text);
          if (value !== now) await call("POST", "/console/cutoff", { name, value });
        }
        $("cutoff-status").textContent = "pinned";
        await refresh();
      } catch (err) { $("cutoff-status").textContent = err.message; }
    });
    refresh().catch(fail("login-status"));
    setInterval(() => { if (csrf) refresh().catch(() => {}); }, 10000);
    window.addEventListener("resize", () => { if (lastState && csrf) { drawRates(lastState.minutes); drawScores(lastState); } });
  });
})();

// biasaudit compare: runs side by side per stimulus, built from the JSON in #viewer-data with DOM
// calls and textContent only (never an HTML parser): every text in the data is untrusted model or stimulus text.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("viewer-data").textContent);
  var app = document.getElementById("app");
  var runs = data.runs;
  var entries = data.entries;
  var state = {metric: "", cell: "", group: "", label: "", show: "", sort: "differs", q: "", page: 0};
  var controls = {};
  var dom = biasauditDom, has = dom.has, el = dom.el, add = dom.add, fmt = dom.fmt, uniq = dom.uniq;

  function flat(lists) { return [].concat.apply([], lists); }
  function answersOf(e) { return flat(e.units.map(function (u) { return u.answers; })); }
  function codeOf(c) { return c.code || c.status; }
  function codeKey(c) { return c.layer + "=" + codeOf(c); }
  function runName(i) { return runs[i].letter + " \u00b7 " + runs[i].label; }

  function select(name, label, options) {
    var made = dom.select(name, label, options, function (key, value) { state[key] = value; state.page = 0; update(); });
    controls[name] = made.select;
    return made.wrap;
  }

  function spreadOf(e) {
    if (state.metric) { return has(e.spread, state.metric) ? e.spread[state.metric] : null; }
    return e.spread_max;
  }
  function matches(e) {
    var as = answersOf(e);
    if (state.metric && !as.some(function (a) { return has(a.items, state.metric); })) { return false; }
    if (state.cell && !as.some(function (a) { return a.cell === state.cell; })) { return false; }
    if (state.group) {
      var i = state.group.indexOf("=");
      if (e.groups[state.group.slice(0, i)] !== state.group.slice(i + 1)) { return false; }
    }
    if (state.label && !as.some(function (a) { return a.codes.some(function (c) { return codeKey(c) === state.label; }); })) { return false; }
    if (state.show === "codes" && e.disagree === 0) { return false; }
    if (state.show === "answers" && e.answers_differ === 0) { return false; }
    if (state.show === "all" && e.runs.length !== runs.length) { return false; }
    if (state.show === "unmatched" && e.matched) { return false; }
    if (state.q) {
      var q = state.q.toLowerCase();
      var hay = [e.stimulus].concat(Object.keys(e.fields).map(function (k) { return e.fields[k]; }));
      e.units.forEach(function (u) {
        hay.push(u.prompt);
        u.answers.forEach(function (a) { hay.push(a.prompt, a.answer, a.output, a.cell); });
      });
      if (!hay.some(function (t) { return String(t).toLowerCase().indexOf(q) >= 0; })) { return false; }
    }
    return true;
  }
  function sorted(list) {
    if (state.sort === "differs") { return list; }  // the page's own order: differs most first
    var keyed = list.map(function (e, i) {
      var k = state.sort === "spread" ? spreadOf(e) : state.sort === "answers" ? e.answers_differ : -e.order;
      return [k === null || k === undefined ? null : k, i, e];
    });
    keyed.sort(function (x, y) {
      if (x[0] === null && y[0] === null) { return x[1] - y[1]; }
      if (x[0] === null) { return 1; }
      if (y[0] === null) { return -1; }
      return y[0] !== x[0] ? y[0] - x[0] : x[1] - y[1];
    });
    return keyed.map(function (x) { return x[2]; });
  }

  function header() {
    document.title = data.title + " - biasaudit compare";
    var h = el("header");
    add(h, el("h1", null, data.title));
    var m = data.matching;
    add(h, el("p", "sub", "Comparing " + runs.length + " runs, stimulus by stimulus; biasaudit " + data.version));
    var t = el("table", "runs");
    var tr = el("tr");
    ["", "model", "audit", "run", "overall", "responses read", "stimuli", "matched", "folder"].forEach(function (c) { add(tr, el("th", null, c)); });
    t.appendChild(el("thead")).appendChild(tr);
    var tb = el("tbody");
    runs.forEach(function (r) {
      add(tb, add(el("tr"), el("td", "letter", r.letter), el("td", null, r.label), el("td", null, r.audit),
        el("td", "mono", r.run_id), add(el("td"), el("span", "verdict v-" + r.overall, r.overall)),
        el("td", "num", r.read + " of " + r.responses), el("td", "num", r.stimuli), el("td", "num", r.matched),
        el("td", "mono", r.folder)));
    });
    add(h, add(t, tb));
    var match = el("p", "matching");
    match.id = "matching";
    add(match, m.stimuli + " stimuli: " + m.in_all + " in every run, " + m.in_some + " in some (two or more), " +
      m.unmatched + " in one run only (unmatched)" +
      (m.conflicts ? "; " + m.conflicts + " id(s) whose content differs between runs, kept apart" : "") +
      (m.by_id ? "; " + m.by_id + " matched by id alone (a run holds no content hash)" : "") +
      (m.cells === "any" ? "; the runs' cells differ, so responses are matched whatever their cell" : "") + ".");
    add(h, match);
    if (data.notices.length) {
      var ul = el("ul", "notices");
      ul.id = "notices";
      data.notices.forEach(function (n) { add(ul, el("li", null, n)); });
      add(h, ul);
    }
    return h;
  }

  function estimates() {
    var sec = el("section");
    sec.id = "estimates";
    add(sec, el("h2", null, "Pooled estimates"));
    var keys = uniq(data.estimates.map(function (e) { return e.metric + " / " + e.estimate; }));
    var wrap = el("div", "scroll");
    var t = el("table", "est");
    var hr = el("tr");
    add(hr, el("th", null, "metric / estimate"));
    runs.forEach(function (r, i) { add(hr, el("th", null, runName(i))); });
    t.appendChild(el("thead")).appendChild(hr);
    var tb = el("tbody");
    keys.forEach(function (k) {
      var tr = el("tr");
      add(tr, el("td", "mono", k));
      runs.forEach(function (r, i) {
        var e = data.estimates.filter(function (x) { return x.run === i && x.metric + " / " + x.estimate === k; })[0];
        var td = el("td", "num");
        if (e) {
          if (e.headline) { tr.className = "headline"; }
          add(td, fmt(e.value) + (e.ci_low === null || e.ci_high === null ? "" : " [" + fmt(e.ci_low) + ", " + fmt(e.ci_high) + "]"));
          e.verdicts.forEach(function (v) { add(td, " ", el("span", "verdict v-" + v, v)); });
          if (e.note) { td.title = e.note; }
        }
        add(tr, td);
      });
      add(tb, tr);
    });
    add(sec, add(wrap, add(t, tb)));
    return sec;
  }

  function filters() {
    var f = el("div", "filters");
    f.id = "filters";
    var all = flat(entries.map(answersOf));
    var metrics = uniq(flat(all.map(function (a) { return Object.keys(a.items); })));
    add(f, select("metric", "metric", [["", "any metric"]].concat(metrics.map(function (m) { return [m, m]; }))));
    var cells = uniq(all.map(function (a) { return a.cell; }));
    add(f, select("cell", "cell", [["", "all cells"]].concat(cells.map(function (c) { return [c, c]; }))));
    var groups = uniq(flat(entries.map(function (e) {
      return Object.keys(e.groups).map(function (k) { return k + "=" + e.groups[k]; });
    }))).sort();
    add(f, select("group", "group", [["", "all groups"]].concat(groups.map(function (g) { return [g, g]; }))));
    var labels = uniq(flat(all.map(function (a) { return a.codes.map(codeKey); }))).sort();
    add(f, select("label", "label (any run)", [["", "any label"]].concat(labels.map(function (l) { return [l, l]; }))));
    add(f, select("show", "show", [["", "every stimulus"], ["codes", "codes differ"], ["answers", "answers differ"],
      ["all", "in every run"], ["unmatched", "unmatched"]]));
    add(f, select("sort", "sort", [["differs", "differs most (codes, then item spread, then answers)"],
      ["spread", "item difference spread, largest first"], ["answers", "answers that differ, most first"],
      ["plan", "plan order"]]));
    var wrap = el("label", "filter");
    var q = el("input");
    q.type = "search";
    q.id = "f-q";
    q.placeholder = "text in prompt, answers, fields";
    q.addEventListener("input", function () { state.q = q.value; state.page = 0; update(); });
    controls.q = q;
    add(f, add(wrap, el("span", null, "search"), q));
    return f;
  }

  function column(e, u, a) {
    var col = el("div", "col" + (a.odd.length ? " odd" : ""));
    col.setAttribute("data-run", runs[a.run].letter);
    add(col, el("div", "colhead", runName(a.run)));
    var chips = el("div", "head");
    if (!u.cell) { add(chips, el("span", "chip mono", a.cell)); }  // cells not matched: each run's own
    if (a.stimulus !== e.stimulus) { add(chips, el("span", "chip", "id " + a.stimulus)); }  // matched by content
    Object.keys(a.items).forEach(function (m) {
      if (a.items[m] !== null) { add(chips, el("span", "chip diff", m + " " + fmt(a.items[m]))); }
    });
    add(col, chips);
    if (a.prompt) {
      var det = el("details");
      add(det, el("summary", null, "Prompt (differs between runs)"), el("pre", "text prompt", a.prompt));
      add(col, det);
    }
    if (a.status !== "ok") {
      add(col, el("p", "error", "failed: " + a.error));
    } else if (a.answer) {
      add(col, el("pre", "text answer", a.answer));
    } else if (a.output) {
      add(col, el("pre", "text output", a.output));
    } else {
      add(col, el("pre", "text answer", ""));
    }
    if (a.codes.length) {
      var t = el("table", "codes");
      var tb = el("tbody");
      a.codes.forEach(function (c) {
        var tr = el("tr", "code-" + c.status + (a.odd.indexOf(c.layer) >= 0 ? " differs" : ""));
        var why = el("td", "why", c.why);
        add(tb, add(tr, el("td", "mono", c.layer), el("td", "mono code", codeOf(c).replace("_", " ")), why));
      });
      add(col, add(t, tb));
    }
    return col;
  }

  function card(e) {
    var art = el("article", "cmp" + (e.disagree ? " codes-differ" : ""));
    art.setAttribute("data-stimulus", e.stimulus);
    var head = el("div", "head");
    add(head, el("span", "chip", "stimulus " + e.stimulus));
    Object.keys(e.groups).forEach(function (k) { add(head, el("span", "chip group", k + " = " + e.groups[k])); });
    if (e.disagree) { add(head, el("span", "chip differs", "codes differ: " + e.disagree + " (in " + e.units_differ + " of " + e.units.length + " responses)")); }
    var s = spreadOf(e);
    if (s !== null && s !== undefined) { add(head, el("span", "chip diff", "item difference spread " + fmt(s))); }
    if (e.answers_differ) { add(head, el("span", "chip", "answers differ in " + e.answers_differ + " of " + e.units.length)); }
    if (e.runs.length < runs.length) {
      add(head, el("span", "chip warn", e.matched ? "only in " + e.runs.map(function (i) { return runs[i].letter; }).join(", ") :
        "unmatched: only in " + runs[e.runs[0]].letter));
    }
    if (e.by_id) { add(head, el("span", "chip warn", "matched by id")); }
    add(art, head);
    var keys = Object.keys(e.fields);
    if (keys.length) {
      var det = el("details");
      add(det, el("summary", null, "Stimulus fields (" + keys.length + ")"));
      var dl = el("dl");
      keys.forEach(function (k) { add(dl, el("dt", null, k), el("dd", null, e.fields[k])); });
      add(art, add(det, dl));
    }
    e.units.forEach(function (u) {
      var ud = el("div", "unit");
      var uh = el("div", "head");
      if (u.cell) { add(uh, el("span", "chip mono", u.cell)); }
      if (u.slot && u.slot !== "prompt") { add(uh, el("span", "chip", "slot " + u.slot)); }
      if (u.variant) { add(uh, el("span", "chip", "variant " + u.variant)); }
      if (u.sample) { add(uh, el("span", "chip", "sample " + u.sample)); }
      add(ud, uh);
      if (u.prompt) {
        var pd = el("details");
        add(pd, el("summary", null, "Prompt (the same in every run)"), el("pre", "text prompt", u.prompt));
        add(ud, pd);
      }
      var grid = el("div", "cols cols-" + runs.length);
      var byRun = {};
      u.answers.forEach(function (a) { byRun[a.run] = a; });
      runs.forEach(function (r, i) {
        if (has(byRun, i)) { add(grid, column(e, u, byRun[i])); } else {
          var miss = el("div", "col missing");
          miss.setAttribute("data-run", r.letter);
          add(miss, el("div", "colhead", runName(i)), el("p", "sub", "no response here in this run"));
          add(grid, miss);
        }
      });
      add(art, add(ud, grid));
    });
    return art;
  }

  var list, count, pager;
  function update() {
    var shown = sorted(entries.filter(matches));
    var pages = Math.max(1, Math.ceil(shown.length / data.page_size));
    state.page = Math.min(state.page, pages - 1);
    count.textContent = shown.length + " of " + entries.length + " stimuli match";
    count.setAttribute("data-count", String(shown.length));
    while (list.firstChild) { list.removeChild(list.firstChild); }
    shown.slice(state.page * data.page_size, (state.page + 1) * data.page_size).forEach(function (e) { list.appendChild(card(e)); });
    while (pager.firstChild) { pager.removeChild(pager.firstChild); }
    if (pages > 1) {
      var prev = el("button", null, "previous");
      prev.type = "button";
      prev.disabled = state.page === 0;
      prev.addEventListener("click", function () { state.page -= 1; update(); });
      var next = el("button", null, "next");
      next.type = "button";
      next.id = "next-page";
      next.disabled = state.page >= pages - 1;
      next.addEventListener("click", function () { state.page += 1; update(); });
      add(pager, prev, el("span", null, " page " + (state.page + 1) + " of " + pages + " "), next);
    }
  }

  add(app, header(), estimates());
  var sec = el("section");
  sec.id = "stimuli";
  add(sec, el("h2", null, "Stimuli, side by side"));
  add(sec, el("p", "sub", "Differs most first: the number of runs whose code is not the most common one (per response " +
    "and coding layer, summed), then the largest spread (max \u2212 min over the runs) of an item difference, then the " +
    "number of responses whose answers are not all the same. A highlighted code is out of line with the other runs'."));
  add(sec, filters());
  count = el("p", "count");
  count.id = "count";
  list = el("div", "rows");
  list.id = "rows";
  pager = el("div", "pager");
  pager.id = "pager";
  add(sec, count, list, pager);
  add(app, sec);
  update();
}());

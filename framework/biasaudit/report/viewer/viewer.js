// biasaudit viewer: builds the page from the JSON in #viewer-data with DOM calls and
// textContent only (never an HTML parser): every text in the data is untrusted model or stimulus text.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("viewer-data").textContent);
  var app = document.getElementById("app");
  var rows = data.rows;
  var runs = data.runs;
  var state = {run: "", metric: "", cell: "", group: "", label: "", verdict: "", q: "", sort: "plan", page: 0, est: null,
    estRows: {}};
  // an estimate's link shows exactly the responses it names (`rows`: the responses of its items)
  rows.forEach(function (r, i) { r._i = i; });
  var controls = {};
  var dom = biasauditDom, el = dom.el, add = dom.add, fmt = dom.fmt, uniq = dom.uniq;
  // review in the page (review.js): labels, flags and comments, downloaded as a review sheet
  var review = typeof biasauditReview === "function" ? biasauditReview(data, {el: el, add: add, refresh: function () { update(); }}) : null;

  function select(name, label, options) {
    var made = dom.select(name, label, options, function (key, value) { state[key] = value; state.page = 0; update(); });
    controls[name] = made.select;
    return made.wrap;
  }
  function codeKey(c) { return c.layer + "=" + (c.code || c.status); }
  function maxDiff(r) {
    var best = null;
    Object.keys(r.items).forEach(function (m) {
      var d = r.items[m];
      if (d !== null && (best === null || Math.abs(d) > Math.abs(best))) { best = d; }
    });
    return best;
  }
  function diffOf(r) {
    if (state.metric) { return Object.prototype.hasOwnProperty.call(r.items, state.metric) ? r.items[state.metric] : null; }
    if (state.est) { return Object.prototype.hasOwnProperty.call(r.items, state.est.metric) ? r.items[state.est.metric] : null; }
    return maxDiff(r);
  }
  function inMetric(r, metric) {
    var run = runs[r.run];
    if (run.metrics.indexOf(metric) < 0) { return false; }
    if (run.metrics_with_items.indexOf(metric) < 0) { return true; }  // no items: every response
    return Object.prototype.hasOwnProperty.call(r.items, metric);
  }
  function matches(r) {
    if (state.run !== "" && String(r.run) !== state.run) { return false; }
    if (state.metric && !inMetric(r, state.metric)) { return false; }
    if (state.cell && r.cell !== state.cell) { return false; }
    if (state.group) {
      var i = state.group.indexOf("=");
      if (r.groups[state.group.slice(0, i)] !== state.group.slice(i + 1)) { return false; }
    }
    if (state.label && !r.codes.some(function (c) { return codeKey(c) === state.label; })) { return false; }
    if (state.verdict && r.verdicts.indexOf(state.verdict) < 0) { return false; }
    if (state.est && !Object.prototype.hasOwnProperty.call(state.estRows, r._i)) { return false; }
    if (state.q) {
      var q = state.q.toLowerCase();
      var hay = [r.prompt, r.answer, r.output, r.stimulus, r.cell].concat(Object.keys(r.fields).map(function (k) { return r.fields[k]; }));
      if (!hay.some(function (t) { return String(t).toLowerCase().indexOf(q) >= 0; })) { return false; }
    }
    return true;
  }

  function header() {
    document.title = data.title + " - biasaudit viewer";
    var h = el("header");
    add(h, el("h1", null, data.title));
    add(h, el("p", "sub", (data.kind === "suite" ? "Suite of " + runs.length + " runs" : "One run") +
      "; " + rows.length + " responses embedded; biasaudit " + data.version));
    var t = el("table", "runs");
    var tr = el("tr");
    ["run", "audit", "model", "overall", "responses shown", "folder"].forEach(function (c) { add(tr, el("th", null, c)); });
    add(t, el("thead"));
    t.tHead.appendChild(tr);
    var tb = el("tbody");
    runs.forEach(function (r) {
      var row = el("tr");
      add(row, el("td", null, r.label), el("td", null, r.audit), el("td", null, r.model),
        add(el("td"), el("span", "verdict v-" + r.overall, r.overall)),
        el("td", "num", r.shown + " of " + r.responses), el("td", "mono", r.folder));
      tb.appendChild(row);
    });
    add(t, tb);
    add(h, t);
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
    add(sec, el("h2", null, "Estimates"));
    add(sec, el("p", "sub", "Each estimate's \u201cresponses\u201d button shows the responses behind it (its metric's items, " +
      "its cell, its group) below."));
    var wrap = el("div", "scroll");
    var t = el("table", "est");
    var hr = el("tr");
    var cols = [""].concat(runs.length > 1 ? ["run"] : []).concat(["metric", "estimate", "cell", "group", "value", "95% interval", "n", "verdict"]);
    cols.forEach(function (c) { add(hr, el("th", null, c)); });
    t.appendChild(el("thead")).appendChild(hr);
    var tb = el("tbody");
    data.estimates.forEach(function (e, i) {
      var tr = el("tr", e.headline ? "headline" : null);
      var b = el("button", "link", "responses");
      b.type = "button";
      b.setAttribute("data-estimate", String(i));
      b.addEventListener("click", function () { showEstimate(e); });
      add(tr, add(el("td"), b));
      if (runs.length > 1) { add(tr, el("td", null, runs[e.run].label)); }
      var group = e.group;
      var ci = e.ci_low === null || e.ci_high === null ? "" : "[" + fmt(e.ci_low) + ", " + fmt(e.ci_high) + "]";
      var val = el("td", "num", fmt(e.value));
      if (e.note) { val.title = e.note; }
      add(tr, el("td", "mono", e.metric), el("td", "mono", e.estimate), el("td", "mono", e.cell || "pooled"),
        el("td", null, group), val, el("td", "num", ci), el("td", "num", e.n === null ? "" : e.n));
      var vd = el("td");
      e.verdicts.forEach(function (v) { add(vd, el("span", "verdict v-" + v, v)); });
      add(tr, vd);
      tb.appendChild(tr);
    });
    add(t, tb);
    add(sec, add(wrap, t));
    return sec;
  }

  function showEstimate(e) {
    ["run", "metric", "cell", "group", "label", "verdict", "q"].forEach(function (k) { state[k] = ""; if (controls[k]) { controls[k].value = ""; } });
    state.est = e;
    state.estRows = {};
    e.rows.forEach(function (i) { state.estRows[i] = 1; });
    state.sort = "absdiff";
    controls.sort.value = "absdiff";
    state.page = 0;
    update();
    document.getElementById("responses").scrollIntoView();
  }

  function filters() {
    var f = el("div", "filters");
    f.id = "filters";
    if (runs.length > 1) {
      add(f, select("run", "run", [["", "all runs"]].concat(runs.map(function (r, i) { return [String(i), r.label]; }))));
    }
    var metrics = uniq([].concat.apply([], runs.map(function (r) { return r.metrics; })));
    add(f, select("metric", "metric", [["", "any metric"]].concat(metrics.map(function (m) { return [m, m]; }))));
    var cells = uniq(rows.map(function (r) { return r.cell; }));
    add(f, select("cell", "cell", [["", "all cells"]].concat(cells.map(function (c) { return [c, c]; }))));
    var groups = uniq([].concat.apply([], rows.map(function (r) {
      return Object.keys(r.groups).map(function (k) { return k + "=" + r.groups[k]; });
    }))).sort();
    add(f, select("group", "group", [["", "all groups"]].concat(groups.map(function (g) { return [g, g]; }))));
    var labels = uniq([].concat.apply([], rows.map(function (r) { return r.codes.map(codeKey); }))).sort();
    add(f, select("label", "label", [["", "any label"]].concat(labels.map(function (l) { return [l, l]; }))));
    var verdicts = uniq([].concat.apply([], rows.map(function (r) { return r.verdicts; }))).sort();
    add(f, select("verdict", "verdict", [["", "any verdict"]].concat(verdicts.map(function (v) { return [v, v]; }))));
    add(f, select("sort", "sort", [["plan", "plan order"], ["absdiff", "|item difference|, largest first"],
      ["diffdesc", "item difference, high to low"], ["diffasc", "item difference, low to high"]]));
    var wrap = el("label", "filter");
    var q = el("input");
    q.type = "search";
    q.id = "f-q";
    q.placeholder = "text in prompt, answer, fields";
    q.addEventListener("input", function () { state.q = q.value; state.page = 0; update(); });
    controls.q = q;
    add(f, add(wrap, el("span", null, "search"), q));
    return f;
  }

  function kv(dl, k, v) { add(dl, el("dt", null, k), el("dd", null, v)); }

  function lp(x) { return x === null || x === undefined ? "n/a" : x.toFixed(3); }
  function table(cls, cols) {
    var t = el("table", cls);
    var hr = el("tr");
    cols.forEach(function (c) { add(hr, el("th", null, c)); });
    t.appendChild(el("thead")).appendChild(hr);
    return t;
  }
  // a scoring probe's response: each sentence with its total log-prob, the winner, the tokens folded away
  function scoringView(sc, slot) {
    var box = el("div", "scoring");
    add(box, el("h4", null, (sc.sentences.length > 1 ? "Sentences and their " : "") + sc.measure));
    var t = table("sentences", ["slot", "sentence", sc.measure, ""]);
    var tb = el("tbody");
    sc.sentences.forEach(function (s) {
      var won = sc.winner !== "" && sc.winner === s.slot;
      var tr = el("tr", (won ? "won" : "") + (s.slot === slot ? " this" : ""));
      tr.setAttribute("data-slot", s.slot);
      add(tr, el("td", "mono", s.slot), el("td", "prose", s.text), el("td", "num total", lp(s.total)),
        add(el("td"), won ? el("span", "chip won", "won: higher " + sc.measure) : null));
      tb.appendChild(tr);
    });
    add(box, add(t, tb));
    var says = sc.winner ? "The " + sc.winner + " sentence has the higher total." : "";
    add(box, el("p", "sub rule", [says, "Total: " + sc.rule + ".", sc.note].filter(function (x) { return x; }).join(" ")));
    var det = el("details", "tokens");
    var n = sc.sentences.reduce(function (k, s) { return k + s.tokens.length; }, 0);
    add(det, el("summary", null, "Per-token log-probs (" + n + " tokens; the total sums those marked \u2713)"));
    sc.sentences.forEach(function (s) {
      add(det, el("h4", null, s.slot));
      var tt = table("tokens", ["token", "log-prob", "counted"]);
      var body = el("tbody");
      s.tokens.forEach(function (k) {
        add(body, add(el("tr", k.counted ? "counted" : "skipped"), add(el("td"), el("code", "tok", k.text)),
          el("td", "num", lp(k.logprob)), el("td", null, k.counted ? "\u2713" : "")));
      });
      add(det, add(tt, body));
      if (s.cut) { add(det, el("p", "sub", s.cut + " more token(s) not shown (the total sums them).")); }
    });
    return add(box, det);
  }
  function optionsView(opts) {
    var box = el("div", "options");
    add(box, el("h4", null, "Top options"));
    var t = table("options", ["option", "probability", "log-prob"]);
    var tb = el("tbody");
    opts.forEach(function (o) {
      add(tb, add(el("tr"), add(el("td"), el("code", "tok", o.option)), el("td", "num", o.prob === null ? "n/a" : o.prob.toFixed(4)),
        el("td", "num", lp(o.logprob))));
    });
    return add(box, add(t, tb));
  }

  function card(r) {
    var a = el("article", "resp status-" + r.status);
    var head = el("div", "head");
    if (runs.length > 1) { add(head, el("span", "chip run", runs[r.run].label)); }
    add(head, el("span", "chip mono", r.cell), el("span", "chip", "stimulus " + r.stimulus));
    if (r.slot && r.slot !== "prompt") { add(head, el("span", "chip", "slot " + r.slot)); }
    if (r.variant) { add(head, el("span", "chip", "variant " + r.variant)); }
    if (r.sample) { add(head, el("span", "chip", "sample " + r.sample)); }
    Object.keys(r.groups).forEach(function (k) { add(head, el("span", "chip group", k + " = " + r.groups[k])); });
    r.verdicts.forEach(function (v) { add(head, el("span", "verdict v-" + v, v)); });
    // each chip names its metric: with no metric chosen a response may carry several
    // metrics' item differences (e.g. two scorings of one pair), on different scales
    var chosen = state.metric || (state.est ? state.est.metric : null);
    Object.keys(r.items).forEach(function (m) {
      var d = r.items[m];
      if (d !== null && (chosen === null || m === chosen)) {
        add(head, el("span", "chip diff", m + ": item difference " + fmt(d)));
      }
    });
    add(a, head);
    add(a, el("h4", null, "Prompt"), el("pre", "text prompt", r.prompt));
    if (r.status !== "ok") {
      add(a, el("p", "error", "failed: " + r.error));
    } else if (r.answer) {
      add(a, el("h4", null, "Answer"), el("pre", "text answer", r.answer));
    } else if (r.scoring) {
      add(a, scoringView(r.scoring, r.slot));
    } else if (r.options.length) {
      add(a, optionsView(r.options));
    } else if (r.output) {
      add(a, el("h4", null, "Output"), el("pre", "text output", r.output));
    }
    if (r.codes.length) {
      var t = el("table", "codes");
      var hr = el("tr");
      ["layer", "code", "source", "evidence (judges' votes, matched text, reason)"].forEach(function (c) { add(hr, el("th", null, c)); });
      t.appendChild(el("thead")).appendChild(hr);
      var tb = el("tbody");
      r.codes.forEach(function (c) {
        add(tb, add(el("tr", "code-" + c.status), el("td", "mono", c.layer), el("td", "mono", c.code || c.status.replace("_", " ")),
          el("td", "mono", c.source), el("td", "why", c.why)));
      });
      add(a, add(t, tb));
    }
    var keys = Object.keys(r.fields);
    if (keys.length) {
      var det = el("details");
      add(det, el("summary", null, "Stimulus fields (" + keys.length + ")"));
      var dl = el("dl");
      keys.forEach(function (k) { kv(dl, k, r.fields[k]); });
      add(a, add(det, dl));
    }
    if (review) { add(a, review.widget(r)); }
    return a;
  }

  function sorted(list) {
    if (state.sort === "plan") { return list; }
    var keyed = list.map(function (r, i) { return [diffOf(r), i, r]; });
    keyed.sort(function (x, y) {
      if (x[0] === null && y[0] === null) { return x[1] - y[1]; }
      if (x[0] === null) { return 1; }
      if (y[0] === null) { return -1; }
      var k = state.sort === "absdiff" ? Math.abs(y[0]) - Math.abs(x[0]) : state.sort === "diffdesc" ? y[0] - x[0] : x[0] - y[0];
      return k !== 0 ? k : x[1] - y[1];
    });
    return keyed.map(function (x) { return x[2]; });
  }

  var list, count, pager, banner;
  function update() {
    var shown = sorted(rows.filter(matches));
    var pages = Math.max(1, Math.ceil(shown.length / data.page_size));
    state.page = Math.min(state.page, pages - 1);
    count.textContent = shown.length + " of " + rows.length + " responses match";
    count.setAttribute("data-count", String(shown.length));
    while (banner.firstChild) { banner.removeChild(banner.firstChild); }
    banner.hidden = !state.est;
    if (state.est) {
      var e = state.est;
      add(banner, "Responses behind " + (runs.length > 1 ? runs[e.run].label + ": " : "") + e.metric + " / " + e.estimate +
        (e.cell ? ", cell " + e.cell : "") + (e.group ? ", " + e.group : "") +
        (e.items === null ? "" : " (" + e.items + " item" + (e.items === 1 ? "" : "s") + ")") + " ");
      var clear = el("button", "link", "clear");
      clear.type = "button";
      clear.id = "clear-estimate";
      clear.addEventListener("click", function () { state.est = null; update(); });
      add(banner, clear);
    }
    while (list.firstChild) { list.removeChild(list.firstChild); }
    shown.slice(state.page * data.page_size, (state.page + 1) * data.page_size).forEach(function (r) { list.appendChild(card(r)); });
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
  if (review) { add(app, review.panel()); }
  var sec = el("section");
  sec.id = "responses";
  add(sec, el("h2", null, "Responses"));
  add(sec, filters());
  banner = el("p", "banner");
  banner.id = "estimate-banner";
  count = el("p", "count");
  count.id = "count";
  list = el("div", "rows");
  list.id = "rows";
  pager = el("div", "pager");
  pager.id = "pager";
  add(sec, banner, count, list, pager);
  add(app, sec);
  update();
}());

// biasaudit viewer, review in the page: label a response with a coding layer's labels, flag it, comment on
// it, and download what was reviewed as a review sheet (the csv and its <sheet>.sample.json that
// `biasaudit annotate export` writes), which a `human` coding layer reads back. Page state only: nothing is
// stored or sent; saving is a download. Model text and the reviewer's text are written as data: csv cells
// quoted, with a formula's first character defused as the export does (coding/human_sheet.py safe_cell);
// the record by JSON.stringify. The hashes the record carries were computed when the page was written
// (report/viewer/review.py): the page never hashes.
function biasauditReview(data, h) {
  "use strict";
  var el = h.el, add = h.add;
  var runs = (data.review || []);
  var byRow = {};  // page row index -> its sheet row (ViewRowReview)
  runs.forEach(function (rv) { rv.rows.forEach(function (x) { byRow[x.row] = x; }); });
  var layerNames = [];
  runs.forEach(function (rv) { rv.layers.forEach(function (l) { if (layerNames.indexOf(l.name) < 0) { layerNames.push(l.name); } }); });
  if (!layerNames.length) { return null; }
  var state = {layer: layerNames[0], marks: {}, dirty: false};  // marks[layer][row] = {label, flag, note}
  var panelBody = null, links = null;
  var FORMULA = "=+-@\t\r";

  function has(o, k) { return Object.prototype.hasOwnProperty.call(o, k); }
  function layerOf(run, name) {
    var rv = runs[run];
    if (!rv) { return null; }
    for (var i = 0; i < rv.layers.length; i++) { if (rv.layers[i].name === name) { return rv.layers[i]; } }
    return null;
  }
  function mark(layer, row) {
    var m = state.marks[layer] || (state.marks[layer] = {});
    return m[row] || (m[row] = {label: "", flag: false, note: ""});
  }
  function used(m) { return m.label !== "" || m.flag || m.note !== ""; }
  function changed() { state.dirty = true; renderPanel(); }

  // -- a card's review controls ----------------------------------------------------------
  function widget(r) {
    var box = el("div", "review");
    var rr = byRow[r._i];
    var lay = layerOf(r.run, state.layer);
    if (!lay) {
      add(box, el("span", "review-off", "review: this run has no label layer " + state.layer));
      return box;
    }
    if (!rr) {
      add(box, el("span", "review-off", "review: no answer text a sheet can hold (a failed request, or text that is not valid UTF-8)"));
      return box;
    }
    var m = mark(state.layer, r._i);
    add(box, el("span", "review-head", "Review (" + state.layer + ")"));
    var sel = el("select");
    sel.className = "review-label";
    sel.setAttribute("aria-label", "your label for layer " + state.layer);
    var blank = el("option", null, "no label");
    blank.value = "";
    sel.appendChild(blank);
    lay.labels.forEach(function (lab) {
      var o = el("option", null, lab);
      o.value = lab;
      sel.appendChild(o);
    });
    sel.value = m.label;
    sel.addEventListener("change", function () { m.label = sel.value; changed(); });
    var flagWrap = el("label", "review-flag");
    var flag = el("input");
    flag.type = "checkbox";
    flag.className = "review-flag-box";
    flag.checked = m.flag;
    flag.addEventListener("change", function () { m.flag = flag.checked; changed(); });
    add(flagWrap, flag, " flag");
    var note = el("input");
    note.type = "text";
    note.className = "review-note";
    note.placeholder = "comment";
    note.maxLength = 2000;
    note.value = m.note;
    note.addEventListener("input", function () { m.note = note.value; changed(); });
    add(box, sel, flagWrap, note);
    return box;
  }

  // -- the sheet ------------------------------------------------------------------------
  function safeCell(t) {
    var rest = t.replace(/^'+/, "");
    return rest !== "" && FORMULA.indexOf(rest.charAt(0)) >= 0 ? "'" + t : t;
  }
  function csvRow(cells) {
    return cells.map(function (c) { return "\"" + safeCell(String(c)).replace(/"/g, "\"\"") + "\""; }).join(",") + "\n";
  }
  function noteOf(m) {
    // a flag has no column of its own on the sheet: it leads the note
    if (m.flag) { return m.note ? "flagged: " + m.note : "flagged"; }
    return m.note;
  }
  function machine(r, layer) {
    for (var i = 0; i < r.codes.length; i++) {
      var c = r.codes[i];
      if (c.layer === layer) { return [c.status === "coded" ? c.code : "", c.source + (c.why ? ": " + c.why : "")]; }
    }
    return ["", ""];
  }
  function picked(run, layer) {
    var m = state.marks[layer] || {};
    return runs[run].rows.filter(function (x) { return has(m, x.row) && used(m[x.row]); });
  }
  function sheet(run, layer) {
    var lay = layerOf(run, layer);
    var rows = picked(run, layer);
    var m = state.marks[layer];
    var text = csvRow(["unit_id", "prompt", "answer", "machine_label", "rationale", "allowed_labels", "label", "note"]);
    rows.forEach(function (x) {
      var r = data.rows[x.row];
      var mc = machine(r, layer);
      text += csvRow([x.unit, x.prompt === null ? r.prompt : x.prompt, x.answer === null ? r.answer : x.answer,
        mc[0], mc[1], lay.legend, m[x.row].label, noteOf(m[x.row])]);
    });
    var rv = runs[run];
    var record = {
      format_version: rv.format_version, format: rv.format, run_id: rv.run_id, run_dir: rv.run_dir, spec_sha256: rv.spec_sha256, layer: layer,
      labels: lay.labels, stratify: null, seed: null, requested: rows.length, population: {all: lay.coded},
      sampled: {all: rows.length}, with_codes: true, selection: "chosen",
      units: rows.map(function (x) {
        return {id: x.unit, key: x.key, stratum: "all", answer_sha256: x.answer_sha256, shown_sha256: x.shown_sha256,
          prompt_sha256: x.prompt_sha256};
      })
    };
    return [text, JSON.stringify(record, null, 1) + "\n", rows.length];
  }
  function fileName(run, layer) {
    var rv = runs[run];
    return ("review-" + layer + "-" + rv.run_id).replace(/[^A-Za-z0-9._-]+/g, "_").slice(0, 120) + ".csv";
  }
  function link(name, text, type) {
    var a = el("a", "download", name);
    a.href = URL.createObjectURL(new Blob([text], {type: type}));
    a.download = name;
    return a;
  }
  function save(run, layer) {
    var s = sheet(run, layer);
    var name = fileName(run, layer);
    while (links.firstChild) { URL.revokeObjectURL(links.firstChild.href || ""); links.removeChild(links.firstChild); }
    var a = link(name, s[0], "text/csv;charset=utf-8");
    var b = link(name + ".sample.json", s[1], "application/json;charset=utf-8");
    a.id = "review-sheet-link";
    b.id = "review-record-link";
    add(links, "Saved " + s[2] + " row(s): ", a, " and its sampling record ", b,
      " (keep both in one folder, under these names; if the browser kept only one, click the other).");
    state.dirty = false;
    a.click();
    b.click();
  }

  // -- the panel ------------------------------------------------------------------------
  function renderPanel() {
    if (!panelBody) { return; }
    while (panelBody.firstChild) { panelBody.removeChild(panelBody.firstChild); }
    var any = false;
    runs.forEach(function (rv, run) {
      rv.layers.forEach(function (lay) {
        var rows = picked(run, lay.name);
        if (!rows.length) { return; }
        any = true;
        var m = state.marks[lay.name];
        var labelled = rows.filter(function (x) { return m[x.row].label !== ""; }).length;
        var flagged = rows.filter(function (x) { return m[x.row].flag; }).length;
        var b = el("button", "review-save", "Download review sheet: " + (runs.length > 1 ? data.runs[run].label + " / " : "") +
          lay.name + " (" + labelled + " labelled, " + flagged + " flagged, " + rows.length + " row(s))");
        b.type = "button";
        b.setAttribute("data-run", String(run));
        b.setAttribute("data-layer", lay.name);
        b.addEventListener("click", function () { save(run, lay.name); });
        add(panelBody, add(el("p"), b));
      });
      if (rv.note) { add(panelBody, el("p", "sub", data.runs[run].label + ": " + rv.note)); }
    });
    if (!any) { add(panelBody, el("p", "sub", "Nothing reviewed yet.")); }
  }
  function panel() {
    var sec = el("section", "review-panel");
    sec.id = "review";
    add(sec, el("h2", null, "Review"));
    var wrap = el("label", "filter");
    var sel = el("select");
    sel.id = "review-layer";
    layerNames.forEach(function (n) { var o = el("option", null, n); o.value = n; sel.appendChild(o); });
    sel.addEventListener("change", function () { state.layer = sel.value; h.refresh(); });
    add(sec, add(wrap, el("span", null, "label with layer"), sel));
    add(sec, el("p", "sub", "Label, flag or comment on a response in its card below; the labels stay in this page " +
      "until you download them (nothing is stored or sent). The download is a review sheet and its sampling " +
      "record, in the format of `biasaudit annotate export`: read it back with a `human` coding layer " +
      "(`coder: human, sheet: <the csv>`) paired with the layer in `reliability`. The responses you chose are " +
      "a convenience sample, not a random draw: the report gives agreement on them, but no humans-only rate and " +
      "no PPI estimate (those need `biasaudit annotate export`'s random sample). A flag is written at the start " +
      "of the note; a row flagged without a label counts as left blank."));
    panelBody = el("div", "review-saves");
    panelBody.id = "review-saves";
    links = el("p", "review-links");
    links.id = "review-links";
    add(sec, panelBody, links);
    renderPanel();
    return sec;
  }

  window.addEventListener("beforeunload", function (e) {
    if (state.dirty) { e.preventDefault(); e.returnValue = ""; }
  });
  return {widget: widget, panel: panel};
}

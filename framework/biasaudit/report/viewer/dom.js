// biasaudit pages' shared DOM helpers (viewer.js, review.js and compare.js are built on them): elements are
// made with DOM calls and textContent only (never an HTML parser), since every text in the data is untrusted.
var biasauditDom = (function () {
  "use strict";
  var has = function (o, k) { return Object.prototype.hasOwnProperty.call(o, k); };
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function add(parent) {
    for (var i = 1; i < arguments.length; i++) {
      var c = arguments[i];
      if (c === null || c === undefined) { continue; }
      parent.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
    }
    return parent;
  }
  function fmt(x) {
    if (x === null || x === undefined) { return "n/a"; }
    return Math.abs(x) >= 1000 || (x !== 0 && Math.abs(x) < 0.001) ? x.toExponential(3) : x.toFixed(4);
  }
  function uniq(list) {
    var seen = {}, out = [];
    list.forEach(function (x) { if (!has(seen, x)) { seen[x] = 1; out.push(x); } });
    return out;
  }
  // a labelled <select> of [value, text] options; `onChange(name, value)` when the reader picks one
  function select(name, label, options, onChange) {
    var wrap = el("label", "filter");
    add(wrap, el("span", null, label));
    var s = el("select");
    s.name = name;
    s.id = "f-" + name;
    options.forEach(function (o) {
      var opt = el("option", null, o[1]);
      opt.value = o[0];
      s.appendChild(opt);
    });
    s.addEventListener("change", function () { onChange(name, s.value); });
    add(wrap, s);
    return {wrap: wrap, select: s};
  }
  return {has: has, el: el, add: add, fmt: fmt, uniq: uniq, select: select};
})();

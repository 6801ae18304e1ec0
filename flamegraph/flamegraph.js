// The flame graph's behaviour: labels fitted to their frames, zoom on
// click, search by regular expression. It runs in a standalone SVG file
// and in an HTML page alike, and reads names only as text.
(function () {
  "use strict";
  var svg = document.getElementById("fg-svg");
  if (!svg) return;
  var W = +svg.getAttribute("data-width"), pad = +svg.getAttribute("data-pad");
  var total = +svg.getAttribute("data-total"), unit = svg.getAttribute("data-unit");
  var details = document.getElementById("fg-details");
  var matched = document.getElementById("fg-matched");
  var frames = [], byId = {};
  var gs = svg.querySelectorAll("g.f");
  for (var i = 0; i < gs.length; i++) {
    var g = gs[i], r = g.querySelector("rect");
    var f = {
      g: g, r: r, t: g.querySelector("text"), title: g.querySelector("title").textContent,
      x: +r.getAttribute("x"), w: +r.getAttribute("width"), d: +g.getAttribute("data-d"),
      o: +g.getAttribute("data-o"), v: +g.getAttribute("data-v"),
      name: g.getAttribute("data-n"), fill: r.getAttribute("fill")
    };
    frames.push(f);
    byId[g.id] = f;
  }

  // fit cuts f's label to its frame's width, as measured by the browser.
  function fit(f) {
    var w = +f.r.getAttribute("width");
    f.t.setAttribute("x", (+f.r.getAttribute("x") + 3).toFixed(2));
    if (w < 21) { f.t.textContent = ""; return; }
    f.t.textContent = f.name;
    var len = f.t.getComputedTextLength();
    if (len <= w - 6) return;
    var n = Math.floor(f.name.length * (w - 6) / len);
    for (; n >= 3; n--) {
      f.t.textContent = f.name.slice(0, n - 2) + "..";
      if (f.t.getComputedTextLength() <= w - 6) return;
    }
    f.t.textContent = "";
  }

  function place(f, x, w, parent) {
    f.g.style.display = "";
    f.r.setAttribute("x", x.toFixed(2));
    f.r.setAttribute("width", w.toFixed(2));
    f.g.classList.toggle("fg-parent", parent);
    fit(f);
  }

  // zoom widens z to the whole width, with the frames above it; the
  // frames below it (its callers) span the width, faded; the rest hide.
  function zoom(z) {
    var scale = (W - 2 * pad) / z.w;
    frames.forEach(function (f) {
      var inside = f.o >= z.o && f.o + f.v <= z.o + z.v;
      if (f.d >= z.d && inside) place(f, pad + (f.x - z.x) * scale, f.w * scale, false);
      else if (f.d < z.d && f.o <= z.o && f.o + f.v >= z.o + z.v) place(f, pad, W - 2 * pad, true);
      else f.g.style.display = "none";
    });
    svg.setAttribute("data-zoom", z.g.id);
  }

  function reset() {
    frames.forEach(function (f) { place(f, f.x, f.w, false); });
    svg.removeAttribute("data-zoom");
  }

  // search colours the frames whose names match re and says which share
  // of the total they hold: a match inside another match is counted once.
  function search(re) {
    var hits = [];
    frames.forEach(function (f) {
      var m = re !== null && f.d > 0 && re.test(f.name);
      f.r.setAttribute("fill", m ? "rgb(230,0,230)" : f.fill);
      if (m) hits.push(f);
    });
    hits.sort(function (a, b) { return a.o - b.o || a.d - b.d; });
    var sum = 0, end = -1;
    hits.forEach(function (f) {
      if (f.o >= end) { sum += f.v; end = f.o + f.v; }
    });
    if (re === null) {
      matched.textContent = " ";
      svg.removeAttribute("data-matched");
      return;
    }
    var pct = total > 0 ? (100 * sum / total).toFixed(2) : "0.00";
    matched.textContent = "Matched: " + pct + "% (" + sum + " of " + total + " " + unit + ")";
    svg.setAttribute("data-matched", String(sum));
  }

  function searchText(s) {
    if (!s) { search(null); return; }
    try { search(new RegExp(s, "i")); } catch (e) { matched.textContent = "bad expression: " + e.message; }
  }

  svg.addEventListener("click", function (e) {
    var g = e.target.closest && e.target.closest("g.f");
    if (g) zoom(byId[g.id]);
  });
  svg.addEventListener("mouseover", function (e) {
    var g = e.target.closest && e.target.closest("g.f");
    if (g && details) details.textContent = byId[g.id].title;
  });
  var resetButton = document.getElementById("fg-reset");
  if (resetButton) resetButton.addEventListener("click", reset);
  var input = document.getElementById("fg-search");
  if (input) input.addEventListener("input", function () { searchText(input.value); });
  var button = document.getElementById("fg-search-button");
  if (button) button.addEventListener("click", function () {
    var s = window.prompt("Search (regular expression)", "");
    if (s !== null) searchText(s);
  });

  frames.forEach(fit);
  // "#s=REGEXP" searches and "#z=ID" zooms when the page opens, so that a
  // view can be linked to.
  var params = new URLSearchParams(location.hash.slice(1));
  if (params.get("z") && byId[params.get("z")]) zoom(byId[params.get("z")]);
  if (params.get("s")) {
    if (input) input.value = params.get("s");
    searchText(params.get("s"));
  }
  svg.setAttribute("data-ready", "1");
})();

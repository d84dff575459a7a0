// dynaprof flamegraph interactions: hover details, click to zoom, reset zoom, search.
// Static code: all data comes from the SVG itself (frame <title>s, rect geometry and numeric
// data-* attributes on the <svg>), so nothing from the profiled program is ever evaluated.
// Works standalone (file:///...svg) and inlined in an HTML page (several graphs per page).
(function () {
  "use strict";
  var HIGHLIGHT = "rgb(40,210,120)";

  function num(el, name, dflt) {
    var v = parseFloat(el.getAttribute(name));
    return isNaN(v) ? dflt : v;
  }

  function fit(st, label, width) {
    // as fit_label in flamegraph_svg.py: whole, or cut keeping at least 4 characters, or nothing
    var n = Math.floor((width - 6) / st.cw + 1e-6);
    if (label.length <= n) return n >= 1 ? label : "";
    return n - 2 >= 4 ? label.slice(0, n - 2) + ".." : "";
  }

  function place(st, fr, x, w) {
    fr.r.setAttribute("x", x.toFixed(1));
    fr.r.setAttribute("width", w.toFixed(1));
    if (fr.t) {
      fr.t.setAttribute("x", (x + 3).toFixed(1));
      fr.t.textContent = fit(st, fr.name, w);
    }
  }

  function show(fr, visible, parent) {
    fr.g.style.display = visible ? "" : "none";
    if (parent) fr.g.classList.add("fg-p"); else fr.g.classList.remove("fg-p");
  }

  function zoom(st, p, f) {
    var scale = st.w / f.w, c0 = f.x, c1 = f.x + f.w, fc = f.x + f.w / 2;
    p.frames.forEach(function (fr) {
      var d = (fr.y - f.y) * p.dir, c = fr.x + fr.w / 2;
      if (fr === f || (d > 0 && c > c0 && c < c1)) {
        place(st, fr, st.x0 + (fr.x - f.x) * scale, fr.w * scale);
        show(fr, true, false);
      } else if (d < 0 && fr.x <= fc && fr.x + fr.w >= fc) {
        place(st, fr, st.x0, st.w);
        show(fr, true, true);
      } else {
        show(fr, false, false);
      }
    });
    st.unzoom.style.display = "";
  }

  function unzoom(st) {
    st.panels.forEach(function (p) {
      p.frames.forEach(function (fr) {
        place(st, fr, fr.x, fr.w);
        show(fr, true, false);
      });
    });
    st.unzoom.style.display = "none";
  }

  function clearSearch(st) {
    st.panels.forEach(function (p) {
      p.frames.forEach(function (fr) { fr.r.setAttribute("fill", fr.fill); });
    });
    st.term = null;
    st.matched.textContent = "";
    st.search.textContent = "Search";
  }

  function search(st, term) {
    if (!term) { clearSearch(st); return; }
    var re;
    try { re = new RegExp(term, "i"); } catch (e) {
      re = new RegExp(term.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"), "i");
    }
    var spans = [];
    st.panels.forEach(function (p, i) {
      p.frames.forEach(function (fr) {
        if (re.test(fr.key)) {
          fr.r.setAttribute("fill", HIGHLIGHT);
          if (i === 0) spans.push([fr.x, fr.x + fr.w]);
        } else {
          fr.r.setAttribute("fill", fr.fill);
        }
      });
    });
    spans.sort(function (a, b) { return a[0] - b[0]; });
    var covered = 0, end = -Infinity;
    spans.forEach(function (s) {
      if (s[1] <= end) return;
      covered += s[1] - Math.max(s[0], end);
      end = s[1];
    });
    var frac = st.w > 0 ? Math.min(1, covered / st.w) : 0;
    var text = "matched " + (100 * frac).toFixed(1) + "%";
    if (st.total > 0) text += " (" + (1000 * st.total * frac).toFixed(1) + " ms)";
    st.term = term;
    st.matched.textContent = text;
    st.search.textContent = "Reset search";
  }

  function askSearch(st) {
    if (st.term !== null) { clearSearch(st); return; }
    var term = window.prompt("Search for a function or file (regular expression, case-insensitive):", "");
    if (term) search(st, term);
  }

  function frameOf(evt) {
    var g = evt.target && evt.target.closest ? evt.target.closest("g") : null;
    return g && g.__fg ? g : null;
  }

  function init(svg) {
    if (!svg || svg.getAttribute("data-fg-ready")) return;
    svg.setAttribute("data-fg-ready", "1");
    var st = {
      svg: svg, panels: [], term: null,
      x0: num(svg, "data-x0", 10), w: num(svg, "data-w", 1180), cw: num(svg, "data-cw", 6.6),
      total: num(svg, "data-total-s", 0),
      details: svg.querySelector(".fg-details"), matched: svg.querySelector(".fg-matched"),
      unzoom: svg.querySelector(".fg-unzoom"), search: svg.querySelector(".fg-search")
    };
    var hint = st.details.textContent;
    // drawn hidden (an SVG seen as an image runs no script and shows no dead control): show them
    st.details.style.display = "";
    st.search.style.display = "";
    Array.prototype.forEach.call(svg.querySelectorAll(".fg-panel"), function (pel) {
      var p = { dir: num(pel, "data-dir", -1), frames: [] };
      Array.prototype.forEach.call(pel.children, function (g) {
        var r = g.querySelector("rect"), ti = g.querySelector("title");
        if (!r || !ti) return;
        var info = ti.textContent, lines = info.split("\n");
        g.__fg = {
          g: g, r: r, t: g.querySelector("text"), info: info, name: lines[0],
          key: lines.slice(0, 2).join(" "), fill: r.getAttribute("fill"),
          x: num(r, "x", 0), w: num(r, "width", 0), y: num(r, "y", 0), panel: p
        };
        p.frames.push(g.__fg);
      });
      pel.addEventListener("click", function (evt) {
        var g = frameOf(evt);
        if (g) zoom(st, g.__fg.panel, g.__fg);
      });
      pel.addEventListener("mouseover", function (evt) {
        var g = frameOf(evt);
        if (g) st.details.textContent = clip(st, g.__fg.info.split("\n").join("  |  "));
      });
      pel.addEventListener("mouseout", function () { st.details.textContent = hint; });
      st.panels.push(p);
    });
    st.unzoom.addEventListener("click", function () { unzoom(st); });
    st.search.addEventListener("click", function () { askSearch(st); });
    var keys = { key: function (e) { return onKey(st, e); } };
    svg.addEventListener("mouseenter", function () { window.dynaprofActiveGraph = keys; });
    svg.addEventListener("mouseleave", function () {
      if (window.dynaprofActiveGraph === keys) window.dynaprofActiveGraph = null;
    });
    svg.dynaprofFlame = { search: function (t) { search(st, t); }, zoomReset: function () { unzoom(st); } };
  }

  // the hover line stays inside the graph, left of "matched N%" (which has its own line)
  function clip(st, text) {
    var n = Math.floor(st.w / 6.8);
    return text.length <= n ? text : text.slice(0, n - 2) + "..";
  }

  // keys act on the graph under the pointer only: Ctrl-F / Cmd-F searches it, Esc resets it;
  // elsewhere the browser keeps its own find-in-page
  function onKey(st, e) {
    if ((e.ctrlKey || e.metaKey) && (e.key === "f" || e.key === "F")) {
      askSearch(st);
      return true;
    }
    if (e.key === "Escape") {
      clearSearch(st);
      unzoom(st);
      return true;
    }
    return false;
  }

  // one keyboard handler per page, whichever script (each inlined graph's, report.js) comes
  // first: it hands the key to the graph under the pointer (window.dynaprofActiveGraph)
  if (!window.dynaprofKeys) {
    window.dynaprofKeys = true;
    window.addEventListener("keydown", function (e) {
      var g = window.dynaprofActiveGraph;
      if (g && g.key(e)) e.preventDefault();
    });
  }
  window.dynaprofFlameInit = init;
  Array.prototype.forEach.call(document.querySelectorAll("svg.dynaprof-flame"), init);
})();

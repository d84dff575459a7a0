// dynaprof HTML reports: sortable tables, expand/collapse-all, the call graph's pan and zoom, and
// the page's one keyboard handler. Static code; it reads only
// the page's own markup (cell text and numeric data-sort attributes), never evaluates data.
(function () {
  "use strict";

  function cellKey(cell) {
    if (!cell) return { n: NaN, s: "" };
    var raw = cell.getAttribute("data-sort");
    var n = raw === null ? NaN : parseFloat(raw);
    return { n: n, s: (cell.textContent || "").trim().toLowerCase() };
  }

  function compare(a, b) {
    var an = !isNaN(a.n), bn = !isNaN(b.n);
    if (an && bn) return a.n - b.n;
    if (an !== bn) return an ? -1 : 1; // known numbers before unknown ones
    return a.s < b.s ? -1 : a.s > b.s ? 1 : 0;
  }

  function sortBy(table, th) {
    var ths = Array.prototype.slice.call(th.parentNode.children);
    var col = ths.indexOf(th);
    var desc = th.getAttribute("aria-sort") !== "descending";
    if (th.getAttribute("aria-sort") === null && th.getAttribute("data-first") === "asc") desc = false;
    ths.forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", desc ? "descending" : "ascending");
    var body = table.tBodies[0];
    if (!body) return;
    var rows = Array.prototype.slice.call(body.rows).map(function (r, i) {
      return { r: r, k: cellKey(r.cells[col]), i: i };
    });
    rows.sort(function (x, y) {
      var c = compare(x.k, y.k);
      if (desc) c = -c;
      return c || x.i - y.i;
    });
    rows.forEach(function (x) { body.appendChild(x.r); });
  }

  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    var head = table.tHead;
    if (!head || !head.rows.length) return;
    Array.prototype.forEach.call(head.rows[0].cells, function (th) {
      th.setAttribute("tabindex", "0");
      th.setAttribute("title", "Sort by this column");
      th.addEventListener("click", function () { sortBy(table, th); });
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortBy(table, th); }
      });
    });
  });

  // the compiler flamegraph's fixed-height box opens on the root (at the bottom, unless icicle)
  Array.prototype.forEach.call(document.querySelectorAll(".dp-box"), function (box) {
    if (box.querySelector('.fg-panel[data-dir="-1"]')) box.scrollTop = box.scrollHeight;
  });

  // call graph: pan (drag, scroll) and zoom (Ctrl + scroll, buttons, + - 0 keys) by its viewBox
  function panZoom(box) {
    var svg = box.querySelector("svg");
    if (!svg || !svg.viewBox || !svg.viewBox.baseVal || !svg.viewBox.baseVal.width) return;
    var full = svg.viewBox.baseVal, W = full.width, H = full.height, X0 = full.x, Y0 = full.y;
    svg.removeAttribute("width");
    svg.removeAttribute("height");
    svg.setAttribute("preserveAspectRatio", "xMidYMin meet");
    box.classList.add("dp-pz");
    var v = { x: X0, y: Y0, w: W, h: H };
    function apply() { svg.setAttribute("viewBox", [v.x, v.y, v.w, v.h].join(" ")); }
    function boxSize() { return { w: box.clientWidth || 1, h: box.clientHeight || 1 }; }
    // fit: the whole width, or enough zoom for ~8 px text, whichever is larger; the top (the
    // root: Graphviz draws callers above callees) on the first screen, centred on the root
    function fit() {
      var b = boxSize(), scale = Math.min(1, Math.max(b.w / W, 0.8));
      v.w = b.w / scale; v.h = b.h / scale; v.y = Y0;
      v.x = v.w >= W ? X0 - (v.w - W) / 2 : Math.min(Math.max(rootX() - v.w / 2, X0), X0 + W - v.w);
      apply();
    }
    function rootX() {  // the centre of the topmost node, in viewBox units
      var best = null, inv = svg.getScreenCTM().inverse();
      Array.prototype.forEach.call(svg.querySelectorAll("g.node"), function (n) {
        var t = n.querySelector("title");
        if (t && t.textContent.indexOf("legend_") === 0) return;
        var bb = n.getBBox(), p = svg.createSVGPoint();
        p.x = bb.x + bb.width / 2; p.y = bb.y;
        p = p.matrixTransform(inv.multiply(n.getScreenCTM()));
        if (!best || p.y < best.y) best = p;
      });
      return best ? best.x : X0 + W / 2;
    }
    function zoom(f, cx, cy) {
      var nx = v.w / f, ny = v.h / f;
      if (nx > W * 4 || nx < 20) return;
      v.x = cx - (cx - v.x) / f; v.y = cy - (cy - v.y) / f; v.w = nx; v.h = ny;
      apply();
    }
    function centre() { return [v.x + v.w / 2, v.y + v.h / 2]; }
    function pan(dx, dy) {  // in screen pixels; false when already at the edge that way
      var b = boxSize(), k = v.w / b.w;
      var nx = Math.min(Math.max(v.x + dx * k, X0 - v.w / 2), X0 + W - v.w / 2);
      var ny = Math.min(Math.max(v.y + dy * k, Y0 - v.h / 2), Y0 + H - v.h / 2);
      var moved = nx !== v.x || ny !== v.y;
      v.x = nx; v.y = ny;
      apply();
      return moved;
    }
    box.addEventListener("wheel", function (e) {
      if (e.ctrlKey || e.metaKey) {
        e.preventDefault();
        var r = box.getBoundingClientRect(), k = v.w / boxSize().w;
        zoom(e.deltaY < 0 ? 1.15 : 1 / 1.15, v.x + (e.clientX - r.left) * k, v.y + (e.clientY - r.top) * k);
      } else if (pan(e.deltaX, e.deltaY)) {
        e.preventDefault();
      }
    }, { passive: false });
    var drag = null;
    box.addEventListener("mousedown", function (e) { drag = [e.clientX, e.clientY]; e.preventDefault(); });
    window.addEventListener("mousemove", function (e) {
      if (!drag) return;
      pan(drag[0] - e.clientX, drag[1] - e.clientY);
      drag = [e.clientX, e.clientY];
    });
    window.addEventListener("mouseup", function () { drag = null; });
    var section = box.closest("section") || document;
    Array.prototype.forEach.call(section.querySelectorAll("[data-pz]"), function (btn) {
      btn.addEventListener("click", function () {
        var what = btn.getAttribute("data-pz"), c = centre();
        if (what === "fit") fit(); else zoom(what === "in" ? 1.25 : 0.8, c[0], c[1]);
      });
    });
    var keys = { key: function (e) {
      if (e.ctrlKey || e.metaKey || e.altKey) return false;
      var c = centre();
      if (e.key === "+" || e.key === "=") { zoom(1.25, c[0], c[1]); return true; }
      if (e.key === "-") { zoom(0.8, c[0], c[1]); return true; }
      if (e.key === "0") { fit(); return true; }
      return false;
    } };
    box.addEventListener("mouseenter", function () { window.dynaprofActiveGraph = keys; });
    box.addEventListener("mouseleave", function () {
      if (window.dynaprofActiveGraph === keys) window.dynaprofActiveGraph = null;
    });
    box.dynaprofPanZoom = { view: function () { return [v.x, v.y, v.w, v.h]; }, fit: fit, pan: pan, zoom: zoom };
    fit();
  }
  Array.prototype.forEach.call(document.querySelectorAll(".dp-callgraph"), panZoom);

  // the page's one keyboard handler, unless a flamegraph's script installed it already (the same
  // code): the key goes to the graph under the pointer, nowhere else
  if (!window.dynaprofKeys) {
    window.dynaprofKeys = true;
    window.addEventListener("keydown", function (e) {
      var g = window.dynaprofActiveGraph;
      if (g && g.key(e)) e.preventDefault();
    });
  }

  Array.prototype.forEach.call(document.querySelectorAll("[data-expand]"), function (btn) {
    btn.addEventListener("click", function () {
      var open = btn.getAttribute("data-expand") === "open";
      var scope = document.getElementById(btn.getAttribute("data-target") || "");
      if (!scope) return;
      Array.prototype.forEach.call(scope.querySelectorAll("details"), function (d) { d.open = open; });
    });
  });

  // a roll-up row of the cause table opens to its members; shut on load (without script they show)
  Array.prototype.forEach.call(document.querySelectorAll("button[data-opens]"), function (btn) {
    var members = document.querySelectorAll('tr[data-of="' + btn.getAttribute("data-opens") + '"]');
    function show(open) {
      btn.setAttribute("aria-expanded", open ? "true" : "false");
      Array.prototype.forEach.call(members, function (tr) { tr.hidden = !open; });
    }
    show(false);
    btn.addEventListener("click", function () { show(btn.getAttribute("aria-expanded") !== "true"); });
  });
})();

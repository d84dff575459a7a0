// dynaprof HTML reports: sortable tables and expand/collapse-all. Static code; it reads only
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

  Array.prototype.forEach.call(document.querySelectorAll("[data-expand]"), function (btn) {
    btn.addEventListener("click", function () {
      var open = btn.getAttribute("data-expand") === "open";
      var scope = document.getElementById(btn.getAttribute("data-target") || "");
      if (!scope) return;
      Array.prototype.forEach.call(scope.querySelectorAll("details"), function (d) { d.open = open; });
    });
  });
})();

// Fathom leaderboard: search, filter and sort in the page, with no server and nothing loaded from elsewhere.
// Without this script the page is the plain table: the controls stay hidden and every row shows.
(function () {
  "use strict";
  var board = document.getElementById("board");
  var controls = document.getElementById("filters");
  if (!board || !controls) { return; }
  var body = board.tBodies[0];
  // Past the first rows the leaderboard continues in a closed <details> (#board-rest): both are searched and sorted.
  var rest = document.getElementById("board-rest");
  var restBody = rest ? rest.tBodies[0] : null;
  var more = document.getElementById("board-more");
  var shownAtOnce = body.rows.length;
  var named = function (row) { return row.hasAttribute("data-name"); };
  var ranked = Array.prototype.slice.call(body.rows).filter(named);
  if (restBody) { ranked = ranked.concat(Array.prototype.slice.call(restBody.rows).filter(named)); }
  var others = Array.prototype.slice.call(document.querySelectorAll("table.unranked tbody tr[data-name]"));
  var search = document.getElementById("f-search");
  var outcome = document.getElementById("f-outcome");
  var rule = document.getElementById("f-rule");
  var tokens = document.getElementById("f-tokens");
  var count = document.getElementById("f-count");
  controls.hidden = false;

  function apply() {
    var words = search.value.trim().toLowerCase();
    var wanted = outcome.value;
    var code = rule.value;
    var most = tokens.value === "" ? Infinity : Number(tokens.value);
    var shown = 0;
    var inRest = 0;
    ranked.forEach(function (row) {
      var ok = (!words || row.getAttribute("data-name").indexOf(words) !== -1)
        && (!wanted || wanted === "ok")
        && (!code || (" " + row.getAttribute("data-rules") + " ").indexOf(" " + code + " ") !== -1)
        && Number(row.getAttribute("data-tokens")) <= most;
      row.hidden = !ok;
      if (ok) { shown += 1; if (row.parentNode === restBody) { inRest += 1; } }
    });
    var filtering = Boolean(words || wanted || code || tokens.value !== "");
    if (more && filtering && inRest > 0) { more.open = true; }
    others.forEach(function (row) {
      var ok = (!words || row.getAttribute("data-name").indexOf(words) !== -1)
        && (!wanted || wanted === row.getAttribute("data-outcome"))
        && !code && tokens.value === "";
      row.hidden = !ok;
      var group = row.closest("details");
      if (ok && filtering && group) { group.open = true; }
    });
    count.textContent = filtering ? shown + " of " + ranked.length + " ranked servers shown" : "";
  }

  var timer = null;
  function later() {
    if (timer !== null) { clearTimeout(timer); }
    timer = setTimeout(apply, 120);
  }
  search.addEventListener("input", later);
  tokens.addEventListener("input", later);
  outcome.addEventListener("change", apply);
  rule.addEventListener("change", apply);

  function value(row, index, numeric) {
    var text = row.cells[index] ? row.cells[index].textContent.trim() : "";
    if (!numeric) { return text.toLowerCase(); }
    var number = Number(text.replace(/,/g, ""));
    return isNaN(number) ? Infinity : number;
  }

  Array.prototype.forEach.call(board.tHead.rows[0].cells, function (th, index) {
    if (!th.hasAttribute("data-key")) { return; }
    var button = document.createElement("button");
    button.type = "button";
    button.className = "sort";
    button.textContent = th.textContent;
    th.textContent = "";
    th.appendChild(button);
    button.addEventListener("click", function () {
      var numeric = th.getAttribute("data-type") === "num";
      var ascending = th.getAttribute("aria-sort") !== "ascending";
      Array.prototype.forEach.call(board.tHead.rows[0].cells, function (other) { other.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      var keyed = ranked.map(function (row, position) { return [value(row, index, numeric), position, row]; });
      keyed.sort(function (a, b) {
        if (a[0] < b[0]) { return ascending ? -1 : 1; }
        if (a[0] > b[0]) { return ascending ? 1 : -1; }
        return a[1] - b[1];
      });
      var first = document.createDocumentFragment();
      var after = document.createDocumentFragment();
      keyed.forEach(function (item, position) {
        (position < shownAtOnce || !restBody ? first : after).appendChild(item[2]);
      });
      body.appendChild(first);
      if (restBody) { restBody.appendChild(after); }
      ranked = keyed.map(function (item) { return item[2]; });
    });
  });
}());

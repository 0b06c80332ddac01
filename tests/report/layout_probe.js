// Evaluated by DevTools after a report page loads: what a reader at this width would see go wrong.
(() => {
  const problems = [];
  const page = document.documentElement;
  // screen.width is the emulated device's width: a phone's layout viewport may widen to fit the content.
  const width = Math.min(window.innerWidth, screen.width);
  if (page.scrollWidth > width + 1) {
    problems.push("page scrolls sideways: " + page.scrollWidth + " > " + width);
  }
  const lines = (element) => {
    // The line boxes of the cell's text (the text nodes only: a button's border box is not a line).
    const tops = new Set();
    const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (!node.textContent.trim()) { continue; }
      const range = document.createRange();
      range.selectNodeContents(node);
      for (const rect of range.getClientRects()) {
        if (rect.width > 0) { tops.add(Math.round(rect.bottom)); }
      }
    }
    return tops.size;
  };
  // The leaderboard's headers may take two or three lines (so its thirteen columns fit from 1,101 px), between
  // words only: every other header stays on one line.
  const whole = "td code:not(.inline), td.num, td.outcome, td.when, td.sev, td.move, td.kind, td.nowrap, "
    + "th:not(table.board > thead th)";
  for (const cell of document.querySelectorAll(whole)) {
    if (cell.offsetParent !== null && cell.textContent.trim() && lines(cell) > 1) {
      problems.push("on two lines: " + cell.textContent.trim().slice(0, 60));
    }
  }
  for (const th of document.querySelectorAll("table.board > thead th")) {
    const walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const match of node.data.matchAll(/\S+/g)) {
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const tops = new Set(Array.from(range.getClientRects()).filter((r) => r.width > 0)
          .map((r) => Math.round(r.top)));
        if (tops.size > 1) { problems.push("header word broken: " + match[0]); }
      }
    }
  }
  for (const svg of document.querySelectorAll("svg.chart")) {
    if (svg.getBoundingClientRect().width === 0) { continue; }
    const box = svg.viewBox.baseVal;
    const font = parseFloat(svg.getAttribute("font-size")) * svg.getBoundingClientRect().width / box.width;
    const name = svg.querySelector("title").textContent;
    if (font < 9) { problems.push("chart text " + font.toFixed(1) + " px in " + name); }
    const texts = Array.from(svg.querySelectorAll("text")).map((t) => [t.textContent, t.getBoundingClientRect()]);
    for (let i = 0; i < texts.length; i++) {
      for (let j = i + 1; j < texts.length; j++) {
        const [a, ra] = texts[i];
        const [b, rb] = texts[j];
        const apart = ra.right <= rb.left + 0.5 || rb.right <= ra.left + 0.5 || ra.bottom <= rb.top + 0.5
          || rb.bottom <= ra.top + 0.5;
        if (!apart) { problems.push("labels overlap in " + name + ": " + a + " / " + b); }
      }
    }
    if (!svg.querySelector("polyline, circle, path") && !svg.textContent.includes("No data yet")) {
      problems.push("nothing drawn in " + name);
    }
    const drawn = new Set();
    for (const mark of svg.querySelectorAll("polyline, circle, path")) {
      drawn.add(mark.getAttribute("stroke") || "");
      drawn.add(mark.getAttribute("fill") || "");
    }
    for (const key of svg.querySelectorAll("rect[width='10']")) {
      if (!drawn.has(key.getAttribute("fill"))) {
        problems.push("series not drawn in " + name + ": " + key.getAttribute("fill"));
      }
    }
  }
  // A table may scroll inside its box only when it is the leaderboard, whose key column (the server) stays in
  // view: every other table fits, as cards on a phone. From 1,101 px (the whole table) the leaderboard fits too.
  for (const box of document.querySelectorAll(".wide")) {
    const table = box.querySelector("table");
    if (!table || box.offsetParent === null || box.scrollWidth <= box.clientWidth + 1) { continue; }
    if (!table.classList.contains("board")) {
      problems.push("table scrolls in its box: " + table.className + " " + box.scrollWidth + " > " + box.clientWidth);
    } else if (width > 1100) {
      problems.push("the leaderboard scrolls at " + width + " px: " + box.scrollWidth + " > " + box.clientWidth);
    } else {
      box.scrollLeft = box.scrollWidth;
      const edge = box.getBoundingClientRect();
      for (const key of table.querySelectorAll("td.key")) {
        const rect = key.getBoundingClientRect();
        if (rect.left < edge.left - 1 || rect.right > edge.right + 1) {
          problems.push("key column out of view: " + key.textContent.trim().slice(0, 40));
          break;
        }
      }
      box.scrollLeft = 0;
    }
  }
  return problems;
})()

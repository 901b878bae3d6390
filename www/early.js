// Runs before the stylesheet applies (a classic script in <head>), so the page never flashes what
// it will not show: embed mode, the missions hub, the theme and the panels are known from the URL
// alone. A file rather than an inline script, so that the page needs no inline script at all.
(function () {
  var q = new URLSearchParams(location.search);
  var on = function (k) { return /^(1|true|yes|on)$/.test(q.get(k) || ""); };
  var root = document.documentElement;
  if (on("embed")) root.classList.add("embed");
  if (on("hub")) {
    root.classList.add("hub-mode");
    document.title = "kvlab · missions";
  }
  // ?theme=light|dark|auto (auto, the default, follows prefers-color-scheme in lab.css).
  var theme = q.get("theme");
  if (theme === "light" || theme === "dark") root.setAttribute("data-theme", theme);
  // ?panels=map,legend,chart,queues,metrics,transport: the parts shown (all when absent).
  var panels = q.get("panels");
  if (panels !== null) {
    var shown = panels.split(",").map(function (p) { return p.trim(); });
    ["legend", "chart", "queues", "metrics", "transport"].forEach(function (p) {
      if (shown.indexOf(p) < 0) root.classList.add("no-" + p);
    });
  }
})();

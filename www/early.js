// Runs before the stylesheet applies (a classic script in <head>), so the page never flashes what
// it will not show: embed mode and the missions hub are known from the URL alone. A file rather
// than an inline script, so that the page needs no inline script at all.
if (/[?&]embed=(1|true|yes|on)(&|$)/.test(location.search)) document.documentElement.classList.add("embed");
if (/[?&]hub=(1|true|yes|on)(&|$)/.test(location.search)) {
  document.documentElement.classList.add("hub-mode");
  document.title = "kvlab · missions";
}

// The example host page of docs/EMBED.md: embeds kvlab and narrates the article's steps by
// sending it commands with postMessage. It listens only to its own iframe and the lab's origin,
// and sizes the iframe from the lab's `resize` events.
//
// ?lab=<url of the lab> embeds a lab served elsewhere (another origin); the lab is then told to
// accept this page with ?origins=<this page's origin>. Without it, the lab next to this file.
(function () {
  "use strict";
  var params = new URLSearchParams(location.search);
  var labBase = new URL(params.get("lab") || "./", location.href);
  var frameUrl = new URL(labBase.href);
  frameUrl.searchParams.set("embed", "1");
  frameUrl.searchParams.set("autoplay", "0");
  if (labBase.origin !== location.origin) frameUrl.searchParams.set("origins", location.origin);
  var frame = document.getElementById("lab");
  var status = document.getElementById("lab-status");
  var log = document.getElementById("events");
  // Every message the lab sent, oldest first (also for tests: window.kvlabEvents).
  var events = (window.kvlabEvents = []);

  function send(command) {
    command.kvlab = 1;
    frame.contentWindow.postMessage(command, labBase.origin);
  }
  window.sendToLab = send;

  // The article's steps, each a few commands.
  var steps = {
    contiguous: [{ type: "load", preset: "contiguous-default" }, { type: "seek", t_s: 30 }],
    paged: [{ type: "set", path: "allocator.kind", value: "paged" }, { type: "seek", t_s: 30 }],
    block1: [{ type: "set", path: "allocator.kind", value: "paged" }, { type: "set", path: "allocator.block_size", value: 1 }, { type: "seek", t_s: 30 }],
    sampling: [{ type: "load", preset: "parallel-sampling" }, { type: "seek", t_s: 30 }],
  };
  document.querySelectorAll("[data-step]").forEach(function (button) {
    button.addEventListener("click", function () {
      document.querySelectorAll(".steps li").forEach(function (li) { li.classList.remove("current"); });
      button.closest("li").classList.add("current");
      steps[button.dataset.step].forEach(send);
    });
  });

  window.addEventListener("message", function (e) {
    if (e.origin !== labBase.origin || e.source !== frame.contentWindow) return;
    var m = e.data;
    if (!m || m.kvlab !== 1) return;
    events.push(m);
    var item = document.createElement("li");
    item.textContent = m.type + (m.type === "resize" ? " " + m.height + " px" : "") +
      (m.t_s !== undefined ? " at " + m.t_s.toFixed(1) + " s" : "") + (m.message ? ": " + m.message : "");
    log.appendChild(item);
    if (m.type === "resize") frame.style.height = Math.max(320, m.height) + "px";
    if (m.type === "ready" || m.type === "state") {
      var a = m.state.preset.allocator;
      status.textContent = m.state.preset.id + " · " + (a.kind || "contiguous") +
        (a.block_size ? ", blocks of " + a.block_size : "") + " · " + m.t_s.toFixed(1) + " s";
    }
    if (m.type === "finished") status.textContent += " · run finished";
    if (m.type === "error") status.textContent = "The lab refused a command: " + m.message;
  });
  frame.src = frameUrl.href;
})();

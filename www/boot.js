// Starts the lab: imports the wasm-bindgen module and instantiates the WebAssembly beside it,
// whose `start` function (src/web/mod.rs) builds the page. A file rather than trunk's inline
// loader, so that the page runs under a Content-Security-Policy without 'unsafe-inline'
// (Trunk.toml: inject_scripts = false, filehash = false keep these two names fixed).
import init from "./kvlab.js";

init({ module_or_path: new URL("kvlab_bg.wasm", import.meta.url) }).catch(function (e) {
  var box = document.getElementById("panic");
  if (box) {
    box.textContent = "The lab could not load its WebAssembly module: " + e;
    box.hidden = false;
  }
  console.error(e);
});

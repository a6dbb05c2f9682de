// mcp-memory dashboard: a little progressive enhancement; every page works without it.
"use strict";
document.addEventListener("keydown", function (event) {
  // "/" focuses the search box, as in many sites; not while typing in a field.
  var target = event.target;
  var typing = target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA" || target.tagName === "SELECT");
  if (event.key === "/" && !typing && !event.ctrlKey && !event.metaKey && !event.altKey) {
    var box = document.querySelector("main input[type=search]") || document.getElementById("quick-search");
    if (box) { event.preventDefault(); box.focus(); box.select(); }
  }
});
document.addEventListener("DOMContentLoaded", function () {
  // A cited line opened in the rendered view: bring its block into the middle of the screen.
  var marked = document.querySelector("article.md .hl, table.source tr.hl");
  if (marked && location.hash) { marked.scrollIntoView({ block: "center" }); }
});

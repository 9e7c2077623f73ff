// Charts: every <canvas data-chart="ID"> gets a Chart.js chart whose whole config sits,
// JSON-escaped by Django's json_script, in <script id="ID" type="application/json">.
// Charts are (re)drawn on load and after every htmx swap.
(function () {
  "use strict";

  function render(root) {
    if (typeof window.Chart === "undefined") return;
    (root || document).querySelectorAll("canvas[data-chart]").forEach(function (canvas) {
      var source = document.getElementById(canvas.dataset.chart);
      if (!source) return;
      var existing = window.Chart.getChart(canvas);
      if (existing) existing.destroy();
      var config = JSON.parse(source.textContent);
      config.options = config.options || {};
      config.options.animation = false;
      config.options.responsive = true;
      config.options.maintainAspectRatio = false;
      canvas.chart = new window.Chart(canvas, config);
      canvas.dataset.rendered = "true";
    });
  }

  window.reductionCharts = { render: render };
  document.addEventListener("DOMContentLoaded", function () { render(document); });
  document.addEventListener("htmx:afterSettle", function (event) { render(event.target); });
})();

// Behaviour that would otherwise sit in inline handlers, which the Content-Security-Policy
// (script-src 'self') does not run: listened for on the document, so it holds for content
// htmx swaps in too.
(function () {
  "use strict";

  // The workspace switcher submits as soon as another workspace is picked.
  document.addEventListener("change", function (event) {
    var el = event.target;
    if (el.matches && el.matches("select[data-autosubmit]")) el.form.submit();
  });

  // "Copy" beside a snippet: the text goes to the clipboard and the button's status says
  // so; where the clipboard is refused (a page not served over HTTPS), the text is
  // selected instead, for the user to copy by hand.
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("button[data-copy]");
    if (!button) return;
    var source = document.getElementById(button.dataset.copy);
    var status = button.parentNode.querySelector(".copy-status");
    if (!source) return;
    function say(text) { if (status) status.textContent = text; }
    function select() {
      var range = document.createRange();
      range.selectNodeContents(source);
      var selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      say("Selected: press Ctrl+C to copy.");
    }
    if (!navigator.clipboard || !window.isSecureContext) { select(); return; }
    navigator.clipboard.writeText(source.textContent).then(
      function () { say("Copied."); },
      select
    );
  });

  // Tune: a knob's slider and number input carry the same name; keep them equal.
  document.addEventListener("input", function (event) {
    var el = event.target;
    if (!el.form || el.form.id !== "tune-form") return;
    if (!el.name || el.type === "hidden") return;
    el.form.querySelectorAll('input[name="' + el.name + '"]').forEach(function (other) {
      if (other !== el && other.type !== "hidden") other.value = el.value;
    });
  }, true);
})();

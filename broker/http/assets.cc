#include "broker/http/assets.h"

namespace tidegate::http {

const char kStyleCss[] = R"css(
body { font-family: system-ui, sans-serif; margin: 0 1.5em 2em; color: #212529; }
header { display: flex; align-items: baseline; gap: 1em; border-bottom: 1px solid #dee2e6; }
header h1 a { color: #1864ab; text-decoration: none; }
#status { color: #868e96; font-size: 0.9em; }
table { border-collapse: collapse; margin: 0.5em 0 1em; }
th, td { border: 1px solid #dee2e6; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f1f3f5; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
td.hot { color: #c92a2a; font-weight: 600; }
tr.queued td.reason { color: #e67700; }
.note { color: #868e96; font-size: 0.9em; }
.error { color: #c92a2a; }
img { max-width: 100%; height: auto; }
)css";

const char kAppJs[] = R"js(
(function () {
  "use strict";
  var body = document.body, live = document.getElementById("live"), status = document.getElementById("status");
  var watch = body.getAttribute("data-watch");
  if (!watch || !live || new URLSearchParams(location.search).get("watch") === "0") return;
  function poll() {
    var url = watch + "&since=" + encodeURIComponent(body.getAttribute("data-version"));
    fetch(url, { credentials: "same-origin", cache: "no-store" })
      .then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })
      .then(function (page) {
        if (page.version !== body.getAttribute("data-version")) {
          live.innerHTML = page.html;  // rendered and escaped by the broker
          body.setAttribute("data-version", page.version);
        }
        status.textContent = "live";
        setTimeout(poll, 1000);
      })
      .catch(function (e) { status.textContent = "not updating (" + e.message + "), retrying"; setTimeout(poll, 5000); });
  }
  poll();
})();
)js";

}  // namespace tidegate::http

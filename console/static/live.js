// latch console: keeps a page's live part (#live) current. The server's
// /live stream says when the store changed; the page then fetches itself
// again and swaps that part in. Without this script the pages still work;
// they just do not refresh.
(function () {
  "use strict";
  var live = document.getElementById("live");
  if (!live || !window.EventSource || !window.fetch) return;
  var busy = false, again = false;
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (html === null) return;
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("live");
        if (fresh) live.innerHTML = fresh.innerHTML;
      })
      .catch(function () {})
      .then(function () {
        busy = false;
        if (again) { again = false; refresh(); }
      });
  }
  var events = new EventSource("/live");
  events.addEventListener("change", refresh);
})();

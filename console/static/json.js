// latch console: the JSON views' Copy buttons, and their folds kept
// across the live part's refreshes. Folding itself is <details>, which
// works without this script; without it the Copy buttons stay hidden.
(function () {
  "use strict";
  // folds is what the person left each fold at, by its view and place,
  // so that a refresh of the live part (live.js) does not undo it.
  var folds = {};
  function foldKey(d) {
    var view = d.closest(".jsonview");
    return view ? (view.getAttribute("data-key") || "") + "#" + d.getAttribute("data-n") : null;
  }
  // toggle does not bubble: listen in the capture phase.
  document.addEventListener("toggle", function (ev) {
    var d = ev.target;
    if (!d.matches || !d.matches(".jsonview details.jn")) return;
    var k = foldKey(d);
    if (k !== null) folds[k] = d.open;
  }, true);

  function arm(root) {
    root.querySelectorAll(".jsonview button.copy").forEach(function (b) { b.hidden = false; });
    root.querySelectorAll(".jsonview details.jn").forEach(function (d) {
      var k = foldKey(d);
      if (k !== null && Object.prototype.hasOwnProperty.call(folds, k) && d.open !== folds[k]) d.open = folds[k];
    });
  }

  // write puts text on the clipboard: the Clipboard API where the page
  // may use it, else a hidden textarea and the copy command.
  function write(text) {
    if (navigator.clipboard && navigator.clipboard.writeText) return navigator.clipboard.writeText(text);
    return new Promise(function (resolve, reject) {
      var t = document.createElement("textarea");
      t.className = "offscreen";
      t.value = text;
      t.setAttribute("readonly", "");
      document.body.appendChild(t);
      t.select();
      var ok = false;
      try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
      document.body.removeChild(t);
      if (ok) resolve(); else reject(new Error("copy refused"));
    });
  }

  // A Copy button copies its data-copy (the stored value, when the view
  // shows it whole), else what its data-copy-url (the raw view) serves.
  document.addEventListener("click", function (ev) {
    var b = ev.target.closest ? ev.target.closest(".jsonview button.copy") : null;
    if (!b) return;
    var said = b.parentNode.querySelector(".copied");
    var text;
    if (b.hasAttribute("data-copy")) {
      text = Promise.resolve(b.getAttribute("data-copy"));
    } else {
      text = fetch(b.getAttribute("data-copy-url"), { credentials: "same-origin" }).then(function (r) {
        if (!r.ok) throw new Error("HTTP " + r.status);
        return r.text();
      });
    }
    text.then(write).then(function () {
      if (said) said.textContent = "Copied";
    }, function () {
      if (said) said.textContent = "Could not copy: use the Raw JSON link";
    });
  });

  arm(document);
  var live = document.getElementById("live");
  if (live && window.MutationObserver) {
    new MutationObserver(function () { arm(live); }).observe(live, { childList: true });
  }
})();

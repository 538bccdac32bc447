// Live pages: while an Experiment runs, its page fetches its own live part every two seconds and
// swaps it in; once the part no longer asks to be live, polling stops.
(function () {
  function poll() {
    var live = document.getElementById("live");
    if (!live || !live.dataset.live) return;
    fetch(live.dataset.live, { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        live.innerHTML = html;
        if (!/data-still-live/.test(html)) { delete live.dataset.live; }
        else { setTimeout(poll, 2000); }
      })
      .catch(function () { setTimeout(poll, 5000); });
  }
  document.addEventListener("DOMContentLoaded", function () { setTimeout(poll, 2000); });
})();

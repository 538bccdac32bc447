// Live pages. An Experiment's page listens to its server-sent events (data-events) and swaps in each
// new live part as it comes; if the connection drops, it falls back to fetching the live part
// (data-live) every two seconds, as pages without events do. Once the part no longer asks to be
// live (no data-still-live), it stops. The live part's data-via says which way it is kept up to date.
(function () {
  var live;
  function swap(html) {
    live.innerHTML = html;
    if (!/data-still-live/.test(html)) { delete live.dataset.live; return false; }
    return true;
  }
  function poll() {
    if (!live.dataset.live) return;
    live.dataset.via = "polling";
    fetch(live.dataset.live, { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) { if (swap(html)) setTimeout(poll, 2000); })
      .catch(function () { setTimeout(poll, 5000); });
  }
  function listen() {
    var events = new EventSource(live.dataset.events);
    live.dataset.via = "events";
    events.addEventListener("update", function (e) { if (!swap(e.data)) events.close(); });
    events.addEventListener("end", function () { events.close(); });
    events.onerror = function () {  // dropped: poll instead, unless the page is done
      events.close();
      if (live.dataset.live) setTimeout(poll, 2000);
    };
  }
  document.addEventListener("DOMContentLoaded", function () {
    live = document.getElementById("live");
    if (!live || !live.dataset.live) return;
    if (live.dataset.events && window.EventSource) listen(); else setTimeout(poll, 2000);
  });
})();

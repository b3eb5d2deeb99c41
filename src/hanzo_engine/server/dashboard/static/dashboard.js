/*
 * hanzo-engine's search preview: InstantSearch.js widgets over instant-meilisearch, plus the index's
 * stats, settings and the recent tasks read from the Meilisearch-compatible API of the same server.
 * No framework and no build step: the libraries are the vendored UMD builds loaded before this file.
 */
(function () {
  "use strict";

  var KEY_STORAGE = "hanzo-engine.dashboard.apiKey";
  var INDEX_STORAGE = "hanzo-engine.dashboard.index";
  var TASKS_EVERY_MS = 5000;
  var MAX_LIST_ITEMS = 8; // array values shown per field before "+N more"
  var IMAGE_FIELD = /(poster|image|img|cover|thumbnail|picture|photo|logo)/i;
  var IMAGE_URL = /^https?:\/\/\S+\.(png|jpe?g|gif|webp|avif|svg)(\?\S*)?$/i;

  // the API lives where the page is served from (the page is `/`, or a proxy's sub-path)
  var host = window.location.origin + window.location.pathname.replace(/\/[^/]*$/, "");

  var apiKey = readStorage(KEY_STORAGE) || "";
  var search = null; // the running InstantSearch instance
  var indexes = []; // GET /indexes results
  var currentUid = null;
  var tasksTimer = null;

  function $(id) {
    return document.getElementById(id);
  }

  function readStorage(name) {
    try {
      return window.localStorage.getItem(name);
    } catch (e) {
      return null;
    }
  }

  function writeStorage(name, value) {
    try {
      if (value === null || value === "") window.localStorage.removeItem(name);
      else window.localStorage.setItem(name, value);
    } catch (e) {
      /* private mode: the key lives for this page only */
    }
  }

  function escapeHtml(text) {
    return String(text)
      .replace(/&/g, "&amp;")
      .replace(/</g, "&lt;")
      .replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;")
      .replace(/'/g, "&#39;");
  }


  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (name) {
      if (name === "text") node.textContent = attrs[name];
      else if (name === "html") node.innerHTML = attrs[name];
      else node.setAttribute(name, attrs[name]);
    });
    (children || []).forEach(function (child) {
      if (child) node.appendChild(child);
    });
    return node;
  }

  // ------------------------------------------------------------------------------------------------
  // The API
  // ------------------------------------------------------------------------------------------------

  function ApiError(status, body) {
    this.status = status;
    this.body = body;
    this.message = (body && body.message) || "HTTP " + status;
  }

  function isAuthError(error) {
    return error instanceof ApiError && (error.status === 401 || error.status === 403);
  }

  function api(path) {
    var headers = { Accept: "application/json" };
    if (apiKey) headers.Authorization = "Bearer " + apiKey;
    return fetch(host + path, { headers: headers }).then(function (response) {
      return response.text().then(function (text) {
        var body = null;
        try {
          body = text ? JSON.parse(text) : null;
        } catch (e) {
          body = null;
        }
        if (!response.ok) throw new ApiError(response.status, body);
        return body;
      });
    });
  }

  // ------------------------------------------------------------------------------------------------
  // Notices and the key prompt
  // ------------------------------------------------------------------------------------------------

  function notify(message) {
    var notice = $("notice");
    notice.textContent = message || "";
    notice.hidden = !message;
  }

  function askForKey(error) {
    stop();
    $("app").hidden = true;
    $("empty").hidden = true;
    $("index-picker").hidden = true;
    var reason = apiKey
      ? "The server refused the key in use (" + error.message + ")."
      : "This instance is protected by a master key (" + error.message + ").";
    $("key-prompt-reason").textContent = reason;
    $("key-prompt").hidden = false;
    $("key-prompt-input").value = "";
    $("key-prompt-input").focus();
  }

  function useKey(key) {
    apiKey = (key || "").trim();
    writeStorage(KEY_STORAGE, apiKey);
    $("api-key").value = apiKey;
    start();
  }

  // ------------------------------------------------------------------------------------------------
  // Start: list the indexes, open one
  // ------------------------------------------------------------------------------------------------

  function stop() {
    if (search) {
      search.dispose();
      search = null;
    }
    if (tasksTimer) {
      window.clearInterval(tasksTimer);
      tasksTimer = null;
    }
  }

  function start() {
    stop();
    notify("");
    api("/indexes?limit=1000")
      .then(function (page) {
        $("key-prompt").hidden = true;
        indexes = page.results || [];
        loadVersion();
        if (!indexes.length) {
          $("app").hidden = true;
          $("index-picker").hidden = true;
          $("empty").hidden = false;
          return;
        }
        $("empty").hidden = true;
        var select = $("index-select");
        select.innerHTML = "";
        indexes.forEach(function (index) {
          select.appendChild(el("option", { value: index.uid, text: index.uid }));
        });
        $("index-picker").hidden = false;
        var wanted = readStorage(INDEX_STORAGE);
        var uid = indexes.some(function (i) { return i.uid === wanted; }) ? wanted : indexes[0].uid;
        select.value = uid;
        openIndex(uid);
      })
      .catch(function (error) {
        if (isAuthError(error)) askForKey(error);
        else notify("Cannot list the indexes: " + error.message);
      });
  }

  function loadVersion() {
    api("/version")
      .then(function (v) {
        $("version").textContent = "Meilisearch API " + v.pkgVersion;
      })
      .catch(function () {
        $("version").textContent = "";
      });
  }

  /** Names usable in a refinement list: `filterableAttributes` entries, strings or granular objects. */
  function facetAttributes(settings) {
    var names = [];
    (settings.filterableAttributes || []).forEach(function (entry) {
      var patterns = typeof entry === "string" ? [entry] : (entry && entry.attributePatterns) || [];
      patterns.forEach(function (name) {
        if (name.indexOf("*") === -1 && name !== "_geo" && names.indexOf(name) === -1) names.push(name);
      });
    });
    return names;
  }

  function sortAttributes(settings) {
    return (settings.sortableAttributes || []).filter(function (name) {
      return name !== "_geo" && name.indexOf("*") === -1;
    });
  }

  function openIndex(uid) {
    currentUid = uid;
    writeStorage(INDEX_STORAGE, uid);
    stop();
    $("app").hidden = false;
    $("index-settings").textContent = "";
    $("index-stats").textContent = "Loading…";
    api("/indexes/" + encodeURIComponent(uid) + "/settings")
      .then(function (settings) {
        if (uid !== currentUid) return;
        $("index-settings").textContent = JSON.stringify(settings, null, 2);
        buildSearch(uid, facetAttributes(settings), sortAttributes(settings));
      })
      .catch(function (error) {
        if (uid !== currentUid) return;
        if (isAuthError(error)) {
          // a key may search without reading settings: search anyway, without facets or sorts
          $("index-settings").textContent = "Not shown: " + error.message;
          buildSearch(uid, [], []);
        } else {
          notify("Cannot read the settings of " + uid + ": " + error.message);
        }
      });
    refreshInfo();
    tasksTimer = window.setInterval(function () {
      if (!document.hidden) refreshInfo();
    }, TASKS_EVERY_MS);
  }

  // ------------------------------------------------------------------------------------------------
  // The search: InstantSearch.js over instant-meilisearch
  // ------------------------------------------------------------------------------------------------

  function primaryKeyOf(uid) {
    var found = indexes.filter(function (i) { return i.uid === uid; })[0];
    return found ? found.primaryKey : null;
  }

  function buildSearch(uid, facets, sorts) {
    if (search) {
      search.dispose();
      search = null;
    }
    var options = {
      meiliSearchParams: { showRankingScore: true, attributesToCrop: ["*"], cropLength: 40 },
      keepZeroFacets: false,
    };
    var primaryKey = primaryKeyOf(uid);
    if (primaryKey) options.primaryKey = primaryKey;
    var client = window.instantMeiliSearch(host, apiKey, options).searchClient;

    search = window.instantsearch({
      indexName: uid,
      searchClient: client,
      future: { preserveSharedStateOnUnmount: true },
    });
    search.on("error", function (event) {
      var message = String((event && event.error && event.error.message) || event);
      if (/API key|Authorization header/i.test(message)) {
        askForKey(new ApiError(403, { message: message }));
      } else {
        notify("Search failed: " + message);
      }
    });

    var w = window.instantsearch.widgets;
    var widgets = [
      w.searchBox({
        container: "#searchbox",
        placeholder: "Search in " + uid,
        autofocus: true,
        showLoadingIndicator: true,
      }),
      w.stats({ container: "#search-stats" }),
      w.currentRefinements({ container: "#current-refinements" }),
      w.clearRefinements({
        container: "#clear-refinements",
        templates: { resetLabel: function () { return "Clear all filters"; } },
      }),
      w.hitsPerPage({
        container: "#hits-per-page",
        items: [
          { label: "10 hits", value: 10, default: true },
          { label: "20 hits", value: 20 },
          { label: "50 hits", value: 50 },
        ],
      }),
      hitsWidget({ container: $("hits"), primaryKey: primaryKey }),
      w.pagination({ container: "#pagination", padding: 2 }),
    ];

    $("sort-block").hidden = !sorts.length;
    if (sorts.length) {
      var items = [{ label: "Relevance", value: uid }];
      sorts.forEach(function (name) {
        items.push({ label: name + " (asc)", value: uid + ":" + name + ":asc" });
        items.push({ label: name + " (desc)", value: uid + ":" + name + ":desc" });
      });
      widgets.push(w.sortBy({ container: "#sort-by", items: items }));
    }

    var facetsBox = $("facets");
    facetsBox.innerHTML = "";
    facets.forEach(function (name) {
      var box = el("div", { class: "block facet", "data-attribute": name });
      facetsBox.appendChild(box);
      widgets.push(
        w.panel({ templates: { header: function () { return name; } } })(w.refinementList)({
          container: box,
          attribute: name,
          limit: 10,
          showMore: true,
          showMoreLimit: 50,
        })
      );
    });

    search.addWidgets(widgets);
    search.start();
  }

  /** The hits, drawn here: every field with its highlight, the ranking score, an image when one is found. */
  function hitsWidget(params) {
    params.escapeHTML = true;
    return window.instantsearch.connectors.connectHits(renderHits)(params);
  }

  function renderHits(render) {
    var container = render.widgetParams.container;
    var primaryKey = render.widgetParams.primaryKey;
    var items = render.items || render.hits || [];
    container.innerHTML = "";
    // the query these hits answer, for whoever watches the page (the browser test does)
    container.setAttribute("data-query", render.results ? render.results.query || "" : "");
    if (!items.length) {
      container.appendChild(el("p", { class: "no-hits", text: "No document matches this search." }));
      return;
    }
    var list = el("ol", { class: "hit-list" });
    items.forEach(function (hit) {
      list.appendChild(renderHit(hit, primaryKey));
    });
    container.appendChild(list);
  }

  function fieldNames(hit) {
    return Object.keys(hit).filter(function (name) {
      return name.charAt(0) !== "_" && name !== "objectID";
    });
  }

  function titleField(hit, primaryKey) {
    var names = fieldNames(hit);
    var preferred = ["title", "name", "label", "headline", "subject"];
    for (var i = 0; i < preferred.length; i++) {
      if (typeof hit[preferred[i]] === "string") return preferred[i];
    }
    for (var j = 0; j < names.length; j++) {
      if (names[j] !== primaryKey && typeof hit[names[j]] === "string") return names[j];
    }
    return null;
  }

  function imageOf(hit) {
    var names = fieldNames(hit);
    for (var i = 0; i < names.length; i++) {
      var value = hit[names[i]];
      if (typeof value === "string" && /^https?:\/\//.test(value) &&
          (IMAGE_FIELD.test(names[i]) || IMAGE_URL.test(value))) {
        return value;
      }
    }
    return null;
  }

  /** A field's value as HTML, from its `_highlightResult` entry when there is one. */
  function valueHtml(raw, formatted) {
    if (Array.isArray(raw)) {
      var shown = raw.slice(0, MAX_LIST_ITEMS).map(function (item, i) {
        return valueHtml(item, Array.isArray(formatted) ? formatted[i] : undefined);
      });
      var more = raw.length > MAX_LIST_ITEMS ? ' <span class="muted">+' + (raw.length - MAX_LIST_ITEMS) +
        " more</span>" : "";
      return shown.map(function (s) { return '<span class="chip">' + s + "</span>"; }).join(" ") + more;
    }
    if (raw !== null && typeof raw === "object") {
      return '<code class="json">' + escapeHtml(JSON.stringify(raw)) + "</code>";
    }
    // connectHits (escapeHTML) has escaped the highlighted values and put their matches in <mark>
    if (formatted && typeof formatted.value === "string") return formatted.value;
    return escapeHtml(raw === null || raw === undefined ? "null" : raw);
  }

  function renderHit(hit, primaryKey) {
    var formatted = hit._highlightResult || {};
    var title = titleField(hit, primaryKey);
    var image = imageOf(hit);
    var item = el("li", { class: "hit" });
    if (primaryKey) item.setAttribute("data-id", String(hit[primaryKey]));

    var head = el("div", { class: "hit-head" });
    head.appendChild(el("h4", {
      class: "hit-title",
      html: title ? valueHtml(hit[title], formatted[title]) : escapeHtml(primaryKey ? hit[primaryKey] : ""),
    }));
    if (typeof hit._rankingScore === "number") {
      head.appendChild(el("span", {
        class: "score",
        title: "_rankingScore",
        text: "score " + hit._rankingScore.toFixed(4),
      }));
    }
    item.appendChild(head);

    var body = el("div", { class: "hit-body" });
    if (image) {
      var img = el("img", { class: "hit-image", src: image, alt: "", loading: "lazy" });
      img.addEventListener("error", function () { img.remove(); });
      body.appendChild(img);
    }
    var fields = el("dl", { class: "hit-fields" });
    fieldNames(hit).forEach(function (name) {
      if (name === title || hit[name] === image) return;
      fields.appendChild(el("dt", { text: name }));
      fields.appendChild(el("dd", { html: valueHtml(hit[name], formatted[name]) }));
    });
    body.appendChild(fields);
    item.appendChild(body);
    return item;
  }

  // ------------------------------------------------------------------------------------------------
  // Index stats and recent tasks
  // ------------------------------------------------------------------------------------------------

  function refreshInfo() {
    var uid = currentUid;
    api("/indexes/" + encodeURIComponent(uid) + "/stats")
      .then(function (stats) {
        if (uid === currentUid) renderStats(uid, stats);
      })
      .catch(function (error) {
        if (uid === currentUid) $("index-stats").textContent = "Not shown: " + error.message;
      });
    api("/tasks?limit=10")
      .then(renderTasks)
      .catch(function (error) {
        $("tasks").textContent = "Not shown: " + error.message;
      });
  }

  function renderStats(uid, stats) {
    var index = indexes.filter(function (i) { return i.uid === uid; })[0] || {};
    var rows = [
      ["Documents", stats.numberOfDocuments.toLocaleString()],
      ["Indexing", stats.isIndexing ? "yes" : "no"],
      ["Primary key", index.primaryKey || "—"],
      ["Raw size", (stats.rawDocumentDbSize || 0).toLocaleString() + " B"],
      ["Updated", index.updatedAt ? new Date(index.updatedAt).toLocaleString() : "—"],
    ];
    var table = el("table", { class: "kv", id: "stats-table" });
    rows.forEach(function (row) {
      table.appendChild(el("tr", {}, [el("th", { text: row[0] }), el("td", { text: row[1] })]));
    });
    var fields = el("table", { class: "kv fields" });
    fields.appendChild(el("tr", {}, [el("th", { text: "Field" }), el("th", { text: "Documents" })]));
    Object.keys(stats.fieldDistribution || {}).forEach(function (name) {
      fields.appendChild(el("tr", {}, [
        el("td", { text: name }),
        el("td", { text: stats.fieldDistribution[name].toLocaleString() }),
      ]));
    });
    var box = $("index-stats");
    box.innerHTML = "";
    box.appendChild(table);
    box.appendChild(el("h5", { text: "Field distribution" }));
    box.appendChild(fields);
  }

  function duration(iso) {
    // Meilisearch durations are ISO 8601 like PT0.012345S
    var m = /^PT(?:(\d+)H)?(?:(\d+)M)?(?:([\d.]+)S)?$/.exec(iso || "");
    if (!m) return iso || "";
    var seconds = (+m[1] || 0) * 3600 + (+m[2] || 0) * 60 + (+m[3] || 0);
    return seconds < 1 ? Math.round(seconds * 1000) + " ms" : seconds.toFixed(2) + " s";
  }

  function renderTasks(page) {
    var table = el("table", { class: "tasks", id: "tasks-table" });
    table.appendChild(el("tr", {}, ["#", "Index", "Type", "Status", "Took"].map(function (h) {
      return el("th", { text: h });
    })));
    (page.results || []).forEach(function (task) {
      var status = el("span", { class: "status status-" + task.status, text: task.status });
      if (task.error && task.error.message) status.title = task.error.message;
      var row = el("tr", { "data-task": String(task.uid) }, [
        el("td", { text: String(task.uid) }),
        el("td", { text: task.indexUid || "—" }),
        el("td", { text: task.type }),
        el("td", {}, [status]),
        el("td", { text: duration(task.duration) }),
      ]);
      if (task.enqueuedAt) row.title = "enqueued " + new Date(task.enqueuedAt).toLocaleString();
      table.appendChild(row);
    });
    var box = $("tasks");
    box.innerHTML = "";
    box.appendChild(page.results && page.results.length ? table : el("p", { class: "muted", text: "No task." }));
  }

  // ------------------------------------------------------------------------------------------------
  // Wiring
  // ------------------------------------------------------------------------------------------------

  document.addEventListener("DOMContentLoaded", function () {
    Array.prototype.forEach.call(document.querySelectorAll(".origin"), function (node) {
      node.textContent = host;
    });
    $("api-key").value = apiKey;
    $("key-form").addEventListener("submit", function (event) {
      event.preventDefault();
      useKey($("api-key").value);
    });
    $("forget-key").addEventListener("click", function () {
      useKey("");
    });
    $("key-prompt-form").addEventListener("submit", function (event) {
      event.preventDefault();
      useKey($("key-prompt-input").value);
    });
    $("index-select").addEventListener("change", function (event) {
      openIndex(event.target.value);
    });
    $("refresh-tasks").addEventListener("click", function (event) {
      event.preventDefault();
      if (currentUid) refreshInfo();
    });
    if (!window.instantsearch || !window.instantMeiliSearch) {
      notify("The dashboard's libraries did not load.");
      return;
    }
    start();
  });
})();

// Idem operator's console: plain JavaScript, no dependencies, nothing loaded from the network
// but this service's own admin API. The admin token lives in sessionStorage (this tab only) and
// goes in the Authorization header, never in a URL.
(function () {
  'use strict';

  var TOKEN_KEY = 'idem.adminToken';
  var CHARTED = ['pass', 'duplicate', 'in_flight', 'conflict'];
  var REFRESH_MS = 2000;
  var refreshTimer = null;

  function $(id) { return document.getElementById(id); }

  // Builds an element; attributes by name (on* are listeners), children as nodes or text.
  function h(tag, attrs) {
    var el = document.createElement(tag);
    attrs = attrs || {};
    Object.keys(attrs).forEach(function (k) {
      var v = attrs[k];
      if (v === null || v === undefined || v === false) { return; }
      if (k.indexOf('on') === 0) { el.addEventListener(k.substring(2), v); }
      else if (k === 'text') { el.textContent = v; }
      else { el.setAttribute(k, v === true ? '' : String(v)); }
    });
    for (var i = 2; i < arguments.length; i++) { append(el, arguments[i]); }
    return el;
  }
  function append(el, c) {
    if (c === null || c === undefined || c === false) { return; }
    if (Array.isArray(c)) { c.forEach(function (x) { append(el, x); }); return; }
    el.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
  }

  function token() { return sessionStorage.getItem(TOKEN_KEY); }

  function flash(text, isError) {
    var f = $('flash');
    f.textContent = text;
    f.className = isError ? 'error' : '';
    f.hidden = !text;
  }

  // Calls the admin API; resolves to the JSON answer, rejects with its message.
  function api(method, path, body) {
    var init = { method: method, headers: { 'Authorization': 'Bearer ' + token(),
      'Accept': 'application/json' }, cache: 'no-store' };
    if (body !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    return fetch('/admin' + path, init).then(function (r) {
      return r.text().then(function (text) {
        var json = null;
        try { json = text ? JSON.parse(text) : null; } catch (e) { json = null; }
        if (r.status === 401) {
          sessionStorage.removeItem(TOKEN_KEY);
          showLogin('The token was refused; log in again.');
          throw new Error('unauthorized');
        }
        if (!r.ok) {
          var err = new Error((json && json.message) || ('HTTP ' + r.status));
          err.status = r.status;
          err.code = json && json.error;
          throw err;
        }
        return json;
      });
    });
  }

  function enc(s) { return encodeURIComponent(s); }

  function showLogin(message) {
    stopRefresh();
    $('nav').hidden = true;
    $('view').hidden = true;
    $('login-view').hidden = false;
    var e = $('login-error');
    e.textContent = message || '';
    e.hidden = !message;
    $('token').focus();
  }

  function startRefresh(fn) {
    stopRefresh();
    refreshTimer = setInterval(fn, REFRESH_MS);
  }
  function stopRefresh() {
    if (refreshTimer) { clearInterval(refreshTimer); refreshTimer = null; }
  }

  function view() { return $('view'); }
  function setView(children) {
    var v = view();
    while (v.firstChild) { v.removeChild(v.firstChild); }
    append(v, children);
  }

  function fmtTime(iso) {
    if (!iso) { return '—'; }
    var d = new Date(iso);
    return isNaN(d) ? iso : d.toLocaleString();
  }

  // ---- the chart: decisions per second over the sampled minutes, one line per decision ----

  function chart(points) {
    var NS = 'http://www.w3.org/2000/svg';
    var W = 600, H = 120, P = 4;
    var svg = document.createElementNS(NS, 'svg');
    svg.setAttribute('class', 'chart');
    svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    svg.setAttribute('preserveAspectRatio', 'none');
    svg.setAttribute('role', 'img');
    var max = 1;
    points.forEach(function (p) {
      CHARTED.forEach(function (k) { max = Math.max(max, p[k] || 0); });
    });
    var title = document.createElementNS(NS, 'title');
    title.textContent = 'decisions per second, peak ' + max.toFixed(2);
    svg.appendChild(title);
    var colors = { pass: '#2f7d32', duplicate: '#1f5fa8', in_flight: '#b26a00', conflict: '#b3261e' };
    if (points.length < 2) {
      var t = document.createElementNS(NS, 'text');
      t.setAttribute('x', '10'); t.setAttribute('y', '20'); t.setAttribute('fill', '#5d6675');
      t.setAttribute('font-size', '12');
      t.textContent = 'collecting samples…';
      svg.appendChild(t);
    }
    CHARTED.forEach(function (k) {
      if (points.length < 2) { return; }
      var d = points.map(function (p, i) {
        var x = P + i * (W - 2 * P) / (points.length - 1);
        var y = H - P - (p[k] || 0) * (H - 2 * P) / max;
        return x.toFixed(1) + ',' + y.toFixed(1);
      }).join(' ');
      var line = document.createElementNS(NS, 'polyline');
      line.setAttribute('points', d);
      line.setAttribute('fill', 'none');
      line.setAttribute('stroke', colors[k]);
      line.setAttribute('stroke-width', '1.5');
      line.setAttribute('data-series', k);
      svg.appendChild(line);
    });
    return svg;
  }

  function legend() {
    return h('div', { 'class': 'legend' }, CHARTED.map(function (k) {
      return h('span', {}, h('span', { 'class': 'swatch ' + k }), k.replace('_', ' '));
    }), h('span', { 'class': 'muted', text: 'per second, last minutes' }));
  }

  // ---- pages ----

  function pipelinesPage() {
    return api('GET', '/pipelines').then(function (data) {
      return Promise.all(data.pipelines.map(function (p) {
        return api('GET', '/pipelines/' + enc(p.id) + '/series')
          .then(function (s) { return s.points; }, function () { return []; });
      })).then(function (series) {
        setView([h('h2', { text: 'Pipelines' }),
          h('div', { 'class': 'grid' }, data.pipelines.map(function (p, i) {
            return pipelineCard(p, series[i]);
          }))]);
      });
    });
  }

  function count(p, name) { return (p.counts && p.counts[name]) || 0; }

  function pipelineCard(p, points) {
    var rows = [
      ['source', p.source], ['store', p.store || 'none (no dedup step)'],
      ['key', p.key || '—'], ['delivery', p.delivery + (p.mode ? ', dedup ' + p.mode : '')]
    ];
    return h('div', { 'class': 'card pipeline', 'data-pipeline': p.id },
      h('h3', {}, h('a', { href: '#/pipeline/' + enc(p.id), text: p.id })),
      p.warning ? h('div', { 'class': 'warning evictions', text: p.warning }) : null,
      h('table', {}, rows.map(function (r) {
        return h('tr', {}, h('th', { text: r[0] }), h('td', { 'class': 'mono', text: r[1] }));
      })),
      h('h3', { text: 'Decisions' }),
      h('table', { 'class': 'counts' },
        h('tr', {}, CHARTED.map(function (k) { return h('th', { text: k.replace('_', ' ') }); })),
        h('tr', {}, CHARTED.map(function (k) {
          return h('td', { 'class': 'num count-' + k, text: count(p, k) });
        }))),
      chart(points), legend(),
      h('h3', { text: 'Delivery' }),
      h('table', { 'class': 'deliveries' },
        h('tr', {}, ['delivered', 'retried', 'failed', 'dead lettered', 'outbox', 'dead letters']
          .map(function (k) { return h('th', { text: k }); })),
        h('tr', {},
          h('td', { 'class': 'num count-delivered', text: count(p, 'delivered') }),
          h('td', { 'class': 'num count-retried', text: count(p, 'retried') }),
          h('td', { 'class': 'num count-failed', text: count(p, 'failed') }),
          h('td', { 'class': 'num count-dead_lettered', text: count(p, 'dead_lettered') }),
          h('td', { 'class': 'num outbox-depth', text: p.outbox_depth === null ? '—' : p.outbox_depth }),
          h('td', { 'class': 'num dead-letter-count',
            text: p.dead_letters === null ? '—' : p.dead_letters }))));
  }

  function tabs(id, active) {
    var items = [['decisions', 'Recent decisions'], ['dead-letters', 'Dead letters'],
      ['pending', 'Pending deliveries'], ['blocked-keys', 'Blocked keys'],
      ['explain', 'Explain an event']];
    return [h('h2', {}, h('a', { href: '#/pipelines', text: 'Pipelines' }), ' / ', id),
      h('div', { 'class': 'tabs' }, items.map(function (t) {
        var href = t[0] === 'explain' ? '#/explain/' + enc(id) : '#/pipeline/' + enc(id) +
          (t[0] === 'decisions' ? '' : '/' + t[0]);
        return h('a', { href: href, id: 'tab-' + t[0], 'class': t[0] === active ? 'active' : null,
          text: t[1] });
      }))];
  }

  function decisionsPage(id) {
    return api('GET', '/pipelines/' + enc(id) + '/decisions?limit=200').then(function (data) {
      setView([tabs(id, 'decisions'),
        data.decisions.length === 0 ? h('p', { 'class': 'muted', text: 'No decisions yet.' }) :
          h('table', { id: 'decisions' },
            h('tr', {}, h('th', { text: 'time' }), h('th', { text: 'decision' }),
              h('th', { text: 'key digest' })),
            data.decisions.map(function (d) {
              return h('tr', { 'data-digest': d.digest },
                h('td', { text: fmtTime(d.at) }),
                h('td', { 'class': 'decision ' + d.decision, text: d.decision }),
                h('td', { 'class': 'mono', text: d.digest }));
            }))]);
    });
  }

  function deadLettersPage(id, after) {
    var q = '?limit=50' + (after ? '&after=' + enc(after) : '');
    return api('GET', '/pipelines/' + enc(id) + '/dead-letters' + q).then(function (data) {
      var list = data.dead_letters;
      setView([tabs(id, 'dead-letters'),
        h('p', { 'class': 'muted', text: 'Deliveries given up, newest first. Requeue delivers one ' +
          'again through the outbox with the same Idempotency-Key; its key stays committed, so ' +
          'senders\u2019 retries are still duplicates.' }),
        list.length === 0 ? h('p', { id: 'no-dead-letters', text: 'No dead letters.' }) :
          h('div', {},
            h('button', { type: 'button', id: 'purge-all', 'class': 'danger', onclick: function () {
              if (!window.confirm('Purge every dead letter of ' + id + '?')) { return; }
              api('DELETE', '/pipelines/' + enc(id) + '/dead-letters').then(function (r) {
                flash('Purged ' + r.purged + ' dead letters of ' + id + '.');
                route();
              }, showError);
            }, text: 'Purge all' }),
            h('table', { id: 'dead-letters' },
              h('tr', {}, ['id', 'given up', 'attempts', 'downstream', 'reason', 'event', '']
                .map(function (k) { return h('th', { text: k }); })),
              list.map(function (d) { return deadLetterRow(id, d); }))),
        data.next ? h('p', {}, h('a', { href: '#/pipeline/' + enc(id) + '/dead-letters/' +
          enc(data.next), id: 'older', text: 'Older \u2192' })) : null]);
    });
  }

  function deadLetterRow(id, d) {
    var body = d.body !== undefined ? JSON.stringify(d.body, null, 2) :
      (d.body_base64 || d.payload_base64 || '');
    return h('tr', { 'data-dead-letter': d.id },
      h('td', { 'class': 'num', text: d.id }),
      h('td', { text: fmtTime(d.dead_at) }),
      h('td', { 'class': 'num', text: d.attempts }),
      h('td', { text: d.downstream_status === null ? '—' : d.downstream_status }),
      h('td', { 'class': 'reason', text: d.reason }),
      h('td', {}, h('details', {}, h('summary', { 'class': 'mono', text: d.digest.substring(0, 16) + '…' }),
        h('div', { 'class': 'mono', text: 'Idempotency-Key: ' + (d.idempotency_key || '?') }),
        h('pre', { text: body }))),
      h('td', {},
        h('button', { type: 'button', 'class': 'requeue primary', onclick: function () {
          api('POST', '/pipelines/' + enc(id) + '/dead-letters/' + d.id + '/requeue', {})
            .then(function (r) {
              flash('Requeued dead letter ' + d.id + ' as outbox entry ' + r.outbox_id + '.');
              route();
            }, showError);
        }, text: 'Requeue' }), ' ',
        h('button', { type: 'button', 'class': 'purge danger', onclick: function () {
          api('DELETE', '/pipelines/' + enc(id) + '/dead-letters/' + d.id).then(function () {
            flash('Purged dead letter ' + d.id + '.');
            route();
          }, showError);
        }, text: 'Purge' })));
  }

  function pendingPage(id) {
    return api('GET', '/pipelines/' + enc(id) + '/outbox?limit=200').then(function (data) {
      setView([tabs(id, 'pending'),
        h('p', {}, 'Waiting in the outbox: ', h('strong', { id: 'pending-depth', text: data.depth })),
        data.pending.length === 0 ? h('p', { 'class': 'muted', text: 'Nothing is waiting.' }) :
          h('table', { id: 'pending' },
            h('tr', {}, ['id', 'enqueued', 'attempts', 'next attempt', 'last error', 'Idempotency-Key']
              .map(function (k) { return h('th', { text: k }); })),
            data.pending.map(function (e) {
              return h('tr', { 'data-entry': e.id },
                h('td', { 'class': 'num', text: e.id }),
                h('td', { text: fmtTime(e.enqueued_at) }),
                h('td', { 'class': 'num', text: e.attempts }),
                h('td', { text: e.blocked ? 'blocked (skip or retry it under Blocked keys)' :
                  fmtTime(e.next_attempt_at) }),
                h('td', { text: e.last_error || '—' }),
                h('td', { 'class': 'mono', text: e.idempotency_key || '?' }));
            }))]);
    }, function (e) {
      if (e.code === 'no_outbox') {
        setView([tabs(id, 'pending'), h('p', { 'class': 'muted', text: e.message })]);
        return;
      }
      throw e;
    });
  }

  function explainPage(id) {
    return api('GET', '/pipelines').then(function (data) {
      var select = h('select', { id: 'explain-pipeline', name: 'pipeline' },
        data.pipelines.map(function (p) {
          return h('option', { value: p.id, selected: p.id === id, text: p.id });
        }));
      var result = h('div', { id: 'explain-result' });
      var form = h('form', { id: 'explain-form', onsubmit: function (ev) {
        ev.preventDefault();
        var headers = {};
        var bad = null;
        $('explain-headers').value.split('\n').forEach(function (line) {
          if (!line.trim()) { return; }
          var c = line.indexOf(':');
          if (c <= 0) { bad = line; return; }
          headers[line.substring(0, c).trim()] = line.substring(c + 1).trim();
        });
        if (bad !== null) { flash('Header line "' + bad + '" is not Name: value.', true); return; }
        api('POST', '/pipelines/' + enc(select.value) + '/explain',
          { body: $('explain-body').value, headers: headers })
          .then(function (r) { showExplanation(result, r); }, showError);
      } },
        h('label', { 'for': 'explain-pipeline', text: 'Pipeline' }), select,
        h('label', { 'for': 'explain-body', text: 'Event body (raw, as the sender sent it)' }),
        h('textarea', { id: 'explain-body', name: 'body', placeholder: '{"id": "evt_123", ...}' }),
        h('label', { 'for': 'explain-headers', text: 'Headers (one "Name: value" a line)' }),
        h('textarea', { id: 'explain-headers', name: 'headers', 'class': 'short',
          placeholder: 'X-GitHub-Delivery: 72d3162e' }),
        h('button', { type: 'submit', id: 'explain-submit', 'class': 'primary', text: 'Explain' }));
      setView([id ? tabs(id, 'explain') : h('h2', { text: 'Explain an event' }),
        h('p', { 'class': 'muted', text: 'What would the pipeline do with this event, and why? ' +
          'Nothing is reserved, committed or delivered.' }), form, result]);
    });
  }

  function showExplanation(box, r) {
    while (box.firstChild) { box.removeChild(box.firstChild); }
    var s = r.state;
    append(box, h('div', { 'class': 'card' },
      h('p', {}, 'Decision: ', h('span', { id: 'explain-decision', 'class': 'decision ' + r.decision,
        text: r.decision }), r.answer ? ' (answered ' + r.answer.status + ')' : ''),
      h('p', { id: 'explain-why', text: r.why }),
      h('table', {},
        r.key ? [h('tr', {}, h('th', { text: 'key rule' }), h('td', { 'class': 'mono', text: r.key.rule })),
          r.key.digest ? h('tr', {}, h('th', { text: 'digest' }), h('td', { 'class': 'mono', text: r.key.digest })) : null,
          r.key.idempotency_key ? h('tr', {}, h('th', { text: 'Idempotency-Key' }),
            h('td', { 'class': 'mono', text: r.key.idempotency_key })) : null,
          r.key.note ? h('tr', {}, h('th', { text: 'note' }), h('td', { text: r.key.note })) : null] : null,
        s ? [h('tr', {}, h('th', { text: 'state' }), h('td', { id: 'explain-state', text: s.state })),
          s.committed_at ? h('tr', {}, h('th', { text: 'committed at' }), h('td', { text: fmtTime(s.committed_at) })) : null,
          s.expires_at !== undefined && s.state === 'committed' ? h('tr', {}, h('th', { text: 'expires at' }),
            h('td', { text: s.expires_at ? fmtTime(s.expires_at) : 'never' })) : null,
          s.reserved_at ? h('tr', {}, h('th', { text: 'reserved at' }), h('td', { text: fmtTime(s.reserved_at) })) : null,
          s.lease_until ? h('tr', {}, h('th', { text: 'lease until' }), h('td', { text: fmtTime(s.lease_until) })) : null] : null),
      h('h3', { text: 'Checks' }),
      h('table', {}, (r.checks || []).map(function (c) {
        return h('tr', {}, h('th', { text: c.step }), h('td', { text: c.result }),
          h('td', { 'class': 'mono', text: c.detail }));
      }))));
  }

  function showError(e) {
    if (e && e.message === 'unauthorized') { return; }
    flash((e && e.message) || String(e), true);
  }

  function blockedKeysPage(id) {
    return api('GET', '/pipelines/' + enc(id) + '/blocked-keys').then(function (data) {
      var list = data.blocked_keys;
      setView([tabs(id, 'blocked-keys'),
        h('p', { 'class': 'muted', id: 'blocked-note', text: (data.instance_local ?
          'Instance-local (sync delivery): the keys whose failures this instance saw. ' :
          'Kept in the store: the same on every instance. ') + 'Skip gives the failing event up ' +
          '(async: it becomes a dead letter) and lets its ordering key move on; Retry tries it ' +
          'again with its attempts reset.' }),
        list.length === 0 ? h('p', { id: 'no-blocked-keys', text: 'No blocked keys.' }) :
          h('table', { id: 'blocked-keys' },
            h('tr', {}, ['ordering key', 'blocked', 'since', 'attempts', 'last error', 'event', '']
              .map(function (k) { return h('th', { text: k }); })),
            list.map(function (b) {
              function act(what) {
                return function () {
                  api('POST', '/pipelines/' + enc(id) + '/blocked-keys/' + enc(b.ordering_key) +
                    '/' + what, {}).then(function (r) {
                    flash((what === 'skip' ? 'Skipped' : 'Retried') + ' the event blocking ' +
                      b.ordering_key.substring(0, 16) + '…: ' + r.note);
                    route();
                  }, showError);
                };
              }
              return h('tr', { 'data-ordering-key': b.ordering_key },
                h('td', { 'class': 'mono', text: b.ordering_key.substring(0, 16) + '…' }),
                h('td', { text: b.blocked ? 'blocked' : 'backing off' }),
                h('td', { text: fmtTime(b.since) }),
                h('td', { 'class': 'num', text: b.attempts }),
                h('td', { 'class': 'reason', text: b.last_error || '—' }),
                h('td', { 'class': 'mono', text: (b.outbox_id === null ? '' : '#' + b.outbox_id +
                  ' ') + b.event_digest.substring(0, 16) + '…' }),
                h('td', {},
                  h('button', { type: 'button', 'class': 'retry primary', onclick: act('retry'),
                    text: 'Retry' }), ' ',
                  h('button', { type: 'button', 'class': 'skip danger', onclick: act('skip'),
                    text: 'Skip' })));
            }))]);
    }, function (e) {
      if (e.code === 'no_poison_keys') {
        setView([tabs(id, 'blocked-keys'), h('p', { 'class': 'muted', text: e.message })]);
        return;
      }
      throw e;
    });
  }

  // ---- routing: #/pipelines, #/pipeline/ID[/dead-letters[/CURSOR]|/pending|/blocked-keys],
  //      #/explain[/ID] ----

  function route() {
    if (!token()) { showLogin(); return; }
    $('login-view').hidden = true;
    $('nav').hidden = false;
    view().hidden = false;
    var parts = (location.hash || '#/pipelines').substring(2).split('/').map(decodeURIComponent);
    var page;
    stopRefresh();
    if (parts[0] === 'pipeline' && parts[1]) {
      var id = parts[1];
      if (parts[2] === 'dead-letters') { page = function () { return deadLettersPage(id, parts[3]); }; }
      else if (parts[2] === 'pending') { page = function () { return pendingPage(id); }; }
      else if (parts[2] === 'blocked-keys') { page = function () { return blockedKeysPage(id); }; }
      else { page = function () { return decisionsPage(id); }; }
      page().then(function () {
        // Dead letters page by cursor, and the blocked-keys list reads up to 10,000 outbox
        // entries: neither refreshes on its own.
        if (parts[2] !== 'dead-letters' && parts[2] !== 'blocked-keys') {
          startRefresh(function () { page().catch(showError); });
        }
      }, showError);
      return;
    }
    if (parts[0] === 'explain') {
      explainPage(parts[1]).catch(showError);
      return;
    }
    pipelinesPage().then(function () {
      startRefresh(function () { pipelinesPage().catch(showError); });
    }, showError);
  }

  document.addEventListener('DOMContentLoaded', function () {
    $('login-form').addEventListener('submit', function (ev) {
      ev.preventDefault();
      var t = $('token').value.trim();
      if (!t) { return; }
      sessionStorage.setItem(TOKEN_KEY, t);
      $('token').value = '';
      api('GET', '/stats').then(function () { flash(''); route(); }, showError);
    });
    $('logout').addEventListener('click', function () {
      sessionStorage.removeItem(TOKEN_KEY);
      flash('');
      showLogin('Logged out.');
    });
    window.addEventListener('hashchange', function () { flash(''); route(); });
    route();
  });
}());

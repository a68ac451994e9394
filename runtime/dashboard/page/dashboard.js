// The treefarm dashboard (docs/dashboard.md): live from /api/events, or, in a one-file
// report, from window.TREEFARM_REPORT. Plain script, Chart.js 3 as the only library.
(function () {
  'use strict';
  const palette = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#bcbd22', '#7f7f7f'];
  const color = (k) => palette[k % palette.length];
  const $ = (id) => document.getElementById(id);
  const num = (x, digits) => (typeof x === 'number' && isFinite(x) ? x.toFixed(digits) : '-');
  let throughputChart = null;
  let streamChart = null;

  function cell(row, text, cls) {
    const td = document.createElement('td');
    td.textContent = text;
    if (cls) td.className = cls;
    row.appendChild(td);
    return td;
  }

  function fillTable(id, rows, fill) {
    const body = $(id).querySelector('tbody');
    body.replaceChildren();
    rows.forEach((r) => {
      const tr = document.createElement('tr');
      fill(tr, r);
      body.appendChild(tr);
    });
  }

  // Parents before children, each with its depth in the tree.
  function treeOrder(nodes) {
    const children = new Map();
    const names = new Set(nodes.map((n) => n.name));
    const roots = [];
    nodes.forEach((n) => {
      const p = n.parent || '';
      if (!p || !names.has(p)) roots.push(n);
      else {
        if (!children.has(p)) children.set(p, []);
        children.get(p).push(n);
      }
    });
    const out = [];
    const visit = (n, depth) => {
      out.push([n, depth]);
      (children.get(n.name) || []).forEach((c) => visit(c, depth + 1));
    };
    roots.forEach((r) => visit(r, 0));
    return out;
  }

  function renderTree(view) {
    const running = view.running && typeof view.running === 'object';
    fillTable('tree', treeOrder(view.tree || []), (tr, [n, depth]) => {
      tr.dataset.node = n.name;
      cell(tr, '  '.repeat(depth) + n.name, 'name');
      const state = n.state || (running ? 'joining' : 'idle');
      const badge = cell(tr, '');
      const b = document.createElement('span');
      b.className = 'badge state-' + state;
      b.textContent = state;
      badge.appendChild(b);
      cell(tr, (n.busy_cores !== undefined ? n.busy_cores : '-') + ' / ' + (n.cores !== undefined ? n.cores : '-'));
      cell(tr, n.queued !== undefined ? String(n.queued) : '-');
      cell(tr, n.done !== undefined ? String(n.done) : '-');
      cell(tr, num(n.rate, 2));
      cell(tr, num(n.planned_rate, 2));
      const sat = cell(tr, '');
      (n.saturated || []).forEach((s) => {
        const m = document.createElement('span');
        m.className = 'saturated';
        m.textContent = s;
        sat.appendChild(m);
      });
    });
  }

  function renderApps(view) {
    const apps = view.running && view.running.apps ? view.running.apps : [];
    fillTable('apps', apps, (tr, a) => {
      tr.dataset.app = a.name;
      cell(tr, a.name);
      cell(tr, a.done + ' / ' + a.tasks);
      cell(tr, num(a.throughput, 3));
      cell(tr, num(a.predicted, 3));
      cell(tr, typeof a.predicted === 'number' && a.predicted > 0 ? num(a.throughput / a.predicted, 3) : '-');
    });
  }

  function renderSummary(view) {
    const r = view.report;
    let text;
    if (r) {
      text = 'Run of ' + r.experiment + (r.started_utc ? ', started ' + r.started_utc : '') + ', policy ' + r.policy +
        ', ' + num(r.duration, 2) + ' s; fair throughput ' + num(r.fair_throughput, 3) + ' tasks/s' +
        (typeof r.predicted_fair_throughput === 'number' ? ' (predicted ' + num(r.predicted_fair_throughput, 3) + ')' : '') +
        '; ' + (r.ok ? 'every task completed once with the right result' : 'NOT OK: ' + r.lost + ' lost') +
        '; task stream: ' + r.tasks_shown + ' of ' + r.tasks_recorded + ' tasks.';
      $('title').textContent = 'report: ' + r.experiment;
    } else if (view.running && typeof view.running === 'object') {
      const run = view.running;
      text = (run.name ? 'Experiment ' + run.id + ' (' + run.name + ')' : 'Run') + ': ' + num(run.elapsed, 1) + ' s since dispatching started' +
        (run.policy ? ', policy ' + run.policy : '') + '.';
      $('title').textContent = view.serving ? 'served by ' + view.serving : '';
    } else {
      text = view.serving ? 'No experiment running.' : 'No run yet.';
      $('title').textContent = view.serving ? 'served by ' + view.serving : '';
    }
    $('summary').textContent = text;
  }

  function renderThroughput(view) {
    const h = view.history || { t: [], apps: {} };
    const apps = view.running && view.running.apps ? view.running.apps : [];
    const tmax = h.t.length ? h.t[h.t.length - 1] : 1;
    const datasets = [];
    apps.forEach((a, k) => {
      const ys = h.apps[a.name] || [];
      datasets.push({
        label: a.name + ' measured', data: h.t.map((x, i) => ({ x: x, y: ys[i] })),
        borderColor: color(k), backgroundColor: color(k), pointRadius: 0, borderWidth: 2, tension: 0
      });
      if (typeof a.predicted === 'number')
        datasets.push({
          label: a.name + ' predicted', data: [{ x: 0, y: a.predicted }, { x: tmax, y: a.predicted }],
          borderColor: color(k), backgroundColor: color(k), borderDash: [6, 4], pointRadius: 0, borderWidth: 2
        });
    });
    if (!throughputChart) {
      throughputChart = new Chart($('throughput'), {
        type: 'line', data: { datasets: datasets },
        options: {
          animation: false, maintainAspectRatio: false, parsing: true,
          scales: {
            x: { type: 'linear', title: { display: true, text: 'seconds since the start' } },
            y: { beginAtZero: true, title: { display: true, text: 'tasks/s' } }
          }
        }
      });
    } else {
      throughputChart.data.datasets = datasets;
      throughputChart.update('none');
    }
  }

  // One row per core of each node: a task goes to the first row of its node that is free
  // at its start (the nodes report no core number: rows are slots, not core ids).
  function renderStream(view) {
    const s = view.tasks || { nodes: [], apps: [], rows: [] };
    const rows = s.rows.slice().sort((a, b) => a[2] - b[2]);
    const lanesOf = s.nodes.map(() => []);
    const placed = [];
    rows.forEach(([node, app, start, end]) => {
      const lanes = lanesOf[node];
      if (!lanes) return;
      let lane = lanes.findIndex((free) => free <= start + 1e-6);
      if (lane < 0) { lane = lanes.length; lanes.push(end); } else lanes[lane] = end;
      placed.push([node, lane, app, start, end]);
    });
    const labels = [];
    const labelOf = s.nodes.map(() => []);
    const order = treeOrder((view.tree || []).map((n) => ({ name: n.name, parent: n.parent })));
    const index = new Map(s.nodes.map((n, i) => [n, i]));
    order.forEach(([n]) => {
      const i = index.get(n.name);
      if (i === undefined) return;
      lanesOf[i].forEach((_, lane) => {
        const label = n.name + ' #' + lane;
        labelOf[i][lane] = label;
        labels.push(label);
      });
    });
    const datasets = s.apps.map((name, k) => ({
      label: name, data: [], backgroundColor: color(k), borderWidth: 0, grouped: false,
      barPercentage: 0.9, categoryPercentage: 1.0
    }));
    placed.forEach(([node, lane, app, start, end]) => {
      if (datasets[app] && labelOf[node][lane]) datasets[app].data.push({ x: [start, Math.max(end, start + 1e-4)], y: labelOf[node][lane] });
    });
    $('stream-box').style.height = Math.max(200, 60 + 16 * labels.length) + 'px';
    if (!streamChart) {
      streamChart = new Chart($('stream'), {
        type: 'bar', data: { labels: labels, datasets: datasets },
        options: {
          indexAxis: 'y', animation: false, maintainAspectRatio: false,
          scales: { x: { type: 'linear', title: { display: true, text: 'seconds since the start' } }, y: { type: 'category' } },
          plugins: { tooltip: { callbacks: { label: (c) => c.dataset.label + ': ' + num(c.raw.x[0], 3) + ' - ' + num(c.raw.x[1], 3) + ' s' } } }
        }
      });
    } else {
      streamChart.data.labels = labels;
      streamChart.data.datasets = datasets;
      streamChart.update('none');
    }
  }

  function renderServe(view) {
    $('serve-section').hidden = !view.serving;
    if (!view.serving) return;
    const waiting = view.waiting || [];
    $('waiting').textContent = waiting.length ? 'Workers connected, waiting for the next experiment: ' + waiting.join(', ') : '';
    fillTable('queue', view.queue || [], (tr, q) => {
      cell(tr, String(q.position)); cell(tr, String(q.id)); cell(tr, q.name); cell(tr, q.policy || '-');
      cell(tr, num(q.waiting_seconds, 0));
    });
    fillTable('finished', (view.finished || []).slice().reverse(), (tr, f) => {
      cell(tr, String(f.id)); cell(tr, f.name);
      cell(tr, f.cancelled ? f.exit_code + ' (cancelled)' : String(f.exit_code));
      cell(tr, (f.apps || []).map((a) => a.name + ' ' + num(a.throughput, 2)).join(', '));
      const td = cell(tr, f.report ? '' : '-');
      if (f.report) {
        const a = document.createElement('a');
        a.href = f.report;
        a.textContent = 'report';
        td.appendChild(a);
      }
    });
  }

  function render(view) {
    renderSummary(view);
    renderApps(view);
    renderTree(view);
    renderThroughput(view);
    renderStream(view);
    renderServe(view);
    document.body.dataset.rendered = String(Number(document.body.dataset.rendered || 0) + 1);
  }

  function setConnection(text, ok) {
    const c = $('connection');
    c.textContent = text;
    c.className = 'badge ' + (ok ? 'state-busy' : 'state-lost');
  }

  if (window.TREEFARM_REPORT) {
    render(window.TREEFARM_REPORT);
    setConnection('report', true);
    return;
  }
  // The state now, then every change from the event stream (opened a second later: the
  // master publishes about once a second, and a page that has loaded its first state is
  // complete for a tool that waits for the network to be idle, such as a headless browser).
  fetch('api/status').then((r) => r.json()).then(render).catch(() => setConnection('no answer', false));
  setTimeout(() => {
    const events = new EventSource('api/events');
    events.onopen = () => setConnection('live', true);
    events.onmessage = (e) => render(JSON.parse(e.data));
    events.onerror = () => setConnection('reconnecting', false);
  }, 1000);
})();

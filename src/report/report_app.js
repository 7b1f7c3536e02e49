// strata report: draws the page from the tables embedded in <script id="strata-data"> (written by
// src/report/report.cc: the analyses' tables as `strata analyze --format json` renders them, the
// device's peaks, the overview and the flame graph's frames). Nothing here computes a figure: every
// chart plots one table's columns, one data point per row. window.strataReport.charts lists the
// charts with the table each one plots (the browser test reads it).
(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('strata-data').textContent);
  var root = document.getElementById('report');
  var registry = { charts: [], errors: [] };
  window.strataReport = registry;

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === 'text') node.textContent = attrs[k];
      else if (k === 'className') node.className = attrs[k];
      else node.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) { if (c) node.appendChild(c); });
    return node;
  }

  // Every string in the page comes from a trace or a file name, so it is text everywhere: DOM text
  // (textContent) in tables, notes and headings; canvas text in ECharts' titles, axes and legends;
  // and, in tooltips, the one place ECharts takes markup (a formatter's return value is HTML), it
  // passes through escapeHtml. Every chart has a formatter built with tooltipLines (chart() gives the
  // ones without their own the axis or item formatter below), so no tooltip ever holds markup from
  // the data; the page's Content-Security-Policy would also refuse to run any handler that did.
  var htmlEntities = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
  function escapeHtml(value) {
    return String(value === null || value === undefined ? '' : value).replace(/[&<>"']/g, function (c) {
      return htmlEntities[c];
    });
  }
  // A tooltip's HTML: each line escaped; `markers` (ECharts' own colour dots, no data in them) before them.
  function tooltipLines(lines, markers) {
    return lines.map(function (line, i) { return ((markers && markers[i]) || '') + escapeHtml(line); }).join('<br>');
  }
  function seriesLines(points) { return points.map(function (x) { return x.seriesName + ': ' + x.value; }); }
  function axisTooltip(points) {
    return tooltipLines([points[0].axisValueLabel].concat(seriesLines(points)),
      [''].concat(points.map(function (x) { return x.marker; })));
  }
  function itemTooltip(q) { return tooltipLines([q.seriesName, q.name, String(q.value)]); }

  function analysis(name) { return data.analyses[name] || { missing: 'not run', tables: {} }; }
  function table(analysisName, tableName) {
    var a = analysis(analysisName);
    return a.tables ? a.tables[tableName || analysisName] || null : null;
  }
  function column(t, name) {
    var i = t.columns.indexOf(name);
    return t.rows.map(function (r) { return i < 0 ? null : r[i]; });
  }
  function hasValues(values) { return values.some(function (v) { return v !== null && v !== ''; }); }

  function section(id, title) {
    var s = el('section', { id: id }, [el('h2', { text: title })]);
    s.dataset.title = title;
    root.appendChild(s);
    nav.appendChild(el('a', { href: '#' + id, text: title }));
    return s;
  }
  function say(parent, text, cls) { parent.appendChild(el('p', { className: cls || 'note', text: text })); }
  // Analyses without data are not drawn: each is listed in the one line at the end of the page, its
  // own line (what to record) on hover and in the details below that line.
  var noData = [];
  function lacking(sectionTitle, analysisName, reason) {
    noData.push({ section: sectionTitle, analysis: analysisName, reason: reason });
  }
  // True (and listed at the end) when the analysis lacked input.
  function missing(parent, analysisName) {
    var a = analysis(analysisName);
    if (!a.missing) return false;
    lacking(parent.dataset.title, analysisName, a.missing);
    return true;
  }
  // A section, or null when none of its analyses has data (each then listed at the end).
  function sectionWithData(id, title, analysisNames) {
    var withData = analysisNames.filter(function (n) { return !analysis(n).missing; });
    if (!withData.length) {
      analysisNames.forEach(function (n) { lacking(title, n, analysis(n).missing); });
      return null;
    }
    return section(id, title);
  }

  // Labels of at most `max` characters that keep what tells the names apart: a long name keeps its
  // start, its end, and a window at each place where it first differs from its neighbours in sorted
  // order (the most alike names); labels still alike get their occurrence number. The full name is
  // in the chart's tooltip.
  function commonPrefix(a, b) {
    var n = Math.min(a.length, b.length), i = 0;
    while (i < n && a[i] === b[i]) ++i;
    return i;
  }
  function shortLabel(chars, differsAt, max) {
    if (chars.length <= max) return chars.join('');
    var head = Math.max(3, Math.floor(max / 4)), tail = Math.max(3, Math.floor(max / 5));
    var at = differsAt.filter(function (d) { return d >= head && d < chars.length - tail; })
      .sort(function (a, b) { return a - b; });
    at = at.filter(function (d, i) { return i === 0 || d - at[i - 1] > 4; }).slice(0, 2);
    if (!at.length) return chars.slice(0, max - 1 - tail).join('') + '…' + chars.slice(-tail).join('');
    if (at.length === 1 && at[0] < max - 1 - tail - 3)  // the difference shows in a longer start
      return chars.slice(0, max - 1 - tail).join('') + '…' + chars.slice(-tail).join('');
    var width = Math.floor((max - head - tail - at.length - 1) / at.length), out = chars.slice(0, head).join(''), end = head;
    at.forEach(function (d) {
      var start = Math.max(end, d - 2), stop = Math.min(start + width, chars.length - tail);
      out += (start > end ? '…' : '') + chars.slice(start, stop).join('');
      end = stop;
    });
    return out + (end < chars.length - tail ? '…' : '') + chars.slice(-tail).join('');
  }
  function distinctLabels(names, max) {
    var chars = names.map(function (n) { return Array.from(n === null || n === undefined ? '' : String(n)); });
    var keys = chars.map(function (c) { return c.join(''); });
    var order = keys.map(function (_, i) { return i; }).sort(function (a, b) {
      return keys[a] < keys[b] ? -1 : keys[a] > keys[b] ? 1 : a - b;
    });
    var differs = keys.map(function () { return []; });
    for (var k = 1; k < order.length; ++k) {
      var c = commonPrefix(chars[order[k - 1]], chars[order[k]]);
      differs[order[k]].push(c);
      differs[order[k - 1]].push(c);
    }
    var labels = chars.map(function (c, i) { return shortLabel(c, differs[i], max); });
    var used = {};
    labels.forEach(function (l) { used[l] = (used[l] || 0) + 1; });
    var seen = {};
    return labels.map(function (l) {
      if (used[l] === 1) return l;
      seen[l] = (seen[l] || 0) + 1;
      var label, n = seen[l];
      do {
        var suffix = ' #' + n;
        label = Array.from(l).slice(0, Math.max(1, max - suffix.length)).join('') + suffix;
        n += used[l];
      } while (used[label]);
      used[label] = 1;
      return label;
    });
  }
  registry.distinctLabels = distinctLabels;
  var LABEL_CHARS = 36;  // at 11-12 px, within the 250 px left of a horizontal bar chart
  function notes(parent, t) { (t.notes || []).forEach(function (n) { say(parent, n); }); }

  function htmlTable(parent, t, shown, open) {
    shown = shown || 200;
    var head = el('tr', {}, t.columns.map(function (c) { return el('th', { text: c }); }));
    var body = t.rows.slice(0, shown).map(function (r) {
      return el('tr', {}, r.map(function (v) {
        return el('td', { className: typeof v === 'number' ? 'num' : '', text: v === null ? '' : String(v) });
      }));
    });
    var label = t.title + ' (' + t.rows.length + ' rows' + (t.rows.length > shown ? ', first ' + shown + ' shown' : '') + ')';
    parent.appendChild(el('details', open ? { open: '' } : {}, [el('summary', { text: label }),
      el('div', { className: 'wrap' }, [el('table', {}, [el('thead', {}, [head]), el('tbody', {}, body)])])]));
  }

  // One chart: `table` is the table whose rows are the points of the series with id 'data'.
  function chart(parent, id, analysisName, tableName, option, tall) {
    var div = el('div', { id: 'chart-' + id, className: 'chart' + (tall ? ' tall' : '') });
    div.dataset.analysis = analysisName;
    div.dataset.table = tableName;
    parent.appendChild(div);
    option.animation = false;
    // Drawn in one pass: progressive rendering (ECharts' default above a few thousand items) would
    // leave a long series half drawn for a while (and in a screenshot).
    (option.series || []).forEach(function (series) { series.progressive = 0; });
    option.tooltip = option.tooltip || { trigger: 'axis' };
    if (!option.tooltip.formatter)
      option.tooltip.formatter = option.tooltip.trigger === 'item' ? itemTooltip : axisTooltip;
    var instance = echarts.init(div, null, { renderer: 'canvas' });
    instance.setOption(option);
    registry.charts.push({ id: id, analysis: analysisName, table: tableName, element: div.id });
    return instance;
  }

  function categoryZoom(count) { return count > 60 ? [{ type: 'inside' }, { type: 'slider', height: 18 }] : []; }
  // Horizontal bars: the first 30 categories shown, the rest reached with the slider on the right.
  function rowZoom(count) {
    return count > 30 ? [{ type: 'slider', yAxisIndex: 0, right: 4, width: 14, start: 0, end: 3000 / count },
      { type: 'inside', yAxisIndex: 0, start: 0, end: 3000 / count }] : [];
  }

  // ---- page ----
  var header = el('header', {}, [el('h1', { text: data.title })]);
  root.appendChild(header);
  var nav = el('nav');
  root.appendChild(nav);

  // ---- the answer first: `strata summary`'s JSON (docs/summary.md), as that command writes it ----
  var PHASES = ['data', 'forward', 'backward', 'optimizer', 'eval', 'communication', 'other'];
  function fixed(v, digits) { return typeof v === 'number' ? v.toFixed(digits) : String(v); }

  function summary() {
    var sm = data.summary;
    var s = section('summary', 'Summary');
    var b = sm.bottleneck, w = sm.workload;
    s.appendChild(el('p', { className: 'verdict', text: 'Bottleneck: ' + b.kind + ' (confidence ' + b.confidence + ')' }));
    say(s, b.evidence, 'evidence');
    var roles = {};
    sm.processes.forEach(function (p) { (roles[p.role] = roles[p.role] || []).push(p.pid); });
    var ran = w.kind + ', ' + (w.steps ? w.steps + ' steps (' + w.step_source + '), step ' + fixed(w.step_ms.median, 2) +
      ' ms median, ' + fixed(w.step_ms.p90, 2) + ' ms p90' : 'no steps found (whole run analysed)') + '; processes: ' +
      Object.keys(roles).map(function (r) { return roles[r].length + ' ' + r + ' (pid ' + roles[r].slice(0, 6).join(', ') +
        (roles[r].length > 6 ? ', ...' : '') + ')'; }).join('; ');
    say(s, ran, 'what-ran');
    if (sm.findings.length) {
      s.appendChild(el('h3', { text: 'Findings' }));
      s.appendChild(el('ol', { className: 'findings' }, sm.findings.map(function (f) {
        return el('li', {}, [el('span', { className: 'severity ' + f.severity, text: f.severity }),
          el('strong', { text: ' ' + f.rule + ': ' }), el('span', { text: f.message }),
          el('div', { className: 'note', text: f.evidence })]);
      })));
    } else {
      say(s, 'No finding: no rule fired (docs/summary.md lists them and their thresholds).');
    }
    var parts = sm.breakdown.filter(function (p) { return p.ms > 0; });
    say(s, 'Step time: ' + (parts.map(function (p) { return p.phase + ' ' + fixed(p.ms, 1) + ' ms (' + fixed(p.pct, 1) + '%)'; })
      .join(', ') || 'no time in steps') + (sm.gpu ? '; device within the steps: busy ' + fixed(sm.gpu.busy_pct, 1) +
      '% (kernels ' + fixed(sm.gpu.kernel_pct, 1) + '%, copies ' + fixed(sm.gpu.memcpy_pct, 1) + '%, memsets ' +
      fixed(sm.gpu.memset_pct, 1) + '%), idle ' + fixed(sm.gpu.idle_pct, 1) + '%' : ''));
    stepBreakdown(s, sm);
    if (sm.top_ops.length) {
      var memory = sm.top_ops.some(function (o) { return o.alloc_mb !== undefined; });
      var columns = ['op', 'self_ms', 'self_pct', 'count'].concat(memory ? ['alloc_mb'] : []);
      htmlTable(s, { title: 'Top ops by self time', columns: columns, rows: sm.top_ops.map(function (o) {
        return [o.name, o.self_ms, o.self_pct, o.count].concat(memory ? [o.alloc_mb === undefined ? null : o.alloc_mb] : []);
      }) }, 100, true);
    }
    stepTimeline(s);
  }

  // Each step's phases stacked, one bar per step (the JSON's "steps").
  function stepBreakdown(s, sm) {
    if (!sm.steps.length) return;
    var steps = sm.steps;
    chart(s, 'step-breakdown', 'summary', 'steps', {
      title: { text: 'Where each step\'s time goes (ms)', textStyle: { fontSize: 13 } },
      legend: { top: 26 }, grid: { top: 60 },
      xAxis: { type: 'category', name: 'step', data: steps.map(function (st) { return String(st.index) + (st.eval ? ' (eval)' : ''); }) },
      yAxis: { type: 'value', name: 'ms' }, dataZoom: categoryZoom(steps.length),
      series: PHASES.map(function (phase, i) {
        return { id: i === 0 ? 'data' : phase, name: phase, type: 'bar', stack: 'step',
          data: steps.map(function (st) { return st[phase]; }) };
      })
    });
  }

  // One step of the main process, the one of median duration: its spans by thread and depth.
  function stepTimeline(s) {
    var t = data.step_timeline;
    if (!t || t.missing) { if (t) say(s, 'Timeline: ' + t.missing); return; }
    var labels = distinctLabels(t.names, 60);
    chart(s, 'step-timeline', 'step_timeline', 'spans', {
      title: { text: 'Step ' + t.step + ' (median duration, ' + fixed(t.ms, 3) + ' ms): its spans by thread and depth',
        textStyle: { fontSize: 13 } },
      grid: { top: 40, left: 150 }, tooltip: { trigger: 'item', formatter: function (q) {
        return tooltipLines([t.names[q.value[3]], fixed(q.value[0], 3) + ' to ' + fixed(q.value[1], 3) + ' ms (' +
          fixed(q.value[1] - q.value[0], 3) + ' ms)', t.lanes[q.value[2]]]);
      } },
      xAxis: { type: 'value', name: 'ms', min: 0, max: t.ms },
      yAxis: { type: 'category', inverse: true, data: t.lanes },
      dataZoom: [{ type: 'inside' }, { type: 'slider', height: 18 }],
      series: [{ id: 'data', type: 'custom', encode: { x: [0, 1], y: 2 }, data: t.spans,
        renderItem: function (params, api) {
          var a = api.coord([api.value(0), api.value(2)]), b = api.coord([api.value(1), api.value(2)]);
          var h = api.size([0, 1])[1] * 0.7;
          var shape = echarts.graphic.clipRectByRect({ x: a[0], y: a[1] - h / 2, width: Math.max(b[0] - a[0], 1), height: h },
            { x: params.coordSys.x, y: params.coordSys.y, width: params.coordSys.width, height: params.coordSys.height });
          if (!shape) return null;
          var children = [{ type: 'rect', shape: shape, style: { fill: params.dataIndex % 2 ? '#54aeff' : '#0969da' } }];
          var chars = Math.floor((shape.width - 6) / 6.5), label = labels[api.value(3)];
          if (chars >= 4) children.push({ type: 'text', style: { text: label.length > chars ? label.slice(0, chars - 1) + '…' : label,
            x: shape.x + 3, y: shape.y + shape.height / 2, verticalAlign: 'middle', fill: '#fff', font: '11px sans-serif' } });
          return { type: 'group', children: children };
        } }]
    }, t.lanes.length > 12);
    if (t.left_out) say(s, t.left_out + ' deeper spans of the step are not drawn (the timeline keeps the shallowest ' +
      t.spans.length + ').');
  }

  function overview() {
    var o = data.overview;
    var s = section('overview', 'Overview');
    var rows = [
      ['inputs', o.inputs.join(', ')],
      ['command', o.command || '(not recorded by strata record)'],
      ['wall time', o.wall_ms.toFixed(3) + ' ms (' + o.wall_source + ')'],
      ['spans', String(o.spans)],
      ['levels', o.levels.map(function (l) { return l[0] + ': ' + l[1]; }).join(', ') || 'none'],
      ['CPU samples', String(o.samples)],
      ['dropped', o.drops.length ? o.drops.map(function (d) { return d[0] + ': ' + d[1]; }).join(', ') : 'nothing']
    ];
    s.appendChild(el('table', { className: 'kv' }, rows.map(function (r) {
      return el('tr', {}, [el('td', { text: r[0] }), el('td', { text: r[1] })]);
    })));
    var procs = { title: 'Processes', columns: ['pid', 'rank', 'host', 'level', 'spans', 'command'],
      rows: o.processes.map(function (p) { return [p.pid, p.rank, p.host, p.level, p.spans, p.command]; }) };
    htmlTable(s, procs, 100);
    o.warnings.forEach(function (w) { say(s, 'warning: ' + w, 'missing'); });
  }

  function models() {
    var s = sectionWithData('model', 'Model and batch size', ['model_table']);
    if (!s) return;
    var t = table('model_table');
    var batches = column(t, 'batch');
    if (new Set(batches).size > 1) {
      var optimal = column(t, 'optimal');
      chart(s, 'model', 'model_table', 'model_table', {
        title: { text: 'Latency and throughput by batch size (optimal marked)', textStyle: { fontSize: 13 } },
        legend: { top: 26 }, grid: { top: 60 },
        xAxis: { type: 'category', name: 'batch', data: batches.map(String) },
        yAxis: [{ type: 'value', name: 'latency ms' }, { type: 'value', name: 'inputs/s' }],
        series: [
          { id: 'data', name: 'latency_ms', type: 'bar', data: column(t, 'latency_ms').map(function (v, i) {
            return { value: v, itemStyle: optimal[i] === 'yes' ? { color: '#2da44e' } : undefined };
          }) },
          { id: 'throughput', name: 'throughput_per_s', type: 'line', yAxisIndex: 1, data: column(t, 'throughput_per_s') }
        ]
      });
    } else {
      say(s, 'one batch size in the trace (' + batches.join(', ') + '): record the model at several batch sizes ' +
        '(one model span per evaluation, with its batch) to get the optimal batch size chart');
    }
    notes(s, t);
    htmlTable(s, t);
  }

  function layers() {
    var s = sectionWithData('layers', 'Layers', ['layer_sequence', 'layer_type_aggregate', 'layer_table']);
    if (!s) return;
    if (!missing(s, 'layer_sequence')) {
      var t = table('layer_sequence');
      var memory = column(t, 'alloc_mb');
      var series = [{ id: 'data', name: 'latency_ms', type: 'bar', data: column(t, 'latency_ms') }];
      var yAxes = [{ type: 'value', name: 'latency ms' }];
      if (hasValues(memory)) {
        series.push({ id: 'memory', name: 'alloc_mb', type: 'bar', yAxisIndex: 1, data: memory });
        yAxes.push({ type: 'value', name: 'allocated MB' });
      }
      var types = column(t, 'type');
      chart(s, 'layer-sequence', 'layer_sequence', 'layer_sequence', {
        title: { text: 'Layer latency and memory in execution order', textStyle: { fontSize: 13 } },
        legend: { top: 26 }, grid: { top: 60, bottom: 70 },
        tooltip: { trigger: 'axis', formatter: function (p) {
          return tooltipLines(seriesLines(p).concat([types[p[0].dataIndex]]));
        } },
        xAxis: { type: 'category', name: 'layer', data: column(t, 'index').map(String) },
        yAxis: yAxes, dataZoom: categoryZoom(t.rows.length), series: series
      });
      notes(s, t);
    }
    if (!missing(s, 'layer_type_aggregate')) {
      var a = table('layer_type_aggregate');
      var mem = column(a, 'alloc_mb');
      var ser = [{ id: 'data', name: 'latency_ms', type: 'bar', data: column(a, 'latency_ms') }];
      if (hasValues(mem)) ser.push({ id: 'memory', name: 'alloc_mb', type: 'bar', xAxisIndex: 1, data: mem });
      var xAxes = [{ type: 'value', name: 'ms' }];
      if (hasValues(mem)) xAxes.push({ type: 'value', name: 'MB', position: 'top' });
      var typeNames = column(a, 'type');
      chart(s, 'layer-types', 'layer_type_aggregate', 'layer_type_aggregate', {
        title: { text: 'Layer latency and memory by type', textStyle: { fontSize: 13 } },
        legend: { top: 26 }, grid: { top: 70, left: 260 },
        tooltip: { trigger: 'axis', formatter: function (p) {
          return tooltipLines([typeNames[p[0].dataIndex]].concat(seriesLines(p)));
        } },
        yAxis: { type: 'category', inverse: true, data: distinctLabels(typeNames, LABEL_CHARS), axisLabel: { width: 250 } },
        xAxis: xAxes, series: ser, dataZoom: rowZoom(a.rows.length)
      }, a.rows.length > 15);
      notes(s, a);
      htmlTable(s, a);
    }
    if (!missing(s, 'layer_table')) htmlTable(s, table('layer_table'));
  }

  // The run against its model's lower bounds (`strata report --model`: the tables of `strata
  // lowerbound MODEL --trace RUN`): the measured model time next to the sequential and parallel
  // bound, and the layers furthest above their own bound (framework op time = bound + gap).
  function lowerBound() {
    var s = sectionWithData('lower-bound', 'Lower bound', ['framework_vs_bound']);
    if (!s) return;
    var t = table('framework_vs_bound');
    chart(s, 'lower-bound', 'framework_vs_bound', 'framework_vs_bound', {
      title: { text: t.title, textStyle: { fontSize: 13 } }, legend: { top: 26 }, grid: { top: 60 },
      xAxis: { type: 'category', name: 'model', data: column(t, 'model').map(String) },
      yAxis: { type: 'value', name: 'ms' },
      series: [
        { id: 'data', name: 'measured_ms', type: 'bar', data: column(t, 'measured_ms') },
        { id: 'sequential', name: 'sequential_bound_ms', type: 'bar', data: column(t, 'sequential_bound_ms') },
        { id: 'parallel', name: 'parallel_bound_ms', type: 'bar', data: column(t, 'parallel_bound_ms') }
      ]
    });
    notes(s, t);
    htmlTable(s, t);
    var g = table('framework_vs_bound', 'layer_gaps');
    if (g && g.rows.length) {
      var measured = column(g, 'measured_us'), ops = column(g, 'framework_op'), types = column(g, 'type');
      var layerNames = column(g, 'layer');
      chart(s, 'layer-gaps', 'framework_vs_bound', 'layer_gaps', {
        title: { text: g.title + ' (framework op time = bound + gap)', textStyle: { fontSize: 13 } },
        legend: { top: 26 }, grid: { top: 60, left: 260 },
        tooltip: { trigger: 'axis', formatter: function (p) {
          var i = p[0].dataIndex;
          return tooltipLines([layerNames[i] + ' (' + types[i] + ', ' + ops[i] + ')', 'measured_us: ' + measured[i]]
            .concat(seriesLines(p)));
        } },
        yAxis: { type: 'category', inverse: true, data: distinctLabels(column(g, 'layer'), LABEL_CHARS),
          axisLabel: { width: 250 } },
        xAxis: { type: 'value', name: 'us' }, dataZoom: rowZoom(g.rows.length),
        series: [
          { id: 'bound', name: 'bound_us', type: 'bar', stack: 'layer', data: column(g, 'bound_us') },
          { id: 'data', name: 'gap_us', type: 'bar', stack: 'layer', data: column(g, 'gap_us') }
        ]
      }, g.rows.length > 15);
      say(s, 'A negative gap (the framework ran the layer faster than its benchmark) is drawn left of zero.');
    } else {
      say(s, 'no layer has both a framework op and a measurement: no per-layer gaps');
    }
    ['layer_gaps', 'algorithm_selection', 'extra_framework_ops'].forEach(function (name) {
      var x = table('framework_vs_bound', name);
      if (x) { notes(s, x); htmlTable(s, x); }
    });
  }

  function deviceSplit() {
    var s = sectionWithData('device-split', 'GPU vs non-GPU time per layer', ['layer_device_split']);
    if (!s) return;
    var t = table('layer_device_split');
    var names = column(t, 'layer');
    chart(s, 'device-split', 'layer_device_split', 'layer_device_split', {
      title: { text: 'Kernel (device) and non-kernel time of each layer', textStyle: { fontSize: 13 } },
      legend: { top: 26 }, grid: { top: 60, bottom: 70 },
      tooltip: { trigger: 'axis', formatter: function (p) {
        return tooltipLines([names[p[0].dataIndex]].concat(seriesLines(p)));
      } },
      xAxis: { type: 'category', name: 'layer', data: column(t, 'layer_index').map(String) },
      yAxis: { type: 'value', name: 'ms' }, dataZoom: categoryZoom(t.rows.length),
      series: [
        { id: 'data', name: 'kernel_ms', type: 'bar', stack: 'time', data: column(t, 'kernel_ms') },
        { id: 'non_kernel', name: 'non_kernel_ms', type: 'bar', stack: 'time', data: column(t, 'non_kernel_ms') }
      ]
    });
    notes(s, t);
    htmlTable(s, t);
  }

  function kernels() {
    var s = sectionWithData('kernels', 'Kernels', ['kernels_by_name']);
    if (!s) return;
    var t = table('kernels_by_name');
    var kernelNames = column(t, 'kernel');
    chart(s, 'kernels', 'kernels_by_name', 'kernels_by_name', {
      title: { text: 'Kernel time by name', textStyle: { fontSize: 13 } }, grid: { top: 40, left: 260 },
      tooltip: { trigger: 'axis', formatter: function (p) {
        return tooltipLines([kernelNames[p[0].dataIndex]].concat(seriesLines(p)));
      } },
      yAxis: { type: 'category', inverse: true, data: distinctLabels(kernelNames, LABEL_CHARS), axisLabel: { width: 250 } },
      xAxis: { type: 'value', name: 'ms' }, dataZoom: rowZoom(t.rows.length),
      series: [{ id: 'data', name: 'latency_ms', type: 'bar', data: column(t, 'latency_ms') }]
    }, t.rows.length > 15);
    notes(s, t);
    htmlTable(s, t);
  }

  // Log-log roofline: the table's points and the device's two ceilings (memory slope, compute roof).
  function roofline(s, analysisName, label, labelColumn) {
    if (missing(s, analysisName)) return;
    s.appendChild(el('h3', { text: label }));
    var t = table(analysisName);
    var x = column(t, 'flop_per_byte'), y = column(t, 'gflop_per_s'), names = column(t, labelColumn);
    var series = [{ id: 'data', name: label, type: 'scatter', symbolSize: 8,
      data: x.map(function (v, i) { return [v, y[i]]; }) }];
    var p = data.peaks;
    if (p && p.gflops) {
      var xs = x.concat([p.gflops / p.gbps]).filter(function (v) { return v > 0; });
      var lo = Math.min.apply(null, xs) / 4, hi = Math.max.apply(null, xs) * 4, ridge = p.gflops / p.gbps;
      series.push({ id: 'roof', name: 'ceilings', type: 'line', symbol: 'none', lineStyle: { color: '#cf222e' },
        data: [[lo, lo * p.gbps], [ridge, p.gflops], [hi, p.gflops]] });
    }
    chart(s, analysisName, analysisName, analysisName, {
      title: { text: label + ' roofline (log-log)', textStyle: { fontSize: 13 } }, legend: { top: 26 }, grid: { top: 60 },
      tooltip: { trigger: 'item', formatter: function (q) {
        return tooltipLines([q.seriesId === 'data' ? names[q.dataIndex] : 'ceiling',
          q.value[0] + ' FLOP/byte, ' + q.value[1] + ' GFLOP/s']);
      } },
      xAxis: { type: 'log', name: 'FLOP/byte' }, yAxis: { type: 'log', name: 'GFLOP/s' }, series: series
    });
    if (p && p.description) say(s, 'ceilings: ' + p.description);
    else if (p && p.missing) say(s, 'no ceilings: ' + p.missing);
    notes(s, t);
  }

  function rooflines() {
    var s = sectionWithData('roofline', 'Rooflines', ['kernel_roofline', 'layer_roofline']);
    if (!s) return;
    roofline(s, 'kernel_roofline', 'Kernels', 'kernel');
    roofline(s, 'layer_roofline', 'Layers', 'layer');
  }

  function iterations() {
    var s = sectionWithData('iterations', 'Iterations', ['iterations']);
    if (!s) return;
    var summary = table('iterations', 'iterations_summary');
    var t = table('iterations', 'iterations');
    if (!t) { say(s, 'no iteration table'); return; }
    var start = column(t, 'start_ms'), time = column(t, 'time_ms'), loop = column(t, 'loop');
    var loops = Math.max.apply(null, loop.concat([0]));
    chart(s, 'iteration-timeline', 'iterations', 'iterations', {
      title: { text: 'Iteration timeline (one bar per iteration, by loop)', textStyle: { fontSize: 13 } },
      grid: { top: 40 }, tooltip: { trigger: 'item', formatter: function (q) {
        return tooltipLines(['iteration ' + q.value[3] + ' (loop ' + q.value[2] + ')',
          'start ' + q.value[0] + ' ms, ' + (q.value[1] - q.value[0]).toFixed(3) + ' ms']);
      } },
      xAxis: { type: 'value', name: 'ms', scale: true },
      yAxis: { type: 'value', name: 'loop', min: -0.5, max: loops + 0.5, interval: 1 },
      dataZoom: [{ type: 'inside' }, { type: 'slider', height: 18 }],
      series: [{ id: 'data', type: 'custom', encode: { x: [0, 1], y: 2 },
        data: start.map(function (v, i) { return [v, v + time[i], loop[i], i]; }),
        renderItem: function (params, api) {
          var a = api.coord([api.value(0), api.value(2)]), b = api.coord([api.value(1), api.value(2)]);
          var h = api.size([0, 1])[1] * 0.6;
          var shape = echarts.graphic.clipRectByRect({ x: a[0], y: a[1] - h / 2, width: Math.max(b[0] - a[0], 1), height: h },
            { x: params.coordSys.x, y: params.coordSys.y, width: params.coordSys.width, height: params.coordSys.height });
          return shape && { type: 'rect', shape: shape, style: api.style({ fill: params.dataIndex % 2 ? '#54aeff' : '#0969da' }) };
        } }]
    });
    var metrics = ['busy_ms', 'interval_ms'].filter(function (c) { return hasValues(column(t, c)); });
    chart(s, 'iteration-metrics', 'iterations', 'iterations', {
      title: { text: 'Per-iteration metrics', textStyle: { fontSize: 13 } }, legend: { top: 26 }, grid: { top: 60 },
      xAxis: { type: 'category', name: 'iteration', data: column(t, 'iteration').map(String) },
      yAxis: { type: 'value', name: 'ms' }, dataZoom: categoryZoom(t.rows.length),
      series: [{ id: 'data', name: 'time_ms', type: 'line', data: time }].concat(metrics.map(function (c) {
        return { id: c, name: c, type: 'line', data: column(t, c) };
      }))
    });
    if (summary) { notes(s, summary); htmlTable(s, summary); }
    notes(s, t);
    htmlTable(s, t);
  }

  function flame() {
    var f = data.flame;
    if (f.missing) { lacking('CPU samples (flame graph)', 'flame', f.missing); return; }
    var s = section('flame', 'CPU samples (flame graph)');
    function color(name) {
      var h = 0;
      for (var i = 0; i < name.length; ++i) h = (h * 31 + name.charCodeAt(i)) >>> 0;
      if (name.indexOf('[op] ') === 0) return 'hsl(' + (200 + h % 30) + ',60%,' + (62 + h % 12) + '%)';
      return 'hsl(' + (h % 50) + ',80%,' + (58 + h % 14) + '%)';
    }
    var div = chart(s, 'flame', 'flame', 'flame', {
      title: { text: 'CPU samples: ' + f.samples + ' (' + f.nodes.length + ' of ' + f.frames + ' frames shown)', textStyle: { fontSize: 13 } },
      grid: { top: 36, left: 10, right: 10, bottom: 10 },
      tooltip: { trigger: 'item', formatter: function (q) {
        return tooltipLines([f.names[q.value[3]],
          q.value[2] + ' samples (' + (100 * q.value[2] / f.samples).toFixed(2) + '%)']);
      } },
      xAxis: { type: 'value', min: 0, max: f.samples, show: false },
      yAxis: { type: 'value', min: -0.5, max: f.max_depth + 0.5, show: false },
      series: [{ id: 'data', type: 'custom', encode: { x: [1], y: 0 }, data: f.nodes,
        renderItem: function (params, api) {
          var depth = api.value(0), start = api.value(1), width = api.value(2), name = f.names[api.value(3)];
          var a = api.coord([start, depth]), b = api.coord([start + width, depth]);
          var h = api.size([0, 1])[1];
          var shape = echarts.graphic.clipRectByRect({ x: a[0], y: a[1] - h / 2, width: b[0] - a[0], height: h - 1 },
            { x: params.coordSys.x, y: params.coordSys.y, width: params.coordSys.width, height: params.coordSys.height });
          if (!shape) return null;
          var children = [{ type: 'rect', shape: shape, style: { fill: color(name), stroke: '#fff', lineWidth: 0.5 } }];
          var chars = Math.floor((shape.width - 6) / 6.5);
          if (chars >= 3) children.push({ type: 'text', style: { text: name.length > chars ? name.slice(0, chars - 1) + '…' : name,
            x: shape.x + 3, y: shape.y + shape.height / 2, verticalAlign: 'middle', fill: '#1f2328', font: '11px sans-serif' } });
          return { type: 'group', children: children };
        } }]
    }, f.max_depth > 20);
    if (f.max_depth > 20) document.getElementById('chart-flame').style.height = Math.min(1600, 24 * (f.max_depth + 3)) + 'px';
    div.resize();
    say(s, 'Root at the bottom; "[op] NAME" frames are the layer-level spans open at the sample. Frames under ' +
      'a small share of the samples are folded into their parent (`strata profile --format collapsed` has them all).');
  }

  function ranks() {
    var s = sectionWithData('ranks', 'Ranks', ['rank_breakdown']);
    if (!s) return;
    var t = table('rank_breakdown');
    var parts = ['compute_ms', 'communication_ms', 'memcpy_ms', 'idle_ms'];
    chart(s, 'ranks', 'rank_breakdown', 'rank_breakdown', {
      title: { text: 'Time of each rank: compute, communication, memory copies, idle', textStyle: { fontSize: 13 } },
      legend: { top: 26 }, grid: { top: 60 },
      xAxis: { type: 'category', name: 'rank', data: column(t, 'rank').map(String) },
      yAxis: { type: 'value', name: 'ms' },
      series: parts.map(function (c, i) {
        return { id: i === 0 ? 'data' : c, name: c, type: 'bar', stack: 'window', data: column(t, c) };
      })
    });
    notes(s, t);
    htmlTable(s, t);
  }

  // The analyses without data in this trace: one line, each name with its own line on hover, and the
  // same lines (what to record) in a closed details element under it.
  function withoutData() {
    if (!noData.length) return;
    var line = el('p', { id: 'no-data', className: 'no-data' }, [el('span', { text: 'No data in this trace for: ' })]);
    noData.forEach(function (m, i) {
      if (i) line.appendChild(document.createTextNode(', '));
      line.appendChild(el('span', { className: 'no-data-item', title: m.analysis + ': ' + m.reason,
        text: m.section + (m.section.indexOf(m.analysis) < 0 ? ' (' + m.analysis + ')' : '') }));
    });
    root.appendChild(line);
    root.appendChild(el('details', { className: 'no-data-details' }, [el('summary', { text: 'what to record for them' }),
      el('ul', {}, noData.map(function (m) { return el('li', { text: m.analysis + ': ' + m.reason }); }))]));
  }

  [summary, overview, models, layers, lowerBound, deviceSplit, kernels, rooflines, iterations, flame, ranks,
    withoutData].forEach(function (draw) {
    try { draw(); } catch (e) { registry.errors.push(String(e)); console.error('strata report: ' + e); }
  });
  root.appendChild(el('footer', { text: 'Written by ' + (data.generator || 'strata') + ' with Apache ECharts ' +
    echarts.version + '. Each chart plots one table of `strata analyze` (same numbers as its CSV).' }));
  window.addEventListener('resize', function () {
    registry.charts.forEach(function (c) { echarts.getInstanceByDom(document.getElementById(c.element)).resize(); });
  });
  registry.ready = true;
})();

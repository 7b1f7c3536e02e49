// Opens a strata report in headless Chromium (Debian's, driven by playwright-core from
// report/node_modules) as a hostile reader would: every data point of every chart is hovered with
// the mouse, one by one (ECharts then runs the chart's tooltip formatter and writes its HTML into the
// page), and every <details> is opened by a click on its summary. Prints what happened as JSON on
// stdout: every request the page made (routed and aborted, so nothing leaves the machine), dialogs,
// navigations and popups, Content-Security-Policy violations, the flag and title that the test's
// payloads set if any of them runs (window.strataPwned, document.title), elements with an inline
// event handler or a tag no report draws (img, svg, iframe, script, form, ...) seen after any hover
// or at the end, and per chart the points hovered and the text of the tooltips shown.
//
//   node payload_check.js CHROMIUM REPORT.html... [--probe PAGE.html]...
// One browser (a fresh profile) for all pages; the JSON maps each file to its result. --probe: the page
// is a report with markup injected into it (tests/python/test_report_payloads.py writes it): nothing
// is hovered, and the button of its injected form is clicked last.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { chromium } = require('playwright-core');

const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

// Runs in the page: the hover targets of one chart, in pixels of its element. Each series' points are
// placed with ECharts' own convertToPixel, from the value the point was drawn with (bars: the middle
// of the bar; custom series: the middle of the rectangle; scatter: the symbol's centre).
function hoverTargets(elementId) {
  const inst = window.echarts.getInstanceByDom(document.getElementById(elementId));
  const option = inst.getOption();
  const targets = [];
  inst.dispatchAction({ type: 'dataZoom', start: 0, end: 100 });  // every point in view
  option.series.forEach((series, seriesIndex) => {
    const yAxis = (option.yAxis || [])[series.yAxisIndex || 0];
    const horizontal = yAxis && yAxis.type === 'category';
    (series.data || []).forEach((item, dataIndex) => {
      const v = item !== null && typeof item === 'object' && !Array.isArray(item) ? item.value : item;
      if (v === null || v === undefined || v === '-' || series.id === 'roof') return;  // nothing drawn / no data
      let point;
      // Custom series: an iteration [start, end, row], or a flame frame [depth, start, width].
      if (series.type === 'custom' && series.encode.x.length === 2) point = [(v[0] + v[1]) / 2, v[2]];
      else if (series.type === 'custom') point = [v[1] + v[2] / 2, v[0]];
      else if (Array.isArray(v)) point = v;
      else if (series.type === 'line' && !horizontal) point = [dataIndex, v];
      else point = horizontal ? [(v || 0) / 2, dataIndex] : [dataIndex, (v || 0) / 2];
      const px = inst.convertToPixel({ seriesIndex }, point);
      targets.push({ series: series.id, index: dataIndex, x: px[0], y: px[1] });
    });
  });
  return targets;
}

// Runs in the page: what is in it now that a report never draws (markup from data, had it been
// written as markup), and the text of the chart's tooltip.
function inspect(elementId) {
  const bad = [];
  for (const node of document.querySelectorAll('*')) {
    const handlers = [...node.attributes].filter((a) => /^on/i.test(a.name)).map((a) => a.name);
    const tag = node.tagName.toLowerCase();
    if (handlers.length || ['img', 'svg', 'iframe', 'object', 'embed', 'form', 'base', 'link', 'a'].includes(tag) &&
        !(tag === 'a' && /^#/.test(node.getAttribute('href') || '')))
      bad.push(tag + (handlers.length ? '[' + handlers.join(',') + ']' : ''));
  }
  const scripts = document.querySelectorAll('script').length;
  const chart = elementId ? document.getElementById(elementId) : null;
  // ECharts' tooltip is the chart element's child after the canvas' wrapper.
  const shown = chart ? [...chart.children].slice(1).filter((c) => c.style.display !== 'none') : [];
  const tooltip = shown.map((c) => c.textContent).join('');
  return { bad, scripts, tooltip };
}

async function hoverCharts(page, result) {
  const charts = await page.evaluate(() => window.strataReport.charts.map((c) => ({ id: c.id, element: c.element })));
  for (const chart of charts) {
    const entry = { id: chart.id, points: 0, hovered: 0, tooltips: [] };
    result.charts.push(entry);
    const targets = await page.evaluate(hoverTargets, chart.element);
    entry.points = targets.length;
    const seen = new Set();
    for (const t of targets) {
      if (!Number.isFinite(t.x) || !Number.isFinite(t.y)) continue;
      // The point in the middle of the window, then the mouse on it.
      const at = await page.evaluate(({ element, x, y }) => {
        const box = document.getElementById(element).getBoundingClientRect();
        window.scrollBy(0, box.top + y - window.innerHeight / 2);
        const now = document.getElementById(element).getBoundingClientRect();
        return { x: now.left + x, y: now.top + y };
      }, { element: chart.element, x: t.x, y: t.y });
      await page.mouse.move(at.x, at.y);
      let state = await page.evaluate(inspect, chart.element);
      if (!state.tooltip) {  // ECharts may show it a frame later (a loaded machine): one more look
        await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
        state = await page.evaluate(inspect, chart.element);
      }
      result.bad_elements.push(...state.bad);
      if (state.scripts !== result.scripts) result.bad_elements.push('script count ' + state.scripts);
      entry.hovered += 1;
      if (state.tooltip && !seen.has(state.tooltip)) {
        seen.add(state.tooltip);
        entry.tooltips.push(state.tooltip);
      }
    }
  }
}

async function openDetails(page, result) {
  // Those the page opened itself (the summary's top ops) stay open: a click would close them.
  const summaries = await page.$$('details:not([open]) > summary');  // handles: fixed as the page opens them
  for (const s of summaries) {
    await s.scrollIntoViewIfNeeded();
    await s.click();
  }
  result.details = await page.evaluate(() => {
    const all = [...document.querySelectorAll('details')];
    return { count: all.length, open: all.filter((d) => d.open).length };
  });
  result.page_text = await page.evaluate(() => document.body.innerText);
}

// One page: loaded, its charts hovered and its details opened (a probe: its injected form submitted
// instead); what it did, as described at the top.
async function checkPage(context, report, probe) {
  const result = {
    requests: [], refused_by_policy: [], dialogs: [], navigations: [], popups: [], csp_violations: [], console: [],
    page_errors: [], charts: [], bad_elements: [], ready: false,
  };
  const url = 'file://' + path.resolve(report);
  const page = await context.newPage();
  // Chromium announces a load the page's policy refuses as a request that then fails with 'csp':
  // those are listed apart (refused_by_policy); `requests` holds the others (the ones that would
  // have left the page; the context's router refuses them, so nothing reaches any server).
  const pending = [], refusedByPolicy = new Set();
  page.on('request', (r) => { if (r.url() !== url) pending.push(r); });
  page.on('requestfailed', (r) => { if (r.failure() && r.failure().errorText === 'csp') refusedByPolicy.add(r); });
  page.on('dialog', (d) => { result.dialogs.push(d.type() + ': ' + d.message()); d.dismiss().catch(() => {}); });
  page.on('popup', (p) => result.popups.push(p.url()));
  page.on('framenavigated', (f) => {
    if (f === page.mainFrame() && f.url() !== url) result.navigations.push(f.url());
  });
  page.on('console', (m) => result.console.push(m.type() + ': ' + m.text()));
  page.on('pageerror', (e) => result.page_errors.push(String(e)));
  // Playwright's init script is not subject to the page's policy; it only listens.
  await page.addInitScript(() => {
    window.strataCspViolations = [];
    document.addEventListener('securitypolicyviolation', (e) =>
      window.strataCspViolations.push(e.effectiveDirective + ' ' + (e.blockedURI || '')));
  });
  await page.goto(url, { waitUntil: 'load' });
  // A payload that runs may take the page away (a navigation, even refused, leaves an error page):
  // what was seen until then is the result, with the interruption.
  try {
    await page.waitForFunction(() => window.strataReport && window.strataReport.ready, null, { timeout: 30000 });
    result.ready = true;
    result.report_errors = await page.evaluate(() => window.strataReport.errors);
    result.scripts = await page.evaluate(() => document.querySelectorAll('script').length);
    if (!probe) {
      await hoverCharts(page, result);
      await openDetails(page, result);
    }
    await page.waitForTimeout(200);  // an event the last action queued gets its turn
    result.bad_elements.push(...(await page.evaluate(inspect, null)).bad);
    const after = await page.evaluate(() => ({ pwned: window.strataPwned || null, title: document.title }));
    Object.assign(result, after);
    if (probe) {  // last: a submitted form may take the page away
      await page.evaluate(() => { const b = document.getElementById('strata-csp-probe-submit'); if (b) b.click(); });
      await page.waitForTimeout(300);
    }
    result.csp_violations = await page.evaluate(() => window.strataCspViolations);
  } catch (e) {
    result.interrupted = String(e && e.message || e).split('\n')[0];
  }
  result.location = page.url();
  result.bad_elements = [...new Set(result.bad_elements)];
  result.requests = pending.filter((r) => !refusedByPolicy.has(r)).map((r) => r.url());
  result.refused_by_policy = pending.filter((r) => refusedByPolicy.has(r)).map((r) => r.url());
  await page.close();
  return result;
}

async function main() {
  const [executable, ...reports] = process.argv.slice(2);
  if (!reports.length) throw new Error('usage: node payload_check.js CHROMIUM REPORT.html... [--probe PAGE.html]...');
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'strata-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: executable, headless: true, args: FLAGS, viewport: { width: 1280, height: 900 },
  });
  const results = {};
  try {
    await context.route((u) => u.protocol !== 'file:', (route) => route.abort());
    for (let i = 0; i < reports.length; ++i) {
      const probe = reports[i] === '--probe';
      if (probe) ++i;
      results[reports[i]] = await checkPage(context, reports[i], probe);
    }
  } finally {
    await context.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
  process.stdout.write(JSON.stringify(results));
}

main().catch((e) => { process.stderr.write('payload_check: ' + (e && e.stack || e) + '\n'); process.exit(1); });

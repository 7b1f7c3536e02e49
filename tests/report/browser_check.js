// Loads a strata report in headless Chromium (Debian's, driven by playwright-core from
// report/node_modules) and prints what the page holds as JSON on stdout: every chart with its
// table and each series' data read back from ECharts (getInstanceByDom(el).getOption()), console
// errors, page errors, and every request the page made (a self-contained report makes none but
// its own file). Saves a full-page screenshot.
//
//   node browser_check.js REPORT.html SCREENSHOT.png [CHROMIUM]
// (tests/python/test_report.py runs it with NODE_PATH=report/node_modules.)
'use strict';
const path = require('path');
const { chromium } = require('playwright-core');

async function main() {
  const [report, screenshot, executable] = process.argv.slice(2);
  const browser = await chromium.launch({
    executablePath: executable || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
  const result = { console_errors: [], page_errors: [], requests: [], charts: [], report_errors: [] };
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('console', (m) => { if (m.type() === 'error') result.console_errors.push(m.text()); });
    page.on('pageerror', (e) => result.page_errors.push(String(e)));
    page.on('request', (r) => result.requests.push(r.url()));
    const url = 'file://' + path.resolve(report);
    await page.goto(url, { waitUntil: 'load' });
    await page.waitForFunction(() => window.strataReport && window.strataReport.ready, null, { timeout: 30000 });
    const found = await page.evaluate(() => {
      const out = [];
      for (const c of window.strataReport.charts) {
        const el = document.getElementById(c.element);
        const inst = window.echarts.getInstanceByDom(el);
        const option = inst ? inst.getOption() : null;
        const box = el.getBoundingClientRect();
        out.push({
          id: c.id, analysis: c.analysis, table: c.table, width: box.width, height: box.height,
          categories: option ? (option.yAxis || []).filter((a) => a.type === 'category').map((a) => a.data) : [],
          series: option ? option.series.map((s) => ({
            id: s.id, name: s.name, type: s.type,
            data: (s.data || []).map((d) => (d !== null && typeof d === 'object' && !Array.isArray(d) ? d.value : d)),
          })) : null,
        });
      }
      return { charts: out, errors: window.strataReport.errors, sections: [...document.querySelectorAll('section')].map((s) => s.id),
        // Analyses without data: the one line at the end (each item's own line is its title).
        missing: [...document.querySelectorAll('.missing, .no-data-item')].map((m) => m.getAttribute('title') || m.textContent),
        no_data_lines: document.querySelectorAll('.no-data').length,
        data: JSON.parse(document.getElementById('strata-data').textContent) };
    });
    result.charts = found.charts;
    result.report_errors = found.errors;
    result.sections = found.sections;
    result.missing = found.missing;
    result.no_data_lines = found.no_data_lines;
    result.summary = found.data.summary;
    result.step_timeline = found.data.step_timeline;
    result.requests = result.requests.filter((u) => u !== url);
    await page.screenshot({ path: screenshot, fullPage: true });
  } finally {
    await browser.close();
  }
  process.stdout.write(JSON.stringify(result));
}

main().catch((e) => { process.stderr.write('browser_check: ' + (e && e.stack || e) + '\n'); process.exit(1); });

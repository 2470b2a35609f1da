/**
 * What the viewer's pages load besides themselves: vega, vega-lite and vega-embed from the
 * installed packages (never a CDN: nothing is downloaded at run time), its stylesheet and the
 * script that embeds each chart.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);

/** The browser bundle `file` of package `name`, found from the package's entry point. */
function bundle(name: string, file: string): string {
  let dir = path.dirname(require.resolve(name));
  while (path.basename(dir) !== 'build' && dir !== path.dirname(dir)) dir = path.dirname(dir);
  return path.join(dir, file);
}

const FILES: Record<string, () => string> = {
  'vega.min.js': () => bundle('vega', 'vega.min.js'),
  'vega-lite.min.js': () => bundle('vega-lite', 'vega-lite.min.js'),
  'vega-embed.min.js': () => bundle('vega-embed', 'vega-embed.min.js'),
};

/**
 * Embeds every chart of the page. `ast: true` evaluates Vega expressions with the interpreter
 * instead of `new Function`, so the page's Content-Security-Policy needs no 'unsafe-eval'.
 */
const VIEWER_JS = `document.addEventListener('DOMContentLoaded', function () {
  document.querySelectorAll('[data-chart]').forEach(function (el) {
    var source = document.querySelector('script[data-spec-for="' + el.id + '"]');
    if (!source) return;
    vegaEmbed(el, JSON.parse(source.textContent), { ast: true, renderer: 'svg', actions: { export: true, source: false, compiled: false, editor: false } })
      .then(function () { el.setAttribute('data-rendered', 'true'); })
      .catch(function (error) { el.textContent = 'chart failed: ' + error.message; el.setAttribute('data-rendered', 'error'); });
  });
});
`;

const VIEWER_CSS = `
body { font: 14px/1.45 system-ui, sans-serif; margin: 0; color: #1d1d1f; background: #fafafa; }
header { background: #1f2937; color: #fff; padding: 8px 16px; }
header a { color: #cfe3ff; text-decoration: none; } header .brand { font-weight: 700; color: #fff; }
main { padding: 8px 20px 40px; max-width: 1280px; }
h1 { font-size: 22px; margin: 12px 0; } h2 { font-size: 17px; margin: 22px 0 8px; border-bottom: 1px solid #ddd; }
h3 { font-size: 15px; margin: 14px 0 6px; }
table { border-collapse: collapse; background: #fff; margin: 6px 0; }
th, td { border: 1px solid #ddd; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f0f2f5; }
pre { margin: 0; white-space: pre-wrap; word-break: break-word; font-size: 12px; }
.meta { color: #555; font-size: 13px; }
.warning { background: #fff4e5; border-left: 4px solid #d9822b; padding: 6px 10px; font-weight: 600; }
.state.completed { color: #137333; } .state.failed { color: #b3261e; } .state.running { color: #1a56db; } .state.paused { color: #a15c00; }
.filters a.facet { margin-right: 8px; } .filters a.active { font-weight: 700; text-decoration: none; color: #000; }
blockquote { background: #fff; border-left: 4px solid #1a56db; margin: 4px 0; padding: 6px 10px; }
blockquote.hidden-context { border-left-color: #a15c00; }
.tool { background: #fff; border: 1px solid #e3e3e3; margin: 4px 0; padding: 4px 8px; }
.transcript { border: 1px solid #ddd; background: #fff; padding: 8px; margin: 6px 0; }
.msg { margin: 6px 0; padding: 6px 10px; border-radius: 6px; }
.msg .who { font-size: 11px; text-transform: uppercase; color: #666; }
.msg.system { background: #f3f3f3; } .msg.user { background: #eef4ff; } .msg.assistant { background: #f1fbf3; }
.tool-call { margin: 6px 0 6px 16px; border-left: 3px solid #7a869a; padding-left: 8px; }
.tool-call .fn { font-weight: 700; font-family: monospace; }
.answer { background: #fff8e6; padding: 4px 8px; margin-top: 3px; } .answer.user-sim { background: #f3ecff; }
.answer .source { font-size: 11px; color: #6b4e00; } .answer.user-sim .source { color: #5b3aa8; }
.rejected { color: #b3261e; } .pause-reason { color: #a15c00; font-size: 12px; }
.chart-grid { display: flex; flex-wrap: wrap; gap: 8px; } figure.chart { margin: 4px; }
.cell { font-size: 12px; white-space: nowrap; } .cell.evaluated { color: #137333; } .cell.training { color: #1a56db; }
`;

/** The asset of that name (content type and bytes), or undefined. */
export async function readAsset(name: string): Promise<{ type: string; body: string } | undefined> {
  if (name === 'viewer.js') return { type: 'text/javascript; charset=utf-8', body: VIEWER_JS };
  if (name === 'viewer.css') return { type: 'text/css; charset=utf-8', body: VIEWER_CSS };
  const file = FILES[name];
  if (!file) return undefined;
  return { type: 'text/javascript; charset=utf-8', body: await readFile(file(), 'utf8') };
}

/**
 * Vega-Lite charts rendered to SVG on the server, with no browser and no canvas: the reports'
 * figures (reward curve, scaling-law curves) come from the same chart specs the viewer draws
 * interactively in the browser with vega-embed, so the two never disagree.
 */
import { parse, View } from 'vega';
import { compile } from 'vega-lite';
import type { ChartSpec } from './spec.js';

export { VEGA_LITE_SCHEMA, type ChartSpec } from './spec.js';

/**
 * Renders `spec` to a standalone SVG document. `renderer: 'none'` keeps vega off the canvas
 * package: text widths are estimated, which is all an SVG needs.
 */
export async function renderChartSvg(spec: ChartSpec): Promise<string> {
  const view = new View(parse(compile(spec).spec), { renderer: 'none' });
  try {
    const svg = await view.toSVG();
    return svg.endsWith('\n') ? svg : `${svg}\n`;
  } finally {
    view.finalize();
  }
}

/**
 * Vega-Lite charts rendered to SVG on the server, with no browser and no canvas: the reports'
 * figures (reward curve, scaling-law curves) come from the same chart specs the viewer draws
 * interactively in the browser with vega-embed, so the two never disagree.
 */
import { parse, View } from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';

/** A Vega-Lite specification (the chart modules build them; the viewer embeds them as JSON). */
export type ChartSpec = TopLevelSpec;

/** The Vega-Lite schema every chart names, for editors and vega-embed's version check. */
export const VEGA_LITE_SCHEMA = 'https://vega.github.io/schema/vega-lite/v6.json';

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

/**
 * Page shell and small HTML helpers. Every value goes through hono's `html` template, which
 * escapes it; only JSON for charts is inserted raw, after `<` is escaped so it cannot end its
 * script element.
 */
import { html, raw } from 'hono/html';
import type { HtmlEscapedString } from 'hono/utils/html';

/** A rendered fragment (hono's escaped string; nested fragments are not escaped twice). */
export type Fragment = HtmlEscapedString | Promise<HtmlEscapedString>;

/** A link of the breadcrumb trail. */
export interface Crumb {
  readonly label: string;
  readonly href?: string;
}

/** The whole page: header with the trail, the body, the chart scripts (served by the viewer). */
export function page(title: string, crumbs: readonly Crumb[], body: Fragment): Fragment {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${title} · mockworld</title>
        <link rel="stylesheet" href="/assets/viewer.css" />
        <script src="/assets/vega.min.js" defer></script>
        <script src="/assets/vega-lite.min.js" defer></script>
        <script src="/assets/vega-embed.min.js" defer></script>
        <script src="/assets/viewer.js" defer></script>
      </head>
      <body>
        <header>
          <nav>
            <a class="brand" href="/">mockworld</a>
            ${crumbs.map((c) => html` / ${c.href ? html`<a href="${c.href}">${c.label}</a>` : html`<span>${c.label}</span>`}`)}
          </nav>
        </header>
        <main>
          <h1>${title}</h1>
          ${body}
        </main>
      </body>
    </html>`;
}

/** A chart placeholder: viewer.js embeds the Vega-Lite spec that follows it (interactive). */
export function chart(id: string, spec: unknown): Fragment {
  const json = JSON.stringify(spec).replace(/</g, '\\u003c');
  return html`<figure class="chart" id="${id}" data-chart></figure>
    <script type="application/json" data-spec-for="${id}">
      ${raw(json)}
    </script>`;
}

/** A table of rows; cells are fragments or plain values. */
export function table(headers: readonly string[], rows: readonly (readonly unknown[])[], cls = ''): Fragment {
  return html`<table class="${cls}">
    <thead>
      <tr>
        ${headers.map((h) => html`<th>${h}</th>`)}
      </tr>
    </thead>
    <tbody>
      ${rows.map(
        (r) =>
          html`<tr>
            ${r.map((c) => html`<td>${c ?? ''}</td>`)}
          </tr>`,
      )}
    </tbody>
  </table>`;
}

/** Pretty JSON in a preformatted block (tool schemas, arguments, answers). */
export function json(value: unknown, cls = 'json'): Fragment {
  return html`<pre class="${cls}">${JSON.stringify(value, null, 2) ?? 'null'}</pre>`;
}

/** A labelled section. */
export function section(title: string, body: Fragment, id?: string): Fragment {
  return html`<section id="${id ?? ''}">
    <h2>${title}</h2>
    ${body}
  </section>`;
}

/** A number with a fixed number of digits, or an em dash. */
export function num(value: number | null | undefined, digits = 3): string {
  return value === null || value === undefined || !Number.isFinite(value) ? '—' : value.toFixed(digits);
}

/** US dollars, or "—" when unknown (no prices on the run's endpoints). */
export function usd(value: number | null | undefined): string {
  if (value === null || value === undefined) return '—';
  return value < 0.01 && value > 0 ? `$${value.toFixed(6)}` : `$${value.toFixed(2)}`;
}

/** A timestamp as UTC, to the second. */
export function when(date: Date | null | undefined): string {
  return date ? date.toISOString().replace('T', ' ').slice(0, 19) + ' UTC' : '—';
}

/** A path with query parameters (absent ones left out). */
export function href(path: string, query: Record<string, string | number | undefined> = {}): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') params.set(k, String(v));
  const q = params.toString();
  return q ? `${path}?${q}` : path;
}

/** A run id or task id as a URL path segment. */
export const seg = (id: string) => encodeURIComponent(id);

export { html, raw };

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uiLine, type StackTemporal } from '../../deploy/stack.js';
import { loadEnvironment } from '../../schemas/environment.js';

/**
 * `stack up` names the Web UI where it answers: a dev server someone started by hand on port P
 * serves its UI on P + 1000, whatever TEMPORAL_UI_PORT says.
 */
describe("stack up's UI line", () => {
  let ui: http.Server;
  let uiPort: number;
  beforeAll(async () => {
    ui = http.createServer((_req, res) => res.end('<html>Temporal</html>'));
    await new Promise<void>((resolve) => ui.listen(0, '127.0.0.1', resolve));
    uiPort = (ui.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => ui.close(() => resolve())));

  const temporalAt = (port: number) => ({ address: `127.0.0.1:${port}` }) as StackTemporal;
  const env = (uiPortSetting: number) => loadEnvironment({ TEMPORAL_UI_PORT: String(uiPortSetting) });

  it('prints TEMPORAL_UI_PORT when the UI answers there', async () => {
    expect(await uiLine(env(uiPort), temporalAt(7233))).toBe(`ui         http://localhost:${uiPort}`);
  });

  it("finds the running server's UI at its frontend port + 1000 when TEMPORAL_UI_PORT has none", async () => {
    const nothing = uiPort === 1 ? 2 : 1; // nothing listens on ports 1 and 2
    expect(await uiLine(env(nothing), temporalAt(uiPort - 1000))).toBe(
      `ui         http://localhost:${uiPort}  (the running server's; nothing answers at TEMPORAL_UI_PORT ${nothing})`,
    );
    expect(await uiLine(env(nothing), temporalAt(nothing))).toContain(
      "nothing answers at http://localhost:1; the running server's UI is on another port",
    );
  });
});

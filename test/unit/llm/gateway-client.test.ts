import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { gatewayCompleter } from '../../../activities/llm/gateway-client.js';
import { ModelGatewayError } from '../../../activities/llm/errors.js';
import type { ModelCall } from '../../../activities/llm/types.js';

const answer = { content: 'ok', toolCalls: [], usage: { promptTokens: 1, completionTokens: 1 } };
const call = {
  endpoint: 'e',
  model: 'm',
  messages: [{ role: 'user', content: 'hi' }],
} as unknown as ModelCall;

/**
 * A gateway double whose connections serve `answered` requests each and then drop the socket when
 * the next request arrives on it: what a kept-alive connection looks like to the client when the
 * server closed it as idle just as the request was written.
 */
async function gatewayDroppingAfter(answered: number) {
  const served = new Map<Socket, number>();
  let requests = 0;
  const server = http.createServer((req, res) => {
    requests++;
    const count = served.get(req.socket) ?? 0;
    if (count >= answered) return req.socket.destroy();
    served.set(req.socket, count + 1);
    req.resume().on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, requests: () => requests, connections: () => served.size, server };
}

let close: (() => void) | undefined;
afterEach(() => close?.());

describe('gatewayCompleter on kept-alive connections', () => {
  it('sends a request again on a fresh connection when the reused one was dropped', async () => {
    const gateway = await gatewayDroppingAfter(1);
    close = () => gateway.server.close();
    const complete = gatewayCompleter(gateway.url);
    expect(await complete(call)).toEqual(answer);
    // The second call goes out on the kept-alive socket, which the double drops unread.
    expect(await complete(call)).toEqual(answer);
    expect(gateway.requests()).toBe(3);
    expect(gateway.connections()).toBe(2);
  });

  it('reports a reset of a fresh connection instead of sending again', async () => {
    const gateway = await gatewayDroppingAfter(0);
    close = () => gateway.server.close();
    const complete = gatewayCompleter(`${gateway.url}/`);
    await expect(complete(call)).rejects.toThrow(ModelGatewayError);
    await expect(complete(call)).rejects.toThrow(/unreachable \(ECONNRESET\)/);
    expect(gateway.requests()).toBe(2);
  });
});

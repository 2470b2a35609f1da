import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { promisify } from 'node:util';

const exec = promisify(execFile);

/** A private CA with a server certificate (localhost, 127.0.0.1) and a client certificate, as files. */
export interface TestCertificates {
  readonly dir: string;
  readonly caCert: string;
  readonly serverCert: string;
  readonly serverKey: string;
  readonly clientCert: string;
  readonly clientKey: string;
  remove(): Promise<void>;
}

/**
 * Makes self-signed test certificates with the machine's openssl (EC P-256: fast). The server
 * certificate names `localhost` and 127.0.0.1, the client one `clientName`; both are signed by the
 * test CA, which a client must be told about (TEMPORAL_TLS_SERVER_CA_CERT_PATH).
 */
export async function makeTestCertificates(clientName = 'mockworld-test-client'): Promise<TestCertificates> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mockworld-tls-'));
  const file = (name: string) => path.join(dir, name);
  const openssl = (...args: string[]) => exec('openssl', args, { cwd: dir });
  const key = (name: string) =>
    openssl('ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', file(name));

  await key('ca.key');
  await openssl(
    'req', '-x509', '-new', '-key', file('ca.key'), '-sha256', '-days', '2', '-subj', '/CN=mockworld test CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
    '-out', file('ca.pem'),
  ); // prettier-ignore
  const leaf = async (name: string, subject: string, extensions: string) => {
    await key(`${name}.key`);
    await openssl('req', '-new', '-key', file(`${name}.key`), '-subj', subject, '-out', file(`${name}.csr`));
    await writeFile(file(`${name}.ext`), extensions);
    await openssl(
      'x509', '-req', '-in', file(`${name}.csr`), '-CA', file('ca.pem'), '-CAkey', file('ca.key'),
      '-CAcreateserial', '-days', '2', '-sha256', '-extfile', file(`${name}.ext`), '-out', file(`${name}.pem`),
    ); // prettier-ignore
  };
  await leaf(
    'server',
    '/CN=localhost',
    'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n',
  );
  await leaf('client', `/CN=${clientName}`, 'extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n');
  return {
    dir,
    caCert: file('ca.pem'),
    serverCert: file('server.pem'),
    serverKey: file('server.key'),
    clientCert: file('client.pem'),
    clientKey: file('client.key'),
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

/** A TLS front for a plaintext Temporal frontend, as a secured cluster's ingress is. */
export interface TlsFront {
  /** host:port clients connect to (TLS). */
  readonly address: string;
  /** Common names of the client certificates of the connections accepted so far. */
  readonly clients: string[];
  /** Connections refused during the handshake (no or an unknown client certificate, no TLS). */
  refused(): number;
  close(): Promise<void>;
}

/**
 * Terminates mutual TLS on 127.0.0.1 and forwards each accepted connection to `upstream` (the dev
 * server, which has no TLS of its own): a client reaches Temporal through it only with the CA,
 * a client certificate of that CA and HTTP/2 negotiated by ALPN, as gRPC does.
 */
export async function startTlsFront(upstream: string, certs: TestCertificates): Promise<TlsFront> {
  const [host, port] = [upstream.slice(0, upstream.lastIndexOf(':')), Number(upstream.split(':').pop())];
  const clients: string[] = [];
  let refused = 0;
  const sockets = new Set<net.Socket>();
  const server = tls.createServer(
    {
      key: await readFile(certs.serverKey),
      cert: await readFile(certs.serverCert),
      ca: await readFile(certs.caCert),
      requestCert: true,
      rejectUnauthorized: true,
      ALPNProtocols: ['h2'],
    },
    (socket) => {
      clients.push(String(socket.getPeerCertificate().subject?.CN ?? ''));
      const back = net.connect(port, host);
      sockets.add(socket).add(back);
      socket.pipe(back).pipe(socket);
      const drop = () => {
        socket.destroy();
        back.destroy();
        sockets.delete(socket);
        sockets.delete(back);
      };
      socket.on('error', drop).on('close', drop);
      back.on('error', drop).on('close', drop);
    },
  );
  server.on('tlsClientError', () => refused++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: listening } = server.address() as net.AddressInfo;
  return {
    address: `127.0.0.1:${listening}`,
    clients,
    refused: () => refused,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

import { Agent, request } from 'node:http';

/** Small bounded HTTP calls for the bench's checks (not for load: autocannon does that). */

export interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

const CALL_TIMEOUT_MS = 10_000;

export function get(url: string, headers: Record<string, string> = {}, agent?: Agent): Promise<Answer> {
  return new Promise<Answer>((resolve, reject) => {
    const req = request(
      url,
      { method: 'GET', headers, ...(agent ? { agent } : {}), timeout: CALL_TIMEOUT_MS },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer from ${url} within ${CALL_TIMEOUT_MS} ms`)));
    req.on('error', reject);
    req.end();
  });
}

export async function metricsText(gatewayUrl: string): Promise<string> {
  const answer = await get(`${gatewayUrl}/metrics`);
  if (answer.status !== 200) throw new Error(`GET /metrics answered ${answer.status}`);
  return answer.body;
}

export interface ConcurrentOutcome {
  readonly statuses: Map<number, number>;
  readonly distinctBodies: number;
  readonly collapsed: number;
}

/**
 * `count` identical GETs started together on `count` already-open keep-alive
 * connections (opened first with a round of /healthz calls), so they reach the
 * gateway at once rather than one connection handshake apart.
 */
export async function concurrentIdentical(
  gatewayUrl: string,
  path: string,
  headers: Record<string, string>,
  count: number,
): Promise<ConcurrentOutcome> {
  const agent = new Agent({ keepAlive: true, maxSockets: count, maxFreeSockets: count });
  try {
    await Promise.all(Array.from({ length: count }, () => get(`${gatewayUrl}/healthz`, {}, agent)));
    const answers = await Promise.all(Array.from({ length: count }, () => get(`${gatewayUrl}${path}`, headers, agent)));
    const statuses = new Map<number, number>();
    for (const answer of answers) statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
    return {
      statuses,
      distinctBodies: new Set(answers.map((answer) => answer.body)).size,
      collapsed: answers.filter((answer) => String(answer.headers['cache-status'] ?? '').includes('collapsed')).length,
    };
  } finally {
    agent.destroy();
  }
}
